"""How long `radarays fit lidar` takes to fit one real frame (issue 24: under a minute on 2 cores).

    python benchmarks/bench_fit_lidar.py [--frame F.npz] [--sensor NAME] [--repeats 3]

Prints the wall and CPU time of each fit (the whole sensor-stage fit: scene, every objective evaluation and the
Jacobians) and its evaluations; the first run also compiles the numba kernels, so the median is reported.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script or with -m
from lidar_ros.config import load_sensor  # noqa: E402
from lidar_ros.fit import fit_sensor_stage  # noqa: E402
from radarays_ros.io.lidar_frames import read_lidar_frame  # noqa: E402

DEFAULT = Path(__file__).resolve().parents[1].parent / "shared" / "realdata" / "ouster" / "single_scan_016.npz"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--frame", default=str(DEFAULT if DEFAULT.is_file() else "/work/shared/realdata/ouster/single_scan_016.npz"))
    p.add_argument("--sensor", default="OS0-128")
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    frame = read_lidar_frame(args.frame)
    spec = load_sensor(args.sensor).to_dict()
    times, cpu = [], []
    for i in range(args.repeats):
        t, c = time.perf_counter(), time.process_time()
        result, _, _ = fit_sensor_stage([frame], spec, seed=0)
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
        print(f"run {i + 1}: {times[-1]:.1f} s wall, {cpu[-1]:.1f} s CPU, {result.evaluations} evaluations, objective "
              f"{result.cost_start:.3g} -> {result.cost:.3g}")
    print(f"median {statistics.median(times):.1f} s wall ({statistics.median(cpu):.1f} s CPU) per one-frame fit "
          f"({frame.range_m.shape[0]} x {frame.range_m.shape[1]}, {args.sensor}); budget 60 s")


if __name__ == "__main__":
    main()
