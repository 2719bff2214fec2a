"""Gazebo mirror costs: pose updates of 100 moving entities at 60 Hz, and a spawned 10k-triangle model.

    .venv/bin/python -m benchmarks.bench_gazebo [--entities 100] [--rate 60] [--frames 600]

1. Pose updates: serialized Pose_V messages (each of the N models, its link and its visual: 3N poses,
   every model moving every frame) go through `GazeboMirror.on_poses` exactly as they arrive from
   gz-transport: decode, compose model·link·visual, 1 mm / 1 mrad thresholds, Scene.set_poses with an
   Embree backend listening. CPU time per message x rate = share of one core (budget: <= 5 %).
   The Scene.set_poses_array share (batched validation, backend notification) is reported separately.
2. Spawn: a Scene message announcing a model whose visual is a 10,000-triangle STL (a fresh file
   each time, so no mesh cache helps) goes through `GazeboMirror.on_spawned`; reported: time until
   the entity is in the scene (budget: <= 50 ms), and until a first trace has rebuilt the dynamic BVH.
3. With --peer (root or unprivileged user namespaces; needs build/gz_peer/gz_peer from
   scripts/setup_gz_peer.sh): the same 100 moving models published at 60 Hz by the real Ignition
   Transport peer in a private network namespace; reported: this whole process's CPU time per second
   (transport thread, decoding, mirror, scene) while following them; before that, the same process
   receiving the same topics with no-op callbacks (the floor of any Python follower). Then: a
   spawned mesh's latency, and three kills (no BYE) and restarts of the peer: time from the new
   peer's start until the mirror is alive again.
   The in-process figures come twice: back to back (hot caches) and paced at the message rate with
   the thread asleep in between, as when following Gazebo (on a busy machine the paced cost is
   several times the hot one).
Timings are best/median of repeats in one run; other processes share the 2 cores, so compare ratios.
"""
from __future__ import annotations

import argparse
import math
import tempfile
import time
from pathlib import Path

import numpy as np
import trimesh

from radarays_ros.gazebo import protos
from radarays_ros.gazebo.mirror import GazeboMirror, MirrorConfig
from radarays_ros.tracing import make_backend
from radarays_ros.world import primitives
from radarays_ros.world.scene import Scene

from .common import report


class _NoTransport:
    """The mirror's messages are fed by hand here; nothing talks to a network."""

    def alive(self, topic):  # pragma: no cover - not asked
        return True


def _set_pose(pose, name, entity_id, x, y, z, yaw):
    pose.name, pose.id = name, entity_id
    pose.position.x, pose.position.y, pose.position.z = x, y, z
    pose.orientation.z, pose.orientation.w = math.sin(yaw / 2), math.cos(yaw / 2)


