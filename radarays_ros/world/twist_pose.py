"""Where a rigid body with a constant twist is t seconds after the pose it has now.

    R(t) = exp([w] t) R0,    p(t) = p0 + v t

v: velocity of the body's origin, w: angular velocity, both in the world frame (`Entity.twist`); exp of
the skew matrix by Rodrigues' formula, exp([u] a) = I + sin(a) [u] + (1 - cos(a)) [u]^2 for a unit axis u
(Murray, Li and Sastry, "A Mathematical Introduction to Robotic Manipulation", 1994, eq. 2.14). A point
x0 of the body goes to R(t) R0^T (x0 - p0) + p0 + v t: its velocity at t = 0 is v + w x (x0 - p0), the
rigid-body point velocity the radar's Doppler uses. Used to trace each ray of a sweep against moving
entities where they are at that ray's time (tracing/embree.py).
"""
from __future__ import annotations

import numpy as np


def poses_at(pose: np.ndarray, velocity, angular, times) -> tuple[np.ndarray, np.ndarray]:
    """((N, 3, 3) rotations, (N, 3) positions) of a body at `pose` (4x4) with the twist (velocity,
    angular) after each of `times` (N,) seconds (negative: before)."""
    t = np.asarray(times, np.float64)
    w = np.asarray(angular, np.float64)
    speed = float(np.linalg.norm(w))
    positions = pose[:3, 3] + t[:, None] * np.asarray(velocity, np.float64)
    if speed == 0.0:
        return np.broadcast_to(pose[:3, :3], (len(t), 3, 3)).copy(), positions
    u = w / speed
    k = np.array([[0.0, -u[2], u[1]], [u[2], 0.0, -u[0]], [-u[1], u[0], 0.0]])
    angle = (speed * t)[:, None, None]
    turn = np.eye(3) + np.sin(angle) * k + (1.0 - np.cos(angle)) * (k @ k)
    return turn @ pose[:3, :3], positions
