"""Rigid transforms as 4x4 float64 matrices.

Roll/pitch/yaw follow SDF and URDF (and REP-103): R = Rz(yaw) @ Ry(pitch) @ Rx(roll).
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import ConfigError
from ..validate import check_pose6


_EYE3 = np.eye(3)


def rpy_to_matrix(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """3x3 rotation for fixed-axis roll about x, then pitch about y, then yaw about z."""
    cr, sr = math.cos(roll), math.sin(roll)
    cp, sp = math.cos(pitch), math.sin(pitch)
    cy, sy = math.cos(yaw), math.sin(yaw)
    return np.array(
        [
            [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
            [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
            [-sp, cp * sr, cp * cr],
        ]
    )


def matrix_to_rpy(rotation: np.ndarray) -> tuple[float, float, float]:
    """Inverse of rpy_to_matrix (pitch in [-pi/2, pi/2])."""
    r = np.asarray(rotation)[:3, :3]
    pitch = math.asin(max(-1.0, min(1.0, -r[2, 0])))
    if abs(r[2, 0]) < 1.0 - 1e-12:
        roll = math.atan2(r[2, 1], r[2, 2])
        yaw = math.atan2(r[1, 0], r[0, 0])
    else:  # gimbal lock: put everything into yaw
        roll = 0.0
        yaw = math.atan2(-r[0, 1], r[1, 1])
    return roll, pitch, yaw


def pose_to_matrix(x=0.0, y=0.0, z=0.0, roll=0.0, pitch=0.0, yaw=0.0) -> np.ndarray:
    """4x4 homogeneous transform from a position and roll/pitch/yaw (radians)."""
    values = (x, y, z, roll, pitch, yaw)
    if not all(math.isfinite(float(v)) for v in values):
        raise ConfigError(f"pose {values} has a non-finite value; expected six finite numbers")
    t = np.eye(4)
    t[:3, :3] = rpy_to_matrix(roll, pitch, yaw)
    t[:3, 3] = (x, y, z)
    return t


def quaternion_to_matrix(qx: float, qy: float, qz: float, qw: float) -> np.ndarray:
    """3x3 rotation from a (normalised here) quaternion in ROS order x, y, z, w."""
    q = np.array([qw, qx, qy, qz], dtype=float)
    n = np.linalg.norm(q)
    if not np.isfinite(n) or n < 1e-12:
        raise ConfigError(f"quaternion {(qx, qy, qz, qw)} is not a finite non-zero rotation")
    w, x, y, z = q / n
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def quaternions_to_matrices(quaternions_xyzw) -> np.ndarray:
    """(N, 4) ROS-order x, y, z, w unit quaternions -> (N, 3, 3) rotations, vectorised.

    Callers normalise (and decide what a zero quaternion means) first; this is the shared formula."""
    x, y, z, w = np.asarray(quaternions_xyzw, dtype=np.float64).T
    r = np.empty((len(x), 3, 3))
    r[:, 0, 0] = 1 - 2 * (y * y + z * z)
    r[:, 0, 1] = 2 * (x * y - z * w)
    r[:, 0, 2] = 2 * (x * z + y * w)
    r[:, 1, 0] = 2 * (x * y + z * w)
    r[:, 1, 1] = 1 - 2 * (x * x + z * z)
    r[:, 1, 2] = 2 * (y * z - x * w)
    r[:, 2, 0] = 2 * (x * z - y * w)
    r[:, 2, 1] = 2 * (y * z + x * w)
    r[:, 2, 2] = 1 - 2 * (x * x + y * y)
    return r


def slerp(q0: np.ndarray, q1: np.ndarray, a: np.ndarray) -> np.ndarray:
    """(N, 4) unit quaternions between q0 and q1 at fractions a (N,), the short way round.

    Works in either component order (x,y,z,w or w,x,y,z) as long as q0 and q1 share it."""
    dot = np.einsum("ij,ij->i", q0, q1)
    q1 = np.where(dot[:, None] < 0, -q1, q1)  # q and -q are the same rotation: take the nearer one
    theta = np.arccos(np.clip(np.abs(dot), 0.0, 1.0))
    small = theta < 1e-6  # nearly equal: linear interpolation avoids 0/0
    s = np.where(small, 1.0, np.sin(theta))
    w0 = np.where(small, 1.0 - a, np.sin((1.0 - a) * theta) / s)
    w1 = np.where(small, a, np.sin(a * theta) / s)
    q = w0[:, None] * q0 + w1[:, None] * q1
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def matrix_to_quaternion(rotation: np.ndarray) -> tuple[float, float, float, float]:
    """ROS-order (x, y, z, w) quaternion of a 3x3 rotation, w >= 0."""
    m = np.asarray(rotation)[:3, :3]
    trace = m[0, 0] + m[1, 1] + m[2, 2]
    if trace > 0:
        s = math.sqrt(trace + 1.0) * 2
        w, x, y, z = 0.25 * s, (m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s
    elif m[0, 0] > m[1, 1] and m[0, 0] > m[2, 2]:
        s = math.sqrt(1.0 + m[0, 0] - m[1, 1] - m[2, 2]) * 2
        w, x, y, z = (m[2, 1] - m[1, 2]) / s, 0.25 * s, (m[0, 1] + m[1, 0]) / s, (m[0, 2] + m[2, 0]) / s
    elif m[1, 1] > m[2, 2]:
        s = math.sqrt(1.0 + m[1, 1] - m[0, 0] - m[2, 2]) * 2
        w, x, y, z = (m[0, 2] - m[2, 0]) / s, (m[0, 1] + m[1, 0]) / s, 0.25 * s, (m[1, 2] + m[2, 1]) / s
    else:
        s = math.sqrt(1.0 + m[2, 2] - m[0, 0] - m[1, 1]) * 2
        w, x, y, z = (m[1, 0] - m[0, 1]) / s, (m[0, 2] + m[2, 0]) / s, (m[1, 2] + m[2, 1]) / s, 0.25 * s
    if w < 0:
        w, x, y, z = -w, -x, -y, -z
    return x, y, z, w


def parse_pose_string(text: str, *, degrees: bool = False, what: str = "pose") -> np.ndarray:
    """'x y z roll pitch yaw' (six numbers, radians unless degrees) -> 4x4 matrix."""
    parts = str(text).replace(",", " ").split()
    try:
        values = [float(p) for p in parts]
    except ValueError:
        raise ConfigError(f"{what} '{text}': expected six numbers 'x y z roll pitch yaw'") from None
    if len(values) != 6:
        raise ConfigError(f"{what} '{text}': expected six numbers 'x y z roll pitch yaw', got {len(values)}")
    if not all(math.isfinite(v) for v in values):
        raise ConfigError(f"{what} '{text}' has a non-finite value; expected six finite numbers")
    if degrees:
        values[3:] = [math.radians(v) for v in values[3:]]
    return pose_to_matrix(*check_pose6(values, what))


def check_transform(matrix, what: str = "pose") -> np.ndarray:
    """Validate a 4x4 rigid transform (finite, orthonormal rotation) and return it as float64."""
    m = np.asarray(matrix, dtype=float)
    if m.shape != (4, 4):
        raise ConfigError(f"{what}: expected a 4x4 matrix, got shape {m.shape}")
    if not math.isfinite(m.sum()):
        raise ConfigError(f"{what}: contains NaN or inf; expected finite values")
    r = m[:3, :3]
    # cheap checks (this runs for every pose update): orthonormal rows and a right-handed frame
    if float(np.abs(r @ r.T - _EYE3).max()) > 1e-6 or float(np.cross(r[0], r[1]) @ r[2]) < 0:
        raise ConfigError(f"{what}: rotation part is not a proper rotation matrix")
    return m
