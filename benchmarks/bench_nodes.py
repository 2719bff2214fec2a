"""Node overhead and rig memory.

    .venv/bin/python benchmarks/bench_nodes.py [--triangles 1000000] [--repeats 3]

1. Node overhead: what a node adds to a frame -- building the message from the sensor's arrays
   (radarays_ros.io) and serialising it to the CDR bytes it publishes (ros/convert.py to_cdr) --
   against the frame time, for an OS1-128 x 1024 cloud and a 400 x 3424 radar image on a
   1M-triangle world, medians over frames simulated in between (fresh memory each frame, as in the
   node). The typed-rclpy-message path is shown for comparison. Target: <= 10 % of the frame time.
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
import time
from pathlib import Path

import numpy as np


sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import bare_trace_seconds, best_of, make_big_world, peak_rss_mb, report  # noqa: E402
from radarays_ros.sensors.units import LidarUnit, RadarUnit  # noqa: E402
from radarays_ros.tracing import make_backend  # noqa: E402
from radarays_ros.world.transforms import pose_to_matrix  # noqa: E402

POSE = pose_to_matrix(0.0, 0.0, 2.0, 0.0, 0.0, 0.3)
# intensity fields a driver layout reads, which the lidar model computes on first access
LAYOUT_PHYSICS = {"ouster": ("ouster_reflectivity", "ouster_ambient"), "velodyne": ("velodyne_intensity",)}


def ros_session():
    """(make_send(msgtype, topic) -> publish, close): real rclpy + Fast DDS publishers, each with a
    subscriber in this process, in a private network namespace (root or user namespaces needed: DDS
    must not discover anything outside)."""
    import importlib.util
    import os

    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("bench_netns", root / "test" / "ros" / "netns.py")
    netns = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(netns)
    netns.enter()
    os.environ.setdefault("FASTRTPS_DEFAULT_PROFILES_FILE", str(root / "radarays_ros" / "data" / "ros" / "fastdds_large_messages.xml"))
    import rclpy
    from rclpy.qos import qos_profile_sensor_data

    from radarays_ros.ros.convert import rclpy_class

    rclpy.init()
    node = rclpy.create_node("bench_publisher")

    def make_send(msgtype: str, topic: str):
        cls = rclpy_class(msgtype)
        node.create_subscription(cls, topic, lambda raw: None, qos_profile_sensor_data, raw=True)
        pub = node.create_publisher(cls, topic, qos_profile_sensor_data)
        deadline = time.monotonic() + 10
        while pub.get_subscription_count() == 0 and time.monotonic() < deadline:
            rclpy.spin_once(node, timeout_sec=0.05)
        return pub.publish

    def close():
        node.destroy_node()
        rclpy.shutdown()
    return make_send, close


def overhead(triangles: int, repeats: int, publish: bool = False) -> None:
    try:
        from rclpy.serialization import serialize_message

        from radarays_ros.ros.convert import to_cdr, to_rclpy
    except ImportError as exc:
        print(f"node overhead: skipped, rclpy not available ({exc}); bash scripts/setup_ros_test.sh installs it")
        return
    scene = make_big_world(triangles)
    backend = make_backend("embree", scene)
    print(f"world: {scene.triangle_count} triangles, {backend.threads} tracing threads")

    lidar = LidarUnit("os1", scene, backend, config="OS1-128", overrides={"columns": 1024})
    radar = RadarUnit("radar", scene, backend, config="radarays_default")
    frames = max(5, 3 * repeats)
    make_send, close = ros_session() if publish else (None, lambda: None)
    for unit, topic in ((lidar, "points"), (radar, "radar/image")):
        send = make_send(unit.topics[topic], "bench/" + topic) if publish else (lambda data: None)
        # every frame is new, as in the node (fresh memory); the two publish paths alternate frame by
        # frame so that load from other processes affects both alike
        sim, build, node, typed = [], [], [], []
        for k in range(2 * frames):
            start = time.perf_counter()
            result = unit.simulate(POSE, 0)
            for name in LAYOUT_PHYSICS.get(getattr(unit.config, "layout", ""), ()):
                result.fields[name]  # physics the lidar computes on first access belongs to the frame
            simulated = time.perf_counter()
            msg = unit.messages(result, 0, {topic})[topic]
            built = time.perf_counter()
            if k % 2 == 0:
                send(to_cdr(msg))  # what the node publishes (Publisher.publish(bytes)); --publish: through DDS
                node.append(time.perf_counter() - simulated)
                build.append(built - simulated)
            else:
                serialize_message(to_rclpy(msg))  # a typed rclpy message instead
                typed.append(time.perf_counter() - simulated)
            sim.append(simulated - start)
        frame, build, cost, typed = (float(np.median(v)) for v in (sim, build, node, typed))
        size_mb = len(unit.messages(unit.simulate(POSE, 0), 0, {topic})[topic].data) / 1e6
        if unit is lidar:
            cfg = lidar.config
            origins = cfg.origins.reshape(-1, 3) @ POSE[:3, :3].T + POSE[:3, 3]
            dirs = cfg.directions.reshape(-1, 3) @ POSE[:3, :3].T
            bare = bare_trace_seconds(backend, origins, dirs, repeats)
            label = f"OS1-128 x {cfg.cols} cloud ({size_mb:.1f} MB)"
        else:
            bare = None
            label = f"radar {radar.config.azimuth.count} x {radar.config.n_bins} image ({size_mb:.1f} MB)"
        report(f"frame: {label}", frame, bare)
        report(f"  node overhead (message {build * 1e3:.2f} ms + CDR bytes{' + publish' if publish else ''})", cost, None,
               **{"share of frame": f"{100 * cost / frame:.1f} %"})
        report("  (with a typed rclpy message instead, not published)", typed, None,
               **{"share of frame": f"{100 * typed / frame:.1f} %"})
    close()


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
from radarays_ros.sensors.units import LidarUnit, RadarUnit
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
    parser.add_argument("--publish", action="store_true",
                        help="also publish each message through rclpy/Fast DDS to a subscriber (enters a private "
                             "network namespace: needs root or user namespaces)")
    args = parser.parse_args()
    overhead(args.triangles, args.repeats, args.publish)
    concurrency(args.triangles, args.repeats)
    memory(args.triangles)
    print(f"benchmark process peak memory {peak_rss_mb():.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
