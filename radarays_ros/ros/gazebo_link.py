"""Everything a sensor node does to follow a running Gazebo, in one place (no rclpy here; node.py wires it in).

* `GAZEBO_PARAMS` / `RIG_GAZEBO_PARAMS`: the `gazebo.*` node parameters.
* `GazeboLink`: the mirror (its Scene becomes the node's world: one BVH, moved live by its thread), the
  Gazebo clock, the recorded poses of the links that carry sensors, the sensors declared in SDF, and
  the mirror's log lines on the node's logger.
* `start_mirror(...)`: a started GazeboMirror.
* `sdf_sensor_plan(spec)`: how a sensor declared in SDF / URDF (`find_sensors`) becomes one of the
  node's sensors: config source, overrides (the SDF parameters, `<update_rate>`), topics, frame.
* `SensorDiscovery`: sensors declared in the world Gazebo runs (its generate_world_sdf answer),
  re-read when the world changes, for worlds not given as a file.
* `LogRelay`: the Python log lines of the layers below go to the ROS log, once per process (a node its
  own mirror's; lines of no node's scope by the oldest node).

The node parameters (node.py wires them; `ros2 param describe` shows each with its range):

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
output's name, e.g. 'front/points' or 'front/scan', the outputs go beside it, else below it), its
parameters as config overrides; a bad one is logged with the SDF file and line and that sensor stays
off. While the mirror is not alive (Gazebo stopped or not yet there) no frame is simulated or
published; the mirror logs one line when Gazebo goes and one when it returns, and the scans resume by
themselves.
"""
from __future__ import annotations

import contextvars
import logging
import os
import re
import threading
import time
from dataclasses import dataclass, field
from contextlib import contextmanager, nullcontext
from typing import Any, Callable

import numpy as np

from ..errors import ConfigError, RadaraysError
from ..sensors.poses import mounted_sweep
from ..sensors.tf_buffer import TransformBuffer, TransformLookupError
from ..gazebo.sensors import plan_config
from ..sensors.params import ParamInfo
from ..threads import context_thread
from ..throttled_log import one_line

GAZEBO_PARAMS = {
    "gazebo.enable": ParamInfo(False, "follow a running Gazebo world: the scene mirrors it (poses, spawned and "
                               "deleted models) and no scans are published while it is away", kind=bool),
    "gazebo.world": ParamInfo("", "Gazebo world name ('' = the only world found on gz-transport)"),
    "gazebo.sdf": ParamInfo("", "world file for the geometry ('' = the world parameter, else Gazebo's "
                            "generate_world_sdf service)"),
    "gazebo.pose_topic": ParamInfo("pose/info", "Gazebo pose topic under /world/<w>/",
                                   choices=("pose/info", "dynamic_pose/info")),
    "gazebo.partition": ParamInfo("", "gz-transport partition ('' = GZ_PARTITION / IGN_PARTITION)"),
    "gazebo.client": ParamInfo("builtin", "gz-transport client: ours (builtin) or Gazebo's Python bindings "
                               "gz.transport13 (official; they hold the GIL while a request waits, see "
                               "gazebo/client.py)", choices=("builtin", "official")),
    "gazebo.clock": ParamInfo("ros", "time of frames and stamps: the node clock (ros; Gazebo's time with "
                              "use_sim_time and /clock bridged) or the mirror's Gazebo sim time (gazebo)",
                              choices=("ros", "gazebo")),
    "gazebo.stale_after_s": ParamInfo(1.0, "seconds without pose messages after which Gazebo counts as gone",
                                      0.05, 60.0, kind=float),
    "gazebo.max_rate_hz": ParamInfo(200.0, "most scene pose updates per second (each frame also applies the newest "
                                           "poses first); lower it to save CPU on fast pose streams, keep it above "
                                           "the sweep rate for motion-distorted sweeps", 1.0, 10000.0, kind=float),
}
RIG_GAZEBO_PARAMS = {
    "gazebo.sdf_sensors": ParamInfo(True, "also run the radarays / gpu_lidar sensors declared in the world's SDF "
                                    "(the file, else Gazebo's generate_world_sdf) and in gazebo.sensor_files",
                                    kind=bool),
    "gazebo.sensor_files": ParamInfo([""], "more SDF / URDF files whose sensor blocks the rig runs", kind=list),
    "gazebo.urdf_model": ParamInfo("", "Gazebo model name of the robot of URDF sensor_files (link L -> MODEL::L)"),
}
OUTPUT_TOPICS = {"radar": ("radar/image", "radar/points", "radar/image_cartesian"), "lidar": ("points", "scan")}
GAZEBO_FRAME = "__gazebo_world__"  # root of the recorded Gazebo link poses (a buffer of its own)


