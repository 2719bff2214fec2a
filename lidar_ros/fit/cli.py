"""`radarays fit lidar REAL... --sensor NAME|FILE --out my_lidar.yaml`: fit a lidar's sensor stage to real frames.

REAL: one or more frames of one sensor: an `.npz` in shared/realdata's layout (Ouster, nebula VLP-16/XT32),
`radarays lidar --out X.npz`, an Ouster `.pcap` + metadata `.json` / `.osf` (needs ouster-sdk), or a rosbag2
(.mcap, .db3 or its folder) with an organized PointCloud2 in a driver layout (--topic, --message).
The frame itself is the scene (geometry held fixed, lidar_ros/fit/scene.py); the simulator's physics shades
it again and scipy's bounded least squares matches the statistics of `radarays lidar compare` (lidar_ros/fit/
objective.py) over the parameters of lidar_ros/fit/params.py: signal scale, ambient gains, range noise
(constant and per metre), dropout probability, ambient row gains. Parameters the frames cannot tell are
reported as unidentifiable and keep the sensor file's value.

Writes OUT (a sensor YAML that `--sensor`, nodes and scenarios take unchanged); with --world and --poses also
OUT.materials.yaml (per-material reflectivity, lidar_ros/fit/materials_fit.py: the --materials library with
the fitted materials replaced, for `--materials`) and the surface texture's sigma and length in OUT
(lidar_ros/fit/texture_fit.py, where the frames show them); OUT.md (report: fitted
values, verdicts, before/after statistics on every REAL frame and on --check frames, the objective per
evaluation), OUT.json and OUT.png (the picture). Progress goes to stderr.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import math
import sys
import time
from pathlib import Path

from radarays_ros.errors import ConfigError
from radarays_ros.output_files import add_overwrite_argument, check_new, replacing_all
from radarays_ros.validate import Rule

SEED = Rule(int, 0, 2**63 - 1)
EVALUATIONS = Rule(int, 2, 10_000)
MESSAGE = Rule(int, 0, 10**9)
FILE_KEYS = ("metadata", "calibration", "steps_file", "pattern_file", "rays_file", "table")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("real", nargs="+", metavar="REAL", help="real frames of one sensor (.npz, .pcap + --real-meta, .osf)")
    p.add_argument("--sensor", required=True, help="preset name (OS1-64, ...) or sensor file the fit starts from")
    p.add_argument("--out", required=True, help="fitted sensor YAML to write (report: OUT.md, OUT.json, OUT.png)")
    p.add_argument("--real-meta", help="Ouster metadata JSON of a REAL .pcap (default: REAL with .json)")
    p.add_argument("--topic", help="PointCloud2 topic of a REAL rosbag2 (default: its only PointCloud2 topic)")
    p.add_argument("--message", type=int, default=0, help="which message of --topic is the frame (default 0)")
    p.add_argument("--check", nargs="*", default=[], metavar="FRAME",
                   help="frames of the same sensor not fitted on: statistics before/after on them too")
    p.add_argument("--world", help="mesh world for per-material reflectivity (needs --poses)")
    p.add_argument("--poses", help="the sensor pose of each REAL frame in --world: CSV rows x,y,z,roll,pitch,yaw (m, rad; "
                   "a leading t column allowed), one per frame; writes OUT with .materials.yaml")
    p.add_argument("--materials", help="material library YAML merged over the shipped one (for --world)")
    p.add_argument("--seed", type=int, default=0, help="seed of the simulated draws (common random numbers)")
    p.add_argument("--max-evaluations", type=int, default=60, help="objective evaluations at most (default 60)")
    p.add_argument("--signal-fit", choices=("stats", "pixels"), default="stats",
                   help="how K and the near-range overlap r0 are fitted: 'stats' (default) with the other parameters on "
                        "the statistics; 'pixels' per pixel against the SIGNAL channel with Warp wp.Tape gradients "
                        "(lidar_ros/fit/gradients.py; needs warp-lang)")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    add_overwrite_argument(p)
    p.set_defaults(func=run)


def parser(prog: str = "radarays fit lidar") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    add_arguments(p)
    return p


def check_sensor(frame, config) -> None:
    """One line when a frame cannot be of the sensor (beam count, columns, model family)."""
    from lidar_ros.compare.frame import _family

    rows, cols = frame.range_m.shape
    what = f"frame {frame.name} is {rows} x {cols}" + (f" ({frame.sensor})" if frame.sensor else "")
    sensor = f"sensor {config.name} is {config.rows} x {config.cols}"
    if rows != config.rows or abs(cols - config.cols) > 0.02 * max(cols, config.cols):
        raise ConfigError(f"{what}, {sensor}: not a frame of this sensor (give --sensor the frame's model, or its "
                          "metadata JSON)")
    a, b = _family(frame.sensor), _family(config.name)
    if a and b and a != b and a.split("-")[0] != b.split("-")[0]:
        raise ConfigError(f"{what}, {sensor}: not the same sensor model")


PIXEL_KEYS = ("surface.signal_scale", "surface.overlap_range_m")


def signal_by_pixels(frames, spec) -> tuple[dict, str]:
    """The sensor mapping with K and r0 from the per-pixel signal fit of every frame's pixels (gradients.py)."""
    import numpy as np

    from lidar_ros.fit.gradients import SignalPixels, fit_signal, signal_pixels
    from lidar_ros.fit.params import SENSOR_STAGE, apply_values, get_value
    from lidar_ros.fit.scene import scene_from_frame

    retro = float((spec.get("surface") or {}).get("retro_full_scale", 100.0))
    parts = [signal_pixels(scene_from_frame(f, retro), f.signal) for f in frames]
    pixels = SignalPixels(*(np.concatenate([getattr(p, k) for p in parts]) for k in ("range_m", "rho", "signal")))
    k0, r00 = get_value(spec, PIXEL_KEYS[0], 2.0e5), get_value(spec, PIXEL_KEYS[1], 0.0)
    fit = fit_signal(pixels, k0, r00)
    params = [p for p in SENSOR_STAGE if p.key in PIXEL_KEYS]
    note = (f"per-pixel signal fit (Warp wp.Tape gradients, {len(pixels)} pixels, {fit.evaluations} evaluations): "
            f"K {k0:.4g} -> {fit.k:.4g}, r0 {r00:.4g} -> {fit.r0:.4g} m, loss {fit.loss_start:.4g} -> {fit.loss:.4g}")
    return apply_values(spec, params, [fit.k, fit.r0]), note


