"""Tracing benchmark: BVH build, throughput through our interface vs bare embreex, pose updates.

Run: .venv/bin/python -m benchmarks.bench_tracing [--triangles 1000000]
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import trimesh

from radarays_ros.tracing import make_backend
from radarays_ros.world.mesh import TriMesh
from radarays_ros.world.transforms import pose_to_matrix

from .common import bare_trace_seconds, best_of, make_big_world, peak_rss_mb, report
from .rays import incoherent_rays, lidar_like_rays


def throughput(scene, rays: dict, world_label: str) -> None:
    for label, (o, d) in rays.items():
        for threads in (1, 2):
            be = make_backend("embree", scene, threads=threads)
            ours = best_of(lambda: be.trace(o, d))
            bare = bare_trace_seconds(be, o, d, threads=threads)
            report(f"{world_label}, {label}, {threads} thread(s)", ours, bare,
                   Mrays_s=f"{len(o) / ours / 1e6:.2f}", bare_Mrays_s=f"{len(o) / bare / 1e6:.2f}",
                   efficiency=f"{bare / ours * 100:.0f}%")
            be.close()


def add_movers(scene, count: int, rng) -> None:
    box = trimesh.creation.box([0.5, 0.5, 0.5])
    for i in range(count):
        x, y = rng.uniform(-20, 20, 2)
        scene.add_entity(f"mover_{i}::link::visual", TriMesh(box.vertices, box.faces), pose_to_matrix(x, y, 1), static=False)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--triangles", type=int, default=1_000_000)
    p.add_argument("--rays", type=int, default=262_144)
    args = p.parse_args(argv)

    rss0 = peak_rss_mb()
    start = time.perf_counter()
    scene = make_big_world(args.triangles)
    gen = time.perf_counter() - start
    rss1 = peak_rss_mb()
    start = time.perf_counter()
    backend = make_backend("embree", scene, threads=2)
    backend.trace(np.zeros((1, 3)), np.array([[1.0, 0, 0]]))  # Embree commits (builds) on first use
    build = time.perf_counter() - start
    print(f"world: {scene.triangle_count} triangles, {len(scene)} entities (generated in {gen:.2f} s)")
    print(f"BVH build (static + dynamic layer): {build:.2f} s; peak RSS world {rss1 - rss0:.0f} MiB, "
          f"+ backend {peak_rss_mb() - rss1:.0f} MiB (total {peak_rss_mb():.0f} MiB)")

    rng = np.random.default_rng(0)
    rays = {"coherent (lidar-like)": lidar_like_rays(args.rays), "incoherent (random)": incoherent_rays(args.rays, rng)}
    throughput(scene, rays, "static world")
    # 50 moving boxes around the sensor: they live in the dynamic layer, traced after the static one
    add_movers(scene, 50, rng)
    throughput(scene, rays, "+50 movers")

    backend = make_backend("embree", scene, threads=2)
    movers = [e.id for e in scene.entities if not e.static]
    poses = [pose_to_matrix(*rng.uniform(-20, 20, 2), 1, 0, 0, rng.uniform(0, 6)) for _ in movers]
    n_updates = 200
    start = time.perf_counter()
    for _ in range(n_updates):
        scene.set_poses(zip(movers, poses))
    one_by_one = (time.perf_counter() - start) / n_updates
    stacked = np.stack(poses)
    start = time.perf_counter()
    for _ in range(n_updates):
        scene.set_poses_array(movers, stacked)
    batched = (time.perf_counter() - start) / n_updates
    start = time.perf_counter()
    backend._sync()
    rebuild = time.perf_counter() - start
    print(f"pose update of {len(movers)} entities: {batched * 1e3:.3f} ms (set_poses_array), {one_by_one * 1e3:.3f} ms "
          f"(set_poses, pose by pose); merged dynamic layer rebuild at the next trace {rebuild * 1e3:.3f} ms; "
          f"static rebuilds {backend.static_rebuilds}")


if __name__ == "__main__":
    main()
