"""Lidar odometry on simulated data: KISS-ICP on a scenario bag's clouds, scored with evo against the bag's truth.

    python benchmarks/slam_kiss_icp.py [--scenario street_slalom] [--bag out/street_slalom.mcap]
                                       [--sensors vlp16 os1] [--plot out/slam.png] [--max-frames N]

Runs (or reuses) `radarays run SCENARIO`, then for every lidar in it, reading the bag with rosbags only (an
independent reader, not this package's io): the PointCloud2 clouds with their per-point times (Velodyne
`time`, float32 s from the stamp; Ouster `t`, uint32 ns from the stamp), and the ground truth from /tf
(world -> odom -> base) and /tf_static (base -> sensor). KISS-ICP (PyPI kiss-icp; Vizzo et al., RA-L 2023)
registers the clouds with deskewing on and off; evo (PyPI) scores each trajectory:

    ATE   absolute trajectory error, RMSE of the translation after an SE(3) Umeyama alignment (m)
    RPE   relative pose error over DRIFT_SEGMENT_M of travel: RMSE of the translation error (m) and as a
          drift, / DRIFT_SEGMENT_M (%); rotation RMSE (deg) over the same segments
    RPE1  the same between consecutive scans (m, deg): the motion distortion shows here first

KISS-ICP deskews each scan to its last point's time (kiss_icp Preprocessing.cpp: exp((s - 1) omega), s in
[0, 1]), so its pose k is compared with the true sensor pose at the last point of scan k; without
deskewing, with the pose at the scan's middle (measured: the fairest time for the skewed scans).
Published figure of the band (KISS-ICP paper, KITTI odometry 00-10, HDL-64E, relative translational error
over 100-800 m): 0.49 % (quoted by the authors in PRBonn/kiss-icp issue #315; a user reproduced 0.6 %).
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

DRIFT_SEGMENT_M = 20.0
POINTFIELD_DTYPES = {1: "i1", 2: "u1", 3: "i2", 4: "u2", 5: "i4", 6: "u4", 7: "f4", 8: "f8"}


# -- reading the bag (rosbags only) ----------------------------------------------------------------------
def _stamp_ns(header) -> int:
    return int(header.stamp.sec) * 1_000_000_000 + int(header.stamp.nanosec)


def cloud_points(msg) -> tuple[np.ndarray, np.ndarray]:
    """(xyz (N, 3) float64, absolute time (N,) s) of a sensor_msgs/PointCloud2's returns (NaN misses dropped)."""
    names = [f.name for f in msg.fields]
    dtype = np.dtype({"names": names, "formats": [POINTFIELD_DTYPES[f.datatype] for f in msg.fields],
                      "offsets": [f.offset for f in msg.fields], "itemsize": msg.point_step})
    dtype = dtype.newbyteorder(">" if msg.is_bigendian else "<")
    rows = np.frombuffer(np.asarray(msg.data, np.uint8).tobytes(), dtype=dtype, count=msg.width * msg.height)
    xyz = np.stack([rows["x"], rows["y"], rows["z"]], axis=1).astype(np.float64)
    if "t" in names:  # Ouster: uint32 ns after the stamp
        rel = rows["t"].astype(np.float64) * 1e-9
    elif "time" in names:  # Velodyne: float32 s relative to the stamp
        rel = rows["time"].astype(np.float64)
    elif "timestamp" in names:  # absolute float64 s (Hesai, Robosense)
        rel = rows["timestamp"].astype(np.float64) - _stamp_ns(msg.header) * 1e-9
    else:
        raise ValueError(f"cloud {msg.header.frame_id}: no per-point time field in {names}")
    keep = np.all(np.isfinite(xyz), axis=1) & (np.linalg.norm(xyz, axis=1) > 0)
    return xyz[keep], _stamp_ns(msg.header) * 1e-9 + rel[keep]


def _matrix(transform) -> np.ndarray:
    from scipy.spatial.transform import Rotation

    q, t = transform.rotation, transform.translation
    m = np.eye(4)
    m[:3, :3] = Rotation.from_quat([q.x, q.y, q.z, q.w]).as_matrix()
    m[:3, 3] = [t.x, t.y, t.z]
    return m


def read_bag(bag: Path, topics: list[str]) -> dict:
    """clouds per topic [(xyz, t)], the sensor frames, /tf samples and /tf_static transforms."""
    from rosbags.highlevel import AnyReader

    clouds = {t: [] for t in topics}
    frames, tf, static = {}, {}, {}
    with AnyReader([Path(bag)]) as reader:
        present = {c.topic for c in reader.connections}
        missing = [t for t in topics if t not in present]
        if missing:
            raise SystemExit(f"{bag}: no topic {', '.join(missing)} (topics: {', '.join(sorted(present))})")
        wanted = [c for c in reader.connections if c.topic in set(topics) | {"/tf", "/tf_static"}]
        for conn, _, raw in reader.messages(connections=wanted):
            msg = reader.deserialize(raw, conn.msgtype)
            if conn.topic in clouds:
                clouds[conn.topic].append(cloud_points(msg))
                frames[conn.topic] = msg.header.frame_id
                continue
            for ts in msg.transforms:
                key = (ts.header.frame_id, ts.child_frame_id)
                if conn.topic == "/tf_static":
                    static[key] = _matrix(ts.transform)
                else:
                    tf.setdefault(key, []).append((_stamp_ns(ts.header) * 1e-9, _matrix(ts.transform)))
    return {"clouds": clouds, "frames": frames, "tf": tf, "static": static}


