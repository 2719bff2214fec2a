"""Print the sha256 (first 16 hex) of lidar frames of several set-ups on 1 and 2 threads, to check that a
change keeps them bit for bit (run it on two trees and compare the lines; `diff` the outputs).

    PYTHONPATH=$PWD python scripts/lidar_frame_hashes.py [--only NAME ...]

Frames: the street world, Embree, seed 3, two frames per set-up (pose and t0 of the second differ). A
set-up's line hashes every `.npz` channel (LidarScan.arrays, second echoes included) and the driver
cloud (pointcloud_array) of both frames; per channel hashes follow with --channels. Each set-up is run on
one and two threads and the script exits 1 if they differ (frames must not depend on the thread count).
"""
from __future__ import annotations

import argparse
import hashlib

import numpy as np

from lidar_ros import LidarSimulator, load_sensor
from radarays_ros.io.lidar_clouds import FrameCloud, pointcloud_array
from radarays_ros.tracing import make_backend
from radarays_ros.world.loader import load_world
from radarays_ros.world.transforms import parse_pose_string

EFFECTS = {"beam": {"divergence_mrad": 3.0, "sub_rays": 4, "return_mode": "dual"},
           "weather": {"fog_visibility_km": 0.5}, "detection": {"model": "snr", "dropout_probability": 0.001},
           "signal": {"poisson": True, "noise_floor": 2.0}}
NOISE = {"noise": {"bias_distribution": "gaussian", "bias_sigma": 0.02, "sigma": 0.02, "dust_probability": 0.001,
                   "resolution": 0.002},
         "surface": {"model": "blensor", "limits": [[0.10, 50.0], [0.80, 120.0]]}}
OUSTER = {"columns": 512, "rate_hz": 10}
# name: (preset, overrides, realistic)
SETUPS = {
    "VLP-16": ("VLP-16", {}, False),
    "VLP-16 noise": ("VLP-16", NOISE, False),
    "VLP-16 effects": ("VLP-16", {**NOISE, **EFFECTS}, False),
    "VLP-16 realistic": ("VLP-16", {}, True),
    "VLP-16 realistic dual fog": ("VLP-16", {"beam.return_mode": "dual", "weather.fog_visibility_km": 0.5}, True),
    "OS1-64 noise": ("OS1-64", {**OUSTER, **NOISE}, False),
    "OS1-64 effects": ("OS1-64", {**OUSTER, **NOISE, **EFFECTS}, False),
    "OS1-64 realistic": ("OS1-64", OUSTER, True),
    "OS1-128 realistic dual fog": ("OS1-128", {**OUSTER, "beam.return_mode": "dual", "weather.fog_visibility_km": 0.5},
                                   True),
    "XT32 realistic dual": ("XT32", {"beam.return_mode": "dual"}, True),
}
POSES = ("0 0 1.8 0 0 0.3", "3 -1 1.8 0 0 1.2")


def frame_hashes(scene, setup: str, threads: int) -> dict[str, str]:
    name, overrides, realistic = SETUPS[setup]
    cfg = load_sensor(name, overrides, realistic=realistic)
    backend = make_backend("embree", scene, threads=threads)
    sim = LidarSimulator(cfg, scene, backend, seed=3, sink=FrameCloud.of)
    digests: dict[str, hashlib._Hash] = {}
    for k, pose in enumerate(POSES):
        scan = sim.simulate(parse_pose_string(pose), t0_ns=k * 10**8)
        channels = dict(scan.arrays())
        channels["cloud"] = pointcloud_array(scan, cfg.layout)
        for key, values in channels.items():
            digests.setdefault(key, hashlib.sha256()).update(np.ascontiguousarray(values).tobytes())
    backend.close()
    return {key: d.hexdigest()[:16] for key, d in sorted(digests.items())}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", nargs="+", choices=list(SETUPS), default=list(SETUPS))
    p.add_argument("--channels", action="store_true", help="also each channel's hash")
    args = p.parse_args(argv)
    scene = load_world("radarays_ros/data/worlds/street.sdf")
    bad = 0
    for setup in args.only:
        one, two = frame_hashes(scene, setup, 1), frame_hashes(scene, setup, 2)
        whole = hashlib.sha256(repr(sorted(one.items())).encode()).hexdigest()[:16]
        same = one == two
        bad += not same
        print(f"{setup:28s} {whole} {'1 = 2 threads' if same else 'DIFFERS between 1 and 2 threads'}", flush=True)
        if args.channels or not same:
            for key in one:
                print(f"    {key:22s} {one[key]} {'' if one[key] == two[key] else two[key]}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
