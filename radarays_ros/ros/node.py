"""The sensor node: one shared Scene and backend, one or more sensors, parameters, TF, timers, topics.

`radar_node` and `lidar_node` are this node with one sensor whose parameters sit at the top level
(`config`, `frame_id`, `sensor.beam.samples`, ...); `sensor_rig` runs the sensors listed in
`sensors`, each under its own name (`front_radar.config`, `front_radar.sensor.beam.samples`, ...)
and publishing under its name (`front_radar/radar/image`). However many sensors, the world is held
once: one Scene, one BVH. Each sensor's frames run on a worker thread of its own, so sensors run
concurrently (the backend and numpy release the GIL) while the executor thread stays free for
/clock, /tf and parameter changes.

A node never dies of bad input: a missing world, a failed TF lookup, a NaN pose or a bad parameter
is logged (throttled) and counted in the diagnostics, and the last good state is kept.

Parameters (`ros2 param describe` shows each with its range; all are in NODE_PARAMS, SENSOR_PARAMS
and gazebo_link.GAZEBO_PARAMS): `world`, `materials`, `ignore`, `world_frame`, `pose_source`
(tf | fixed | gazebo), `fixed_pose`, `frame_id`, `sync_topic`, `reliable`, `lazy`, ..., the sensor
model under `sensor.*` and the message options under `output.*`.

Following a running Gazebo (radarays_ros.gazebo does the transport and the mirroring):

    gazebo.enable: true            # the scene is the mirror's: one BVH, moved live by its thread
    gazebo.world: radarays_demo    # '' = the only world on gz-transport
    gazebo.sdf: worlds/x.sdf       # geometry file ('' = `world`, else Gazebo's generate_world_sdf)
    gazebo.pose_topic: pose/info   # or dynamic_pose/info
    gazebo.partition: ''           # gz-transport partition ('' = GZ_PARTITION / IGN_PARTITION)
    gazebo.client: builtin         # gz-transport client: builtin or official (gz.transport13 bindings)
    gazebo.clock: ros              # ros: node clock (use_sim_time + bridged /clock = Gazebo time);
                                   # gazebo: the mirror's sim time (/world/<w>/clock), no bridge needed
    gazebo.stale_after_s: 1.0      # no pose message for this long = Gazebo is gone
    gazebo.max_rate_hz: 200.0      # most scene updates per second
  sensor_rig only:
    gazebo.sdf_sensors: true       # also run sensors declared in the SDF: <sensor type="custom"
                                   # gz:type="radarays_radar"|"radarays_lidar"> and gpu_lidar blocks
    gazebo.sensor_files: []        # more SDF / URDF files with such blocks
    gazebo.urdf_model: ''          # Gazebo model of those URDFs' robot (link L -> MODEL::L)
  per sensor (NAME. prefix in the rig):
    gazebo_parent: robot::chassis  # with pose_source: gazebo, pose = that link's pose x fixed_pose

A sensor declared in SDF runs under its sensor name (a parameter prefix like any rig sensor, so
`NAME.sensor.*` tunes it live): pose = the Gazebo pose of its parent link x its <pose>, the link
sampled at 100 Hz on the frame clock so each azimuth / column gets the pose of its own time (motion
distorts a sweep as with tf; the pose now when the samples do not cover the sweep), rate =
<update_rate>, frame id = <gz_frame_id> (or the link), topics from <topic> (when it ends with an
output's name, e.g. 'front/points' or 'front/scan', the outputs go beside it, else below it), its parameters as config
overrides; a bad one is logged with the SDF file and line and that sensor stays off. While the mirror
is not alive (Gazebo stopped or not yet there) no frame is simulated or published; the mirror logs
one line when Gazebo goes and one when it returns, and the scans resume by themselves.
"""
from __future__ import annotations

import math
import os
import struct
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import rclpy
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rcl_interfaces.msg import SetParametersResult
from rclpy.clock import Clock, ClockType
from rclpy.exceptions import ParameterUninitializedException
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

from ..errors import ConfigError, RadaraysError
from ..resources import data_path
from ..sensors.diagnostics import ERROR, OK, WARN, Stats, sensor_status
from ..sensors.poses import fixed_pose, mounted_sweep, tf_sweep
from ..sensors.schedule import next_sweep
from ..sensors.tf_buffer import TransformBuffer, TransformLookupError
from ..sensors.units import ParamInfo, SensorUnit, check_param, make_unit, param_rule, sensor_topic
from ..validate import plain
from .convert import rclpy_class, to_cdr
from .gazebo_link import (GAZEBO_PARAMS, RIG_GAZEBO_PARAMS, LogRelay, SensorDiscovery, close_mirror,
                          sdf_sensor_plan, sdf_topic, start_mirror)
from .params import descriptor, from_ros, ros_value

