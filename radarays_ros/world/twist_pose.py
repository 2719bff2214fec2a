"""Where a rigid body with a constant twist is t seconds after the pose it has now: the screw motion.

A constant twist (v, w) (v: velocity of the body's origin p0, w: angular velocity, both in the world frame, as
`Entity.twist`) is a constant velocity field v(x) = v + w x (x - p0) over space (Murray, Li and Sastry, "A
Mathematical Introduction to Robotic Manipulation", 1994, Sec. 2.3). Its flow for t seconds turns the body by
exp([w] t) (Rodrigues: exp([u] a) = I + sin(a) [u] + (1 - cos(a)) [u]^2 for a unit axis u, eq. 2.14) and moves
each of its points on a helix about the screw axis (eq. 2.36). Written for the origin with u = w / |w|, a = |w| t,
its velocity's parts along the axis, h = u . v, and across it, v_perp = v - h u:

    R(t) = exp([w] t) R0,   p(t) = p0 + (sin(a) / |w|) v_perp + (2 sin^2(a / 2) / |w|) (u x v_perp) + h u t

(exact for any reference point of the body: every point of it follows the same motion; p0 + v t where w = 0;
no division by |w| near 0). A car turning at a constant rate moves on its circle. Used to trace each ray of a
sweep against moving entities where they are at that ray's time (tracing/embree.py) and for their glints
(radar/physical/facet_glints.py); the velocity of a point there is still v + w x (x - p0) (motion.py).
"""
from __future__ import annotations

import numpy as np

from ..compiled import kernel


def poses_at(pose: np.ndarray, velocity, angular, times) -> tuple[np.ndarray, np.ndarray]:
    """((N, 3, 3) rotations, (N, 3) positions) of a body at `pose` (4x4) with the twist (velocity,
    angular) after each of `times` (N,) seconds (negative: before)."""
    n = len(np.asarray(times))
    return poses_after(np.broadcast_to(pose[:3, :3], (n, 3, 3)), np.broadcast_to(pose[:3, 3], (n, 3)),
                       np.broadcast_to(np.asarray(velocity, np.float64), (n, 3)),
                       np.broadcast_to(np.asarray(angular, np.float64), (n, 3)), times)


def poses_after(rotation, position, velocity, angular, times) -> tuple[np.ndarray, np.ndarray]:
    """The same for N bodies at once: rotations (N, 3, 3), positions, velocities and angular velocities
    (N, 3) each, times (N,). A body that does not turn keeps its rotation's very bits."""
    n = len(times)
    turned, moved = np.empty((n, 3, 3)), np.empty((n, 3))
    _poses_after(*(np.ascontiguousarray(a, np.float64) for a in (rotation, position, velocity, angular, times)),
                 turned, moved)
    return turned, moved


def swept_boxes(rotation, position, velocity, angular, radius, first: float, last: float) -> np.ndarray:
    """(k, 2, 3) float64 world boxes (lowest, highest corner) that k bodies stay in from `first` to `last`
    seconds after their poses (rotations (k, 3, 3), positions, velocities, angular velocities (k, 3) each),
    whatever they turn: the box of the origin's positions at both ends, widened by the radius (k,) of the body's
    vertices about its origin and by how far the origin's arc leaves that chord (at most |v| |w| dt^2 / 8, the
    sagitta of an arc of length |v| dt turning by |w| dt), each with a margin for float32 round-off."""
    k = len(rotation)
    ends = np.stack([poses_after(rotation, position, velocity, angular, np.full(k, when))[1]
                     for when in (first, last)], axis=1)  # (k, 2, 3)
    bend = np.linalg.norm(velocity, axis=1) * np.linalg.norm(angular, axis=1) * (last - first) ** 2 / 8
    margin = (np.asarray(radius, np.float64) * (1 + 1e-6) + 1e-4 + bend * (1 + 1e-6))[:, None]
    return np.stack([ends.min(axis=1) - margin, ends.max(axis=1) + margin], axis=1)


@kernel
def _poses_after(rotation, position, velocity, angular, times, turned, moved):
    """poses_after's loop (a compiled pass: numpy's stacked 3x3 products cost 100 ns each)."""
    for i in range(times.shape[0]):
        t = times[i]
        wx, wy, wz = angular[i, 0], angular[i, 1], angular[i, 2]
        speed = np.sqrt(wx * wx + wy * wy + wz * wz)
        if speed == 0.0:
            for r in range(3):
                moved[i, r] = position[i, r] + t * velocity[i, r]
            turned[i] = rotation[i]
            continue
        ux, uy, uz = wx / speed, wy / speed, wz / speed
        h = ux * velocity[i, 0] + uy * velocity[i, 1] + uz * velocity[i, 2]
        px, py, pz = velocity[i, 0] - h * ux, velocity[i, 1] - h * uy, velocity[i, 2] - h * uz  # v_perp
        a = speed * t
        along, around = np.sin(a) / speed, 2.0 * np.sin(0.5 * a) ** 2 / speed
        moved[i, 0] = position[i, 0] + along * px + around * (uy * pz - uz * py) + h * ux * t
        moved[i, 1] = position[i, 1] + along * py + around * (uz * px - ux * pz) + h * uy * t
        moved[i, 2] = position[i, 2] + along * pz + around * (ux * py - uy * px) + h * uz * t
        s, c = np.sin(a), 1.0 - np.cos(a)
        # exp([u] a) = I + sin(a) [u] + (1 - cos(a)) [u]^2, with [u]^2 = u u^T - I
        turn = np.empty((3, 3))
        turn[0, 0], turn[0, 1], turn[0, 2] = 1.0 + c * (ux * ux - 1.0), -s * uz + c * ux * uy, s * uy + c * ux * uz
        turn[1, 0], turn[1, 1], turn[1, 2] = s * uz + c * uy * ux, 1.0 + c * (uy * uy - 1.0), -s * ux + c * uy * uz
        turn[2, 0], turn[2, 1], turn[2, 2] = -s * uy + c * uz * ux, s * ux + c * uz * uy, 1.0 + c * (uz * uz - 1.0)
        for r in range(3):
            for q in range(3):
                turned[i, r, q] = turn[r, 0] * rotation[i, 0, q] + turn[r, 1] * rotation[i, 1, q] + turn[r, 2] * rotation[i, 2, q]