def _movers_scene(n: int) -> protos.Scene:
    msg = protos.Scene(name="bench")
    for i in range(n):
        model = msg.model.add(name=f"mover_{i}", id=1000 + 3 * i)
        _set_pose(model.pose, model.name, model.id, i % 10 * 3.0, i // 10 * 3.0, 0.5, 0.0)
        link = model.link.add(name="link", id=model.id + 1)
        link.pose.orientation.w = 1.0
        visual = link.visual.add(name="visual", id=model.id + 2)
        visual.pose.orientation.w = 1.0
        visual.geometry.type = protos.Geometry.BOX
        visual.geometry.box.size.x = visual.geometry.box.size.y = visual.geometry.box.size.z = 1.0
    return msg


def _pose_frames(n: int, frames: int, rate: float) -> list[bytes]:
    out = []
    for k in range(frames):
        t = k / rate
        msg = protos.Pose_V()
        msg.header.stamp.sec, msg.header.stamp.nsec = int(t), int((t % 1) * 1e9)
        for i in range(n):
            base = 1000 + 3 * i
            angle = 0.5 * t + i  # each model drives a 1 m circle: ~8 mm and 8 mrad per frame at 60 Hz
            _set_pose(msg.pose.add(), f"mover_{i}", base, i % 10 * 3.0 + math.cos(angle), i // 10 * 3.0 + math.sin(angle),
                      0.5, angle)
            _set_pose(msg.pose.add(), "link", base + 1, 0, 0, 0, 0)
            _set_pose(msg.pose.add(), "visual", base + 2, 0, 0, 0, 0)
        out.append(msg.SerializeToString())
    return out


def _mirror(scene: Scene) -> GazeboMirror:
    mirror = GazeboMirror(MirrorConfig(world="bench", max_rate_hz=1e9), scene=scene, client=_NoTransport())
    return mirror


def bench_pose_updates(n: int, rate: float, frames: int) -> None:
    scene = Scene()
    scene.add_entity("ground", primitives.box((100, 100, 0.1)), static=True)
    backend = make_backend("embree", scene)
    mirror = _mirror(scene)
    mirror.apply_scene_info(_movers_scene(n))
    payloads = _pose_frames(n, frames, rate)
    mirror.on_poses(payloads[0], "gz.msgs.Pose_V")  # warm-up
    cpu0, wall0 = time.process_time(), time.perf_counter()
    for payload in payloads[1:]:
        mirror.on_poses(payload, "gz.msgs.Pose_V")
    cpu = (time.process_time() - cpu0) / (frames - 1)
    wall = (time.perf_counter() - wall0) / (frames - 1)
    moved_per_frame = mirror.moved / mirror.updates

    # the scene's share: the same number of moves through the batched setter the mirror calls
    moving = [e for e in scene.entities if not e.static]
    ids = np.array([e.id for e in moving], dtype=np.int64)
    poses = np.stack([e.pose for e in moving])
    t0 = time.process_time()
    for _ in range(200):
        scene.set_poses_array(ids, poses)
    set_poses = (time.process_time() - t0) / 200

    report(f"pose update, {n} moving entities ({3 * n} poses)", wall,
           cpu_ms=f"{cpu * 1e3:.3f}", core_at_rate=f"{100 * cpu * rate:.2f}% of one core at {rate:g} Hz",
           moved_per_msg=f"{moved_per_frame:.0f}",
           scene_set_poses_share=f"{100 * set_poses / cpu:.0f}%",
           mirror_alone=f"{100 * max(cpu - set_poses, 0.0) * rate:.2f}% of one core")

    # paced: one message per 1/rate s with the thread asleep in between, as when following Gazebo
    # (a thread that wakes for each message finds cold caches: on a busy machine the same work
    # costs several times the back-to-back figure above)
    paced = payloads[1 : 1 + min(len(payloads) - 1, int(2 * rate))]
    mirror._last_stamp_ns = None  # the same stamps again: not a restart
    cpu_paced = 0.0
    for payload in paced:
        time.sleep(1.0 / rate)
        t0 = time.thread_time()
        mirror.on_poses(payload, "gz.msgs.Pose_V")
        cpu_paced += time.thread_time() - t0
    cpu_paced /= len(paced)
    report(f"pose update paced at {rate:g} Hz (cold)", cpu_paced, cpu_ms=f"{cpu_paced * 1e3:.3f}",
           core_at_rate=f"{100 * cpu_paced * rate:.2f}% of one core")
    # the dynamic BVH rebuild those moves cause happens in the next trace (the sensors' cost):
    # (the same stamps a third time: without the reset every message would be older than the last one seen,
    # dropped, and the row would time a trace of an unchanged scene)
    origin, down = np.array([[0.0, 0.0, 5.0]]), np.array([[0.0, 0.0, -1.0]])
    mirror._last_stamp_ns = None
    moved, rebuilds = mirror.moved, backend.dynamic_rebuilds
    t0 = time.perf_counter()
    for payload in payloads[1:61]:
        mirror.on_poses(payload, "gz.msgs.Pose_V")
        backend.trace(origin, down)
    report(f"  + one trace per update (dynamic rebuild)", (time.perf_counter() - t0) / 60,
           moved_per_update=f"{(mirror.moved - moved) / 60:.0f}",
           rebuilds_per_update=f"{(backend.dynamic_rebuilds - rebuilds) / 60:.2f}")
    backend.close()


def _grid_stl(path: Path, n_triangles: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    nx, ny = 50, n_triangles // 100  # 2 * nx * ny triangles
    x, y = np.meshgrid(np.linspace(-1, 1, nx + 1), np.linspace(-1, 1, ny + 1))
    z = 0.5 + 0.05 * rng.random(x.shape)
    vertices = np.stack([x.ravel(), y.ravel(), z.ravel()], axis=1)
    idx = np.arange((nx + 1) * (ny + 1)).reshape(ny + 1, nx + 1)
    a, b, c, d = idx[:-1, :-1].ravel(), idx[:-1, 1:].ravel(), idx[1:, 1:].ravel(), idx[1:, :-1].ravel()
    faces = np.concatenate([np.stack([a, b, c], 1), np.stack([a, c, d], 1)])
    trimesh.Trimesh(vertices, faces, process=False).export(path)


def bench_spawn(n_triangles: int, repeats: int = 7) -> None:
    scene = Scene()
    scene.add_entity("ground", primitives.box((100, 100, 0.1)), static=True)
    backend = make_backend("embree", scene)
    mirror = _mirror(scene)
    mirror.apply_scene_info(protos.Scene(name="bench"))
    in_scene, traceable = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(repeats):
            path = Path(tmp) / f"model_{k}.stl"
            _grid_stl(path, n_triangles, seed=k)
            msg = protos.Scene(name="bench")
            model = msg.model.add(name=f"spawned_{k}", id=5000 + 3 * k)
            _set_pose(model.pose, model.name, model.id, 4.0 * k, 0.0, 0.0, 0.0)
            link = model.link.add(name="link", id=model.id + 1)
            link.pose.orientation.w = 1.0
            visual = link.visual.add(name="visual", id=model.id + 2)
            visual.pose.orientation.w = 1.0
            visual.geometry.type = protos.Geometry.MESH
            visual.geometry.mesh.filename = str(path)
            payload = msg.SerializeToString()
            t0 = time.perf_counter()
            mirror.on_spawned(payload, "gz.msgs.Scene")
            t1 = time.perf_counter()
            hit = backend.trace(np.array([[4.0 * k, 0.0, 5.0]]), np.array([[0.0, 0.0, -1.0]]))
            t2 = time.perf_counter()
            assert scene.find(f"spawned_{k}::link::visual") is not None and hit.distance[0] < 4.6
            in_scene.append(t1 - t0)
            traceable.append(t2 - t0)
    triangles = scene.entity(f"spawned_0::link::visual").mesh.n_faces
    report(f"spawn {triangles}-triangle mesh model: in scene", float(np.median(in_scene)),
           best_ms=f"{min(in_scene) * 1e3:.2f}")
    report(f"spawn {triangles}-triangle mesh model: + first trace", float(np.median(traceable)),
           best_ms=f"{min(traceable) * 1e3:.2f}")
    backend.close()


def bench_peer(n: int, rate: float, seconds: float = 5.0, max_rate_hz: float | None = None) -> None:
    import subprocess
    import sys
    import uuid

    repo = Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(repo / "test"))  # the tests' support package
    from support import gz_netns  # the tests' private-namespace helper

    from radarays_ros.gazebo.transport import GzTransportClient

    gz_netns.ensure_isolated()
    world, partition = f"bench{uuid.uuid4().hex[:6]}", f"bench_{uuid.uuid4().hex[:6]}"
    env = dict(__import__("os").environ, IGN_PARTITION=partition, IGN_IP="127.0.0.1")
    peer = subprocess.Popen([str(repo / "build" / "gz_peer" / "gz_peer"), world], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    try:
        assert peer.stdout.readline().strip() == "ready"
        for command in (f"swarm {n}", f"rate {rate}"):
            peer.stdin.write(command + "\n")
            peer.stdin.flush()
            peer.stdout.readline()
        client = GzTransportClient(partition=partition, host_ip="127.0.0.1")
        # the floor: this process receiving the same topics with nothing done per message
        received = [0]
        for topic in ("pose/info", "clock"):
            client.subscribe(f"/world/{world}/{topic}", lambda p, t: received.__setitem__(0, received[0] + 1))
        end = time.monotonic() + 10
        while time.monotonic() < end and received[0] < 2 * rate:
            time.sleep(0.05)
        received0, cpu0, wall0 = received[0], time.process_time(), time.perf_counter()
        time.sleep(seconds / 2)
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        report("peer: receiving only (pose/info + clock, no-op callbacks)", cpu / max(received[0] - received0, 1),
               messages_per_s=f"{(received[0] - received0) / wall:.1f}", process_cpu=f"{100 * cpu / wall:.2f}% of one core")
        scene = Scene()
        backend = make_backend("embree", scene)
        config = MirrorConfig(world=world) if max_rate_hz is None else MirrorConfig(world=world, max_rate_hz=max_rate_hz)
        mirror = GazeboMirror(config, scene=scene, client=client).start()
        end = time.monotonic() + 20
        while time.monotonic() < end and not (mirror.alive and scene.find(f"mover_{n - 1}::link::visual") is not None):
            time.sleep(0.05)
        time.sleep(1.0)
        updates0, moved0 = mirror.updates, mirror.moved
        cpu0, wall0 = time.process_time(), time.perf_counter()
        time.sleep(seconds)
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        updates = mirror.updates - updates0
        cap = f", mirror capped at {config.max_rate_hz:g} Hz" if config.max_rate_hz < rate else ""
        report(f"peer: {n} moving models at {rate:g} Hz{cap}, whole process", cpu / max(updates, 1),
               messages_per_s=f"{updates / wall:.1f}", moved_per_s=f"{(mirror.moved - moved0) / wall:.0f}",
               process_cpu=f"{100 * cpu / wall:.2f}% of one core")
        latencies = []
        with tempfile.TemporaryDirectory() as tmp:
            for k in range(5):
                path = Path(tmp) / f"spawned_{k}.stl"
                _grid_stl(path, 10_000, seed=k)
                name = f"spawned_{k}::link::visual"
                t0 = time.perf_counter()
                peer.stdin.write(f"mesh spawned_{k} {9000 + 3 * k} {path} {4.0 * k} 40 0\n")
                peer.stdin.flush()
                while scene.find(name) is None and time.perf_counter() - t0 < 5:
                    time.sleep(0.0005)
                latencies.append(time.perf_counter() - t0)
                peer.stdout.readline()
        report("peer: spawn 10k-triangle mesh, command -> in scene", float(np.median(latencies)),
               best_ms=f"{min(latencies) * 1e3:.2f}", note="includes the peer's publish and gz-transport")
        # a crashed Gazebo (no BYE) started again: time until the mirror follows the new one
        recoveries = []
        for _ in range(3):
            peer.kill()
            peer.wait()
            end = time.monotonic() + 10
            while time.monotonic() < end and mirror.alive:
                time.sleep(0.01)
            time.sleep(0.5)  # Gazebo takes a while to start again: the mirror is already asking the dead one
            peer = subprocess.Popen([str(repo / "build" / "gz_peer" / "gz_peer"), world], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
            assert peer.stdout.readline().strip() == "ready"
            t0 = time.perf_counter()
            while not mirror.alive and time.perf_counter() - t0 < 15:
                time.sleep(0.002)
            recoveries.append(time.perf_counter() - t0)
        report("peer: killed and restarted, new peer ready -> mirror alive", float(np.median(recoveries)),
               worst_ms=f"{max(recoveries) * 1e3:.0f}", note=f"stale_after_s {config.stale_after_s:g}")
        mirror.close()
        backend.close()
        client.close()
    finally:
        peer.stdin.write("quit\n")
        peer.stdin.flush()
        peer.wait(timeout=5)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entities", type=int, default=100)
    parser.add_argument("--rate", type=float, default=60.0)
    parser.add_argument("--frames", type=int, default=600)
    parser.add_argument("--triangles", type=int, default=10_000)
    parser.add_argument("--peer", action="store_true", help="also follow the real C++ peer end to end")
    parser.add_argument("--max-rate-hz", type=float, default=None,
                        help="with --peer: the mirror's pose update cap (default: MirrorConfig's)")
    args = parser.parse_args(argv)
    bench_pose_updates(args.entities, args.rate, args.frames)
    bench_spawn(args.triangles)
    if args.peer:
        bench_peer(args.entities, args.rate, max_rate_hz=args.max_rate_hz)


if __name__ == "__main__":
    main()
