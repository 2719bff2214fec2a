"""Digests (sha256, 16 hex digits) of every output of device lidar frames (lidar_ros/warp_frame.py):
ranges, hits, points, intensity fields, ground truth, driver clouds. Run it on two checkouts (or
Warp devices) and compare the JSON: the same bytes give the same file.

    PYTHONPATH=$PWD python benchmarks/device_frame_digest.py --device cuda out.json

Frames: OS1-128, OS0-32, VLP-16 and VLP-16 with the gazebo layout in the office world, with range
noise, dust and angular jitter; three poses and a trajectory (one pose per measurement column); the
scans of one run read only after all four frames, those of a second run each at once.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # a checkout is enough: no install needed

from lidar_ros import load_sensor  # noqa: E402
from lidar_ros.warp_frame import WarpLidarSimulator  # noqa: E402
from radarays_ros.io.lidar_clouds import FrameCloud, pointcloud_array  # noqa: E402
from radarays_ros.tracing import make_backend  # noqa: E402
from radarays_ros.world.loader import load_world  # noqa: E402
from radarays_ros.world.trajectory import Trajectory  # noqa: E402
from radarays_ros.world.transforms import pose_to_matrix  # noqa: E402

NOISE = {"noise": {"sigma": 0.03, "dust_probability": 0.05, "angular_sigma": 0.001}}
SENSORS = [("OS1-128", {}), ("OS0-32", {}), ("VLP-16", {}), ("VLP-16", {"layout": "gazebo"})]
TRUTH = ("clean_range", "cos_incidence", "entity", "material", "normal_world", "normal", "incidence_rad")
FIELDS = ("reflectivity", "velodyne_intensity", "ouster_reflectivity", "ouster_signal", "ouster_ambient")
CLOUD_TRUTH = ("clean_range", "entity", "material", "normal", "incidence_rad")


def digest_of(array) -> str:
    a = np.asarray(array)
    return hashlib.sha256(np.ascontiguousarray(a).tobytes() + str(a.dtype).encode()).hexdigest()[:16]


def scan_digests(scan) -> dict:
    d = {name: digest_of(getattr(scan, name)) for name in ("range", "hit", "xyz", "intensity")}
    d.update({f"field {name}": digest_of(scan.fields[name]) for name in FIELDS})
    d.update({f"truth {name}": digest_of(getattr(scan, name)) for name in TRUTH})
    d["cloud"] = digest_of(pointcloud_array(scan))
    d["cloud with truth"] = digest_of(pointcloud_array(scan, ground_truth=CLOUD_TRUTH))
    d["own cloud"] = None if scan.cloud is None else digest_of(scan.cloud)
    return d


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="JSON file to write")
    parser.add_argument("--device", default="cpu", help="Warp device: cpu or cuda")
    args = parser.parse_args(argv)
    scene = load_world("office")
    backend = make_backend("warp", scene, device=args.device)
    poses = [pose_to_matrix(3.0 + 0.2 * i, 0.5, 1.2, 0, 0, 0.4 + 0.1 * i) for i in range(3)]
    frames = [*poses, Trajectory(np.array([0, 10**8], np.int64), np.stack(poses[:2]))]
    digests = {}
    for name, extra in SENSORS:
        cfg = load_sensor(name, {**NOISE, **extra})
        key = name + json.dumps(extra)
        kept_sim = WarpLidarSimulator(cfg, scene, backend, seed=5, sink=FrameCloud.of)
        kept = [kept_sim.simulate(pose, i * 10**8) for i, pose in enumerate(frames)]
        digests[key + " read after all frames"] = [scan_digests(scan) for scan in kept]
        at_once = WarpLidarSimulator(cfg, scene, backend, seed=5, sink=FrameCloud.of)
        digests[key + " read at once"] = [scan_digests(at_once.simulate(pose, i * 10**8))
                                          for i, pose in enumerate(frames)]
    Path(args.out).write_text(json.dumps(digests, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
