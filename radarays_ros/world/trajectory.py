"""Sensor or entity trajectories: poses over time, interpolated.

Rotating sensors fire azimuths/columns over a sweep; casting each from the pose at its own firing
time reproduces the motion distortion of a real sweep (what deskewing pipelines remove).
Positions are interpolated linearly, rotations by slerp; times outside the samples clamp to the ends.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import ConfigError
from .number_table import read_number_table
from .transforms import MAX_COORDINATE_M, check_transform, pose_to_matrix, quaternions_to_matrices, slerp

MAX_TIME_S = 9.2e9  # int64 nanoseconds reach 9.22e9 s


def _quat_from_matrices(r: np.ndarray) -> np.ndarray:
    """(K, 3, 3) rotations -> (K, 4) unit quaternions (w, x, y, z), sign-continuous along K."""
    from scipy.spatial.transform import Rotation

    xyzw = Rotation.from_matrix(r).as_quat()
    q = np.concatenate([xyzw[:, 3:], xyzw[:, :3]], axis=1)
    for i in range(1, len(q)):  # keep neighbours in the same hemisphere so slerp takes the short way
        if np.dot(q[i], q[i - 1]) < 0:
            q[i] = -q[i]
    return q


def _matrices_from_quat(q: np.ndarray) -> np.ndarray:
    """(K, 4) unit quaternions (w, x, y, z) -> (K, 3, 3)."""
    return quaternions_to_matrices(np.concatenate([q[:, 1:], q[:, :1]], axis=1))


class Trajectory:
    """Poses (world <- body) at increasing times in integer nanoseconds."""

    def __init__(self, t_ns, poses):
        t = np.asarray(t_ns, dtype=np.int64).reshape(-1)
        p = np.asarray(poses, dtype=np.float64).reshape(-1, 4, 4)
        if len(t) == 0 or len(t) != len(p):
            raise ConfigError(f"trajectory: need as many times as poses (got {len(t)} and {len(p)}), at least one")
        if np.any(np.diff(t) <= 0):
            raise ConfigError("trajectory: times must be strictly increasing")
        for i, m in enumerate(p):
            check_transform(m, what=f"trajectory pose {i}")
        self.t_ns = t
        self.poses = p
        self._quats = _quat_from_matrices(p[:, :3, :3])

    @classmethod
    def static(cls, matrix) -> "Trajectory":
        return cls([0], [check_transform(matrix)])

    @classmethod
    def from_csv(cls, path: str | Path) -> "Trajectory":
        """CSV with columns t (s), x, y, z, roll, pitch, yaw (radians); a header line is allowed."""
        data = read_number_table(path, (7,), "t,x,y,z,roll,pitch,yaw", "trajectory file")
        if np.abs(data[:, 0]).max() > MAX_TIME_S or np.abs(data[:, 1:4]).max() > MAX_COORDINATE_M:
            raise ConfigError(f"trajectory file {path}: times beyond ±{MAX_TIME_S:g} s (int64 nanoseconds) or "
                              f"positions beyond ±{MAX_COORDINATE_M:g} m")
        t_ns = np.round(data[:, 0] * 1e9).astype(np.int64)
        return cls(t_ns, [pose_to_matrix(*r[1:]) for r in data])

    @property
    def start_ns(self) -> int:
        return int(self.t_ns[0])

    @property
    def end_ns(self) -> int:
        return int(self.t_ns[-1])

    def at(self, t_ns) -> np.ndarray:
        """(N, 4, 4) poses at the given times (scalar -> (1, 4, 4))."""
        t = np.atleast_1d(np.asarray(t_ns, dtype=np.int64))
        out = np.tile(np.eye(4), (len(t), 1, 1))
        if len(self.t_ns) == 1:
            out[:] = self.poses[0]
            return out
        i, a = self._segments(t)
        out[:, :3, 3] = self._positions(i, a)
        out[:, :3, :3] = _matrices_from_quat(slerp(self._quats[i], self._quats[i + 1], a))
        return out

    def positions_at(self, t_ns) -> np.ndarray:
        """(N, 3) positions at the given times: the translations of `at` (without its slerp)."""
        t = np.atleast_1d(np.asarray(t_ns, dtype=np.int64))
        if len(self.t_ns) == 1:
            return np.tile(self.poses[0, :3, 3], (len(t), 1))
        return self._positions(*self._segments(t))

    def _segments(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per time: the segment i (samples i, i + 1) and the fraction a along it, 0 / 1 past the ends."""
        i = np.clip(np.searchsorted(self.t_ns, t, side="right") - 1, 0, len(self.t_ns) - 2)
        t0, t1 = self.t_ns[i], self.t_ns[i + 1]
        return i, np.clip((t - t0) / (t1 - t0).astype(np.float64), 0.0, 1.0)

    def _positions(self, i: np.ndarray, a: np.ndarray) -> np.ndarray:
        p0, p1 = self.poses[i, :3, 3], self.poses[i + 1, :3, 3]
        return p0 + (p1 - p0) * a[:, None]


def poses_at(pose_or_trajectory, t_ns) -> np.ndarray:
    """(N, 4, 4) poses at times t_ns from either a fixed 4x4 pose or a Trajectory."""
    t = np.atleast_1d(np.asarray(t_ns, dtype=np.int64))
    if isinstance(pose_or_trajectory, Trajectory):
        return pose_or_trajectory.at(t)
    m = check_transform(pose_or_trajectory)
    return np.broadcast_to(m, (len(t), 4, 4)).copy()