@dataclass
class SdfSensorPlan:
    """A sensor declared in SDF, as the node runs it."""

    name: str  # node-level sensor name (parameter prefix NAME.)
    kind: str
    config: str  # preset or file
    overrides: dict[str, Any]
    parent: str  # scoped Gazebo link
    mount: np.ndarray = field(repr=False)
    topic: str  # the SDF <topic>
    frame: str
    source: str  # "file:line <sensor name='...'>"
    key: str  # parent::name, unique in a world


def sdf_sensor_plan(spec, taken: set[str], urdf_model: str = "") -> SdfSensorPlan:
    """A SensorSpec as a node sensor: `preset` is the config, `overrides` and every other parameter
    (nested elements flattened to dotted keys) override it, `<update_rate>` sets the rate."""
    config, overrides = plan_config(spec)  # the one rule, shared with the Gazebo system (gazebo/sensors.py)
    parent = spec.parent
    if "::" not in parent and urdf_model:
        parent = f"{urdf_model}::{parent}"
    return SdfSensorPlan(name=unique_name(spec.name, parent, taken), kind=spec.kind, config=config,
                         overrides=overrides, parent=parent, mount=np.asarray(spec.pose, dtype=float),
                         topic=spec.topic, frame=spec.frame, source=spec.source, key=f"{spec.parent}::{spec.name}")


def unique_name(name: str, parent: str, taken: set[str]) -> str:
    """A parameter-safe sensor name not in `taken` (the model name is prefixed on a clash)."""
    base = re.sub(r"\W", "_", name) or "sensor"
    if base[0].isdigit():
        base = "s_" + base
    candidate = base
    if candidate in taken:
        candidate = re.sub(r"\W", "_", parent.split("::", 1)[0]) + "_" + base
    n = 2
    while candidate in taken:
        candidate, n = f"{base}_{n}", n + 1
    taken.add(candidate)
    return candidate


def sdf_topic(sdf: str, kind: str, relative: str) -> str:
    """Topic of one output of an SDF sensor. When the SDF <topic> ends with the name of one of the
    sensor's outputs, that output goes there and the others beside it ('front/points' or
    'front/scan' -> front/points, front/scan); otherwise they go below it ('front' -> front/points)."""
    for name in sorted(OUTPUT_TOPICS[kind], key=len, reverse=True):
        if sdf == name or sdf.endswith("/" + name):
            return sdf[: -len(name)] + relative
    return sdf.rstrip("/") + "/" + relative


def start_mirror(world: str, sdf: str | None, pose_topic: str, partition: str, stale_after_s: float,
                 max_rate_hz: float, materials: str | None, ignore: tuple[str, ...], client: str = "builtin"):
    """A started GazeboMirror (its SDF file, if any, is loaded before this returns; errors raise)."""
    from ..gazebo.client import make_client
    from ..gazebo.mirror import GazeboMirror, MirrorConfig

    config = MirrorConfig(world=world, sdf=sdf or None, pose_topic=pose_topic, stale_after_s=stale_after_s,
                          max_rate_hz=max_rate_hz, materials=materials or None, ignore=tuple(ignore))
    if partition:  # read by both clients (the official one takes it from the environment only)
        os.environ["GZ_PARTITION"] = partition
        os.environ["IGN_PARTITION"] = partition
    client = make_client(client)
    try:
        return GazeboMirror(config, client=client).start()
    except BaseException:
        client.close()
        raise


def close_mirror(mirror) -> None:
    client = mirror.client
    mirror.close()
    if client is not None:
        client.close()