def portable_spec(config) -> dict:
    """The fitted mapping with file keys made absolute (the YAML may be written anywhere)."""
    spec = config.to_dict()
    for key in FILE_KEYS:
        value = spec.get(key)
        if isinstance(value, str) and not Path(value).is_absolute() and (Path(config.base_dir) / value).is_file():
            spec[key] = str((Path(config.base_dir) / value).resolve())
    return spec


def run(args) -> int:
    from lidar_ros.config import load_sensor
    from lidar_ros.fit import SENSOR_STAGE, fit_sensor_stage, objective_text, scene_from_frame
    from radarays_ros.io.lidar_frames import read_lidar_frame

    seed = SEED.check(args.seed, "--seed")
    evaluations = EVALUATIONS.check(args.max_evaluations, "--max-evaluations")
    if args.world and not args.poses:
        raise ConfigError(f"--world {args.world}: a per-material fit needs the recording's poses (--poses FILE)")
    if args.materials and not args.world:
        raise ConfigError(f"--materials {args.materials}: a material library is read with the mesh world (--world W)")
    if args.poses and not args.world:
        raise ConfigError(f"--poses {args.poses}: poses need the mesh world they are in (--world W)")
    out = Path(args.out)
    if out.suffix.lower() not in (".yaml", ".yml"):
        raise ConfigError(f"--out {args.out}: a sensor YAML (.yaml or .yml)")
    # every output is checked before the work and written together at the end (output_files.py)
    picture = importlib.util.find_spec("matplotlib") is not None
    outputs = output_paths(out, picture, materials=bool(args.poses))
    check_new(outputs.values(), args.overwrite)
    config = load_sensor(args.sensor)
    from radarays_ros.io.lidar_bag_frames import is_bag, read_bag_frame

    message = MESSAGE.check(args.message, "--message")

    def read(path, meta=None):
        return read_bag_frame(path, args.topic, message) if is_bag(path) else read_lidar_frame(path, meta)

    frames = [read(path, args.real_meta) for path in args.real]
    checks = [read(path) for path in args.check]
    for frame in frames + checks:
        check_sensor(frame, config)
    check_scenes = [scene_from_frame(frame) for frame in checks]  # a frame that cannot be shaded: before the fit
    start_spec = portable_spec(config)
    poses = read_poses(args.poses, len(frames)) if args.poses else None

    t0 = time.perf_counter()

    def progress(i, cost):
        if not args.quiet:
            print(f"fit lidar: evaluation {i:3d}  objective {cost:.5g}  ({time.perf_counter() - t0:.1f} s)",
                  file=sys.stderr, flush=True)

    params, note = SENSOR_STAGE, ""
    if args.signal_fit == "pixels":  # K and r0 per pixel with Tape gradients; the statistics fit the rest
        start_spec, note = signal_by_pixels(frames, start_spec)
        print(f"fit lidar: {note}", file=sys.stderr)
        params = tuple(p for p in SENSOR_STAGE if p.key not in PIXEL_KEYS)
    result, fitted_spec, scenes = fit_sensor_stage(frames, start_spec, params, seed=seed, max_evaluations=evaluations,
                                                   progress=progress)
    seconds = time.perf_counter() - t0
    materials, texture_note = None, ""
    if poses is not None:
        materials, texture = fit_materials(args, config, frames, poses)
        if texture.sigma_identifiable:  # the surface texture into the fitted sensor file (texture_fit.py)
            from lidar_ros.fit.params import set_value

            fitted_spec = set_value(fitted_spec, "surface.texture_sigma", texture.sigma)
            if texture.length_identifiable:
                fitted_spec = set_value(fitted_spec, "surface.texture_length_m", texture.length_m)
            texture_note = f"# surface texture: {texture.verdict}\n"
    with replacing_all(outputs.values(), args.overwrite) as tmps:
        written = dict(zip(outputs, tmps))
        _write_outputs(written, out, args, frames, checks, scenes, check_scenes, start_spec, fitted_spec, result, seed,
                       seconds, materials, note, texture_note)
    print(objective_text(result))
    if materials is not None:
        print(f"fitted materials -> {outputs['materials']}")
    print(f"fitted sensor -> {out}; report -> {outputs['report']} ({seconds:.1f} s)")
    return 0


