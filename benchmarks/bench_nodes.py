"""Node overhead and rig memory.

    .venv/bin/python benchmarks/bench_nodes.py [--triangles 1000000] [--repeats 3]

1. Node overhead: what a node adds to a frame -- building the message from the sensor's arrays
   (radarays_ros.io), copying it into an rclpy message (ros/convert.py) and serialising it to CDR
   (what rmw does on publish) -- against the frame time, for an OS1-128 x 1024 cloud and a
   400 x 3424 radar image on a 1M-triangle world. Target: <= 10 % of the frame time.
2. Rig memory: peak resident memory of a process holding the world with one radar, against one
   holding the same world with a radar and two lidars (VLP-16, OS1-128) on one shared scene and
   backend, each after simulating a frame of every sensor. Target: <= 1.2x.
3. Rig concurrency: two lidars on one scene, one after the other vs. on two threads (the backend and
   numpy release the GIL, so they overlap instead of queueing behind each other).
Times are best-of-N; frame times are also given as ratios to the bare Embree cost of the same rays.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path


sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import bare_trace_seconds, best_of, make_big_world, peak_rss_mb, report  # noqa: E402
from radarays_ros.scenario.sensors import LidarUnit, RadarUnit  # noqa: E402
from radarays_ros.tracing import make_backend  # noqa: E402
from radarays_ros.world.transforms import pose_to_matrix  # noqa: E402

POSE = pose_to_matrix(0.0, 0.0, 2.0, 0.0, 0.0, 0.3)


def overhead(triangles: int, repeats: int) -> None:
    try:
        from rclpy.serialization import serialize_message

        from radarays_ros.ros.convert import to_rclpy
    except ImportError as exc:
        print(f"node overhead: skipped, rclpy not available ({exc}); bash scripts/setup_ros_test.sh installs it")
        return
    scene = make_big_world(triangles)
    backend = make_backend("embree", scene)
    print(f"world: {scene.triangle_count} triangles, {backend.threads} tracing threads")

    lidar = LidarUnit("os1", scene, backend, config="OS1-128", overrides={"columns": 1024})
    radar = RadarUnit("radar", scene, backend, config="radarays_default")
    for unit, topic in ((lidar, "points"), (radar, "radar/image")):
        frame = best_of(lambda: unit.simulate(POSE, 0), repeats)
        result = unit.simulate(POSE, 0)
        msg = unit.messages(result, 0, {topic})[topic]
        build = best_of(lambda: unit.messages(result, 0, {topic}), repeats)
        convert = best_of(lambda: to_rclpy(msg), repeats)
        rclpy_msg = to_rclpy(msg)
        serialise = best_of(lambda: serialize_message(rclpy_msg), repeats)
        node = build + convert + serialise
        if unit is lidar:
            cfg = lidar.config
            origins = cfg.origins.reshape(-1, 3) @ POSE[:3, :3].T + POSE[:3, 3]
            dirs = cfg.directions.reshape(-1, 3) @ POSE[:3, :3].T
            bare = bare_trace_seconds(backend, origins, dirs, repeats)
            label = f"OS1-128 x {cfg.cols} cloud ({len(msg.data) / 1e6:.1f} MB)"
        else:
            bare = None
            label = f"radar {radar.config.azimuth.count} x {radar.config.n_bins} image ({len(msg.data) / 1e6:.1f} MB)"
        report(f"frame: {label}", frame, bare)
        report(f"  node overhead (build {build * 1e3:.2f} + rclpy {convert * 1e3:.2f} + CDR {serialise * 1e3:.2f} ms)",
               node, None, **{"share of frame": f"{100 * node / frame:.1f} %"})


def concurrency(triangles: int, repeats: int) -> None:
    """Two lidars of one rig, frame by frame one after the other vs. on two threads (as the rig's executor runs them)."""
    from concurrent.futures import ThreadPoolExecutor

    scene = make_big_world(triangles)
    backend = make_backend("embree", scene)
    units = [LidarUnit(name, scene, backend, config="OS1-64", overrides={"columns": 1024}) for name in ("a", "b")]

    def frame(unit):
        unit.messages(unit.simulate(POSE, 0), 0)

    one = best_of(lambda: frame(units[0]), repeats)
    sequential = best_of(lambda: [frame(u) for u in units], repeats)
    with ThreadPoolExecutor(2) as pool:
        concurrent = best_of(lambda: list(pool.map(frame, units)), repeats)
    report("rig: one OS1-64 x 1024 frame", one)
    report("rig: two lidars, one after the other", sequential, None, **{"x one frame": f"{sequential / one:.2f}"})
    report("rig: two lidars on two executor threads", concurrent, None, **{"x one frame": f"{concurrent / one:.2f}"})


MEMORY_CHILD = """
import json, sys
sys.path.insert(0, {root!r})
from benchmarks.common import make_big_world, peak_rss_mb
from radarays_ros.scenario.sensors import LidarUnit, RadarUnit
from radarays_ros.tracing import make_backend
from radarays_ros.world.transforms import pose_to_matrix
scene = make_big_world({triangles})
backend = make_backend("embree", scene)
units = [RadarUnit("radar", scene, backend, config="radarays_default")]
if {rig}:
    units.append(LidarUnit("velodyne", scene, backend, config="VLP-16"))
    units.append(LidarUnit("os1", scene, backend, config="OS1-128", overrides={{"columns": 1024}}))
pose = pose_to_matrix(0, 0, 2, 0, 0, 0)
for unit in units:
    for _ in range(2):
        unit.messages(unit.simulate(pose, 0), 0)
import os
resident_mb = int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
print(json.dumps({{"peak_mb": peak_rss_mb(), "resident_mb": resident_mb}}))
"""


def memory(triangles: int) -> None:
    root = str(Path(__file__).resolve().parents[1])
    found = {}
    for name, rig in (("one radar", False), ("radar + VLP-16 + OS1-128", True)):
        code = MEMORY_CHILD.format(root=root, triangles=triangles, rig=rig)
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        found[name] = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"{'memory: ' + name:<44s}  resident {found[name]['resident_mb']:7.1f} MiB  "
              f"peak {found[name]['peak_mb']:7.1f} MiB")
    one, rig = found["one radar"], found["radar + VLP-16 + OS1-128"]
    print(f"{'rig / one-sensor memory':<44s}  resident {rig['resident_mb'] / one['resident_mb']:.2f}x  "
          f"peak {rig['peak_mb'] / one['peak_mb']:.2f}x  (target <= 1.2x: one world, one BVH for all sensors)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--triangles", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    overhead(args.triangles, args.repeats)
    concurrency(args.triangles, args.repeats)
    memory(args.triangles)
    print(f"benchmark process peak memory {peak_rss_mb():.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
