"""Sensor or entity trajectories: poses over time, interpolated.

Rotating sensors fire azimuths/columns over a sweep; casting each from the pose at its own firing
time reproduces the motion distortion of a real sweep (what deskewing pipelines remove).
Positions are interpolated linearly, rotations by slerp; times outside the samples clamp to the ends.
"""
from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from ..errors import ConfigError
from .transforms import check_transform, pose_to_matrix, quaternions_to_matrices


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
        path = Path(path)
        rows = []
        try:
            with path.open() as fh:
                for line_no, row in enumerate(csv.reader(fh), 1):
                    if not row or row[0].strip().startswith("#"):
                        continue
                    try:
                        values = [float(v) for v in row]
                    except ValueError:
                        if not rows and line_no == 1:
                            continue  # header
                        raise ConfigError(f"{path}:{line_no}: expected numbers t,x,y,z,roll,pitch,yaw") from None
                    if len(values) != 7:
                        raise ConfigError(f"{path}:{line_no}: expected 7 columns t,x,y,z,roll,pitch,yaw, got {len(values)}")
                    rows.append(values)
        except FileNotFoundError:
            raise ConfigError(f"trajectory file {path} not found") from None
        if not rows:
            raise ConfigError(f"{path}: no poses")
        data = np.array(rows)
        if not np.all(np.isfinite(data)):
            raise ConfigError(f"{path}: contains NaN or inf values")
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
        i = np.clip(np.searchsorted(self.t_ns, t, side="right") - 1, 0, len(self.t_ns) - 2)
        t0, t1 = self.t_ns[i], self.t_ns[i + 1]
        a = np.clip((t - t0) / (t1 - t0).astype(np.float64), 0.0, 1.0)
        p0, p1 = self.poses[i, :3, 3], self.poses[i + 1, :3, 3]
        out[:, :3, 3] = p0 + (p1 - p0) * a[:, None]
        out[:, :3, :3] = _matrices_from_quat(_slerp(self._quats[i], self._quats[i + 1], a))
        return out


def _slerp(q0: np.ndarray, q1: np.ndarray, a: np.ndarray) -> np.ndarray:
    dot = np.clip(np.einsum("ij,ij->i", q0, q1), -1.0, 1.0)
    theta = np.arccos(dot)
    small = theta < 1e-6
    s = np.sin(theta)
    w0 = np.where(small, 1.0 - a, np.sin((1.0 - a) * theta) / np.where(small, 1.0, s))
    w1 = np.where(small, a, np.sin(a * theta) / np.where(small, 1.0, s))
    q = w0[:, None] * q0 + w1[:, None] * q1
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def poses_at(pose_or_trajectory, t_ns) -> np.ndarray:
    """(N, 4, 4) poses at times t_ns from either a fixed 4x4 pose or a Trajectory."""
    t = np.atleast_1d(np.asarray(t_ns, dtype=np.int64))
    if isinstance(pose_or_trajectory, Trajectory):
        return pose_or_trajectory.at(t)
    m = check_transform(pose_or_trajectory)
    return np.broadcast_to(m, (len(t), 4, 4)).copy()
