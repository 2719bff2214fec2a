"""The IMU a lidar's driver publishes beside the cloud (ouster-ros, livox_ros_driver2), for a node's sensor.

One timer per IMU at the chip's rate on the node clock; each tick samples the sensor's pose source one
sample period behind the clock (so /tf has arrived for t + h) and publishes `<sensor>/imu` (sensor_msgs/Imu)
in the IMU's frame (Ouster: os_imu, latched on /tf_static below the cloud's frame; Livox: the lidar's own):
the numbers of sensors/imu.py, the same code as the scenario bags. A pose that cannot be had (no tf yet)
skips the sample quietly; the sensor's frames report tf trouble already.
"""
from __future__ import annotations

import numpy as np

from ..io import messages
from ..sensors.imu import G0, ImuSpec, imu_for_layout, imu_mount, imu_samples
from .convert import rclpy_class, to_cdr


class ImuCompanion:
    def __init__(self, node, sensor, spec: ImuSpec, qos, overriding):
        self.node, self.sensor, self.spec = node, sensor, spec
        self.rng = np.random.default_rng([int(sensor.unit.config.seed), 0x1A0])  # as the scenario runner
        self.publisher = node.create_publisher(rclpy_class("sensor_msgs/msg/Imu"), sensor.topic("imu"), qos,
                                               qos_overriding_options=overriding)
        g2, a2 = ((d ** 2) * spec.rate_hz for d in (spec.gyro_noise_density, spec.accel_noise_density))
        self.variances = (g2, a2 / G0 ** 2 if spec.accel_in_g else a2)
        self.last_ns: int | None = None
        self.mount, self.frame_id = imu_mount(sensor.unit.config)
        if self.frame_id is not None and self.frame_id != sensor.unit.frame_id:
            self._publish_mount(node, sensor.unit.frame_id)
        self.timer = node.create_timer(spec.period_ns * 1e-9, self._tick)

    def _publish_mount(self, node, parent: str) -> None:
        """The cloud's frame -> the IMU's frame on /tf_static (latched), as ouster-ros' static os_imu transform."""
        from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

        latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.static_publisher = node.create_publisher(rclpy_class("tf2_msgs/msg/TFMessage"), "/tf_static", latched)
        stamp = max(node._now_ns(), 0)
        self.static_publisher.publish(to_cdr(messages.tf_message([
            messages.transform_stamped(self.mount, stamp, parent, self.frame_id)])))

    @classmethod
    def maybe(cls, node, sensor, qos, overriding) -> "ImuCompanion | None":
        """The companion of a lidar whose layout's driver publishes an IMU, else None."""
        unit = sensor.unit
        if unit is None or sensor.kind != "lidar":
            return None
        spec = imu_for_layout(getattr(unit.config, "layout", ""))
        return None if spec is None else cls(node, sensor, spec, qos, overriding)

    def _tick(self) -> None:
        period = self.spec.period_ns
        now = self.node._now_ns()
        t = (now // period - 1) * period  # one sample behind: t + h is covered by /tf by now
        if now <= 0 or t <= 0 or t == self.last_ns or self.sensor.unit is None or not self.node.active:
            return
        self.last_ns = t
        h = period // 2
        try:
            pose = self.node._pose(self.sensor, t - h, period, False)
        except Exception:  # noqa: BLE001 - no pose yet (tf, Gazebo): no sample, as an IMU without power
            return
        if isinstance(pose, np.ndarray):
            poses_at = lambda times: np.repeat((pose @ self.mount)[None], len(np.atleast_1d(times)), 0)  # noqa: E731
        else:
            poses_at = lambda times: pose.at(times) @ self.mount  # noqa: E731
        gyro, accel = imu_samples(poses_at, np.array([t]), self.spec, self.rng, span_ns=(t - h, t + h))
        msg = messages.imu(gyro[0], accel[0], t, self.frame_id or self.sensor.unit.frame_id, *self.variances)
        if self.node.context.ok():
            try:
                self.publisher.publish(to_cdr(msg))
            except Exception:  # noqa: BLE001 - the context closed after the check (Ctrl-C)
                if self.node.context.ok():
                    raise
