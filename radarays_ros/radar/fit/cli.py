"""`radarays fit radar REAL... --preset P --out OUT.yaml [--world W --poses P]`: calibrate a radar preset.

Without a world: the physical receiver chain (floor level and shape over range, leakage, detector
step, effective range resolution; radar/fit/sensor.py) is fitted to the statistics of the quiet part
of the real frames. With --world and --poses: RadaRays' per-material (v, A, B, C) of --fit-materials
are fitted by MIS (+ --ssim-weight x SSIM) between simulated and real frames (radar/fit/materials.py);
for a physical preset, the backscatter classes of --fit-classes (σ⁰(θ) level and tilt, rms height: see
--scatter-keys) by the speckle likelihood on co-registered cells (radar/fit/scatter.py), written as a
backscatter table OUT_backscatter.yaml that OUT's scatter.table names.

REAL: Oxford/Boreas polar PNGs (rows = azimuths), .npz of `radarays radar`, or a rosbag2 (.mcap file
or folder) whose sensor_msgs/Image topic (--topic, mono8) holds the frames (--layout of the topic).
Writes OUT (a radar preset YAML that --config, nodes and scenarios take), OUT_report.md (before/after
statistics, fitted and unidentifiable parameters, the objective per evaluation) and OUT_report.png.
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

from ...errors import ConfigError
from ...output_files import add_overwrite_argument, check_new, replacing_all
from ...validate import Rule

MAX_FRAMES = 32
# the search's work is evaluations x (starts + 1) simulated frames: bounded so that a fit ends (a 400 x 6848
# frame costs about 0.2 s an evaluation: 100 000 evaluations are about 6 hours, shown by the progress line)
EVALUATIONS = Rule(int, 10, 100_000)
STARTS = Rule(int, 0, 64)
SEED = Rule(int, 0, 2**63 - 1)  # numpy's SeedSequence takes no negative seed
SSIM_WEIGHT = Rule(float, 0.0, 100.0)


def add_arguments(p) -> None:
    """The arguments of `radarays fit radar` on the parser radarays_ros/fit_cli.py made for it."""
    p.add_argument("real", nargs="+", help="real frames: Oxford/Boreas PNG, .npz, or a rosbag2 with an Image topic")
    p.add_argument("--preset", required=True, help="radar preset name or YAML to start from (e.g. navtech_ras6)")
    p.add_argument("--out", required=True, help="fitted preset YAML to write")
    p.add_argument("--resolution", type=float, help="metres per range bin of REAL (Oxford PNG without a .yaml sidecar)")
    p.add_argument("--topic", default="/radar/image", help="Image topic of a rosbag2 REAL (default /radar/image)")
    p.add_argument("--layout", default="range_rows", choices=("range_rows", "azimuth_rows"),
                   help="layout of a rosbag2 Image topic (default range_rows, RadaRays/MulRan; Navtech driver: azimuth_rows)")
    p.add_argument("--params", help="comma-separated keys to fit (default: every registry key of the preset); see --list-params")
    p.add_argument("--list-params", action="store_true", help="print the parameter registry and exit")
    p.add_argument("--world", help="mesh world of the recording: fit materials instead of the receiver chain")
    p.add_argument("--poses", help="sensor pose per frame: a text file of 'x y z roll pitch yaw' lines, or a rosbag2 with /tf")
    p.add_argument("--pose-frame", default="radar", help="child frame followed in a --poses bag's /tf (default radar)")
    p.add_argument("--world-frame", default="map", help="world frame of a --poses bag (default map)")
    p.add_argument("--materials", help="material library YAML merged over the shipped one")
    p.add_argument("--fit-materials", help="comma-separated material names whose (v, A, B, C) are fitted (with --world)")
    p.add_argument("--material-keys", default="velocity,A,B,C", help="which of velocity,A,B,C to fit (default all four)")
    p.add_argument("--fit-classes", help="physical preset with --world: comma-separated backscatter classes whose "
                   "sigma0(theta) is fitted (classes of the preset's scatter.table)")
    p.add_argument("--scatter-keys", default="level_db,tilt_db",
                   help="which of level_db,tilt_db,rms_height_mm to fit per class (default level_db,tilt_db)")
    p.add_argument("--ssim-weight", type=float, default=0.0, help="objective = MIS + this x SSIM (default 0: MIS only)")
    p.add_argument("--seed", type=int, default=0, help="seed of the search and of the simulated frames")
    p.add_argument("--max-evaluations", type=int, default=360, help="budget of simulated frames (default 360)")
    p.add_argument("--starts", type=int, default=None, help="seeded extra starts of the search")
    p.add_argument("--quiet", action="store_true", help="no progress line")
    add_overwrite_argument(p)
    p.set_defaults(func=run)


# -- reading real frames ------------------------------------------------------------------------------
def read_frames(paths, resolution, topic: str, layout: str) -> list[tuple[np.ndarray, float, str]]:
    """[(counts (A, B) uint8, resolution or nan, name)] of every REAL."""
    from ..compare.cli import load_polar

    frames = []
    for path in paths:
        file = Path(path)
        if file.is_dir() or file.suffix.lower() == ".mcap":
            from ...io.radar_bag import read_image_topic

            for i, counts in enumerate(read_image_topic(file, topic, layout, MAX_FRAMES)):
                frames.append((counts, resolution if resolution else math.nan, f"{file.name}#{i}"))
        else:
            counts, _, res = load_polar(str(file), resolution, "oxford")
            frames.append((np.asarray(counts), res, file.name))
        if len(frames) >= MAX_FRAMES:  # the rest is not read (each frame is held in memory)
            break
    return frames[:MAX_FRAMES]


def check_frames(frames, config, preset: str) -> None:
    """Every frame must be of the preset's sensor: azimuths, bins and resolution; one line naming the mismatch."""
    a, b, res = config.azimuth.count, config.range.n_bins, config.range.resolution
    for counts, r, name in frames:
        if counts.ndim != 2 or counts.dtype != np.uint8:
            raise ConfigError(f"real frame {name}: expected 8-bit counts [azimuth, bin], got {counts.dtype} {counts.shape}")
        if counts.shape[1] != b:
            raise ConfigError(f"real frame {name}: {counts.shape[1]} range bins, preset {preset} has {b} "
                              f"({res} m): a frame of another sensor or range mode; choose the matching preset")
        if counts.shape[0] != a:
            raise ConfigError(f"real frame {name}: {counts.shape[0]} azimuths, preset {preset} has {a}: "
                              "a frame of another sensor; choose the matching preset")
        if math.isfinite(r) and abs(r - res) > 1e-3 * res:
            raise ConfigError(f"real frame {name}: range resolution {r:g} m, preset {preset} has {res:g} m: "
                              "a frame of another sensor or range mode")


