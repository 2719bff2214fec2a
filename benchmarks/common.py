"""Shared pieces of the benchmarks: a large generated world and the bare tracing cost to compare with.

Every benchmark prints its times as ratios to the *bare* cost: raw embreex `run` calls on the same
BVH, with the same rays, the same thread count and chunking, measured in the same process run. The
ratio is what our code adds; absolute times depend on the machine and on what else it is doing.
"""
from __future__ import annotations

import resource
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import trimesh

from radarays_ros.tracing.embree import chunk_bounds, occlusion_far
from radarays_ros.world.mesh import TriMesh
from radarays_ros.world.scene import Scene
from radarays_ros.world.transforms import pose_to_matrix

from .rays import best_of  # noqa: F401  (re-exported: the benchmarks import it from here)


def _terrain(n_triangles: int, size: float, rng: np.random.Generator) -> TriMesh:
    cells = max(2, int(np.sqrt(n_triangles / 2)))
    xs = np.linspace(-size / 2, size / 2, cells + 1)
    gx, gy = np.meshgrid(xs, xs, indexing="ij")
    phase = rng.uniform(0, 2 * np.pi, 4)
    gz = 0.4 * np.sin(gx / 7 + phase[0]) * np.cos(gy / 9 + phase[1]) + 0.1 * np.sin(gx / 1.3 + phase[2] + gy / 1.7)
    vertices = np.stack([gx, gy, gz], axis=-1).reshape(-1, 3)
    idx = np.arange((cells + 1) ** 2).reshape(cells + 1, cells + 1)
    a, b, c, d = idx[:-1, :-1].ravel(), idx[1:, :-1].ravel(), idx[1:, 1:].ravel(), idx[:-1, 1:].ravel()
    faces = np.concatenate([np.stack([a, b, c], 1), np.stack([a, c, d], 1)])
    return TriMesh(vertices, faces, source="generated terrain")


def make_big_world(n_triangles: int = 1_000_000, seed: int = 0, size: float = 200.0, dynamic: int = 0) -> Scene:
    """A city on rolling terrain with about n_triangles triangles (~85 % terrain, the rest buildings and trees).

    `dynamic` extra small boxes are added as non-static entities (for pose-update benchmarks).
    """
    rng = np.random.default_rng(seed)
    scene = Scene(source=f"generated city ({n_triangles} triangles)")
    scene.add_entity("terrain::link::visual", _terrain(int(n_triangles * 0.85), size, rng), material="asphalt")
    budget = n_triangles * 0.15
    sphere = trimesh.creation.icosphere(subdivisions=3)  # 1280 triangles: a tree crown
    n_trees = int(budget * 0.4 / len(sphere.faces))
    building = trimesh.creation.box([1, 1, 1]).subdivide().subdivide().subdivide()  # 768 triangles
    n_buildings = int(budget * 0.6 / len(building.faces))
    for i in range(n_buildings):
        x, y = rng.uniform(-size / 2 + 10, size / 2 - 10, 2)
        if abs(x) < 8 and abs(y) < 8:  # keep the sensor's spot free
            x += 20
        sx, sy, sz = rng.uniform(4, 15), rng.uniform(4, 15), rng.uniform(5, 30)
        mesh = TriMesh(building.vertices * [sx, sy, sz] + [0, 0, sz / 2], building.faces)
        scene.add_entity(f"building_{i}::link::visual", mesh, pose_to_matrix(x, y, 0, 0, 0, rng.uniform(0, np.pi)), material="concrete")
    for i in range(n_trees):
        x, y = rng.uniform(-size / 2, size / 2, 2)
        mesh = TriMesh(sphere.vertices * 2.0 + [0, 0, 4], sphere.faces)
        scene.add_entity(f"tree_{i}::link::visual", mesh, pose_to_matrix(x, y, 0), material="vegetation")
    box = trimesh.creation.box([0.5, 0.5, 0.5])
    for i in range(dynamic):
        x, y = rng.uniform(-20, 20, 2)
        scene.add_entity(f"mover_{i}::link::visual", TriMesh(box.vertices, box.faces), pose_to_matrix(x, y, 1), static=False, material="metal")
    return scene


def bare_occluded_seconds(backend, origins: np.ndarray, directions: np.ndarray, reach: np.ndarray,
                          repeats: int = 3, threads: int | None = None) -> float:
    """Best-of-`repeats` time of raw embreex occlusion queries (any hit within each ray's reach: tfar the largest
    float32 under it, `embree.occlusion_far`, as `EmbreeBackend._occluded_static` asks) for these rays on the
    backend's static BVH, in the backend's spans and threads: the bare cost of the question `Backend.blocked`
    answers."""
    far = occlusion_far(np.asarray(reach, np.float64))
    return _bare_seconds(backend, origins, directions, repeats, threads, far.copy, query="OCCLUDED")


def bare_trace_seconds(backend, origins: np.ndarray, directions: np.ndarray, repeats: int = 3, threads: int | None = None) -> float:
    """Best-of-`repeats` time of raw embreex calls for these rays on the backend's static BVH.

    Same spans (embree.chunk_bounds) and thread count as the backend uses, so the ratio isolates our
    per-ray work.
    """
    return _bare_seconds(backend, origins, directions, repeats, threads,
                         lambda: np.full(len(origins), 1e30, np.float32), output=1)


def _bare_seconds(backend, origins, directions, repeats: int, threads: int | None, fresh_far, **query) -> float:
    """Best-of-`repeats` time of raw embreex `run(..., **query)` calls for these rays (directions normalised) on the
    backend's static BVH (the raw Embree scene behind the interface), in the backend's spans and threads;
    fresh_far() gives each run its own far distances (embreex writes each hit's distance into them, and rays whose
    far end already sits on their hit walk less of the BVH: 5-10 % faster than the real query)."""
    layer = backend._static
    o = np.ascontiguousarray(origins, dtype=np.float32)
    d = np.ascontiguousarray(directions, dtype=np.float32)
    d = d / np.linalg.norm(d, axis=1, keepdims=True)
    threads = threads or backend.threads
    n = len(o)
    # the very spans the backend uses, so the ratio is about our per-ray work, not about load balance
    bounds = chunk_bounds(n, threads) if threads > 1 else np.array([0, n])
    spans = list(zip(bounds[:-1], bounds[1:]))
    pool = ThreadPoolExecutor(threads) if threads > 1 else None
    best = np.inf
    for _ in range(repeats):
        far = fresh_far()
        start = time.perf_counter()
        if pool is None:
            layer.scene.run(o, d, dists=far, **query)
        else:
            list(pool.map(lambda ab: layer.scene.run(o[ab[0]:ab[1]], d[ab[0]:ab[1]], dists=far[ab[0]:ab[1]], **query),
                          spans))
        best = min(best, time.perf_counter() - start)
    if pool is not None:
        pool.shutdown()
    return best


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far, in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def report(name: str, seconds: float, bare_seconds: float | None = None, **extra) -> str:
    """One aligned line: name, time, rate, ratio to bare, extras. Printed and returned."""
    parts = [f"{name:<44s}", f"{seconds * 1e3:9.2f} ms", f"{1.0 / seconds:8.1f} /s"]
    if bare_seconds:
        parts.append(f"ratio to bare {seconds / bare_seconds:5.2f}x")
    parts += [f"{k} {v}" for k, v in extra.items()]
    line = "  ".join(parts)
    print(line, flush=True)
    return line
