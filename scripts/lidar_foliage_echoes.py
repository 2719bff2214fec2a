"""Where a frame's echoes come from with crowns as surfaces and as leaf volumes (`foliage.volume` off / on), and
what the volumes cost: beams returned from foliage, second echoes on foliage beams and on leaves, CPU time.

    PYTHONPATH=$PWD python scripts/lidar_foliage_echoes.py [WORLD] --sensor S [--pose "x y z r p y"] [--frames 6]

S: e.g. the shared OS-0-128 dual frame's metadata, ../shared/realdata/ouster/single_scan_016.json. Defaults:
street_clutter, pose "0 0 1.2 0 0 0"; `--realistic`, seed 1, Embree on 2 threads. CPU time (process time) is the median over frames, off and on alternated frame by frame.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from lidar_ros import LidarSimulator, load_sensor
from radarays_ros.tracing import make_backend
from radarays_ros.world.loader import load_world
from radarays_ros.world.transforms import parse_pose_string

def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("world", nargs="?", default="radarays_ros/data/worlds/street_clutter.sdf")
    p.add_argument("--sensor", required=True, help="a preset name, sensor YAML or Ouster metadata JSON")
    p.add_argument("--pose", default="0 0 1.2 0 0 0")
    p.add_argument("--frames", type=int, default=6)
    args = p.parse_args(argv)
    scene = load_world(args.world)
    backend = make_backend("embree", scene, threads=2)
    pose = parse_pose_string(args.pose)
    foliage = scene.materials.id_of("vegetation")
    sims = {on: LidarSimulator(load_sensor(args.sensor, {"foliage.volume": on}, realistic=True), scene, backend, seed=1)
            for on in (False, True)}
    cpu = {False: [], True: []}
    for frame in range(args.frames):
        for on in (False, True):
            start = time.process_time()
            sims[on].simulate(pose)
            cpu[on].append(time.process_time() - start)
    for on in (False, True):
        scan = sims[on].simulate(pose)
        crown = scan.material == foliage
        second = scan.second.hit if scan.second is not None else np.zeros_like(scan.hit)
        second_leaf = scan.second.material == foliage if scan.second is not None else second
        print(f"foliage.volume={str(on).lower():5s} returns {int(scan.hit.sum())}, from foliage {int(crown.sum())}; "
              f"second echoes {int(second.sum())}, on foliage beams {int((second & crown).sum())}, on foliage "
              f"{int(second_leaf.sum())}; CPU {np.median(cpu[on]) * 1e3:.0f} ms per frame")
    print(f"CPU on / off: {np.median(cpu[True]) / np.median(cpu[False]):.3f}")
    backend.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
