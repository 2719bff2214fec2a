"""`radarays lidar WORLD --sensor NAME|FILE --pose "x y z roll pitch yaw" --out OUT`: simulate lidar scans.

OUT by extension:
  .npz   per-pixel arrays [rows, cols] (rows = beams in the driver's ring order): range (float32 m,
         NaN = no return), hit, xyz [rows, cols, 3] (sensor frame), intensity, elevation_rad,
         azimuth_rad (nominal rays), time (s from scan start), ring [rows]; with --ground-truth also
         clean_range, entity, material, normal, incidence_rad. Ouster sensors add reflectivity
         (uint8), signal, near_ir (uint16); Velodyne sensors velodyne_intensity; dual returns add
         range2, hit2, xyz2, intensity2 (+ reflectivity2, signal2). Several scans (--scans N):
         arrays gain a leading scan axis.
  .pcd   binary PCD of the point cloud in the sensor's driver layout (the last scan)
  .ply   binary PLY of the returns (the last scan)
  .png   top view of the returns (the last scan) on a metric grid; --view-reach M fixes the scale
  .mcap  rosbag2: the cloud on /points (+ sensor_msgs/LaserScan on /scan for 2D sensors, sensor_msgs/Range
         on /range for cone sensors, depth Image + CameraInfo on /depth/image, /depth/camera_info for
         depth cameras) and the
         sensor pose on /tf_static (/tf per scan when a trajectory is given); dual-return sensors
         add the second-return cloud on /points2 (velodyne layout: both returns in /points, as
         velodyne_pointcloud publishes them)
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from radarays_ros import limits
from ..output_files import add_overwrite_argument, check_new, replacing
from ..validate import Rule
from ..errors import ConfigError
from .tracing import add_backend_arguments

from lidar_ros.sink import LAYOUTS

OUTPUT_SUFFIXES = (".npz", ".pcd", ".ply", ".png", ".mcap")


# What the command line may ask for (radarays_ros.validate rules, one message format)
SCANS = Rule(int, 1, 100_000)
T0 = Rule(float, 0.0, 9.2e9)  # seconds whose nanoseconds fit a ROS stamp (int64)
SEED = Rule(int, 0, 2**63 - 1)  # numpy's SeedSequence takes no negative seed
MAX_POINTS = 50_000_000  # ~2 GB of float32 x, y, z, intensity, range held before writing

def add_parser(sub) -> None:
    p = sub.add_parser("lidar", help="simulate a lidar (presets, sensor files) and write npz/pcd/ply/mcap")
    p.add_argument("world", nargs="?", help="SDF world, model directory, URDF or mesh file")
    p.add_argument("--sensor", help="preset name (VLP-16, OS1-128, ...; --list-presets) or sensor file "
                   "(sensor YAML, Ouster metadata JSON, ros-drivers/velodyne calibration YAML)")
    p.add_argument("--pose", default="0 0 0 0 0 0", help='sensor pose in the world: "x y z roll pitch yaw" (m, rad)')
    p.add_argument("--degrees", action="store_true", help="--pose angles are in degrees")
    p.add_argument("--trajectory", help="CSV t,x,y,z,roll,pitch,yaw (s, m, rad): each column is cast from the pose "
                   "at its firing time (motion distortion); replaces --pose")
    p.add_argument("--materials", help="material library YAML merged over the shipped one")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a sensor setting, dotted keys (e.g. rate_hz=20, range.max=50, noise.sigma=0)")
    p.add_argument("--realistic", action="store_true", help="turn the sensor effects on (beam divergence with 4 "
                   "sub-rays, detection curve, dropouts, photon noise, sun ambient; lidar_ros.config.REALISTIC)")
    p.add_argument("--seed", type=int, help="seed of the noise (default: the sensor file's seed)")
    p.add_argument("--scans", type=int, default=1, help="number of consecutive scans (default 1)")
    p.add_argument("--t0", type=float, default=0.0, help="start time of the first scan (s)")
    p.add_argument("--layout", choices=LAYOUTS, help="point cloud layout (default: the sensor's)")
    p.add_argument("--livox-custom", nargs="?", const="livox_ros_driver", choices=("livox_ros_driver", "livox_ros_driver2"),
                   help=".mcap: also write the Livox CustomMsg (per-point offset time, as FAST-LIO reads it) on "
                   "/livox/lidar; livox_ros_driver (Mid-40/70, Avia; the default) or livox_ros_driver2 (HAP, Mid-360)")
    p.add_argument("--unorganized", action="store_true", help="clouds hold only the returns (default: as the sensor's "
                   "driver: organized with NaN misses, returns only for the livox presets as livox_ros_driver2)")
    p.add_argument("--organized", action="store_true", help="organized clouds (NaN misses) whatever the sensor's driver")
    p.add_argument("--ground-truth", action="store_true", help="add clean range, entity, material, normal, incidence")
    p.add_argument("--world-frame", default="map", help="parent frame of the sensor pose in .mcap /tf (default map, as radar and scenarios)")
    p.add_argument("--collision", action="store_true", help="use <collision> instead of <visual> geometry")
    add_backend_arguments(p)
    p.add_argument("--frames", choices=("host", "device"), default="host",
                   help="device: the surface model in a Warp kernel too (needs --backend warp; lidar_ros/warp_frame.py; "
                        "toolbox II effects stay on the host); host (default): numpy over any backend")
    p.add_argument("--view-reach", type=float, metavar="M", help=".png: half width of the top view in metres "
                   "(a fixed scale for every frame; default: the farthest return)")
    p.add_argument("--view-grid", type=float, metavar="M", help=".png: grid spacing in metres (default: 1/2/5 x 10^k)")
    p.add_argument("--out", help="output file: .npz, .pcd, .ply, .png or .mcap (required unless --list-presets)")
    add_overwrite_argument(p)
    p.add_argument("--list-presets", action="store_true", help="print the preset names and exit")
    p.set_defaults(func=run)


def parse_overrides(items: list[str]) -> dict:
    """['a.b=1', 'layout=ouster'] -> {'a.b': 1, 'layout': 'ouster'} (values parsed as YAML)."""
    from lidar_ros.spec import parse_value

    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--set {item!r}: expected KEY=VALUE, e.g. range.max=50")
        out[key.strip()] = parse_value(value)
    return out


def run(args) -> int:
    from ..tracing import make_backend
    from .tracing import backend_options
    from ..tracing.warp import require_device_backend
    from ..world.loader import load_world
    from ..world.trajectory import Trajectory
    from ..world.transforms import parse_pose_string

    from ..io.lidar_clouds import GROUND_TRUTH_FIELDS
    from ..sensors.units import LidarUnit

    from lidar_ros.config import load_sensor

    if args.list_presets:
        from lidar_ros.config import list_presets

        names = list_presets()
        if not names:  # an empty list would look like success: the data of the install is missing
            from ..resources import lidar_data_dir

            raise ConfigError(f"no lidar presets found in {lidar_data_dir() / 'presets'} (a broken install, or "
                              "RADARAYS_LIDAR_CONFIG names a folder without presets/)")
        print("\n".join(names))
        return 0
    for value, what in ((args.world, "WORLD"), (args.sensor, "--sensor NAME|FILE"), (args.out, "--out OUT (.npz, .pcd, .ply, .png or .mcap)")):
        if not value:
            raise ConfigError(f"{what} is required")
    out = Path(args.out)
    if out.suffix.lower() not in OUTPUT_SUFFIXES:
        raise ConfigError(f"--out {out}: unknown output type '{out.suffix}'; allowed: {', '.join(OUTPUT_SUFFIXES)}")
    if out.suffix.lower() != ".mcap":  # before the work (a bag is checked by its writer: io/bag.py)
        check_new([out], args.overwrite)
    SCANS.check(args.scans, "--scans")
    T0.check(args.t0, "--t0")
    if args.seed is not None:
        SEED.check(args.seed, "--seed")
    overrides = parse_overrides(args.overrides)
    if args.layout:  # the cloud layout and organisation are the sensor's settings, as in a node's config
        overrides["layout"] = args.layout
    if args.organized or args.unorganized:  # else the preset's, as its driver publishes (livox: returns only)
        if args.organized and args.unorganized:
            raise ConfigError("--organized and --unorganized: give one of them")
        overrides["organized"] = bool(args.organized)
    config = load_sensor(args.sensor, overrides, realistic=args.realistic)
    if args.scans * config.rows * config.cols > MAX_POINTS:  # every scan is held until written
        raise ConfigError(f"--scans {args.scans}: {args.scans} scans of {config.rows} x {config.cols} exceed "
                          f"{MAX_POINTS} points in one run; write fewer scans per file")
    beam = config.effects.beam  # the work: rays traced, as the simulator counts them (sub-rays over a footprint)
    limits.check_product("--scans", {"scans": args.scans, "rows": config.rows, "columns": config.cols,
                                     "beam.sub_rays": beam.sub_rays if beam.footprint and beam.divergence_mrad > 0 else 1,
                                     "echoes": 2 if beam.dual else 1},
                         limits.MAX_RUN_RAYS, "rays traced in one run", "work: hours; write fewer scans per file")
    if args.trajectory:
        pose = Trajectory.from_csv(args.trajectory)
    else:
        pose = parse_pose_string(args.pose, degrees=args.degrees, what="--pose")
    scene = load_world(args.world, materials=args.materials, geometry="collision" if args.collision else "visual")
    for warning in scene.warnings:  # e.g. --collision on a world without <collision> elements
        print(f"warning: {warning}", file=sys.stderr)
    if args.frames == "device":  # before the backend is built: the unit checks the same (tracing/warp.py)
        require_device_backend(args.backend, "--frames device")
    backend = make_backend(args.backend, scene, **backend_options(args))
    # the sensor unit a node and `radarays run` use: the .mcap holds the messages a node publishes.
    # --pose places the frame the rays are cast from (Ouster: os_sensor), so its simulator is called directly
    unit = LidarUnit("", scene, backend, config=config, seed=args.seed, frames=args.frames,
                     output={"ground_truth": list(GROUND_TRUTH_FIELDS) if args.ground_truth else []})
    t0 = int(round(args.t0 * 1e9))
    period_ns = limits.period_ns(1.0 / config.period, f"{config.origin}: rate_hz")
    scans = [unit.simulator.simulate(pose, t0 + k * period_ns) for k in _progress(range(args.scans), config.name)]
    write_output(out, scans, pose, args, unit)
    hits = sum(int(s.hit.sum()) for s in scans)
    print(f"{config.name}: {len(scans)} scan(s) of {config.rows} x {config.cols}, {hits} returns -> {out}")
    return 0


PROGRESS_EVERY_S = 10.0  # a progress line off a terminal: a long run is seen working, not a hang


def _progress(steps, name: str):
    """The scans with a tqdm progress bar on stderr for longer runs on a terminal; elsewhere (a log, a pipe) one
    line `NAME: scan K of N (T s)` every PROGRESS_EVERY_S seconds once a run takes that long."""
    import sys
    import time

    from tqdm import tqdm

    if sys.stderr.isatty() or len(steps) < 2:
        yield from tqdm(steps, desc=f"{name} scans", unit="scan", disable=len(steps) < 2)
        return
    start = last = time.monotonic()
    for k, step in enumerate(steps):
        now = time.monotonic()
        if now - last >= PROGRESS_EVERY_S:
            print(f"{name}: scan {k + 1} of {len(steps)} ({now - start:.0f} s)", file=sys.stderr, flush=True)
            last = now
        yield step


def write_output(out: Path, scans, pose, args, unit) -> None:
    """Write the scans of the sensor unit `unit` (radarays_ros.sensors.units.LidarUnit) as the suffix says."""
    from ..io.lidar_clouds import GROUND_TRUTH_FIELDS, pointcloud_array
    from ..io.lidar_files import write_pcd, write_ply

    ground_truth = tuple(GROUND_TRUTH_FIELDS) if args.ground_truth else ()
    suffix = out.suffix.lower()
    if suffix == ".mcap":
        write_bag(out, scans, pose, args, unit)
        return
    with replacing(out, args.overwrite) as tmp:  # a temporary name, renamed when complete (output_files.py)
        if suffix == ".npz":
            arrays = [dict(s.arrays(), **({k: getattr(s, k) for k in ground_truth}), **_sensor_arrays(s)) for s in scans]
            if len(arrays) == 1:
                data = arrays[0]
            else:
                data = {k: (np.stack([a[k] for a in arrays]) if k != "ring" else arrays[0][k]) for k in arrays[0]}
            np.savez_compressed(tmp, **data)
        elif suffix == ".png":
            from ..io.lidar_files import write_top_view

            write_top_view(tmp, scans[-1], reach_m=args.view_reach, grid_m=args.view_grid)
        else:
            points = pointcloud_array(scans[-1], args.layout, ground_truth=ground_truth)  # organized as the config says
            (write_pcd if suffix == ".pcd" else write_ply)(tmp, points)


def _sensor_arrays(scan) -> dict:
    """Cone sensors add their reading (range, azimuth, elevation of the nearest return; +inf = none),
    depth cameras their depth image (optical z, m, +inf = none)."""
    from ..io.lidar_clouds import cone_reading, depth_image

    if scan.config.kind == "cone":
        return dict(zip(("cone_range", "cone_azimuth_rad", "cone_elevation_rad"), map(np.float32, cone_reading(scan))))
    if scan.config.kind == "depth_camera":
        return {"depth": depth_image(scan, "32FC1")}
    return {}


def write_bag(out: Path, scans, pose, args, unit) -> None:
    """The scans as the unit's messages (those a node publishes) on its topics, plus the sensor pose on /tf."""
    from ..io import messages
    from ..io.bag import BagWriter
    from ..io.messages import header_stamp
    from ..sensors.topics import topic_messages
    from ..world.trajectory import Trajectory

    cfg = scans[0].config
    frame = cfg.frame_id
    # the pose places the ray frame; where points are reported in another frame (Ouster: os_sensor ->
    # os_lidar, as ouster-ros publishes), that frame hangs below it by a static transform
    posed = cfg.ray_frame_id if cfg.ray_frame_id and cfg.ray_frame_id != frame else frame
    with BagWriter(out, overwrite=args.overwrite) as bag:
        static = []
        if not isinstance(pose, Trajectory):
            static.append(messages.transform_stamped(pose, scans[0].t0_ns, args.world_frame, posed))
        if posed != frame:
            static.append(messages.transform_stamped(np.linalg.inv(cfg.point_transform), scans[0].t0_ns, posed, frame))
        if static:
            bag.write("/tf_static", messages.tf_message(static), scans[0].t0_ns)
        for scan in scans:
            frame_msgs = topic_messages(unit, scan, scan.t0_ns)  # /points (+ /points2, /scan, /range, /depth/...)
            stamp = header_stamp(frame_msgs["/points"])  # the layout's own stamp (velodyne: the last firing)
            if isinstance(pose, Trajectory):
                tf = messages.transform_stamped(pose.at(np.array([stamp]))[0], stamp, args.world_frame, posed)
                bag.write("/tf", messages.tf_message([tf]), stamp)
            for topic, msg in frame_msgs.items():  # clouds logged at their stamp, the others at the scan start
                bag.write(topic, msg, stamp if topic.startswith("/points") else scan.t0_ns)
            if args.livox_custom:
                custom = unit.livox_custom(scan, package=args.livox_custom)
                bag.write("/livox/lidar", custom, custom.timebase)