NODE_PARAMS = {
    "world": ParamInfo("", "SDF world, model directory, URDF or mesh map the sensors see, or a shipped world's "
                       "name (office, street, hall; `radarays world list`) (required)"),
    "materials": ParamInfo("", "material library YAML merged over the shipped one ('' = shipped only)"),
    "ignore": ParamInfo([""], "model/link/visual name globs left out of the world (e.g. the robot itself)", kind=list),
    "backend": ParamInfo("embree", "ray-tracing backend: embree (CPU) or warp (NVIDIA Warp)",
                         choices=("embree", "warp", "optix")),
    "device": ParamInfo("auto", "device of the warp backend (auto = CUDA when present)",
                        choices=("auto", "cpu", "cuda")),
    "threads": ParamInfo(0, "ray-tracing threads (0 = all cores)", 0, 1024, kind=int),
    "world_frame": ParamInfo("map", "fixed frame of the world geometry (tf lookups go world_frame <- sensor frame)"),
    "pose_source": ParamInfo("tf", "sensor pose from tf (moving sensor), the fixed_pose parameter (static sensor) "
                             "or the Gazebo link gazebo_parent x fixed_pose (needs gazebo.enable)",
                             choices=("tf", "fixed", "gazebo")),
    "tf_tolerance": ParamInfo(0.1, "seconds a pose may be taken from the newest/oldest tf sample instead of failing",
                              0.0, 10.0, kind=float),
    "pose_samples_per_second": ParamInfo(200.0, "tf poses sampled per second of a sweep (motion distortion)",
                                         1.0, 10000.0, kind=float),
    "sync_topic": ParamInfo("", "when set, each message on this topic triggers one frame stamped with its stamp "
                            "(instead of the timer); any message type whose first field is a std_msgs/Header"),
    "sync_type": ParamInfo("sensor_msgs/msg/Image", "message type of sync_topic"),
    "reliable": ParamInfo(False, "publish RELIABLE (rviz defaults) instead of the sensor-data BEST_EFFORT QoS", kind=bool),
    "qos_depth": ParamInfo(5, "publisher queue depth", 1, 1000, kind=int),
    "lazy": ParamInfo(True, "skip the simulation while nobody subscribes to the sensor's topics", kind=bool),
    "diagnostics_period": ParamInfo(1.0, "seconds between /diagnostics messages", 0.05, 3600.0, kind=float),
}
READ_ONLY = {"backend", "threads", "sync_topic", "sync_type", "reliable", "qos_depth", "diagnostics_period",
             *GAZEBO_PARAMS, *RIG_GAZEBO_PARAMS}
