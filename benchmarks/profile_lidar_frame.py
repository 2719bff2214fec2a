"""Where a lidar frame's CPU beyond the bare tracing goes, on one thread (bench_lidar's world, pose and sensors):

* per function, own time (cProfile with time.process_time as the clock: other jobs on the machine move it least),
  the top rows and the total beside Embree's own `run`;
* per frame, user and system CPU and minor page faults (getrusage) beside the bare embreex trace of the same rays:
  system CPU or page faults in a steady frame mean memory taken fresh from the system each frame (e.g. a reference
  cycle that keeps the last frame's arrays until the garbage collector runs; issue #23, lidarspeed11).

Run: PYTHONPATH=$PWD .venv/bin/python -m benchmarks.profile_lidar_frame [--sensor OS1-128+realistic] [--frames 8]
     [--rows 30] [--only trace_lidar,_write_returns]
"""
from __future__ import annotations

import argparse
import cProfile
import pstats
import resource
import time

import numpy as np

from lidar_ros import LidarSimulator
from radarays_ros.io.lidar_clouds import FrameCloud
from radarays_ros.tracing import make_backend
from radarays_ros.world.transforms import pose_to_matrix

from .bench_lidar import SENSORS, _config
from .common import make_big_world


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sensor", choices=sorted(SENSORS), default="OS1-128+realistic")
    p.add_argument("--frames", type=int, default=8)
    p.add_argument("--rows", type=int, default=30, help="functions listed, by own time")
    p.add_argument("--only", default="", help="comma-separated function names to list instead of the top rows")
    p.add_argument("--triangles", type=int, default=1_000_000)
    args = p.parse_args(argv)
    scene = make_big_world(args.triangles)
    pose = pose_to_matrix(0.0, 0.0, 1.8, 0.0, 0.0, 0.3)
    backend = make_backend("embree", scene, threads=1)
    sim = LidarSimulator(_config(args.sensor), scene, backend, seed=0, sink=FrameCloud.of)
    sim.simulate(pose).release()
    o32, d32 = sim._world_o.copy(), sim._world_d.copy()  # the frame's own world rays

    bare, cpu, user, system, faults = [], [], [], [], []
    for _ in range(args.frames):
        start = time.process_time()
        backend._static.scene.run(o32, d32, dists=np.full(len(o32), 1e30, np.float32), output=1)
        bare.append(time.process_time() - start)
        before, start = resource.getrusage(resource.RUSAGE_SELF), time.process_time()
        sim.simulate(pose).release()
        cpu.append(time.process_time() - start)
        after = resource.getrusage(resource.RUSAGE_SELF)
        user.append(after.ru_utime - before.ru_utime)
        system.append(after.ru_stime - before.ru_stime)
        faults.append(after.ru_minflt - before.ru_minflt)
    ms = lambda values: f"{1e3 * np.min(values):.1f}/{1e3 * np.median(values):.1f}"  # noqa: E731
    print(f"{args.sensor}: bare {ms(bare)} ms, frame {ms(cpu)} ms (user {ms(user)}, system {ms(system)}; min/median), "
          f"frame/bare {np.min(cpu) / np.min(bare):.3f}x, minor page faults per frame {int(np.median(faults))}")

    profile = cProfile.Profile(time.process_time)
    profile.enable()
    for _ in range(args.frames):
        sim.simulate(pose).release()
    profile.disable()
    rows = sorted(pstats.Stats(profile).stats.items(), key=lambda kv: -kv[1][2])
    total = sum(v[2] for _, v in rows)
    run = sum(v[2] for (file, _, name), v in rows if name == "run" and file.endswith("tracing/embree.py"))
    n = args.frames
    print(f"cProfile (own time per frame): frame {1e3 * total / n:.2f} ms, embree run {1e3 * run / n:.2f} ms, "
          f"the rest {1e3 * (total - run) / n:.2f} ms = {(total - run) / run:.3f}x the run")
    only = [name for name in args.only.split(",") if name]
    listed = [r for r in rows if r[0][2] in only] if only else rows[:args.rows]
    for (file, line, name), v in listed:
        print(f"  {1e3 * v[2] / n:7.2f} ms own {1e3 * v[3] / n:7.2f} ms cum {v[1] // n:5d} calls  "
              f"{file.rsplit('/', 2)[-2:][-1]}:{line}:{name}")


if __name__ == "__main__":
    main()