class SensorDiscovery:
    """Reads the sensors of the world Gazebo runs (generate_world_sdf) on a thread of its own,
    whenever the mirror is alive and the set of models changed (or every `every_s`); new ones (by
    parent::name) are handed to `found(specs)`."""

    def __init__(self, mirror, found: Callable[[list], None], log: Callable[[str], None], every_s: float = 30.0):
        self.mirror, self.found, self.log, self.every_s = mirror, found, log, every_s
        self._seen: set[str] = set()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> "SensorDiscovery":
        self._thread = context_thread(self._run, "gazebo-sensors")  # in the context of who starts it
        self._thread.start()
        return self

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        from ..gazebo import protos
        from ..gazebo.scene_sdf import declare_prefixes, world_sdf_request
        from ..gazebo.sensors import find_sensors

        models, last, last_error = None, -float("inf"), ""
        while not self._stop.wait(0.5):
            mirror = self.mirror
            if not mirror.alive:
                continue
            now_models = {name.split("::", 1)[0] for name in mirror.scene.entity_names()}
            if now_models == models and time.monotonic() - last < self.every_s:
                continue
            try:
                payload, type_name = mirror.client.request(f"/world/{mirror.world}/generate_world_sdf", world_sdf_request(),
                                                           timeout=mirror.config.service_timeout_s)
                text = protos.decode(type_name or "StringMsg", payload).data
                specs = find_sensors(declare_prefixes(text))
            except (TimeoutError, RuntimeError):
                continue
            except Exception as exc:  # noqa: BLE001 - whatever the answer holds, this thread goes on
                if str(exc) != last_error:
                    self.log(f"sensors of Gazebo world '{mirror.world}' not read: {exc}")
                    last_error = str(exc)
                specs = []
            models, last = now_models, time.monotonic()
            new = [s for s in specs if f"{s.parent}::{s.name}" not in self._seen]
            self._seen.update(f"{s.parent}::{s.name}" for s in new)
            if new:
                self.found(new)


_RELAYING: contextvars.ContextVar = contextvars.ContextVar("radarays_log_relay", default=None)
# The attached shared (unscoped) relays of each logger name, oldest first: a record logged in none of
# their scopes is relayed by the oldest alone. Replaced whole under the lock; emit reads it without.
_SHARED: dict[str, tuple["LogRelay", ...]] = {}
_SHARED_LOCK = threading.Lock()


class LogRelay(logging.Handler):
    """Python log records of a layer below ros/ (`name`: the Gazebo layer's by default; the radar model's for
    its run-time warnings) -> the node's ROS logger, at their level. Nodes sharing a process (a composed
    container, a launch's nodes in one process) each attach one, and every record reaches the ROS log once:

    * `scoped`: only the records logged inside this relay's `scope()` (the node's own frames); the rest
      are not this node's and it says nothing of them (the radar model's warnings).
    * shared (not scoped): a record logged inside the scope of one of the logger's shared relays goes to
      that one (a node's GazeboLink starts its mirror inside its scope, and the mirror's threads run in
      that context: threads.context_thread); any other record (a thread nobody's scope covers, e.g. one
      of the official gz-transport bindings) goes to the logger's oldest attached shared relay, the
      process-wide one. Detaching that one hands the role to the next oldest, so lines still appear
      after the first node is destroyed."""

    def __init__(self, ros_logger, name: str = "radarays_ros.gazebo", scoped: bool = False):
        super().__init__(logging.INFO)
        self.ros_logger, self.name, self.scoped = ros_logger, name, scoped

    @contextmanager
    def scope(self):
        """Records logged in this block (this thread, or context: also threads it starts with
        threads.context_thread) are this relay's."""
        token = _RELAYING.set(self)
        try:
            yield
        finally:
            _RELAYING.reset(token)

    def owns(self, owner: "LogRelay | None") -> bool:
        """Whether a record logged in `owner`'s scope (None: in no relay's) is this relay's to say."""
        if self.scoped:
            return owner is self
        shared = _SHARED.get(self.name, ())
        if any(owner is relay for relay in shared):
            return owner is self
        return bool(shared) and shared[0] is self

    def emit(self, record: logging.LogRecord) -> None:
        if not self.owns(_RELAYING.get()):
            return
        try:
            text = one_line(record.getMessage())  # names from the network: one printable line
            if record.levelno >= logging.ERROR:
                self.ros_logger.error(text)
            elif record.levelno >= logging.WARNING:
                self.ros_logger.warning(text)
            else:
                self.ros_logger.info(text)
        except Exception:  # a logger that is gone (node destroyed) must not break the mirror thread
            pass

    def attach(self) -> "LogRelay":
        logger = logging.getLogger(self.name)
        logger.setLevel(logging.INFO)
        if not self.scoped:
            with _SHARED_LOCK:
                shared = _SHARED.get(self.name, ())
                if not any(relay is self for relay in shared):
                    _SHARED[self.name] = shared + (self,)
        logger.addHandler(self)
        return self

    def detach(self) -> None:
        logging.getLogger(self.name).removeHandler(self)
        with _SHARED_LOCK:
            shared = tuple(relay for relay in _SHARED.get(self.name, ()) if relay is not self)
            if shared:
                _SHARED[self.name] = shared
            else:
                _SHARED.pop(self.name, None)