GAZEBO_FRAME = "__gazebo_world__"  # root of the recorded Gazebo link poses (a buffer of its own)
SENSOR_PARAMS = {
    "frame_id": ParamInfo("", "frame of the sensor's messages and of its tf lookup ('' = the sensor's default)"),
    "fixed_pose": ParamInfo([0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
                            "pose_source=fixed: x y z roll pitch yaw (m, rad) of the sensor in world_frame; "
                            "pose_source=gazebo: its mount on gazebo_parent", kind=list),
    "gazebo_parent": ParamInfo("", "pose_source=gazebo: scoped Gazebo link carrying the sensor (model::link)"),
}


class Sensor:
    """One sensor of the node: its unit, parameters prefix, publishers, timer and statistics."""

    def __init__(self, name: str, prefix: str, kind: str, source: str):
        self.name = name  # '' for the single-sensor nodes
        self.prefix = prefix  # parameter prefix: '' or 'front_radar.'
        self.kind = kind
        self.source = source  # preset name or file
        self.unit: SensorUnit | None = None
        self.frame_id = ""
        self.fixed_pose = np.eye(4)
        self.publishers: dict[str, Any] = {}
        self.timer = None
        self.lock = threading.Lock()  # held while a frame runs; reconfiguration waits for it
        self.worker = ThreadPoolExecutor(1, thread_name_prefix=f"frame_{name or kind}")
        self.stats = Stats()
        self.last_tick_ns: int | None = None  # grid slot of the last simulated sweep
        self.sdf = None  # gazebo_link.SdfSensorPlan of a sensor declared in SDF
        self.gazebo_parent = ""  # pose_source gazebo: the link carrying it

    @property
    def origin(self) -> str:
        """Where the sensor was declared, for messages: its SDF block or its config."""
        return self.sdf.source if self.sdf is not None else self.source

    def topic(self, relative: str) -> str:
        if self.sdf is not None:
            return sdf_topic(self.sdf.topic, self.kind, relative)
        return sensor_topic(self.name, relative)  # the one rule of bags, rig and nodes

    @property
    def label(self) -> str:
        return self.name or self.kind


class SensorNode(Node):
    """See the module docstring. `kind` is 'radar' or 'lidar' for the single-sensor nodes, 'rig' for the rig."""

    def __init__(self, node_name: str, kind: str, **kwargs):
        super().__init__(node_name, **kwargs)
        self.kind = kind
        self._throttle: dict[str, float] = {}
        self.scene = None
        self.backend = None
        self.world_error = ""
        self.tf = TransformBuffer()
        self.mirror = None  # GazeboMirror when gazebo.enable
        self._gz_poses = TransformBuffer(cache_s=5.0)  # world <- Gazebo link samples on the frame clock
        self._gz_recorder: threading.Thread | None = None
        self._gz_stop = threading.Event()
        self._discovery = None
        self._log_relay = None
        self._discovered: list = []  # SensorSpecs found by the discovery thread, adopted on the executor
        self._discovered_lock = threading.Lock()
        self._declare(NODE_PARAMS, "", READ_ONLY)
        self._declare(GAZEBO_PARAMS, "", READ_ONLY)
        if kind == "rig":
            self._declare(RIG_GAZEBO_PARAMS, "", READ_ONLY)
        self.sensors = self._declare_sensors()
        if self._param("gazebo.enable"):
            self._start_gazebo()
            self.sensors += self._sdf_sensors()
        else:
            self._load_world(self._param("world"))
        for sensor in self.sensors:
            self._build_unit(sensor)
        self._make_io()
        self._warn_unknown_parameters()
        self.add_on_set_parameters_callback(self._on_set_parameters)
        if self._discovery is not None:
            self._discovery.start()
        if self.mirror is not None:
            self._gz_recorder = threading.Thread(target=self._record_gazebo_poses, name="gazebo-poses", daemon=True)
            self._gz_recorder.start()

    # -- parameters --------------------------------------------------------------------------------
    def _param(self, name: str) -> Any:
        try:
            return from_ros(self.get_parameter(name).value)
        except ParameterUninitializedException:  # a declared array parameter nobody set
            return None

    def _rejected_override(self, name: str, info: ParamInfo, exc: Exception) -> str:
        """Why rclpy refused a params-file value, in our words: the key, the value and what is allowed."""
        override = self._parameter_overrides.get(name)
        if override is not None:
            try:
                check_param(name, from_ros(override.value), info)
            except ConfigError as reason:  # out of range, not a choice, not finite: names the allowed values
                return str(reason)
            kind = (info.kind or type(info.value)).__name__
            return f"{name} = {from_ros(override.value)!r}: expected a {kind} value"
        return f"parameter {name}: {exc}"

    def _declare(self, infos: dict[str, ParamInfo], prefix: str, read_only=(), dynamic: bool = False) -> dict[str, Any]:
        """Declare `prefix + key` for each info; returns {key: value} with the values from the params file."""
        values = {}
        for key, info in infos.items():
            name = prefix + key
            if self.has_parameter(name):
                values[key] = self._param(name)
                continue
            default = ros_value(info.value)
            if info.kind is list and default == [""]:
                default = Parameter.Type.STRING_ARRAY
            desc = descriptor(name, info, read_only=key in read_only, dynamic=dynamic)
            try:
                param = self.declare_parameter(name, default, desc)
            except Exception as exc:  # a params-file value of the wrong type or out of range
                self._error(f"{self._rejected_override(name, info, exc)}; using the default {info.value!r}")
                param = self.declare_parameter(name, default, desc, ignore_override=True)
            value = from_ros(param.value)
            if not dynamic and info.kind is not list and value is not None:
                try:
                    check_param(name, value, info)
                except ConfigError as exc:  # e.g. pose_source: fixd (ROS checks types and ranges, not choices)
                    self._error(f"{exc}; using the default {info.value!r}")
                    self.set_parameters([Parameter(name, value=ros_value(info.value))])
                    value = info.value
            values[key] = value
        return values

    def _declare_sensors(self) -> list[Sensor]:
        if self.kind != "rig":
            info = ParamInfo({"radar": "radarays_default", "lidar": "VLP-16"}[self.kind],
                             f"{self.kind} preset name or config file")
            self._declare({"config": info}, "", read_only={"config"})
            return [Sensor("", "", self.kind, self._param("config"))]
        self._declare({"sensors": ParamInfo([""], "names of the rig's sensors; each has NAME.type and NAME.config",
                                            kind=list)}, "", read_only={"sensors"})
        names = [n for n in (self._param("sensors") or []) if n]
        sdf_sensors = self._param("gazebo.enable") and self._param("gazebo.sdf_sensors")
        if not names and not sdf_sensors:
            self._error("parameter 'sensors' is empty: list the rig's sensors, e.g. sensors: [front_radar, top_lidar] "
                        "with front_radar.type: radar and front_radar.config: navtech_cir204")
        sensors = []
        for name in names:
            values = self._declare({"type": ParamInfo("lidar", "radar or lidar", choices=("radar", "lidar")),
                                    "config": ParamInfo("", "preset name or config file")}, f"{name}.", read_only={"type", "config"})
            if values["type"] not in ("radar", "lidar"):
                self._error(f"parameter {name}.type = {values['type']!r}: must be radar or lidar; sensor {name} disabled")
                continue
            default = {"radar": "radarays_default", "lidar": "VLP-16"}[values["type"]]
            sensors.append(Sensor(name, f"{name}.", values["type"], values["config"] or default))
        return sensors

    def _warn_unknown_parameters(self) -> None:
        """A params-file key nobody declared is a typo (rclpy would ignore it silently): say so."""
        # a sensor that did not start declared none of its sensor.* / output.* keys: its error said why
        not_started = tuple(f"{s.prefix}{part}." for s in self.sensors if s.unit is None for part in ("sensor", "output"))
        unknown = sorted(name for name in set(self._parameter_overrides) - set(self._parameters)
                         if not (not_started and name.startswith(not_started)))
        if unknown:
            self.get_logger().warning(f"ignored unknown parameter(s) {', '.join(unknown)}; see "
                                      f"`ros2 param list /{self.get_name()}` for the known ones")

    def _sensor_param_overrides(self, sensor: Sensor) -> dict[str, Any]:
        """Sensor-model keys given in the params file (`sensor.beam.samples: 20`), before declaration."""
        prefix = f"{sensor.prefix}sensor."
        return {name[len(prefix):]: from_ros(p.value) for name, p in self._parameter_overrides.items()
                if name.startswith(prefix)}

    # -- world and sensors -------------------------------------------------------------------------
    def _load_world(self, path: str) -> bool:
        """Load the world at startup; on failure the node runs without one and says what to fix."""
        try:
            self._install_world(*self._prepare_world(path))
            return True
        except ConfigError as exc:
            self.world_error = str(exc)
            self._error(self.world_error)
            return False

    def _backend_options(self) -> dict:
        """make_backend options from the node parameters (threads; the device of the warp backend)."""
        options = {"threads": self._param("threads") or None}
        if self._param("backend") == "warp":
            options["device"] = self._param("device")
        return options

    # -- Gazebo ------------------------------------------------------------------------------------
    def _start_gazebo(self) -> None:
        """Follow Gazebo: the mirror's Scene is the world of every sensor (one BVH)."""
        from ..tracing import make_backend

        self._log_relay = LogRelay(self.get_logger()).attach()
        sdf = self._param("gazebo.sdf") or self._param("world") or None
        ignore = tuple(n for n in (self._param("ignore") or []) if n)
        options = dict(world=self._param("gazebo.world"), pose_topic=self._param("gazebo.pose_topic"),
                       partition=self._param("gazebo.partition"), stale_after_s=self._param("gazebo.stale_after_s"),
                       max_rate_hz=self._param("gazebo.max_rate_hz"), materials=self._param("materials"),
                       ignore=ignore, client=self._param("gazebo.client"))
        self._gazebo_sdf = None
        try:
            try:
                self.mirror = start_mirror(sdf=sdf, **options)
            except (RadaraysError, OSError) as exc:
                if sdf is None:
                    raise
                self._error(f"gazebo.sdf {sdf!r} not loaded: {exc}; taking the geometry from Gazebo's "
                            "generate_world_sdf instead (fix the file or the gazebo.sdf parameter)")
                sdf = None
                self.mirror = start_mirror(sdf=None, **options)
        except (RadaraysError, OSError) as exc:  # no transport at all (sockets, bad GZ_* variables)
            self.world_error = f"cannot follow Gazebo: {exc}"
            self._error(self.world_error)
            return
        self._gazebo_sdf = sdf
        backend = make_backend(self._param("backend"), self.mirror.scene, **self._backend_options())
        self.scene, self.backend, self.world_error = self.mirror.scene, backend, ""
        scene = self.mirror.scene
        geometry = (f" with the geometry of {sdf} ({len(scene)} entities, {scene.triangle_count} triangles)" if sdf
                    else " (geometry from its generate_world_sdf service)")
        self.get_logger().info(f"following Gazebo world '{self.mirror.world or '(the only one found)'}'{geometry}; "
                               "no scans until it publishes poses")

    def _sdf_sensors(self) -> list[Sensor]:
        """Sensors declared in the world file and gazebo.sensor_files (rig with gazebo.sdf_sensors)."""
        from ..gazebo.sensors import find_sensors

        if self.kind != "rig" or not self._param("gazebo.sdf_sensors") or self.mirror is None:
            return []
        files = [f for f in (self._param("gazebo.sensor_files") or []) if f]
        if self._gazebo_sdf:
            files.insert(0, self._gazebo_sdf)
        else:  # the world comes from Gazebo: read its sensors from there too, when it answers
            self._discovery = SensorDiscovery(self.mirror, self._on_discovered, self._warn)
        specs = []
        for path in files:
            try:
                specs += find_sensors(path)
            except RadaraysError as exc:
                self._error(f"sensors of {path} not read: {exc}")
        return self._plan_sdf_sensors(specs)

    def _plan_sdf_sensors(self, specs) -> list[Sensor]:
        taken = {s.name for s in self.sensors}
        known = {s.sdf.key for s in self.sensors if s.sdf is not None}
        out = []
        for spec in specs:
            try:
                plan = sdf_sensor_plan(spec, taken, self._param("gazebo.urdf_model"))
            except ConfigError as exc:
                self._error(f"sensor {spec.name} not started: {exc}")
                continue
            if plan.key in known:
                continue
            known.add(plan.key)
            sensor = Sensor(plan.name, f"{plan.name}.", plan.kind, plan.config)
            sensor.sdf = plan
            sensor.gazebo_parent = plan.parent
            out.append(sensor)
            self.get_logger().info(f"sensor {plan.name}: {plan.kind} {plan.config} on Gazebo link {plan.parent} "
                                   f"(declared at {plan.source})")
        return out

    def _on_discovered(self, specs) -> None:
        """Discovery thread: hand the specs to the executor thread (publishers are made there)."""
        with self._discovered_lock:
            self._discovered += specs

    def _adopt_discovered(self) -> None:
        with self._discovered_lock:
            specs, self._discovered = self._discovered, []
        if not specs:
            return
        for sensor in self._plan_sdf_sensors(specs):
            self.sensors.append(sensor)
            self._build_unit(sensor)
            self._make_publishers(sensor, self._qos())
            if not self._param("sync_topic"):
                self._start_timer(sensor)

    def _gazebo_paused(self, sensor: Sensor) -> bool:
        """True (and counted) while the mirror is not alive: no frame may show a world that stopped."""
        if self.mirror is None or self.mirror.alive:
            return False
        sensor.stats.paused += 1
        return True

    def _now_ns(self) -> int:
        if self.mirror is not None and self._param("gazebo.clock") == "gazebo":
            return int(self.mirror.sim_time_ns or 0)
        return self.get_clock().now().nanoseconds

    def _gazebo_parents(self) -> set[str]:
        pose_source = self._param("pose_source")
        return {s.gazebo_parent for s in list(self.sensors)
                if s.gazebo_parent and (s.sdf is not None or pose_source == "gazebo")}

    def _record_gazebo_poses(self) -> None:
        """Sample the Gazebo links carrying sensors (100 Hz, on the clock frames run on), so a sweep
        is posed at each azimuth's / column's time and motion distorts it, as with tf."""
        from ..world.transforms import matrix_to_quaternion

        while not self._gz_stop.wait(0.01):
            if not self.mirror.alive:
                continue
            try:
                now = self._now_ns()
            except Exception:  # the node's context is shutting down
                return
            if now <= 0:
                continue
            for parent in self._gazebo_parents():
                pose = self.mirror.frame_pose(parent)
                if pose is None:
                    continue
                try:
                    self._gz_poses.set_transform(GAZEBO_FRAME, parent, now, pose[:3, 3],
                                                 matrix_to_quaternion(pose[:3, :3]))
                except TransformLookupError:  # a NaN pose or a time that went back: skip the sample
                    continue

    def destroy_node(self):
        self._gz_stop.set()
        if self._gz_recorder is not None:
            self._gz_recorder.join(timeout=2)
        if self._discovery is not None:
            self._discovery.close()
        if self.mirror is not None:
            close_mirror(self.mirror)
        if self._log_relay is not None:
            self._log_relay.detach()
        return super().destroy_node()

    def _prepare_world(self, path: str):
        """(scene, backend) for a world file; ConfigError saying what is wrong and how to fix it."""
        from ..tracing import make_backend
        from ..world.loader import load_world

        if not path:
            raise ConfigError("parameter 'world' is empty: set it to a shipped world's name, an SDF world, model "
                              "directory, URDF or mesh file (--ros-args -p world:=/path/to/world.sdf)")
        try:
            ignore = tuple(n for n in (self._param("ignore") or []) if n)
            scene = load_world(path, materials=self._param("materials") or None, ignore=ignore)
            backend = make_backend(self._param("backend"), scene, **self._backend_options())
        except (RadaraysError, OSError) as exc:
            raise ConfigError(f"world {path!r} not loaded: {exc}") from None
        return scene, backend

    def _install_world(self, scene, backend) -> None:
        """Swap in a loaded world; every sensor is rebuilt on it with its current configuration."""
        old = self.backend
        self.scene, self.backend, self.world_error = scene, backend, ""
        self.get_logger().info(f"world {scene.source}: {len(scene)} entities, {scene.triangle_count} triangles")
        for sensor in self.sensors:
            if sensor.unit is not None:
                with sensor.lock:
                    sensor.unit = self._make_unit(sensor, sensor.unit.config)
        if old is not None:
            old.close()

    def _make_unit(self, sensor: Sensor, config) -> SensorUnit:
        output = dict(sensor.unit.output) if sensor.unit is not None else None
        return make_unit(sensor.kind, sensor.name, self.scene, self.backend, config=config,
                         frame_id=self._frame_arg(sensor), output=output)

    @staticmethod
    def _frame_arg(sensor: Sensor) -> str | None:
        """The frame_id parameter, or the sensor's own default (lidar: from its config; radar: 'radar')."""
        if sensor.frame_id:
            return sensor.frame_id
        return None if sensor.kind == "lidar" else "radar"

    def _build_unit(self, sensor: Sensor) -> None:
        """Create the sensor from its config plus the params file's keys, then declare its parameters."""
        self._declare(SENSOR_PARAMS, sensor.prefix)
        sensor.frame_id = self._param(sensor.prefix + "frame_id") or (sensor.sdf.frame if sensor.sdf else "")
        sensor.gazebo_parent = self._param(sensor.prefix + "gazebo_parent") or sensor.gazebo_parent
        try:
            sensor.fixed_pose = self._pose_param(self._param(sensor.prefix + "fixed_pose"))
        except ConfigError as exc:
            self._error(f"{sensor.prefix}{exc}; using the identity")  # exc names fixed_pose and what it needs
        if self.scene is None:
            from ..world.scene import Scene
            from ..tracing import make_backend

            self.scene = Scene(source="<no world>")
            self.backend = make_backend(self._param("backend"), self.scene, **self._backend_options())
        overrides = {**(sensor.sdf.overrides if sensor.sdf else {}), **self._sensor_param_overrides(sensor)}
        try:
            sensor.unit = make_unit(sensor.kind, sensor.name, self.scene, self.backend, config=sensor.source,
                                    frame_id=self._frame_arg(sensor), overrides=overrides)
        except (RadaraysError, OSError) as exc:
            sensor.stats.last_error = str(exc)
            where = f"the SDF block at {sensor.origin}" if sensor.sdf else "the config"
            self._error(f"sensor {sensor.label} ({sensor.origin}) not started: {exc}. Fix {where} or the "
                        f"{sensor.prefix}sensor.* values in the params file and restart the node.")
            return
        sensor.frame_id = sensor.unit.frame_id
        self._declare(sensor.unit.params(), sensor.prefix + "sensor.", dynamic=True)
        outputs = self._declare(sensor.unit.output_params(), sensor.prefix + "output.")
        try:
            sensor.unit.set_output(outputs)
        except ConfigError as exc:
            self._error(str(exc))

    @staticmethod
    def _pose_param(values) -> np.ndarray:
        return fixed_pose(values)

    # -- topics, timers ----------------------------------------------------------------------------
    def _qos(self) -> QoSProfile:
        reliable = self._param("reliable")
        return QoSProfile(depth=self._param("qos_depth"), history=HistoryPolicy.KEEP_LAST,
                          reliability=ReliabilityPolicy.RELIABLE if reliable else ReliabilityPolicy.BEST_EFFORT,
                          durability=DurabilityPolicy.VOLATILE)

    def _make_publishers(self, sensor: Sensor, qos: QoSProfile) -> None:
        if sensor.unit is None:
            return
        for relative, msgtype in sensor.unit.topics.items():
            sensor.publishers[relative] = self.create_publisher(rclpy_class(msgtype), sensor.topic(relative), qos)

    def _make_io(self) -> None:
        qos = self._qos()
        for sensor in self.sensors:
            self._make_publishers(sensor, qos)
        from tf2_msgs.msg import TFMessage

        self.create_subscription(TFMessage, "/tf", lambda m: self._on_tf(m, False),
                                 QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE))
        self.create_subscription(TFMessage, "/tf_static", lambda m: self._on_tf(m, True),
                                 QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE,
                                            durability=DurabilityPolicy.TRANSIENT_LOCAL))
        sync_topic = self._param("sync_topic")
        if sync_topic:
            try:
                sync_class = rclpy_class(self._param("sync_type"))
            except (ImportError, AttributeError, ValueError) as exc:
                self._error(f"sync_type {self._param('sync_type')!r} cannot be imported ({exc}); falling back to the timer")
                sync_topic = ""
        if sync_topic:
            self.create_subscription(sync_class, sync_topic, self._on_sync, QoSProfile(
                depth=5, reliability=ReliabilityPolicy.BEST_EFFORT), raw=True)
            self.get_logger().info(f"frames triggered by {sync_topic}")
        else:
            for sensor in self.sensors:
                self._start_timer(sensor)
        self._diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self._diag_timer = self.create_timer(self._param("diagnostics_period"), self._publish_diagnostics,
                                             clock=Clock(clock_type=ClockType.STEADY_TIME))
        if self._discovery is not None:
            self._adopt_timer = self.create_timer(0.5, self._adopt_discovered,
                                                  clock=Clock(clock_type=ClockType.STEADY_TIME))

    def _start_timer(self, sensor: Sensor) -> None:
        if sensor.unit is None:
            return
        if sensor.timer is not None:
            self.destroy_timer(sensor.timer)
        clock, tick_s = None, sensor.unit.period_ns * 0.5e-9  # the node clock (sim time under use_sim_time)
        if self.mirror is not None and self._param("gazebo.clock") == "gazebo":
            # steady ticks, the grid on Gazebo's time: tick often enough for a Gazebo faster than real time
            clock, tick_s = Clock(clock_type=ClockType.STEADY_TIME), min(tick_s, 0.02)
        sensor.timer = self.create_timer(tick_s, lambda s=sensor: self._on_timer(s), clock=clock)
        sensor.last_tick_ns = None

    # -- callbacks ---------------------------------------------------------------------------------
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
        if self._gazebo_paused(sensor):
            return
        sweep = next_sweep(self._now_ns(), sensor.unit.period_ns, sensor.last_tick_ns)
        if sweep is None:
            return  # this slot's sweep ran already, or no clock yet (use_sim_time without /clock)
        if sweep.time_went_back:  # a bag or Gazebo restarted: forget the old motion
            self.tf.clear()
            self._gz_poses.clear()
        sensor.stats.dropped += sweep.dropped
        sensor.last_tick_ns = sweep.slot
        self._frame(sensor, sweep.t0_ns, sweep.t0_ns, sync=False)

    def _on_sync(self, raw: bytes) -> None:
        stamp = header_stamp_ns(raw)
        if stamp is None:
            self._warn("sync message without a readable header stamp ignored", key="sync")
            return
        for sensor in self.sensors:
            if sensor.unit is not None and not self._gazebo_paused(sensor):
                self._frame(sensor, stamp, stamp, sync=True)

    def _frame(self, sensor: Sensor, t0_ns: int, stamp_ns: int, sync: bool) -> None:
        """Hand one frame to the sensor's worker thread, or count it dropped if the last one still runs.

        Callbacks stay short on the executor thread (rclpy's executors are Python: a callback that
        holds them for a frame stalls /clock, /tf and the parameter services); the work itself runs
        on a thread per sensor, where the backend and numpy release the GIL, so sensors overlap.
        """
        if not sensor.lock.acquire(blocking=False):
            sensor.stats.dropped += 1
            return
        try:
            sensor.worker.submit(self._frame_and_release, sensor, t0_ns, stamp_ns, sync)
        except RuntimeError:  # the worker is shut down: the node is stopping
            sensor.lock.release()

    def _frame_and_release(self, sensor: Sensor, t0_ns: int, stamp_ns: int, sync: bool) -> None:
        try:
            self._frame_locked(sensor, t0_ns, stamp_ns, sync)
        finally:
            sensor.lock.release()

    def _wanted(self, sensor: Sensor) -> set[str] | None:
        """Topics somebody listens to; None = nobody (and lazy)."""
        unit = sensor.unit
        listened = {t for t, pub in sensor.publishers.items() if pub.get_subscription_count() > 0}
        if not self._param("lazy"):
            return (set(unit.topics) - set(getattr(unit, "on_demand", ()))) | listened
        return listened or None

    def _frame_locked(self, sensor: Sensor, t0_ns: int, stamp_ns: int, sync: bool) -> None:
        try:
            self._simulate_and_publish(sensor, t0_ns, stamp_ns, sync)
        except Exception as exc:  # a bug or an unexpected input must not end the node: log, count, go on
            sensor.stats.failed += 1
            sensor.stats.last_error = f"{type(exc).__name__}: {exc}"
            self._error(f"{sensor.label}: frame failed: {sensor.stats.last_error}", key=f"crash:{sensor.label}")

    def _simulate_and_publish(self, sensor: Sensor, t0_ns: int, stamp_ns: int, sync: bool) -> None:
        unit = sensor.unit
        if unit is None:
            return
        if self.world_error and not len(self.scene):
            sensor.stats.failed += 1
            self._error(self.world_error, key="world")
            return
        wanted = self._wanted(sensor)
        if wanted is None:
            sensor.stats.skipped += 1
            return
        start = time.perf_counter()
        if self.mirror is not None:
            self.mirror.refresh()  # the newest Gazebo poses, even when gazebo.max_rate_hz holds one back
        try:
            pose = self._pose(sensor, t0_ns, unit.period_ns, sync)
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
            sensor.publishers[relative].publish(to_cdr(msg))  # the bag's bytes, see convert.py
        done = time.perf_counter()
        sensor.stats.add_time(done - start, done - simulated, unit.rays_per_frame)
        sensor.stats.last_error = ""

    def _pose(self, sensor: Sensor, t0_ns: int, period_ns: int, sync: bool):
        source = "gazebo" if sensor.sdf is not None else self._param("pose_source")
        if source == "fixed":
            return sensor.fixed_pose
        if source == "gazebo":
            return self._gazebo_pose(sensor, t0_ns, period_ns)
        tolerance = int(self._param("tf_tolerance") * 1e9)
        if sync:  # the sweep starts at the stamp: allow its future part to come from the newest sample
            tolerance += period_ns
        return tf_sweep(self.tf, self._param("world_frame"), sensor.frame_id, t0_ns, period_ns, tolerance,
                        self._param("pose_samples_per_second"))

    def _gazebo_pose(self, sensor: Sensor, t0_ns: int, period_ns: int):
        """Pose of the sensor's Gazebo link x its mount over the sweep, from the recorded link poses
        (motion distortion as with tf); the link's pose now when the samples do not cover the sweep."""
        tolerance = int(self._param("tf_tolerance") * 1e9)
        mount = sensor.sdf.mount if sensor.sdf is not None else sensor.fixed_pose
        try:
            return mounted_sweep(self._gz_poses, GAZEBO_FRAME, sensor.gazebo_parent, mount, t0_ns, period_ns, tolerance,
                                 self._param("pose_samples_per_second"))
        except TransformLookupError:
            return self._gazebo_pose_now(sensor)

    def _gazebo_pose_now(self, sensor: Sensor) -> np.ndarray:
        """Pose of the sensor's Gazebo link now (the mirror follows it at pose-message rate) x its mount."""
        if self.mirror is None:
            raise TransformLookupError("pose_source gazebo needs gazebo.enable: true")
        if not sensor.gazebo_parent:
            raise TransformLookupError(f"pose_source gazebo: set {sensor.prefix}gazebo_parent to the Gazebo "
                                       "link carrying the sensor (model::link)")
        parent = self.mirror.frame_pose(sensor.gazebo_parent)
        if parent is None:
            hint = "" if "::" in sensor.gazebo_parent else " (URDF sensors need gazebo.urdf_model)"
            raise TransformLookupError(f"Gazebo world '{self.mirror.world}' has no link "
                                       f"'{sensor.gazebo_parent}'{hint}")
        mount = sensor.sdf.mount if sensor.sdf is not None else sensor.fixed_pose
        return parent @ mount

    # -- run-time parameter changes ----------------------------------------------------------------
    def _on_set_parameters(self, params: list[Parameter]) -> SetParametersResult:
        """Validate the whole change first; apply it only if all of it is valid (else nothing changes)."""
        changes = {p.name: from_ros(p.value) for p in params}
        plan = []  # (apply callable) executed only when every check passed
        try:
            for name, value in changes.items():
                info = NODE_PARAMS.get(name)
                if info is not None:
                    check_param(name, value, info)
            for sensor in self.sensors:
                plan += self._plan_sensor_change(sensor, changes)
            if "world" in changes and self.mirror is not None:
                raise ConfigError("world: the scene follows Gazebo (gazebo.enable is true); restart the node "
                                  "to change the world")
            if "world" in changes:
                world = self._prepare_world(changes["world"])
                plan.append(lambda: self._install_world(*world))
        except RadaraysError as exc:
            return SetParametersResult(successful=False, reason=str(exc))
        except Exception as exc:  # anything a value can provoke (OverflowError, ...): refused, state kept
            return SetParametersResult(successful=False, reason=f"{sorted(changes)} refused: {type(exc).__name__}: {exc}")
        try:
            for apply in plan:
                apply()
        except Exception as exc:  # never let a parameter change take the node down
            self._error(f"applying {sorted(changes)} failed: {exc}")
            return SetParametersResult(successful=False, reason=f"applying the change failed: {exc}")
        return SetParametersResult(successful=True)

    def _plan_sensor_change(self, sensor: Sensor, changes: dict) -> list:
        unit = sensor.unit
        prefix = sensor.prefix
        mine = {k[len(prefix):]: v for k, v in changes.items() if k.startswith(prefix)} if prefix else dict(changes)
        plan = []
        if unit is None:
            return plan
        model = {k[len("sensor."):]: v for k, v in mine.items() if k.startswith("sensor.")}
        if model:
            config = unit.with_overrides(model)  # raises ConfigError naming the key and the allowed values

            def apply_model(sensor=sensor, config=config):
                old_period = sensor.unit.period_ns
                with sensor.lock:
                    sensor.unit.reconfigure(config)
                if sensor.unit.period_ns != old_period and sensor.timer is not None:
                    self._start_timer(sensor)
                self.get_logger().info(f"{sensor.label}: reconfigured {sorted(model)}")
            plan.append(apply_model)
        output = {k[len("output."):]: v for k, v in mine.items() if k.startswith("output.")}
        if output:
            probe = dict(unit.output)
            unit_copy = type(unit).__new__(type(unit))
            unit_copy.__dict__.update(unit.__dict__)
            unit_copy.output = probe
            unit_copy.set_output(output)  # raises ConfigError
            plan.append(lambda sensor=sensor, output=output: sensor.unit.set_output(output))
        if "gazebo_parent" in mine:
            parent = str(mine["gazebo_parent"])
            plan.append(lambda sensor=sensor, parent=parent: setattr(sensor, "gazebo_parent", parent))
        if "fixed_pose" in mine:
            pose = self._pose_param(mine["fixed_pose"])
            plan.append(lambda sensor=sensor, pose=pose: setattr(sensor, "fixed_pose", pose))
        if "frame_id" in mine:
            frame = str(mine["frame_id"]) or unit.frame_id
            plan.append(lambda sensor=sensor, frame=frame: (setattr(sensor, "frame_id", frame),
                                                           setattr(sensor.unit, "frame_id", frame)))
        return plan

    # -- diagnostics and logging -------------------------------------------------------------------
    def _publish_diagnostics(self) -> None:
        array = DiagnosticArray()
        array.header.stamp = self.get_clock().now().to_msg()
        levels = {OK: DiagnosticStatus.OK, WARN: DiagnosticStatus.WARN, ERROR: DiagnosticStatus.ERROR}
        for sensor in self.sensors:
            report = sensor_status(
                sensor.stats, started=sensor.unit is not None,
                rate_hz=1e9 / sensor.unit.period_ns if sensor.unit is not None else None,
                world_error=self.world_error if not len(self.scene) else "",
                gazebo=(self.mirror.world or "") if self.mirror is not None else None,
                gazebo_alive=self.mirror is None or self.mirror.alive)
            status = DiagnosticStatus(name=f"{self.get_name()}: {sensor.label}", hardware_id=sensor.frame_id or sensor.label,
                                      level=levels[report.level], message=report.message)
            status.values = [KeyValue(key=k, value=v) for k, v in report.values.items()]
            array.status.append(status)
        self._diag_pub.publish(array)

    def _log_throttled(self, level: str, text: str, key: str | None, period: float = 5.0) -> None:
        now = time.monotonic()
        key = key or text
        if now - self._throttle.get(key, -math.inf) < period:
            return
        self._throttle[key] = now
        getattr(self.get_logger(), level)(text)

    def _warn(self, text: str, key: str | None = None) -> None:
        self._log_throttled("warning", text, key)

    def _error(self, text: str, key: str | None = None) -> None:
        self._log_throttled("error", text, key)


