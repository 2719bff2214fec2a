"""`radarays radar WORLD --pose "x y z roll pitch yaw" --out OUT`: one simulated radar sweep.

OUT by suffix:
* .npz  - image_f32 (float32 [azimuths, bins], before the 8-bit conversion), image (uint8, same shape),
          azimuth_rad, range_m (bin start), azimuth_time_ns, and the raw returns when kept;
* .png  - the polar image (rows = range bins, columns = azimuths), OUT_cartesian.png and OUT_figure.png
          (labelled rings, colour bar with units, title) beside it, or with --png-style oxford the Oxford
          Radar RobotCar / Boreas polar PNG and OUT.png.yaml (its range resolution, encoder, flags);
* .mcap - a rosbag2 file with sensor_msgs/Image on /radar/image, PointCloud2 on /radar/points and
          the map -> sensor transform on /tf_static.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..output_files import add_overwrite_argument, check_new, replacing_all
from ..validate import Rule
from ..errors import ConfigError, RadaraysError, WorldError
from .tracing import add_backend_arguments

OUTPUT_SUFFIXES = (".npz", ".png", ".mcap")


T_NS = Rule(int, 0, 2**63 - 1)  # nanoseconds in a ROS stamp / MCAP log time (int64)
VIEW_REACH = Rule(float, 0.0, 1e6, lo_open=True)  # metres: half the width of the Cartesian pictures

def add_parser(sub) -> None:
    p = sub.add_parser("radar", help="simulate one rotating-radar sweep (RadaRays model)",
                       description=__doc__.split("\n\n")[0])
    p.add_argument("world", help="SDF world, model directory, URDF or mesh file")
    p.add_argument("--pose", default="0 0 0 0 0 0", help='sensor pose in the world: "x y z roll pitch yaw" (m, rad)')
    p.add_argument("--degrees", action="store_true", help="roll/pitch/yaw of --pose are in degrees")
    p.add_argument("--materials", help="material library YAML merged over the shipped one")
    p.add_argument("--config", help="radar config: a YAML file or a preset name (radarays_default, mulran, navtech_cir204; "
                        "physical sensor stage: navtech_ras6, navtech_cts350x, navtech_cir204_realistic; "
                        "default: RadaRays' defaults, the shipped preset radarays_default)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config key, e.g. --set beam.width_deg=10 (repeatable)")
    p.add_argument("--seed", type=int, help="random seed (overrides the config's)")
    p.add_argument("--t-ns", type=int, default=None,
                   help="sweep start time in ns (stamps and azimuth times); default: the time an Oxford/Boreas "
                        "file name holds (microseconds, e.g. --out 1700000000000000.png), else 0")
    p.add_argument("--frame-id", default="radar", help="sensor frame id in messages (default: radar)")
    p.add_argument("--layout", default="range_rows", choices=("range_rows", "azimuth_rows"), help="Image layout in .mcap")
    p.add_argument("--encoding", default="mono8", choices=("mono8", "32FC1"), help="Image encoding in .mcap")
    p.add_argument("--png-style", default="polar", choices=("polar", "oxford"),
                   help="a .png output: polar image + OUT_cartesian.png (default), or the Oxford/Boreas polar PNG "
                        "(rows = azimuths; timestamp, encoder and valid columns before the bins)")
    p.add_argument("--view-reach", type=float, metavar="M",
                   help=".png (polar style): half width of OUT_cartesian.png and OUT_figure.png in metres, to zoom "
                        "in (default: the last range bin)")
    p.add_argument("--encoder-offset", type=int, default=0, metavar="TICKS",
                   help="--png-style oxford: encoder ticks (of 5600) added to every azimuth's encoder value")
    add_backend_arguments(p)
    p.add_argument("--frames", choices=("host", "device"), default="host",
                   help="device: the whole frame in Warp kernels (needs --backend warp; radar/warp_frame.py); "
                        "host (default): the radar model in numpy over any backend")
    p.add_argument("--out", required=True, help="output file: .npz, .png or .mcap")
    add_overwrite_argument(p)
    p.set_defaults(func=run)


def parse_overrides(items: list[str]) -> dict[str, str]:
    """["a.b=1", ...] -> {"a.b": "1"}; errors name the bad item."""
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--set {item!r}: expected KEY=VALUE, e.g. beam.width_deg=10")
        out[key.strip()] = value.strip()
    return out


def load_config(path: str | None, overrides: dict, seed: int | None):
    """The --config preset name or YAML file (default: RadaRays' defaults) with --set/--seed applied.

    Preset names are resolved as the nodes and scenarios resolve them (the shipped radar presets); an
    unknown name lists the presets."""
    from ..radar.config import resolve_radar_config
    from ..radar.config import RadarConfig

    config = resolve_radar_config(path) if path else RadarConfig()
    if seed is not None:
        overrides = {**overrides, "seed": seed}
    return config.with_overrides(overrides)


def run(args) -> int:
    """The subcommand; every RadaraysError leaves it as one line (the CLI prints it and exits 2)."""
    try:
        return _run(args)
    except RadaraysError as exc:
        one_line = " ".join(str(exc).split())  # e.g. PyYAML's multi-line messages inside a library error
        if one_line == str(exc):
            raise
        raise type(exc)(one_line) from None


def _run(args) -> int:
    from ..tracing import make_backend
    from .tracing import backend_options
    from ..tracing.warp import require_device_backend
    from ..world.loader import load_world
    from ..sensors.units import RadarUnit
    from ..world.transforms import parse_pose_string

    out = Path(args.out)
    if out.suffix.lower() not in OUTPUT_SUFFIXES:
        raise ConfigError(f"--out {out}: the suffix must be one of {', '.join(OUTPUT_SUFFIXES)}")
    if args.png_style != "polar" and out.suffix.lower() != ".png":
        raise ConfigError(f"--png-style {args.png_style}: only for a .png output (got --out {out})")
    if args.t_ns is None:  # Oxford/Boreas frames are named by their time in microseconds: the frame's time
        args.t_ns = int(out.stem) * 1000 if out.stem.isdigit() and 15 <= len(out.stem) <= 16 else 0
    T_NS.check(args.t_ns, "--t-ns")
    if args.view_reach is not None:
        VIEW_REACH.check(args.view_reach, "--view-reach")
        if out.suffix.lower() != ".png" or args.png_style != "polar":
            raise ConfigError(f"--view-reach: only for a .png output in the polar style (got --out {out})")
    if out.suffix.lower() != ".mcap":  # before the work (a bag is checked by its writer: io/bag.py)
        check_new(output_paths(out, args.png_style), args.overwrite)
    config = load_config(args.config, parse_overrides(args.set), args.seed)
    pose = parse_pose_string(args.pose, degrees=args.degrees, what="--pose")
    scene = load_world(args.world, materials=args.materials)
    if scene.triangle_count == 0:
        raise WorldError(f"world {args.world}: no triangles to trace (an empty or unsupported file?)")
    if args.frames == "device":  # before the backend is built: the unit checks the same (tracing/warp.py)
        require_device_backend(args.backend, "--frames device")
    backend = make_backend(args.backend, scene, **backend_options(args))
    # the sensor unit a node and `radarays run` use: the .mcap holds the messages a node publishes
    unit = RadarUnit("", scene, backend, config=config, frame_id=args.frame_id, frames=args.frames,
                     output={"image_layout": args.layout, "image_encoding": args.encoding})
    img = unit.simulate(pose, args.t_ns)
    try:
        write_output(img, out, pose, args.t_ns, unit, args.png_style, args.encoder_offset, args.overwrite,
                     view_reach=args.view_reach)
    except OSError as exc:
        raise ConfigError(f"--out {out}: cannot be written ({exc.strerror or exc})") from None
    peak = int(img.image.max()) if img.image.size else 0
    print(f"radar {img.n_azimuths} azimuths x {img.n_bins} bins, max {peak} -> {out}")
    return 0


def output_paths(out: Path, png_style: str = "polar") -> list[Path]:
    """Every file a radar output writes: OUT, and for a .png its companions."""
    if out.suffix.lower() != ".png":
        return [out]
    if png_style == "oxford":
        return [out, Path(str(out) + ".yaml")]
    return [out, out.with_name(out.stem + "_cartesian.png"), out.with_name(out.stem + "_figure.png")]


def write_output(img, out: Path, pose: np.ndarray, t_ns: int, unit, png_style: str = "polar",
                 encoder_offset: int = 0, overwrite: bool = False, view_reach: float | None = None) -> None:
    """Write the frame `img` of the sensor unit `unit` (radarays_ros.sensors.units.RadarUnit) as `out` says;
    view_reach (m): half the width of a polar .png's Cartesian pictures (None: the last range bin).

    Files are written under temporary names and renamed when complete (output_files.py); an existing
    output is replaced only with `overwrite`."""
    from ..io import radar_image as rio

    suffix = out.suffix.lower()
    if suffix == ".png" and png_style == "oxford" and not 0 <= encoder_offset < rio.OXFORD_ENCODER_SIZE:
        raise ConfigError(f"--encoder-offset {encoder_offset}: must be in [0, {rio.OXFORD_ENCODER_SIZE - 1}]")
    if suffix == ".mcap":
        from ..io import messages
        from ..io.bag import BagWriter
        from ..sensors.topics import topic_messages

        with BagWriter(out, overwrite=overwrite) as bag:
            tf = messages.tf_message([messages.transform_stamped(pose, t_ns, "map", unit.frame_id)])
            bag.write("/tf_static", tf, t_ns)
            for topic, msg in topic_messages(unit, img, t_ns).items():  # /radar/image, /radar/points
                bag.write(topic, msg, t_ns)
        return
    with replacing_all(output_paths(out, png_style), overwrite) as tmp:
        if suffix == ".npz":
            arrays = dict(image_f32=img.image_f32.astype(np.float32), image=img.image,
                          azimuth_rad=img.azimuth_rad, range_m=img.range_m, azimuth_time_ns=img.azimuth_time_ns)
            if img.returns is not None:
                arrays["returns"] = img.returns
            np.savez(tmp[0], **arrays)
        elif png_style == "oxford":
            rio.oxford_polar_png(img, tmp[0], encoder_offset, sidecar_path=tmp[1])
        else:
            rio.polar_png(img, tmp[0])
            rio.save_png(tmp[1], rio.cartesian_image(img, max_range=view_reach))
            rio.radar_figure(img, tmp[2], max_range=view_reach)