def _interpolate(samples: list, times: np.ndarray) -> np.ndarray:
    """Poses at `times` from (t, 4x4) samples: linear translation, slerp rotation."""
    from scipy.spatial.transform import Rotation, Slerp

    t = np.array([s[0] for s in samples])
    m = np.array([s[1] for s in samples])
    if times.min() < t[0] - 1e-9 or times.max() > t[-1] + 1e-9:
        raise SystemExit(f"ground truth covers {t[0]:.3f}-{t[-1]:.3f} s; scans need {times.min():.3f}-{times.max():.3f} s")
    out = np.repeat(np.eye(4)[None], len(times), axis=0)
    out[:, :3, :3] = Slerp(t, Rotation.from_matrix(m[:, :3, :3]))(np.clip(times, t[0], t[-1])).as_matrix()
    for k in range(3):
        out[:, k, 3] = np.interp(times, t, m[:, k, 3])
    return out


def ground_truth(bag_data: dict, sensor_frame: str, times: np.ndarray, world="map", odom="odom",
                 base="base_link") -> np.ndarray:
    """world <- sensor poses at `times`: /tf world -> odom -> base, then /tf_static base -> sensor."""
    tf = bag_data["tf"]
    for key in ((world, odom), (odom, base)):
        if key not in tf:
            raise SystemExit(f"no /tf {key[0]} -> {key[1]} in the bag (has {sorted(tf)})")
    mount = bag_data["static"].get((base, sensor_frame))
    if mount is None:
        raise SystemExit(f"no /tf_static {base} -> {sensor_frame} in the bag")
    return _interpolate(tf[(world, odom)], times) @ _interpolate(tf[(odom, base)], times) @ mount


# -- odometry and scores -----------------------------------------------------------------------------------
def reference_time(t: np.ndarray, deskew: bool) -> float:
    """The time a KISS-ICP pose refers to: the scan's last point when deskewed (the points are moved there);
    without deskewing the scan's middle (a skewed scan registers to about its mean pose; the fairest match)."""
    return float(t.max()) if deskew else 0.5 * float(t.min() + t.max())


def run_kiss_icp(clouds: list, deskew: bool, max_range: float = 100.0, min_range: float = 1.0) -> np.ndarray:
    """KISS-ICP poses (first scan = identity), one per cloud; the library's defaults otherwise (voxel
    size = max_range / 100, as its config parser sets it)."""
    from kiss_icp.config import KISSConfig
    from kiss_icp.kiss_icp import KissICP

    config = KISSConfig()
    config.data.deskew = deskew
    config.data.max_range = max_range
    config.data.min_range = min_range
    config.mapping.voxel_size = max_range / 100.0
    odometry = KissICP(config)
    poses = []
    for xyz, t in clouds:
        odometry.register_frame(xyz, t)
        poses.append(odometry.last_pose.copy())
    return np.array(poses)


def score(estimate: np.ndarray, truth: np.ndarray, times: np.ndarray) -> dict:
    """evo's ATE (SE(3)-aligned) and RPE (per DRIFT_SEGMENT_M of travel, and per scan)."""
    import copy

    from evo.core import metrics
    from evo.core.trajectory import PoseTrajectory3D
    from evo.core.units import Unit

    ref = PoseTrajectory3D(poses_se3=list(np.linalg.inv(truth[0]) @ truth), timestamps=times)
    est = PoseTrajectory3D(poses_se3=list(estimate), timestamps=times)
    aligned = copy.deepcopy(est)
    aligned.align(ref, correct_scale=False)
    ape = metrics.APE(metrics.PoseRelation.translation_part)
    ape.process_data((ref, aligned))
    out = {"path_m": float(ref.path_length), "ate_m": float(ape.get_statistic(metrics.StatisticsType.rmse))}
    for name, delta, unit in (("rpe", DRIFT_SEGMENT_M, Unit.meters), ("rpe1", 1, Unit.frames)):
        for relation, key, scale in ((metrics.PoseRelation.translation_part, "m", 1.0),
                                     (metrics.PoseRelation.rotation_angle_deg, "deg", 1.0)):
            rpe = metrics.RPE(relation, delta=delta, delta_unit=unit, all_pairs=True, rel_delta_tol=0.2)
            rpe.process_data((ref, est))
            out[f"{name}_{key}"] = float(rpe.get_statistic(metrics.StatisticsType.rmse)) * scale
    out["drift_pct"] = 100.0 * out["rpe_m"] / DRIFT_SEGMENT_M
    return out