def header_stamp_ns(raw: bytes) -> int | None:
    """Stamp of a CDR message whose first field is a std_msgs/Header, without deserialising the rest."""
    if len(raw) < 12:
        return None
    little = raw[1] in (0x01, 0x03)  # CDR_LE / PL_CDR_LE encapsulation
    sec, nanosec = struct.unpack("<iI" if little else ">iI", raw[4:12])
    if sec < 0 or nanosec >= 1_000_000_000:  # before 1970 or not a time: not a stamp to simulate at
        return None
    return sec * 1_000_000_000 + nanosec


def use_large_message_profile() -> None:
    """Use our Fast DDS profile (32 MiB shared-memory segment) unless the user chose one."""
    if os.environ.get("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp") != "rmw_fastrtps_cpp":
        return
    if os.environ.get("FASTRTPS_DEFAULT_PROFILES_FILE") or os.environ.get("FASTDDS_DEFAULT_PROFILES_FILE"):
        return
    profile = data_path("ros", "fastdds_large_messages.xml", must_exist=False)
    if profile.is_file():
        os.environ["FASTRTPS_DEFAULT_PROFILES_FILE"] = str(profile)


def help_requested(argv: list[str]) -> bool:
    """-h / --help among the program's own arguments (those before --ros-args)."""
    own = argv[1: argv.index("--ros-args")] if "--ros-args" in argv else argv[1:]
    return "-h" in own or "--help" in own


