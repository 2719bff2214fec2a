"""Odometry for scenario bags, REP-105: map -> odom -> base_link, nav_msgs/Odometry on /odom.

A robot's odometry integrates its own motion increments and drifts; localisation publishes
map -> odom so that map -> odom -> base_link is the best estimate of the truth. Here the truth is
the scenario trajectory T_i, so map -> odom = T_i · O_i⁻¹ keeps map -> base_link exact while
/odom (O_i) drifts the way integrated odometry does:

    D_i  = T_{i-1}⁻¹ · T_i                    body-frame motion between two samples, length d_i
    D'_i = D_i · Pose(εx, εy, 0, 0, 0, εψ)    εx, εy ~ N(0, σ_t² d_i),  εψ ~ N(0, σ_ψ² d_i)
    O_0  = T_0,   O_i = O_{i-1} · D'_i

The noise variance grows with the distance driven (a random walk per metre, the usual wheel
odometry model, e.g. Thrun et al., Probabilistic Robotics, ch. 5.4): on a straight drive of D metres
the lateral error from translation noise alone has standard deviation σ_t √D. σ_t is in m/√m,
σ_ψ in deg/√m; both 0 (the default) give O_i = T_i exactly. Draws come from a numpy Generator
seeded by `seed`: the same seed gives the same drift.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from ..errors import ConfigError
from ..validate import Rule
from ..world.transforms import pose_to_matrix

ODOMETRY_KEYS = ("frame", "topic", "drift", "seed")
DRIFT_RULES = {"translation_std": Rule(float, 0.0, 10.0, doc="odometry position noise, m per sqrt(m) driven"),
               "yaw_std_deg": Rule(float, 0.0, 10.0, doc="odometry heading noise, deg per sqrt(m) driven")}
DRIFT_KEYS = tuple(DRIFT_RULES)
SEED_RULE = Rule(int, 0, 2**53, doc="seed of the drift draws")


@dataclass(frozen=True)
class OdometrySpec:
    frame: str = "odom"
    topic: str = "/odom"
    translation_std: float = 0.0  # m per sqrt(m) travelled
    yaw_std_deg: float = 0.0  # deg per sqrt(m) travelled
    seed: int = 0

    @property
    def drifts(self) -> bool:
        return self.translation_std > 0 or self.yaw_std_deg > 0


def odometry_spec(data: Any, where: str) -> OdometrySpec:
    """The `odometry:` mapping of a scenario (all keys optional)."""
    if data is None:
        return OdometrySpec()
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where}: expected a mapping with keys {', '.join(ODOMETRY_KEYS)}")
    unknown = sorted(set(map(str, data)) - set(ODOMETRY_KEYS))
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {unknown}; allowed: {', '.join(ODOMETRY_KEYS)}")
    drift = data.get("drift") or {}
    if not isinstance(drift, Mapping):
        raise ConfigError(f"{where}.drift: expected a mapping with keys {', '.join(DRIFT_KEYS)}")
    unknown = sorted(set(map(str, drift)) - set(DRIFT_KEYS))
    if unknown:
        raise ConfigError(f"{where}.drift: unknown key(s) {unknown}; allowed: {', '.join(DRIFT_KEYS)}")
    stds = {key: rule.check(drift.get(key, 0.0), f"{where}.drift.{key}") for key, rule in DRIFT_RULES.items()}
    seed = SEED_RULE.check(data.get("seed", 0), f"{where}.seed")
    frame, topic = str(data.get("frame", "odom")), str(data.get("topic", "/odom"))
    if not frame or not topic.startswith("/"):
        raise ConfigError(f"{where}: frame must be a name and topic an absolute topic (got {frame!r}, {topic!r})")
    return OdometrySpec(frame, topic, stds["translation_std"], stds["yaw_std_deg"], seed)


def odometry_poses(truth: np.ndarray, spec: OdometrySpec) -> np.ndarray:
    """(K, 4, 4) odom <- base_link poses for the true map <- base_link poses `truth` (see module doc)."""
    truth = np.asarray(truth, np.float64)
    if not spec.drifts:
        return truth.copy()
    rng = np.random.default_rng(spec.seed)
    out = np.empty_like(truth)
    out[0] = truth[0]
    yaw_std = math.radians(spec.yaw_std_deg)
    for i in range(1, len(truth)):
        step = np.linalg.solve(truth[i - 1], truth[i])
        scale = math.sqrt(float(np.linalg.norm(step[:3, 3])))
        ex, ey = rng.normal(0.0, spec.translation_std * scale, 2)
        eyaw = rng.normal(0.0, yaw_std * scale)
        out[i] = out[i - 1] @ step @ pose_to_matrix(ex, ey, 0.0, 0.0, 0.0, eyaw)
    return out


def travelled(truth: np.ndarray) -> np.ndarray:
    """Distance driven up to each pose (m)."""
    steps = np.linalg.norm(np.diff(np.asarray(truth)[:, :3, 3], axis=0), axis=1)
    return np.concatenate([[0.0], np.cumsum(steps)])


def odometry_msg(pose: np.ndarray, previous: np.ndarray, dt_s: float, distance: float, t_ns: int,
                 spec: OdometrySpec, child: str):
    """nav_msgs/Odometry: pose in the odom frame, body-frame twist from the last step, drift covariance."""
    from ..io.messages import TYPESTORE, Quaternion, Vector3, header
    from ..world.transforms import matrix_to_quaternion

    types = TYPESTORE.types
    step = np.linalg.solve(previous, pose)
    rate = 1.0 / dt_s if dt_s > 0 else 0.0
    qx, qy, qz, qw = matrix_to_quaternion(pose[:3, :3])
    pose_cov = np.zeros(36)
    pose_cov[0] = pose_cov[7] = spec.translation_std ** 2 * distance  # x, y variance after `distance` m
    pose_cov[35] = math.radians(spec.yaw_std_deg) ** 2 * distance  # yaw variance
    return types["nav_msgs/msg/Odometry"](
        header=header(t_ns, spec.frame), child_frame_id=child,
        pose=types["geometry_msgs/msg/PoseWithCovariance"](
            pose=types["geometry_msgs/msg/Pose"](
                position=types["geometry_msgs/msg/Point"](x=float(pose[0, 3]), y=float(pose[1, 3]), z=float(pose[2, 3])),
                orientation=Quaternion(x=float(qx), y=float(qy), z=float(qz), w=float(qw))),
            covariance=pose_cov),
        twist=types["geometry_msgs/msg/TwistWithCovariance"](
            twist=types["geometry_msgs/msg/Twist"](
                linear=Vector3(x=float(step[0, 3] * rate), y=float(step[1, 3] * rate), z=float(step[2, 3] * rate)),
                angular=Vector3(x=0.0, y=0.0, z=float(math.atan2(step[1, 0], step[0, 0]) * rate))),
            covariance=np.zeros(36)))