def read_poses(path: str | None, n: int, frame: str, world_frame: str) -> list[np.ndarray]:
    from ...world.transforms import parse_pose_string

    if not path:
        raise ConfigError("--world needs --poses (the sensor pose of each real frame: a text file or a bag with /tf)")
    file = Path(path)
    if not file.exists():
        raise ConfigError(f"--poses {path}: no such file")
    if file.is_dir() or file.suffix.lower() == ".mcap":
        from ...scenario.config import bag_trajectory

        trajectory = bag_trajectory(file, "/tf", frame, world_frame, f"--poses {path}")
        poses = list(trajectory.poses)
    else:
        lines = [ln for ln in file.read_text().splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
        poses = [parse_pose_string(ln, what=f"--poses {path} line {i + 1}") for i, ln in enumerate(lines)]
    if len(poses) < n:
        raise ConfigError(f"--poses {path}: {len(poses)} pose(s) for {n} real frame(s); one pose per frame")
    return poses[:n]


# -- the command -------------------------------------------------------------------------------------
def _progress(quiet: bool):
    if quiet:
        return None

    tty = sys.stderr.isatty()

    def show(k, value, best):  # one line rewritten on a terminal; every 25th evaluation into a log
        if tty:
            sys.stderr.write(f"\rfit: evaluation {k:4d}  objective {value:10.4g}  best {best:10.4g}")
            sys.stderr.flush()
        elif k % 25 == 0:
            print(f"fit: evaluation {k:4d}  best objective {best:.4g}", file=sys.stderr)
    return show


def run(args) -> int:
    from ..config import resolve_radar_config
    from . import params as registry

    config = resolve_radar_config(args.preset)
    if args.list_params:
        for p in registry.available(registry.SENSOR_PARAMS, config):
            lo, hi = p.bounds()
            print(f"{p.key:28s} [{lo:.4g}, {hi:.4g}] {p.transform:8s} {'default' if p.default else 'on request':10s} {p.what}")
        return 0
    out = Path(args.out)
    if out.suffix.lower() not in (".yaml", ".yml"):
        raise ConfigError(f"--out {out}: the fitted preset is a .yaml file")
    EVALUATIONS.check(args.max_evaluations, "--max-evaluations")
    SEED.check(args.seed, "--seed")
    SSIM_WEIGHT.check(args.ssim_weight, "--ssim-weight")
    if args.starts is not None:
        STARTS.check(args.starts, "--starts")
    check_new(output_paths(out), args.overwrite)  # before the work; written together at the end
    if args.materials and not args.world:
        raise ConfigError(f"--materials {args.materials}: a material library is read with the mesh world (--world W)")
    if args.world and not args.poses:
        raise ConfigError("--world needs --poses (the sensor pose of each real frame: a text file or a bag with /tf)")
    frames = read_frames(args.real, args.resolution, args.topic, args.layout)
    if not frames:
        raise ConfigError(f"no real frame in {', '.join(args.real)}")
    check_frames(frames, config, args.preset)
    if args.world:
        return _run_materials(args, config, frames, out)
    return _run_sensor(args, config, frames, out)


def _run_sensor(args, config, frames, out: Path) -> int:
    from . import params as registry
    from .sensor import fit_sensor

    if config.sensor.model != "physical":
        raise ConfigError(f"--preset {args.preset}: sensor.model {config.sensor.model}; the receiver-chain fit needs a "
                          "physical preset (navtech_ras6, navtech_cts350x, navtech_cir204_realistic); "
                          "for RadaRays presets fit materials with --world and --poses")
    params = registry.available(registry.select(args.params.split(",")) if args.params else registry.defaults(), config)
    fit = fit_sensor([f[0] for f in frames], config, params, seed=args.seed, max_evaluations=args.max_evaluations,
                     starts=args.starts or 0, progress=_progress(args.quiet))
    if not args.quiet and sys.stderr.isatty():
        sys.stderr.write("\n")
    from ...io.radar_fit_report import sensor_report

    with replacing_all(output_paths(out), args.overwrite) as (preset_tmp, *report_tmps):
        write_preset(fit.config, preset_tmp, f"fitted by `radarays fit radar` to {', '.join(f[2] for f in frames)} "
                     f"from {args.preset}; fitted: {', '.join(fit.values) or 'nothing'}")
        report = sensor_report(fit, frames, args.preset, out, to=tuple(report_tmps))
    print(report["summary"])
    print(f"fitted preset -> {out}; report -> {report['markdown']}, {report['picture']}")
    return 0


def _run_materials(args, config, frames, out: Path) -> int:
    from ...tracing import make_backend
    from ...world.loader import load_world
    from ..materials import RadarMaterials
    from ..simulator import RadarSimulator
    from .materials import fit_materials, material_params

    if config.sensor.model == "physical":
        return _run_scatter(args, config, frames, out)
    if not args.fit_materials:
        raise ConfigError("--world: name the materials to fit with --fit-materials NAME[,NAME...]")
    poses = read_poses(args.poses, len(frames), args.pose_frame, args.world_frame)
    scene = load_world(args.world, materials=args.materials)
    backend = make_backend("embree", scene)
    materials = RadarMaterials.from_library(scene.materials)
    params = material_params(materials, [m.strip() for m in args.fit_materials.split(",") if m.strip()],
                             [k.strip() for k in args.material_keys.split(",") if k.strip()])

    def render(candidate):
        images = []
        for pose in poses:
            sim = RadarSimulator(config, scene, backend, materials=candidate)
            images.append(sim.simulate(pose).image)
        return images

    fit = fit_materials(render, [f[0] for f in frames], materials, params, seed=args.seed,
                        starts=args.starts if args.starts is not None else 2, max_evaluations=args.max_evaluations,
                        ssim_weight=args.ssim_weight, progress=_progress(args.quiet))
    if not args.quiet and sys.stderr.isatty():
        sys.stderr.write("\n")
    from ...io.radar_fit_report import material_report

    with replacing_all(output_paths(out), args.overwrite) as (materials_tmp, *report_tmps):
        write_materials(fit.materials, sorted({p.material for p in params}), materials_tmp)
        report = material_report(fit, frames, args.preset, out, to=tuple(report_tmps))
    print(report["summary"])
    print(f"fitted materials -> {out}; report -> {report['markdown']}, {report['picture']}")
    return 0


def _run_scatter(args, config, frames, out: Path) -> int:
    """Physical preset + world + poses: the backscatter classes by the speckle likelihood (scatter.py)."""
    import time

    from ...tracing import make_backend
    from ...world.loader import load_world
    from ..physical.thermal_noise import noise_power_w
    from ..simulator import RadarSimulator
    from .scatter import fit_scatter, read_table, scatter_params, table_file

    if not args.fit_classes:
        raise ConfigError(f"--world with physical preset {args.preset}: name the backscatter classes to fit with "
                          "--fit-classes CLASS[,CLASS...]")
    table_out, report = out.with_name(f"{out.stem}_backscatter.yaml"), out.with_name(f"{out.stem}_report.md")
    check_new([out, table_out, report], args.overwrite)  # before the work, as the other fits
    poses = read_poses(args.poses, len(frames), args.pose_frame, args.world_frame)
    table = read_table(config.scatter.table)
    params = scatter_params(table, [c.strip() for c in args.fit_classes.split(",") if c.strip()],
                            [k.strip() for k in args.scatter_keys.split(",") if k.strip()])
    scene = load_world(args.world, materials=args.materials)
    backend = make_backend("embree", scene)
    noise = noise_power_w(config.receiver, config.fmcw)
    work = out.parent / f"{out.stem}_tables"

    count = [0]

    def render(candidate):  # a table file per evaluation: a simulator caches its table by path
        count[0] += 1
        path = table_file(candidate, work / str(count[0]))
        cfg = config.with_overrides({"scatter.speckle": False, "scatter.table": str(path)})
        sim = RadarSimulator(cfg, scene, backend)
        return [sim.simulate(pose).energy.astype(np.float64) + noise for pose in poses]

    show = _progress(args.quiet)
    best = [math.inf]

    def progress(k, value):
        best[0] = min(best[0], value)
        if show:
            show(k, value, best[0])

    t0 = time.perf_counter()
    fit = fit_scatter(render, [f[0] for f in frames], table, params, config.receiver.zero_dbm,
                      config.receiver.db_per_count, max_evaluations=args.max_evaluations, progress=progress)
    seconds = time.perf_counter() - t0
    if not args.quiet and sys.stderr.isatty():
        sys.stderr.write("\n")
    import shutil

    shutil.copyfile(table_file(fit.table, work), table_out)
    shutil.rmtree(work, ignore_errors=True)
    fitted = config.with_overrides({"scatter.table": str(table_out.resolve())})
    write_preset(fitted, out, f"fitted by `radarays fit radar --world` to {', '.join(f[2] for f in frames)} from "
                 f"{args.preset}: backscatter classes {args.fit_classes} in {table_out.name}")
    rows = [f"| `{p.name}` | {s:.4g} | {v:.4g} | {e:.2g} | {w} |"
            for p, s, v, e, w in zip(fit.params, fit.start, fit.values, fit.sigma, fit.verdicts)]
    summary = (f"mean -ln L per cell {fit.nll_start:.5g} -> {fit.nll:.5g} over {fit.cells} cells, "
               f"{len(fit.history)} evaluations, {seconds:.1f} s")
    report.write_text("\n".join([
        f"# Radar backscatter fit: {', '.join(f[2] for f in frames)} with {args.preset}", "", summary, "",
        "| parameter | table | fitted | ±1σ | verdict |", "|---|---:|---:|---:|---|", *rows, "",
        "Objective (mean −ln L per cell, exponential speckle) per evaluation:", "",
        " ".join(f"{v:.5g}" for v in fit.history), ""]))
    print(summary)
    for p, v, w in zip(fit.params, fit.values, fit.verdicts):
        print(f"  {p.name:28s} {v:9.4g}  {w}")
    print(f"fitted preset -> {out}; backscatter table -> {table_out}; report -> {report}")
    return 0


def output_paths(out: Path) -> list[Path]:
    """OUT, OUT_report.md and OUT_report.png (io/radar_fit_report.py)."""
    from ...io.radar_fit_report import report_paths

    return [out, *report_paths(out)]


def write_preset(config, out: Path, note: str) -> None:
    import yaml

    data = config.to_dict()
    out.parent.mkdir(parents=True, exist_ok=True)
    text = f"# {note}\n" + yaml.safe_dump(data, sort_keys=False)
    out.write_text(text)


def write_materials(materials, names, out: Path) -> None:
    """A material library YAML (the `--materials` format) with the fitted radar parts."""
    import yaml

    entries = {}
    for name in names:
        i = materials.names.index(name)
        entries[name] = {"radar": {"velocity": float(materials.velocity[i]), "brdf": materials.brdf[i],
                                   **{k: float(v) for k, v in materials.params[i].items()}}}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("# fitted by `radarays fit radar --world` (MIS); pass with --materials\n"
                   + yaml.safe_dump({"materials": entries}, sort_keys=False))
