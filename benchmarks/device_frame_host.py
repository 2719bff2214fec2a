"""The host's per-frame work around a device lidar frame's kernel (lidar_ros/warp_frame.py), in µs
(median of --repeats calls each): the settings struct, the output buffers (a frame's own, and reused as
on CUDA), the pose upload, and the returns fetched and read as a frame reads them (beam rows, hit, the
intensity fields of the ouster layout).

    PYTHONPATH=$PWD python benchmarks/device_frame_host.py --device cpu --sensor OS1-128
"""
from __future__ import annotations

import argparse
import sys
import timeit
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # a checkout is enough: no install needed

from lidar_ros import load_sensor  # noqa: E402
from lidar_ros.warp_frame import WarpLidarSimulator  # noqa: E402
from radarays_ros.tracing import make_backend  # noqa: E402
from radarays_ros.world.loader import load_world  # noqa: E402
from radarays_ros.world.transforms import pose_to_matrix  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--sensor", default="OS1-128")
    parser.add_argument("--repeats", type=int, default=200)
    args = parser.parse_args(argv)
    scene = load_world("office")
    sim = WarpLidarSimulator(load_sensor(args.sensor), scene, make_backend("warp", scene, device=args.device), seed=0)
    sim.simulate(pose_to_matrix(3.0, 0.5, 1.2, 0, 0, 0.4))  # compiles the kernel
    n = sim.config.rows * sim.config.cols

    def us(call) -> float:
        return float(np.median(timeit.repeat(call, number=1, repeat=args.repeats))) * 1e6

    rotation, shift = np.eye(3, dtype=np.float32)[None], np.zeros((1, 3), np.float32)
    figures = {"settings struct": us(lambda: sim._settings(False, 5)),
               "pose upload": us(lambda: sim._device_poses(rotation, shift))}
    for reused in (False, True):
        sim.reuse_device_buffers = reused
        label = "reused" if reused else "a frame's own"
        figures[f"output buffers ({label})"] = us(lambda: sim._outputs(n))
    out, slot = sim._outputs(n)

    def fetch_and_read():
        r = sim._fetch_returns(out, slot)
        return r.range, r.hit, r.reflectivity, r.ouster_signal, r.ouster_ambient, r.ouster_reflectivity

    figures["returns fetched and read (reused buffers)"] = us(fetch_and_read)
    print(f"{args.sensor} on {args.device}, µs (median of {args.repeats}):")
    for name, value in figures.items():
        print(f"  {name:<45s} {value:8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