def output_paths(out: Path, picture: bool, materials: bool) -> dict[str, Path]:
    """The files a fit writes: OUT, OUT.md, OUT.json, OUT.png (with matplotlib), OUT.materials.yaml (with --poses)."""
    paths = {"sensor": out, "report": out.with_suffix(".md"), "json": out.with_suffix(".json")}
    if picture:
        paths["picture"] = out.with_suffix(".png")
    if materials:
        paths["materials"] = out.with_suffix(".materials.yaml")
    return paths


def _write_outputs(written: dict, out: Path, args, frames, checks, scenes, check_scenes, start_spec, fitted_spec,
                   result, seed, seconds, materials, note: str = "", texture_note: str = "") -> None:
    """Every output into its temporary name (`written`, from output_paths); renamed together by the caller."""
    import yaml

    from lidar_ros.compare.stats import frame_stats
    from lidar_ros.config import load_sensor
    from lidar_ros.fit import AWAITING, NOT_FROM_FRAMES, objective_text
    from lidar_ros.fit.shade import shade

    header = (f"# fitted by `radarays fit lidar` from {', '.join(f.name for f in frames)} starting at {args.sensor}\n"
              f"# (report: {out.with_suffix('.md').name}); unidentifiable parameters keep the starting value\n")
    written["sensor"].write_text(header + texture_note + yaml.safe_dump(fitted_spec, sort_keys=False))
    load_sensor(str(written["sensor"]))  # the output validates as any sensor file

    tables, stats_json = [], {}
    for label, group in (("fitted on", frames), ("check", checks)):
        for i, frame in enumerate(group):
            scene = scenes[i] if group is frames else check_scenes[i]
            before, after = shade(scene, start_spec, seed, "before"), shade(scene, fitted_spec, seed, "after")
            stats = [frame_stats(frame), frame_stats(before), frame_stats(after)]
            tables.append((f"{label}: {frame.name}", stats))
            stats_json[f"{label}: {frame.name}"] = [{k: (None if isinstance(v, float) and math.isnan(v) else v)
                                                      for k, v in s.items()} for s in stats]
    write_report(written["report"], args, result, tables, seconds, {**NOT_FROM_FRAMES, **AWAITING},
                 objective_text(result) + (f"\n{note}" if note else ""))
    written["json"].write_text(json.dumps({
        "sensor": args.sensor, "frames": [f.name for f in frames], "seed": seed, "seconds": seconds,
        "parameters": [{"name": n, "key": k, "start": s, "value": v, "verdict": w} for n, k, s, v, w in result.rows()],
        "objective": result.history, "statistics [real, before, after]": stats_json,
        "not_from_frames": NOT_FROM_FRAMES, "awaiting_keys": AWAITING}, indent=1))
    if "picture" in written:
        from radarays_ros.io.lidar_fit_picture import fit_picture

        fit_picture(written["picture"], result.history, tables)
    else:  # matplotlib missing: the report stands without its picture
        print("fit lidar: no picture (matplotlib is not installed)", file=sys.stderr)
    if materials is not None:
        written["materials"].write_text(materials)