def evaluate(bag: Path, sensors: list[str], deskews=(True, False), max_frames: int | None = None) -> list[dict]:
    """One row per (sensor, deskew): the scores plus the trajectories (for the plot)."""
    topics = [f"/{s}/points" for s in sensors]
    data = read_bag(bag, topics)
    rows = []
    for sensor, topic in zip(sensors, topics):
        clouds = data["clouds"][topic][:max_frames]
        if len(clouds) < 5:
            raise SystemExit(f"{bag}: {topic} holds {len(clouds)} clouds; odometry needs at least 5")
        for deskew in deskews:
            times = np.array([reference_time(t, deskew) for _, t in clouds])
            truth = ground_truth(data, data["frames"][topic], times)
            estimate = run_kiss_icp(clouds, deskew)
            rows.append({"sensor": sensor, "deskew": deskew, "scans": len(clouds), "times": times,
                         "truth": np.linalg.inv(truth[0]) @ truth, "estimate": estimate,
                         **score(estimate, truth, times)})
    return rows


def table(rows: list[dict]) -> str:
    seg = f"{DRIFT_SEGMENT_M:g} m"
    lines = [f"| sensor | deskew | scans | path (m) | ATE RMSE (m) | RPE/{seg} (m) | drift (%) | RPE/{seg} (deg) "
             "| RPE/scan (m) | RPE/scan (deg) |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['sensor']} | {'on' if r['deskew'] else 'off'} | {r['scans']} | {r['path_m']:.1f} | "
                     f"{r['ate_m']:.3f} | {r['rpe_m']:.3f} | {r['drift_pct']:.2f} | {r['rpe_deg']:.2f} | "
                     f"{r['rpe1_m']:.3f} | {r['rpe1_deg']:.2f} |")
    return "\n".join(lines)


def plot(rows: list[dict], path: Path) -> Path:
    """Top view of the true and estimated sensor paths (first scan's frame, metres), one panel per sensor."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sensors = list(dict.fromkeys(r["sensor"] for r in rows))
    fig, axes = plt.subplots(len(sensors), 1, figsize=(10, 3.4 * len(sensors)), squeeze=False)
    for ax, sensor in zip(axes[:, 0], sensors):
        mine = [r for r in rows if r["sensor"] == sensor]
        truth = mine[0]["truth"]
        ax.plot(truth[:, 0, 3], truth[:, 1, 3], "k-", lw=2.5, label="ground truth (bag /tf)")
        for r in mine:
            e = r["estimate"]
            ax.plot(e[:, 0, 3], e[:, 1, 3], "-" if r["deskew"] else "--", lw=1.3,
                    label=f"KISS-ICP, deskew {'on' if r['deskew'] else 'off'}: ATE {r['ate_m']:.2f} m, "
                          f"drift {r['drift_pct']:.2f} %")
        ax.set_title(f"{sensor}: {mine[0]['scans']} scans, {mine[0]['path_m']:.0f} m")
        ax.set_xlabel("x in the first scan's sensor frame (m)")
        ax.set_ylabel("y (m)")
        ax.set_aspect("equal", adjustable="datalim")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def simulate(scenario: str, bag: Path, max_frames: int | None = None) -> Path:
    """`radarays run SCENARIO --out BAG` (a max_frames cap per sensor when given)."""
    from radarays_ros.scenario.config import load_scenario
    from radarays_ros.scenario.runner import run_scenario

    loaded = load_scenario(scenario)
    if max_frames:
        from dataclasses import replace

        loaded = replace(loaded, sensors=tuple(replace(s, max_frames=max_frames) for s in loaded.sensors))
    run_scenario(loaded, bag, quiet=True, overwrite=True)
    return bag


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--scenario", default="street_slalom", help="scenario YAML or shipped name (default street_slalom)")
    p.add_argument("--bag", default="out/street_slalom.mcap", help="bag to write, or to read if it exists")
    p.add_argument("--sensors", nargs="+", default=["vlp16", "os1"], help="lidar names of the scenario")
    p.add_argument("--max-frames", type=int, help="scans per sensor (default: all)")
    p.add_argument("--plot", default="out/slam_kiss_icp.png", help="trajectory picture (PNG)")
    args = p.parse_args(argv)
    bag = Path(args.bag)
    if not bag.exists():
        print(f"simulating {args.scenario} -> {bag}", file=sys.stderr)
        simulate(args.scenario, bag, args.max_frames)
    rows = evaluate(bag, args.sensors, max_frames=args.max_frames)
    print(table(rows))
    print(f"plot -> {plot(rows, Path(args.plot))}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    sys.exit(main())