class GazeboLink:
    """A node's link to a running Gazebo. `param(name)` reads the node's parameters; `log` is the node's
    ROS logger, `error(text)` its throttled error log. After `start()`: `mirror` (None when no
    transport could be opened: `error` says why), `scene`, the SDF sensors to run (`declared_sensors`,
    `take_discovered`), the clock (`now_ns`), the pose of a sensor on a link (`sensor_pose`)."""

    def __init__(self, param: Callable[[str], Any], log, error: Callable[[str], None]):
        self.param, self.log, self._error = param, log, error
        self.mirror = None
        self.sdf: str | None = None  # the geometry file actually loaded ('' / None = generate_world_sdf)
        self.poses = TransformBuffer(cache_s=5.0)  # world <- Gazebo link samples on the frame clock
        self.discovery: SensorDiscovery | None = None
        self._relay: LogRelay | None = None
        self._recorder: threading.Thread | None = None
        self._stop = threading.Event()
        self._found: list = []  # SensorSpecs from the discovery thread, taken on the executor thread
        self._found_lock = threading.Lock()

    def start(self) -> str:
        """Follow Gazebo; '' when the mirror runs, else why not (the node then has no world)."""
        self._relay = LogRelay(self.log).attach()
        with self._relay.scope():  # the mirror's threads start here: their records are this node's (LogRelay)
            return self._start()

    def _start(self) -> str:
        sdf = self.param("gazebo.sdf") or self.param("world") or None
        ignore = tuple(n for n in (self.param("ignore") or []) if n)
        options = dict(world=self.param("gazebo.world"), pose_topic=self.param("gazebo.pose_topic"),
                       partition=self.param("gazebo.partition"), stale_after_s=self.param("gazebo.stale_after_s"),
                       max_rate_hz=self.param("gazebo.max_rate_hz"), materials=self.param("materials"),
                       ignore=ignore, client=self.param("gazebo.client"))
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
            return f"cannot follow Gazebo: {exc}"
        self.sdf = sdf
        scene = self.mirror.scene
        geometry = (f" with the geometry of {sdf} ({len(scene)} entities, {scene.triangle_count} triangles)" if sdf
                    else " (geometry from its generate_world_sdf service)")
        self.log.info(f"following Gazebo world '{self.mirror.world or '(the only one found)'}'{geometry}; "
                      "no scans until it publishes poses")
        return ""

    @property
    def scene(self):
        return self.mirror.scene if self.mirror is not None else None

    @property
    def alive(self) -> bool:
        return self.mirror is not None and self.mirror.alive

    @property
    def world(self) -> str:
        return (self.mirror.world or "") if self.mirror is not None else ""

    def now_ns(self, ros_now_ns: Callable[[], int]) -> int:
        """The frame clock: Gazebo's sim time with gazebo.clock: gazebo, else the node clock."""
        if self.mirror is not None and self.param("gazebo.clock") == "gazebo":
            return int(self.mirror.sim_time_ns or 0)
        return ros_now_ns()

    @property
    def steady_ticks(self) -> bool:
        """Frames on Gazebo's time: the timers tick on the steady clock (Gazebo may run faster than real time)."""
        return self.mirror is not None and self.param("gazebo.clock") == "gazebo"

    # -- sensors declared in SDF ---------------------------------------------------------------------
    def declared_sensors(self) -> list:
        """SensorSpecs of the world file and gazebo.sensor_files (rig with gazebo.sdf_sensors); without a
        world file the discovery thread reads them from Gazebo and `take_discovered` hands them over."""
        from ..gazebo.sensors import find_sensors

        if not self.param("gazebo.sdf_sensors") or self.mirror is None:
            return []
        files = [f for f in (self.param("gazebo.sensor_files") or []) if f]
        if self.sdf:
            files.insert(0, self.sdf)
        else:  # the world comes from Gazebo: read its sensors from there too, when it answers
            self.discovery = SensorDiscovery(self.mirror, self._on_found, lambda text: self.log.warning(one_line(text)))
        specs = []
        for path in files:
            try:
                specs += find_sensors(path)
            except RadaraysError as exc:
                self._error(f"sensors of {path} not read: {exc}")
        return specs

    def plan(self, specs, sensors) -> list[SdfSensorPlan]:
        """The plans of the specs the node's `sensors` (node_sensor.Sensor) do not run yet (by parent::name),
        under names none of them has; a bad one is logged and left out."""
        taken = {s.name for s in sensors}
        known = {s.sdf.key for s in sensors if s.sdf is not None}
        out = []
        for spec in specs:
            try:
                plan = sdf_sensor_plan(spec, taken, self.param("gazebo.urdf_model"))
            except ConfigError as exc:
                self._error(f"sensor {spec.name} not started: {exc}")
                continue
            if plan.key in known:
                continue
            known.add(plan.key)
            out.append(plan)
            self.log.info(f"sensor {plan.name}: {plan.kind} {plan.config} on Gazebo link {plan.parent} "
                          f"(declared at {plan.source})")
        return out

    def _on_found(self, specs) -> None:
        with self._found_lock:
            self._found += specs

    def take_discovered(self) -> list:
        """SensorSpecs the discovery thread found since the last call."""
        with self._found_lock:
            specs, self._found = self._found, []
        return specs

    # -- poses of the links carrying sensors ---------------------------------------------------------
    @staticmethod
    def carrying_links(sensors, pose_source: str) -> set[str]:
        """The Gazebo links sensors are posed from: those of SDF sensors, and all with pose_source gazebo."""
        return {s.gazebo_parent for s in list(sensors)
                if s.gazebo_parent and (s.sdf is not None or pose_source == "gazebo")}

    def start_threads(self, parents: Callable[[], set[str]], ros_now_ns: Callable[[], int]) -> None:
        """Start the discovery thread (if any) and the recorder of the links `parents()` names."""
        with self._relay.scope() if self._relay is not None else nullcontext():  # their records are this node's
            if self.discovery is not None:
                self.discovery.start()
            if self.mirror is not None:
                self._recorder = context_thread(self._record, "gazebo-poses", (parents, ros_now_ns))
                self._recorder.start()

    def _record(self, parents: Callable[[], set[str]], ros_now_ns: Callable[[], int]) -> None:
        """Sample the Gazebo links carrying sensors (100 Hz, on the clock frames run on), so a sweep
        is posed at each azimuth's / column's time and motion distorts it, as with tf."""
        from ..world.transforms import matrix_to_quaternion

        while not self._stop.wait(0.01):
            if not self.mirror.alive:
                continue
            try:
                now = self.now_ns(ros_now_ns)
            except Exception:  # the node's context is shutting down
                return
            if now <= 0:
                continue
            for parent in parents():
                pose = self.mirror.frame_pose(parent)
                if pose is None:
                    continue
                try:
                    self.poses.set_transform(GAZEBO_FRAME, parent, now, pose[:3, 3], matrix_to_quaternion(pose[:3, :3]))
                except TransformLookupError:  # a NaN pose or a time that went back: skip the sample
                    continue

    def sensor_pose(self, parent: str, mount: np.ndarray, t0_ns: int, period_ns: int, tolerance_ns: int,
                    samples_per_s: float, parent_param: str):
        """Pose of a sensor mounted on Gazebo link `parent` over the sweep, from the recorded link poses
        (motion distortion as with tf); the link's pose now when the samples do not cover the sweep.
        `parent_param`: the parameter that names the link, for the error when it is not set."""
        try:
            return mounted_sweep(self.poses, GAZEBO_FRAME, parent, mount, t0_ns, period_ns, tolerance_ns,
                                 samples_per_s)
        except TransformLookupError:
            pass
        if self.mirror is None:
            raise TransformLookupError("pose_source gazebo needs gazebo.enable: true")
        if not parent:
            raise TransformLookupError(f"pose_source gazebo: set {parent_param} to the Gazebo link carrying the "
                                       "sensor (model::link)")
        pose = self.mirror.frame_pose(parent)
        if pose is None:
            hint = "" if "::" in parent else " (URDF sensors need gazebo.urdf_model)"
            raise TransformLookupError(f"Gazebo world '{self.mirror.world}' has no link '{parent}'{hint}")
        return pose @ mount

    def close(self) -> None:
        self._stop.set()
        if self._recorder is not None:
            self._recorder.join(timeout=2)
        if self.discovery is not None:
            self.discovery.close()
        if self.mirror is not None:
            close_mirror(self.mirror)
        if self._relay is not None:
            self._relay.detach()
