"""Ray sets and the timer every benchmark shares (numpy only, so bench_gpu.py runs without trimesh/embreex).

* `lidar_like_rays`: coherent rays, one origin and a regular azimuth x elevation grid (a spinning lidar);
* `incoherent_rays`: random origins in the generated city and random directions (multi-bounce radar rays);
* `best_of`: best wall time of a few calls after one warm-up call (Warp compiles on its first launch).
"""
from __future__ import annotations

import time

import numpy as np


def lidar_like_rays(n: int, height: float = 1.8):
    """(origins, directions) float32: 128 elevations in +-22.5 deg x n // 128 azimuths, from (0, 0, height)."""
    rows = 128
    az = np.linspace(-np.pi, np.pi, n // rows, endpoint=False)
    el = np.radians(np.linspace(-22.5, 22.5, rows))
    a, e = np.meshgrid(az, el)
    d = np.stack([np.cos(e) * np.cos(a), np.cos(e) * np.sin(a), np.sin(e)], -1).reshape(-1, 3)
    return np.tile(np.float32([0.0, 0.0, height]), (len(d), 1)), d.astype(np.float32)


def incoherent_rays(n: int, rng: np.random.Generator):
    """(origins, directions) float32: origins uniform in the city box, directions uniform on the sphere."""
    o = np.column_stack([rng.uniform(-80, 80, n), rng.uniform(-80, 80, n), rng.uniform(0.5, 20, n)])
    d = rng.normal(size=(n, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    return o.astype(np.float32), d.astype(np.float32)  # sensors hand the backend float32 unit vectors


def best_of(fn, repeats: int = 3) -> float:
    """Best wall time of `repeats` calls of fn() (after one warm-up call)."""
    fn()
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best
