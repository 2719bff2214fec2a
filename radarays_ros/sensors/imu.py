"""The IMU inside a lidar, as its driver publishes it: angular velocity and specific force from the pose
trajectory, with the white noise of the IMU chip's datasheet.

SLAM front ends built for these lidars (FAST-LIO, LIO-SAM, Point-LIO) need the IMU beside the cloud:
Ouster sensors carry an InvenSense ICM-20948 (ouster-ros: /ouster/imu, 100 Hz, m/s^2), Livox Mid-360
and HAP a TDK ICM-40609-D (livox_ros_driver2: /livox/imu, 200 Hz, the acceleration in units of g, as
FAST-LIO's Livox configs expect). Where it sits and which frame it reports in (imu_mount): an Ouster IMU
at the metadata's imu_to_sensor_transform in its own frame `os_imu`, which ouster-ros hangs below
os_sensor on /tf_static (we hang it below the cloud's frame, the one a pose places, so the tree keeps one
root); a Livox IMU at the lidar's pose in the lidar's frame (livox_ros_driver2 stamps /livox/imu with the
lidar's `livox_frame`; the chip's few-centimetre lever arm is left out).

Kinematics (a strapdown IMU, e.g. Titterton & Weston, Strapdown Inertial Navigation Technology, eq. 3.19):
    gyro   w_b = log(R(t - h)^T R(t + h)) / 2h           body angular rate (rad/s)
    accel  f_b = R(t)^T (a_w(t) - g_w),  g_w = (0, 0, -g0), a_w = (p(t+h) - 2 p(t) + p(t-h)) / h^2
so a sensor at rest reads f = (0, 0, +g0) in a level frame, as a real one does. h is half the sample
period: each sample is the mean rate and acceleration over its own interval, what a MEMS IMU's
anti-alias filter reports, so a waypoint corner gives one finite sample, not an impulse.

Noise: white, per sample sigma = N * sqrt(rate) for a noise density N (units/sqrt(Hz)) sampled at
`rate` (the discrete-time convention of Kalibr's IMU noise model). Datasheet densities:
ICM-20948 (DS-000189 rev 1.3): gyro 0.015 deg/s/sqrt(Hz), accel 230 ug/sqrt(Hz);
ICM-40609-D (DS-000330 rev 1.2): gyro 4.5 mdeg/s/sqrt(Hz), accel 100 ug/sqrt(Hz).
Biases are left out (zero): a simulated run starts calibrated.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

G0 = 9.80665  # m/s^2, standard gravity (the unit "g" of the Livox IMU)
UG = 1e-6 * G0  # one micro-g in m/s^2


@dataclass(frozen=True)
class ImuSpec:
    """An IMU as a lidar driver publishes it (see the module docstring for the sources)."""
    chip: str
    rate_hz: float
    gyro_noise_density: float  # rad/s/sqrt(Hz)
    accel_noise_density: float  # m/s^2/sqrt(Hz)
    accel_in_g: bool  # livox_ros_driver2 publishes g, ouster-ros m/s^2

    @property
    def period_ns(self) -> int:
        return int(round(1e9 / self.rate_hz))


IMU_SPECS = {  # by lidar layout: the driver of that layout and the chip in its sensors
    "ouster": ImuSpec("ICM-20948", 100.0, math.radians(0.015), 230 * UG, False),
    "ouster_native": ImuSpec("ICM-20948", 100.0, math.radians(0.015), 230 * UG, False),
    "livox": ImuSpec("ICM-40609-D", 200.0, math.radians(0.0045), 100 * UG, True),
}


def imu_mount(config) -> tuple[np.ndarray, str | None]:
    """(4x4 points frame <- IMU frame, the IMU's frame id or None = the points' frame) of a lidar config: the
    IMU's pose is the cloud frame's pose times this transform (Ouster: os_lidar <- os_sensor <- os_imu)."""
    imu = getattr(config, "imu_transform", None)
    if imu is None:
        return np.eye(4), None
    return np.asarray(config.point_transform, np.float64) @ np.asarray(imu, np.float64), config.imu_frame_id


def imu_for_layout(layout: str) -> ImuSpec | None:
    """The IMU the driver of this cloud layout publishes, or None (velodyne and the rest have none)."""
    return IMU_SPECS.get(layout)


def imu_samples(poses_at: Callable[[np.ndarray], np.ndarray], times_ns: np.ndarray, spec: ImuSpec,
                rng: np.random.Generator | None = None, span_ns: tuple[int, int] | None = None
                ) -> tuple[np.ndarray, np.ndarray]:
    """(angular velocity (N, 3) rad/s, linear acceleration (N, 3)) in the IMU frame at `times_ns`.

    poses_at(times_ns) -> (N, 4, 4) world poses of the IMU (z up). The acceleration is the specific force,
    in m/s^2, or in g when the spec says so. rng: the noise draws (None: exact values). span_ns: the
    trajectory's (start, end); a sample within half a period of either end takes its differences inside
    it (a trajectory starts at full speed: a difference across its start would read a jump from rest)."""
    t = np.asarray(times_ns, dtype=np.int64)
    h_ns = spec.period_ns // 2
    if span_ns is not None and span_ns[1] - span_ns[0] >= 2 * h_ns:
        t = np.clip(t, span_ns[0] + h_ns, span_ns[1] - h_ns)
    before, now, after = poses_at(t - h_ns), poses_at(t), poses_at(t + h_ns)
    h = h_ns * 1e-9
    relative = np.einsum("nji,njk->nik", before[:, :3, :3], after[:, :3, :3])  # R(t-h)^T R(t+h)
    gyro = _log_so3(relative) / (2.0 * h)
    accel_world = (after[:, :3, 3] - 2.0 * now[:, :3, 3] + before[:, :3, 3]) / (h * h)
    accel_world[:, 2] += G0  # minus gravity (0, 0, -g0)
    accel = np.einsum("nji,nj->ni", now[:, :3, :3], accel_world)  # R^T a
    if rng is not None:
        root_rate = math.sqrt(spec.rate_hz)
        gyro = gyro + rng.normal(0.0, spec.gyro_noise_density * root_rate, gyro.shape)
        accel = accel + rng.normal(0.0, spec.accel_noise_density * root_rate, accel.shape)
    if spec.accel_in_g:
        accel = accel / G0
    return gyro, accel


def _log_so3(r: np.ndarray) -> np.ndarray:
    """Rotation vectors (N, 3) of rotation matrices (N, 3, 3)."""
    from scipy.spatial.transform import Rotation

    return Rotation.from_matrix(r).as_rotvec()