TABLE_KEYS = ("valid_fraction", "isolated_fraction", "signal_r2_rho_1_2m", "signal_r2_rho_4_8m", "signal_r2_rho_8_16m",
              "signal_near_rolloff", "signal_p50", "near_ir_p50", "near_ir_return_to_miss", "near_ir_row_banding",
              "reflectivity_p50", "reflectivity_texture", "range_noise_near_m", "range_noise_mid_m")


def stats_table(stats) -> str:
    lines = ["| statistic | real | sim before | sim after |", "|---|---:|---:|---:|"]
    for key in TABLE_KEYS:
        cells = ["–" if s.get(key) is None or math.isnan(s[key]) else f"{s[key]:.4g}" for s in stats]
        lines.append(f"| {key} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def write_report(path: Path, args, result, tables, seconds, awaiting, summary) -> Path:
    rows = "\n".join(f"| {n} | `{k}` | {s:.4g} | {v:.4g} | {w} |" for n, k, s, v, w in result.rows())
    parts = [f"# Lidar fit: {', '.join(args.real)} with {args.sensor}", "",
             f"{result.evaluations} evaluations, {seconds:.1f} s, seed {args.seed}; objective ½Σ log(sim/real)² "
             f"{result.cost_start:.4g} -> {result.cost:.4g}.", "",
             "| parameter | key | start | fitted | verdict |", "|---|---|---:|---:|---|", rows, "",
             "Not fitted from frames alone: " + "; ".join(f"**{k}** ({v})" for k, v in awaiting.items()), ""]
    for title, stats in tables:
        parts += [f"## {title}", "", stats_table(stats), ""]
    parts += ["## Objective per evaluation", "", " ".join(f"{c:.4g}" for c in result.history), "", "```", summary, "```"]
    path.write_text("\n".join(parts) + "\n")
    return path


def read_poses(path: str, count: int):
    """4x4 poses, one per frame, from a CSV of x,y,z,roll,pitch,yaw rows (a leading t column allowed)."""
    import numpy as np

    from radarays_ros.world.transforms import parse_pose_string

    file = Path(path)
    if not file.is_file():
        raise ConfigError(f"--poses {path}: no such file")
    rows = [line.split("#")[0].strip() for line in file.read_text().splitlines()]
    rows = [r for r in rows if r and not r[0].isalpha()]  # comments and a header row are skipped
    values = []
    for i, row in enumerate(rows):
        numbers = row.replace(",", " ").split()
        if len(numbers) not in (6, 7):
            raise ConfigError(f"--poses {path}: row {i + 1} has {len(numbers)} numbers, allowed 6 (x y z roll pitch yaw) "
                              "or 7 (t first)")
        values.append(parse_pose_string(" ".join(numbers[-6:]), what=f"--poses {path} row {i + 1}"))
    if len(values) != count:
        raise ConfigError(f"--poses {path}: {len(values)} poses for {count} REAL frame(s); allowed one pose per frame")
    return values


def fit_materials(args, config, frames, poses):
    """Per-material reflectivity (lidar_ros/fit/materials_fit.py) and the surface texture (texture_fit.py) from
    frames simulated at the poses in --world: (the text of OUT.materials.yaml, the texture fit)."""
    import numpy as np
    import yaml

    from lidar_ros.fit.materials_fit import fit_material_reflectivity
    from lidar_ros.physics.materials import DEFAULT_REFLECTIVITY
    from lidar_ros.simulator import LidarSimulator
    from radarays_ros.tracing import make_backend
    from radarays_ros.world.loader import load_world

    from dataclasses import replace

    from lidar_ros.fit.texture_fit import fit_texture

    scene = load_world(args.world, materials=args.materials)
    backend = make_backend("embree", scene)
    # the model frame without texture: texture_fit reads the real frame's texture against it
    plain = replace(config, surface=replace(config.surface, texture_sigma=0.0))
    sim = LidarSimulator(plain, scene, backend, seed=args.seed)
    library = scene.materials
    starts = [float(m.lidar.get("reflectivity", DEFAULT_REFLECTIVITY)) for m in library.materials]
    pieces = {k: [] for k in ("rr", "qr", "rs", "qs", "mat", "xyz")}
    for frame, pose in zip(frames, poses):
        if frame.reflectivity is None:
            raise ConfigError(f"frame {frame.name}: no reflectivity channel, per-material reflectivity cannot be fitted")
        scan = sim.simulate(pose)
        arrays = scan.arrays()
        if "reflectivity" not in arrays:
            raise ConfigError(f"sensor {config.name}: reports no calibrated reflectivity (an Ouster layout does)")
        if np.shape(arrays["reflectivity"]) != frame.range_m.shape:
            raise ConfigError(f"frame {frame.name} is {frame.range_m.shape}, the simulated frame "
                              f"{np.shape(arrays['reflectivity'])}: not co-registered")
        pieces["rr"].append(frame.range_m)
        pieces["qr"].append(frame.reflectivity)
        pieces["rs"].append(np.asarray(scan.clean_range, float))
        pieces["qs"].append(np.asarray(arrays["reflectivity"], float))
        pieces["mat"].append(np.asarray(scan.material))
        pieces["xyz"].append(np.asarray(arrays["xyz"], float).reshape(*frame.range_m.shape, 3))
    joined = {k: np.concatenate(v, axis=1) for k, v in pieces.items()}
    texture = fit_texture(joined["rr"], joined["qr"], joined["rs"], joined["qs"], joined["xyz"], joined["mat"],
                          config.surface.texture_length_m)
    print(f"  texture sigma {texture.sigma:.4g}, length {texture.length_m:.4g} m  {texture.verdict}")
    fits = fit_material_reflectivity(joined["rr"], joined["qr"], joined["rs"], joined["qs"], joined["mat"],
                                     library.names, starts)
    entries = {}
    for f in fits:
        print(f"  material {f.name:<20} reflectivity {f.start:.4g} -> {f.value:.4g}  {f.verdict}")
        if f.identifiable:
            m = library.materials[library.names.index(f.name)]
            entries[f.name] = {**({"radar": dict(m.radar)} if m.radar else {}),
                               "lidar": {**dict(m.lidar), "reflectivity": round(f.value, 6)},
                               "source": f"radarays fit lidar from {', '.join(fr.name for fr in frames)} ({f.verdict})"}
    # the user's library with the fitted materials replaced (its assignments and default kept)
    base = yaml.safe_load(Path(args.materials).read_text()) if args.materials else None
    base = base if isinstance(base, dict) else {}
    base["materials"] = {**(base.get("materials") or {}), **entries}
    return ("# per-material lidar reflectivity fitted by `radarays fit lidar`; use with --materials\n"
            + yaml.safe_dump(base, sort_keys=False)), texture
