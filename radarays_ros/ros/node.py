"""The sensor node: one shared Scene and backend, one or more sensors, parameters, TF, timers, topics.

`radar_node` and `lidar_node` are this node with one sensor whose parameters sit at the top level
(`config`, `frame_id`, `sensor.beam.samples`, ...); `sensor_rig` runs the sensors listed in
`sensors`, each under its own name (`front_radar.config`, `front_radar.sensor.beam.samples`, ...)
and publishing under its name (`front_radar/radar/image`). However many sensors, the world is held
once: one Scene, one BVH. Each sensor's frames run on a worker thread of its own, so sensors run
concurrently (the backend and numpy release the GIL) while the executor thread stays free for
/clock, /tf and parameter changes.

The node only wires: parameters -> config (node_params.py tables, params.py declarations), subscriptions
-> scene and poses (/tf into a sensors.tf_buffer; Gazebo through gazebo_link.py, all of its glue), timer ->
the sweep sensors/schedule.py says is due -> pose (sensors/poses.py) -> `unit.simulate` -> `unit.messages`
(sensors/units.py, the code bags are written with) -> publish; diagnostics from sensors/diagnostics.py.

A node never dies of bad input: a missing world, a failed TF lookup, a NaN pose or a bad parameter
is logged (throttled) and counted in the diagnostics, and the last good state is kept.

Parameters (`ros2 param describe` shows each with its range; all are in node_params.NODE_PARAMS,
SENSOR_PARAMS and gazebo_link.GAZEBO_PARAMS): `world`, `materials`, `ignore`, `world_frame`, `pose_source`
(tf | fixed | gazebo), `fixed_pose`, `frame_id`, `sync_topic`, `reliable`, `lazy`, ..., the sensor
model under `sensor.*` and the message options under `output.*`. Following a running Gazebo
(`gazebo.enable: true`, `gazebo.*`, sensors declared in SDF): gazebo_link.py's docstring.
"""
from __future__ import annotations

import math
import signal
import sys
import time

import numpy as np
import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from rcl_interfaces.msg import SetParametersResult
from rclpy.clock import Clock, ClockType
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.qos_overriding_options import QoSOverridingOptions

from ..errors import ConfigError, RadaraysError
from ..sensors.diagnostics import sensor_status
from ..sensors.poses import tf_sweep
from ..sensors.schedule import next_sweep
from ..sensors.tf_buffer import TransformBuffer, TransformLookupError
from ..sensors.params import check_param
from ..sensors.units import make_unit
from ..throttled_log import ThrottledLog, one_line
from ..sensors.worlds import backend_options, empty_world, open_world
from .convert import diagnostic_array, header_stamp_ns, rclpy_class, to_cdr
from .gazebo_link import GAZEBO_PARAMS, RIG_GAZEBO_PARAMS, GazeboLink, LogRelay
from .node_imu import ImuCompanion
from .node_params import NODE_PARAMS, READ_ONLY, SENSOR_PARAMS
from .node_sensor import Sensor, build_unit, checked_period, declare_sensors, frame_arg
from .params import NodeParameters, from_ros

__all__ = ["NODE_PARAMS", "SENSOR_PARAMS", "SensorNode", "run"]