def help_text(node_name: str, kind: str) -> str:
    """Usage and the node-level parameters with their defaults and descriptions."""
    prefix = "NAME." if kind == "rig" else ""
    groups = [("node", NODE_PARAMS), ("per sensor" if kind == "rig" else "sensor", SENSOR_PARAMS),
              ("Gazebo", {**GAZEBO_PARAMS, **(RIG_GAZEBO_PARAMS if kind == "rig" else {})})]
    lines = [f"usage: ros2 run radarays_ros {node_name} --ros-args [--params-file FILE.yaml] [-p NAME:=VALUE ...]",
             f"       python -m radarays_ros.ros.{node_name} --ros-args ...", ""]
    if kind == "rig":
        lines += ["sensor_rig runs the sensors listed in `sensors` (e.g. [front_radar, top_lidar]); each NAME has",
                  "NAME.type (radar | lidar), NAME.config (a preset or a config file; default radarays_default /",
                  "VLP-16) and the per-sensor parameters below under NAME.", ""]
    else:
        default = {"radar": "radarays_default", "lidar": "VLP-16"}[kind]
        lines += [f"config (default {default!r}): {kind} preset name or config file "
                  f"(`radarays {kind} --help`; lidar presets: `radarays lidar --list-presets`)", ""]
    for title, params in groups:
        lines.append(f"{title} parameters:")
        for name, info in params.items():
            shown = prefix + name if params is SENSOR_PARAMS else name
            lines.append(f"  {shown} (default {plain(info.value)}): {info.description}{allowed_suffix(info)}")
        lines.append("")
    lines.append(f"The sensor model's own parameters ({prefix}sensor.*, {prefix}output.*) depend on its config: "
                 f"`ros2 param list /{node_name}` and `ros2 param describe` show them with their ranges. "
                 "Example params files: config/ros/.")
    return "\n".join(lines)


def allowed_suffix(info: ParamInfo) -> str:
    """' (allowed ...)' for a parameter with a range or choices: the words of its errors and descriptor."""
    if info.choices or info.lo is not None or info.hi is not None:
        return f" (allowed {param_rule(info).allowed()})"
    return ""


def run(node_name: str, kind: str, args: list[str] | None = None) -> int:
    """Entry point shared by radar_node, lidar_node and sensor_rig."""
    if help_requested(sys.argv if args is None else args):
        print(help_text(node_name, kind))
        return 0
    use_large_message_profile()
    rclpy.init(args=sys.argv if args is None else args)
    node = None
    try:
        node = SensorNode(node_name, kind)
        executor = SingleThreadedExecutor()
        executor.add_node(node)
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        if node is not None:
            for sensor in node.sensors:
                sensor.worker.shutdown(wait=True, cancel_futures=True)
            node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()
    return 0
