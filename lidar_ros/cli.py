"""`radarays lidar WORLD --sensor NAME|FILE --pose "x y z roll pitch yaw" --out OUT`: simulate lidar scans.

OUT by extension:
  .npz   per-pixel arrays [rows, cols] (rows = beams in the driver's ring order): range (float32 m,
         NaN = no return), hit, xyz [rows, cols, 3] (sensor frame), intensity, elevation_rad,
         azimuth_rad (nominal rays), time (s from scan start), ring [rows]; with --ground-truth also
         clean_range, entity, material, normal, incidence_rad. Several scans (--scans N): arrays gain
         a leading scan axis.
  .pcd   binary PCD of the point cloud in the sensor's driver layout (the last scan)
  .ply   binary PLY of the returns (the last scan)
  .mcap  rosbag2: the cloud on /points (+ sensor_msgs/LaserScan on /scan for 2D sensors) and the
         sensor pose on /tf_static (/tf per scan when a trajectory is given)
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from radarays_ros.errors import ConfigError
from radarays_ros.tracing.cli import add_backend_arguments

OUTPUT_SUFFIXES = (".npz", ".pcd", ".ply", ".mcap")


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
    p.add_argument("--seed", type=int, help="seed of the noise (default: the sensor file's seed)")
    p.add_argument("--scans", type=int, default=1, help="number of consecutive scans (default 1)")
    p.add_argument("--t0", type=float, default=0.0, help="start time of the first scan (s)")
    p.add_argument("--layout", choices=("velodyne", "ouster", "gazebo", "gazebo_cpu", "livox", "xyzi"), help="point cloud layout (default: the sensor's)")
    p.add_argument("--unorganized", action="store_true", help="clouds hold only the returns (default: organized, NaN misses)")
    p.add_argument("--ground-truth", action="store_true", help="add clean range, entity, material, normal, incidence")
    p.add_argument("--world-frame", default="map", help="parent frame of the sensor pose in .mcap /tf (default map, as radar and scenarios)")
    p.add_argument("--collision", action="store_true", help="use <collision> instead of <visual> geometry")
    add_backend_arguments(p)
    p.add_argument("--out", help="output file: .npz, .pcd, .ply or .mcap (required unless --list-presets)")
    p.add_argument("--list-presets", action="store_true", help="print the preset names and exit")
    p.set_defaults(func=run)


def parse_overrides(items: list[str]) -> dict:
    """['a.b=1', 'layout=ouster'] -> {'a.b': 1, 'layout': 'ouster'} (values parsed as YAML)."""
    from .spec import parse_value

    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--set {item!r}: expected KEY=VALUE, e.g. range.max=50")
        out[key.strip()] = parse_value(value)
    return out


def run(args) -> int:
    from radarays_ros.tracing import make_backend
    from radarays_ros.tracing.cli import backend_options
    from radarays_ros.world.loader import load_world
    from radarays_ros.world.trajectory import Trajectory
    from radarays_ros.world.transforms import parse_pose_string

    from .config import load_sensor
    from .simulator import LidarSimulator

    if args.list_presets:
        from .config import list_presets

        names = list_presets()
        if not names:  # an empty list would look like success: the data of the install is missing
            from radarays_ros.resources import lidar_data_dir

            raise ConfigError(f"no lidar presets found in {lidar_data_dir() / 'presets'} (a broken install, or "
                              "RADARAYS_LIDAR_CONFIG names a folder without presets/)")
        print("\n".join(names))
        return 0
    for value, what in ((args.world, "WORLD"), (args.sensor, "--sensor NAME|FILE"), (args.out, "--out OUT (.npz, .pcd, .ply or .mcap)")):
        if not value:
            raise ConfigError(f"{what} is required")
    out = Path(args.out)
    if out.suffix.lower() not in OUTPUT_SUFFIXES:
        raise ConfigError(f"--out {out}: unknown output type '{out.suffix}'; allowed: {', '.join(OUTPUT_SUFFIXES)}")
    if args.scans < 1:
        raise ConfigError(f"--scans {args.scans}: allowed: an integer >= 1")
    config = load_sensor(args.sensor, parse_overrides(args.overrides))
    if args.trajectory:
        pose = Trajectory.from_csv(args.trajectory)
    else:
        pose = parse_pose_string(args.pose, degrees=args.degrees, what="--pose")
    scene = load_world(args.world, materials=args.materials, geometry="collision" if args.collision else "visual")
    backend = make_backend(args.backend, scene, **backend_options(args))
    sim = LidarSimulator(config, scene, backend, seed=args.seed)
    t0 = int(round(args.t0 * 1e9))
    period_ns = int(round(config.period * 1e9))
    scans = [sim.simulate(pose, t0 + k * period_ns) for k in range(args.scans)]
    write_output(out, scans, pose, args)
    hits = sum(int(s.hit.sum()) for s in scans)
    print(f"{config.name}: {len(scans)} scan(s) of {config.rows} x {config.cols}, {hits} returns -> {out}")
    return 0


def write_output(out: Path, scans, pose, args) -> None:
    """Write the scans in the format the suffix names."""
    from radarays_ros.io.lidar_clouds import GROUND_TRUTH_FIELDS, pointcloud_array
    from radarays_ros.io.lidar_files import write_pcd, write_ply

    ground_truth = tuple(GROUND_TRUTH_FIELDS) if args.ground_truth else ()
    suffix = out.suffix.lower()
    out.parent.mkdir(parents=True, exist_ok=True)
    if suffix == ".npz":
        arrays = [dict(s.arrays(), **({k: getattr(s, k) for k in ground_truth})) for s in scans]
        if len(arrays) == 1:
            data = arrays[0]
        else:
            data = {k: (np.stack([a[k] for a in arrays]) if k != "ring" else arrays[0][k]) for k in arrays[0]}
        np.savez_compressed(out, **data)
    elif suffix in (".pcd", ".ply"):
        points = pointcloud_array(scans[-1], args.layout, organized=not args.unorganized, ground_truth=ground_truth)
        (write_pcd if suffix == ".pcd" else write_ply)(out, points)
    else:
        write_bag(out, scans, pose, args, ground_truth)


def write_bag(out: Path, scans, pose, args, ground_truth) -> None:
    from radarays_ros.io import messages
    from radarays_ros.io.bag import BagWriter
    from radarays_ros.io.lidar_clouds import laserscan_msg, pointcloud_msg
    from radarays_ros.world.trajectory import Trajectory

    frame = scans[0].config.frame_id
    with BagWriter(out) as bag:
        if not isinstance(pose, Trajectory):
            tf = messages.transform_stamped(pose, scans[0].t0_ns, args.world_frame, frame)
            bag.write("/tf_static", messages.tf_message([tf]), scans[0].t0_ns)
        for scan in scans:
            cloud = pointcloud_msg(scan, layout=args.layout, organized=not args.unorganized, ground_truth=ground_truth)
            stamp = cloud.header.stamp.sec * 1_000_000_000 + cloud.header.stamp.nanosec
            if isinstance(pose, Trajectory):
                tf = messages.transform_stamped(pose.at(np.array([stamp]))[0], stamp, args.world_frame, frame)
                bag.write("/tf", messages.tf_message([tf]), stamp)
            bag.write("/points", cloud, stamp)
            if scan.config.planar:
                bag.write("/scan", laserscan_msg(scan), scan.t0_ns)