class SensorNode(Node):
    """See the module docstring. `kind` is 'radar' or 'lidar' for the single-sensor nodes, 'rig' for the rig."""

    def __init__(self, node_name: str, kind: str, **kwargs):
        Node.__init__(self, node_name, **kwargs)
        self._declare(kind)
        self._configure()

    def _declare(self, kind: str) -> None:
        """The node-level parameters; nothing runs yet (a lifecycle node stays here until `configure`)."""
        self.kind = kind
        self.log = ThrottledLog(self.get_logger())  # one line per trouble and 5 s, the rest counted in diagnostics
        self._warn, self._error = self.log.warning, self.log.error
        self.scene = self.backend = None
        self.world_error = ""
        self.tf = TransformBuffer()
        self.params = NodeParameters(self, self._error)
        self.params.declare(NODE_PARAMS, "", READ_ONLY)
        self.params.declare(GAZEBO_PARAMS, "", READ_ONLY)
        if kind == "rig":
            self.params.declare(RIG_GAZEBO_PARAMS, "", READ_ONLY)
        self.gazebo, self.sensors, self._imus = None, [], []
        self.active = True  # frames are simulated and published (a lifecycle node: only while active)
        # the radar model's run-time warnings (throttled there: an interferer's carrier not in the scene) to rosout:
        # those of this node's frames only (other nodes of a composed container relay their own)
        self._model_log = LogRelay(self.get_logger(), "radarays_ros.radar", scoped=True).attach()

    def _configure(self) -> None:
        """World, sensors, publishers, subscriptions and timers."""
        self.tf = TransformBuffer()
        self.gazebo = GazeboLink(self.params, self.get_logger(), self._error) if self.params("gazebo.enable") else None
        self.sensors = declare_sensors(self.kind, self.params, self._error)
        if self.gazebo is not None:
            self._follow_gazebo()
        else:
            self._load_world(self.params("world"))
        for sensor in self.sensors:
            self._build_unit(sensor)
        self._make_io()
        self._warn_unknown_parameters()
        self._params_callback = self.add_on_set_parameters_callback(self._on_set_parameters)
        if self.gazebo is not None:
            self.gazebo.start_threads(lambda: self.gazebo.carrying_links(self.sensors, self.params("pose_source")),
                                      self._ros_now_ns)

    # -- parameters -> sensors -----------------------------------------------------------------------
    def _warn_unknown_parameters(self) -> None:
        """A params-file key nobody declared is a typo (rclpy would ignore it silently): say so."""
        # a sensor that did not start declared none of its sensor.* / output.* keys: its error said why
        not_started = tuple(f"{s.prefix}{part}." for s in self.sensors if s.unit is None for part in ("sensor", "output"))
        unknown = self.params.unknown(not_started)
        if unknown:
            self.get_logger().warning(f"ignored unknown parameter(s) {', '.join(unknown)}; see "
                                      f"`ros2 param list /{self.get_name()}` for the known ones")

    def _build_unit(self, sensor: Sensor) -> None:
        if self.scene is None:  # no world (yet): the sensors are built on an empty one and publish nothing
            self.scene, self.backend = empty_world(self.params("backend"), self._backend_options())
        build_unit(sensor, self.params, self.scene, self.backend, self._error)

    # -- subscriptions -> scene ----------------------------------------------------------------------
    def _backend_options(self) -> dict:
        return backend_options(self.params("backend"), self.params("threads"), self.params("device"))

    def _open_world(self, path: str):
        ignore = tuple(n for n in (self.params("ignore") or []) if n)
        return open_world(path, materials=self.params("materials"), ignore=ignore, backend=self.params("backend"),
                          options=self._backend_options())

    def _load_world(self, path: str) -> None:
        """Load the world at startup; on failure the node runs without one and says what to fix."""
        try:
            self._install_world(*self._open_world(path))
        except ConfigError as exc:
            self.world_error = str(exc)
            self._error(self.world_error)

    def _install_world(self, scene, backend) -> None:
        """Swap in a loaded world; every sensor is rebuilt on it with its current configuration."""
        old = self.backend
        self.scene, self.backend, self.world_error = scene, backend, ""
        self.get_logger().info(f"world {scene.source}: {len(scene)} entities, {scene.triangle_count} triangles")
        for sensor in self.sensors:
            if sensor.unit is not None:
                with sensor.lock:
                    sensor.unit = make_unit(sensor.kind, sensor.name, self.scene, self.backend,
                                            config=sensor.unit.config, frame_id=frame_arg(sensor),
                                            output=dict(sensor.unit.output), frames=sensor.unit.frames)
        if old is not None:
            old.close()

    def _follow_gazebo(self) -> None:
        """The mirror's Scene is the world of every sensor (one BVH); the rig adds the sensors declared in SDF."""
        from ..tracing import make_backend

        self.world_error = self.gazebo.start()
        if self.world_error:
            self._error(self.world_error)
            return
        self.scene = self.gazebo.scene
        self.backend = make_backend(self.params("backend"), self.scene, **self._backend_options())
        if self.kind == "rig":
            self.sensors += self._sdf_sensors(self.gazebo.declared_sensors())

    def _sdf_sensors(self, specs) -> list[Sensor]:
        return [Sensor.declared_in_sdf(plan) for plan in self.gazebo.plan(specs, self.sensors)]

    def _adopt_discovered(self) -> None:
        """Executor thread: start the sensors the discovery thread found in the world Gazebo runs."""
        for sensor in self._sdf_sensors(self.gazebo.take_discovered()):
            self.sensors.append(sensor)
            self._build_unit(sensor)
            self._make_publishers(sensor, self._qos())
            if not self.params("sync_topic"):
                self._start_timer(sensor)

    def _gazebo_paused(self, sensor: Sensor) -> bool:
        """True (and counted) while the mirror is not alive: no frame may show a world that stopped."""
        if self.gazebo is None or self.gazebo.mirror is None or self.gazebo.alive:
            return False
        sensor.stats.paused += 1
        return True

    def _ros_now_ns(self) -> int:
        return self.get_clock().now().nanoseconds

    def _now_ns(self) -> int:
        """The frame clock: the node's, or Gazebo's with gazebo.clock: gazebo."""
        return self._ros_now_ns() if self.gazebo is None else self.gazebo.now_ns(self._ros_now_ns)

    def destroy_node(self):
        if self.gazebo is not None:
            self.gazebo.close()
        self._model_log.detach()
        return super().destroy_node()

    # -- topics, timers ------------------------------------------------------------------------------
    def _qos(self) -> QoSProfile:
        reliable = self.params("reliable")
        return QoSProfile(depth=self.params("qos_depth"), history=HistoryPolicy.KEEP_LAST,
                          reliability=ReliabilityPolicy.RELIABLE if reliable else ReliabilityPolicy.BEST_EFFORT,
                          durability=DurabilityPolicy.VOLATILE)

    def _make_publishers(self, sensor: Sensor, qos: QoSProfile) -> None:
        """One publisher per topic of the unit; rclpy's standard `qos_overrides.<topic>.publisher.*` parameters
        (reliability, history, depth) change a topic's QoS from a params file or `-p`, as in any ROS 2 driver."""
        if sensor.unit is None:
            return
        for relative, msgtype in sensor.unit.topics.items():
            try:
                msg_class = rclpy_class(msgtype)
            except (ImportError, AttributeError, ValueError) as exc:  # radar_msgs: not on PyPI, apt only
                package = msgtype.split("/")[0]
                self._error(f"{sensor.label}: {sensor.topic(relative)} not published: {msgtype} cannot be imported "
                            f"({exc}); install it (apt install ros-jazzy-{package.replace('_', '-')}) and source "
                            "/opt/ros/jazzy, or turn the output off", key=f"import:{msgtype}")
                continue
            sensor.publishers[relative] = self.create_publisher(
                msg_class, sensor.topic(relative), qos,
                qos_overriding_options=QoSOverridingOptions.with_default_policies())

    def _make_io(self) -> None:
        from tf2_msgs.msg import TFMessage

        qos = self._qos()
        for sensor in self.sensors:
            self._make_publishers(sensor, qos)
        self._publish_driver_metadata()
        self._imus = [imu for sensor in self.sensors if self.params("imu") for imu in
                      [ImuCompanion.maybe(self, sensor, qos, QoSOverridingOptions.with_default_policies())] if imu]
        self.create_subscription(TFMessage, "/tf", lambda m: self._on_tf(m, False),
                                 QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE))
        self.create_subscription(TFMessage, "/tf_static", lambda m: self._on_tf(m, True),
                                 QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE,
                                            durability=DurabilityPolicy.TRANSIENT_LOCAL))
        self._publish_fixed_frames(TFMessage)
        self._tf_pub = self.create_publisher(TFMessage, "/tf", QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE))
        sync_topic = self.params("sync_topic")
        if sync_topic:
            try:
                sync_class = rclpy_class(self.params("sync_type"))
            except (ImportError, AttributeError, ValueError) as exc:
                self._error(f"sync_type {self.params('sync_type')!r} cannot be imported ({exc}); falling back to the timer")
                sync_topic = ""
        if sync_topic:
            self.create_subscription(sync_class, sync_topic, self._on_sync, QoSProfile(
                depth=5, reliability=ReliabilityPolicy.BEST_EFFORT), raw=True)
            self.get_logger().info(f"frames triggered by {sync_topic}")
        else:
            for sensor in self.sensors:
                self._start_timer(sensor)
        steady = Clock(clock_type=ClockType.STEADY_TIME)
        self._diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self._diag_timer = self.create_timer(self.params("diagnostics_period"), self._publish_diagnostics, clock=steady)
        if self.gazebo is not None and self.gazebo.discovery is not None:
            self._adopt_timer = self.create_timer(0.5, self._adopt_discovered, clock=steady)

    def _publish_driver_metadata(self) -> None:
        """ouster-ros publishes the sensor's metadata JSON once, latched, on /ouster/metadata (its cloud and image
        nodes wait for it): an Ouster sensor publishes `metadata` (std_msgs/String, reliable, transient local)."""
        from std_msgs.msg import String

        latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self._metadata_pubs = []
        for sensor in self.sensors:
            text = getattr(getattr(sensor.unit, "config", None), "driver_metadata", None)
            if sensor.kind != "lidar" or not text:
                continue
            publisher = self.create_publisher(String, sensor.topic("metadata"), latched)
            publisher.publish(String(data=text))
            self._metadata_pubs.append(publisher)

    def _publish_fixed_frames(self, tf_message_class) -> None:
        """With pose_source fixed, say where each sensor is: world_frame -> frame_id on /tf_static (latched),
        so rviz places its clouds and images with no other tf publisher running."""
        if self.params("pose_source") != "fixed":
            return
        from geometry_msgs.msg import TransformStamped
        from scipy.spatial.transform import Rotation

        transforms = []
        for sensor in self.sensors:
            if sensor.unit is None or sensor.sdf is not None or not frame_arg(sensor):
                continue
            t = TransformStamped()
            t.header.stamp = self.get_clock().now().to_msg()
            t.header.frame_id, t.child_frame_id = self.params("world_frame"), frame_arg(sensor)
            x, y, z = (float(v) for v in sensor.fixed_pose[:3, 3])
            t.transform.translation.x, t.transform.translation.y, t.transform.translation.z = x, y, z
            qx, qy, qz, qw = Rotation.from_matrix(sensor.fixed_pose[:3, :3]).as_quat()
            t.transform.rotation.x, t.transform.rotation.y = float(qx), float(qy)
            t.transform.rotation.z, t.transform.rotation.w = float(qz), float(qw)
            transforms.append(t)
        if transforms:
            self._static_tf_pub = self.create_publisher(tf_message_class, "/tf_static", QoSProfile(
                depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL))
            self._static_tf_pub.publish(tf_message_class(transforms=transforms))

    def _start_timer(self, sensor: Sensor) -> None:
        if sensor.unit is None:
            return
        if sensor.timer is not None:
            self.destroy_timer(sensor.timer)
        clock, tick_s = None, sensor.unit.period_ns * 0.5e-9  # the node clock (sim time under use_sim_time)
        if self.gazebo is not None and self.gazebo.steady_ticks:
            # steady ticks, the grid on Gazebo's time: tick often enough for a Gazebo faster than real time
            clock, tick_s = Clock(clock_type=ClockType.STEADY_TIME), min(tick_s, 0.02)
        sensor.timer = self.create_timer(tick_s, lambda s=sensor: self._on_timer(s), clock=clock)
        sensor.last_tick_ns = None

    # -- callbacks -----------------------------------------------------------------------------------
    def _on_tf(self, msg, static: bool) -> None:
        for t in msg.transforms:
            stamp = t.header.stamp.sec * 1_000_000_000 + t.header.stamp.nanosec
            tr, q = t.transform.translation, t.transform.rotation
            try:
                self.tf.set_transform(t.header.frame_id, t.child_frame_id, stamp, (tr.x, tr.y, tr.z),
                                      (q.x, q.y, q.z, q.w), static=static)
            except TransformLookupError as exc:
                self._warn(f"ignored a {'/tf_static' if static else '/tf'} transform: {exc}", key="bad_tf")

    def _on_timer(self, sensor: Sensor) -> None:
        """Simulate the sweep the grid says is due (sensors/schedule.py), if any."""
        if not self.active or self._gazebo_paused(sensor):
            return
        sweep = next_sweep(self._now_ns(), sensor.unit.period_ns, sensor.last_tick_ns)
        if sweep is None:
            return  # this slot's sweep ran already, or no clock yet (use_sim_time without /clock)
        if sweep.time_went_back:  # a bag or Gazebo restarted: forget the old motion
            self.tf.clear()
            if self.gazebo is not None:
                self.gazebo.poses.clear()
        sensor.stats.dropped += sweep.dropped
        sensor.last_tick_ns = sweep.slot
        self._frame(sensor, sweep.t0_ns, sweep.t0_ns, sync=False)

    def _on_sync(self, raw: bytes) -> None:
        stamp = header_stamp_ns(raw)
        if stamp is None:
            self._warn("sync message without a readable header stamp ignored", key="sync")
            return
        for sensor in self.sensors:
            if self.active and sensor.unit is not None and not self._gazebo_paused(sensor):
                self._frame(sensor, stamp, stamp, sync=True)

    # -- timer -> simulate -> publish ----------------------------------------------------------------
    def _frame(self, sensor: Sensor, t0_ns: int, stamp_ns: int, sync: bool) -> None:
        """One frame on the sensor's worker thread (node_sensor.Sensor.submit says why); a crash is logged."""
        def crashed(text: str) -> None:
            self._error(f"{sensor.label}: frame failed: {text}", key=f"crash:{sensor.label}")
        sensor.submit(lambda: self._simulate_and_publish(sensor, t0_ns, stamp_ns, sync), crashed)

    def _simulate_and_publish(self, sensor: Sensor, t0_ns: int, stamp_ns: int, sync: bool) -> None:
        unit = sensor.unit
        if unit is None:
            return
        if self.world_error and not len(self.scene):
            sensor.stats.failed += 1
            self._error(self.world_error, key="world")
            return
        wanted = sensor.wanted(self.params("lazy"))
        if wanted is None:
            sensor.stats.skipped += 1
            return
        start = time.perf_counter()
        if self.gazebo is not None and self.gazebo.mirror is not None:
            self.gazebo.mirror.refresh()  # the newest Gazebo poses, even when gazebo.max_rate_hz holds one back
        try:
            pose = self._pose(sensor, t0_ns, unit.period_ns, sync)
            with self._model_log.scope():
                result = unit.simulate(pose, t0_ns)
        except (TransformLookupError, RadaraysError, ValueError, FloatingPointError) as exc:
            sensor.stats.failed += 1
            sensor.stats.last_error = str(exc)
            self._warn(f"{sensor.label}: frame at {t0_ns / 1e9:.3f} s skipped: {exc}", key=f"frame:{sensor.label}")
            return
        simulated = time.perf_counter()
        if self._gazebo_paused(sensor):  # Gazebo went away during the frame: its world may be stale
            return
        for relative, msg in unit.messages(result, stamp_ns, wanted).items():
            if not self.context.ok() or not self.active:  # Ctrl-C (rclpy shut the context down) or deactivated
                return
            if relative not in sensor.publishers:  # its message package is missing (logged at startup)
                continue
            try:
                sensor.publishers[relative].publish(to_cdr(msg))  # the bag's bytes, see convert.py
            except Exception:  # noqa: BLE001 - rclpy's RCLError when the context closed after the check
                if self.context.ok():
                    raise
                return
        if sensor.sdf is not None and self.params("sensor_tf"):
            self._publish_sensor_tf(sensor, pose, t0_ns)
        done = time.perf_counter()
        sensor.stats.add_time(done - start, done - simulated, unit.rays_per_frame)
        sensor.stats.last_error = ""

    def _publish_sensor_tf(self, sensor: Sensor, pose, t0_ns: int) -> None:
        """world_frame -> the frame of a sensor declared in SDF, where its frame was taken, on /tf: nothing else
        knows where Gazebo's sensor frames are (rviz could not place their clouds and images)."""
        from ..io import messages

        at = pose if isinstance(pose, np.ndarray) else pose.at([t0_ns])[0]
        msg = messages.tf_message([messages.transform_stamped(at, t0_ns, self.params("world_frame"),
                                                              sensor.unit.frame_id)])
        if self.context.ok():
            try:
                self._tf_pub.publish(to_cdr(msg))
            except Exception:  # noqa: BLE001 - the context closed after the check (Ctrl-C)
                if self.context.ok():
                    raise

    def _pose(self, sensor: Sensor, t0_ns: int, period_ns: int, sync: bool):
        """The sensor's pose over the sweep from the source its parameters choose (sensors/poses.py)."""
        source = "gazebo" if sensor.sdf is not None else self.params("pose_source")
        if source == "fixed":
            return sensor.fixed_pose
        tolerance = int(self.params("tf_tolerance") * 1e9)
        samples = self.params("pose_samples_per_second")
        if source == "gazebo":
            if self.gazebo is None:
                raise TransformLookupError("pose_source gazebo needs gazebo.enable: true")
            return self.gazebo.sensor_pose(sensor.gazebo_parent, sensor.mount, t0_ns, period_ns, tolerance, samples,
                                           f"{sensor.prefix}gazebo_parent")
        if sync:  # the sweep starts at the stamp: allow its future part to come from the newest sample
            tolerance += period_ns
        return tf_sweep(self.tf, self.params("world_frame"), sensor.frame_id, t0_ns, period_ns, tolerance, samples)

    # -- run-time parameter changes ------------------------------------------------------------------
    def _on_set_parameters(self, params: list[Parameter]) -> SetParametersResult:
        """Validate the whole change first; apply it only if all of it is valid (else nothing changes). A step
        that fails while applying puts every sensor back exactly as it was. Never raises (rclpy would end the
        node with the exception)."""
        try:
            return self._set_parameters(params)
        except Exception as exc:  # noqa: BLE001 - a bug here must refuse the change, not end the node
            return SetParametersResult(successful=False, reason=one_line(f"refused: {type(exc).__name__}: {exc}"))

    def _set_parameters(self, params: list[Parameter]) -> SetParametersResult:
        unset = sorted(p.name for p in params if p.type_ == Parameter.Type.NOT_SET and self.has_parameter(p.name))
        if unset:  # rclpy would undeclare them for good (dynamically typed keys): nothing could set them again
            return SetParametersResult(successful=False, reason=f"{', '.join(unset)}: a parameter of this node "
                                       "cannot be unset (PARAMETER_NOT_SET); give it a value")
        changes = {p.name: from_ros(p.value) for p in params}
        plan = []  # (apply callable) executed only when every check passed
        try:
            for name, value in changes.items():
                if name in NODE_PARAMS:
                    check_param(name, value, NODE_PARAMS[name])
            for sensor in self.sensors:
                plan += sensor.plan_change(changes, self.get_logger().info)
            if "world" in changes and self.gazebo is not None:
                raise ConfigError("world: the scene follows Gazebo (gazebo.enable is true); restart the node "
                                  "to change the world")
            if "world" in changes:
                world = self._open_world(changes["world"])
                plan.append(lambda: self._install_world(*world))
        except RadaraysError as exc:
            return SetParametersResult(successful=False, reason=one_line(exc))
        except Exception as exc:  # anything a value can provoke (OverflowError, ...): refused, state kept
            return SetParametersResult(successful=False,
                                       reason=one_line(f"{sorted(changes)} refused: {type(exc).__name__}: {exc}"))
        if not plan:
            return SetParametersResult(successful=True)
        periods = {id(s): s.unit.period_ns if s.unit is not None else None for s in self.sensors}
        saved = [(sensor, sensor.snapshot()) for sensor in self.sensors]
        try:
            for apply in plan:
                apply()
            changed = [s for s in self.sensors if s.unit is not None and s.timer is not None
                       and checked_period(s.unit, s.label) != periods.get(id(s))]
        except Exception as exc:  # noqa: BLE001 - never let a parameter change take the node down
            for sensor, snapshot in saved:
                sensor.restore(snapshot)
            self._error(f"applying {sorted(changes)} failed, nothing changed: {exc}", key="set_parameters")
            return SetParametersResult(successful=False, reason=one_line(f"applying the change failed: {exc}"))
        for sensor in changed:
            self._start_timer(sensor)
        return SetParametersResult(successful=True)

    # -- diagnostics ---------------------------------------------------------------------------------
    def _publish_diagnostics(self) -> None:
        gazebo = self.gazebo if self.gazebo is not None and self.gazebo.mirror is not None else None
        reports = []
        for sensor in self.sensors:
            report = sensor_status(
                sensor.stats, started=sensor.unit is not None,
                rate_hz=1e9 / sensor.unit.period_ns if sensor.unit is not None else None,
                world_error=self.world_error if not len(self.scene) else "",
                gazebo=gazebo.world if gazebo is not None else None, gazebo_alive=gazebo is None or gazebo.alive)
            reports.append((f"{self.get_name()}: {sensor.label}", sensor.frame_id or sensor.label, report))
        self._diag_pub.publish(diagnostic_array(self.get_clock().now().to_msg(), reports))


def run(node_name: str, kind: str, args: list[str] | None = None, lifecycle: bool = False) -> int:
    """Spin the node of radar_node, lidar_node or sensor_rig (entry.run_node checks for ROS 2 and --help first);
    `lifecycle`: as a managed node (node_lifecycle.py), unconfigured until told otherwise."""
    rclpy.init(args=sys.argv if args is None else args)
    node = None
    try:
        if lifecycle:
            from .node_lifecycle import LifecycleSensorNode

            node = LifecycleSensorNode(node_name, kind)
        else:
            node = SensorNode(node_name, kind)
        executor = SingleThreadedExecutor()
        executor.add_node(node)
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        # A terminal's Ctrl-C reaches the node twice under `ros2 launch` (the terminal's SIGINT to the process
        # group, then launch's own): the second must not interrupt the clean-up with a traceback.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        if node is not None:
            for sensor in node.sensors:
                sensor.worker.shutdown(wait=True, cancel_futures=True)
            node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()
    return 0
