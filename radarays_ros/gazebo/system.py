"""radarays as a Gazebo system: radar and lidar sensors simulated inside gz-sim 8, in lockstep with it.

Users add one line to a world (gz-sim 8 loads Python systems with its python_system_loader):

    <plugin filename="gz-sim-python-system-loader-system" name="gz::sim::systems::PythonSystemLoader">
      <module_name>radarays_ros.gazebo.system</module_name>
      <lockstep>true</lockstep>          <!-- optional: a due sensor holds the step (default true) -->
      <backend>embree</backend>          <!-- optional: ray-tracing backend -->
    </plugin>

and declare sensors as `<sensor type="custom" gz:type="radarays_radar|radarays_lidar">` (gazebo/sensors.py:
`<update_rate>`, `<topic>`, `<gz_frame_id>`, `<pose>`, our parameters in `<radarays_radar>` / `<radarays_lidar>`).

What the system does, each step (gz-sim calls `post_update` after physics, with the step's sim time):
* the scene: at the first step and whenever the set of models changes (a spawned or removed model), the
  world's SDF from gz-sim's own `generate_world_sdf` service (requested in-process with
  `expand_include_tags`, so a spawned URDF robot comes back as valid SDF) becomes our Scene (world/sdf.py)
  and the sensors declared in it are (re)read (gazebo/sensors.py);
* poses: each frame takes the links' world poses from the EntityComponentManager (gz.sim8 Link.world_pose)
  at that step: moving entities and the sensors' parent links, no mirror lag; and the moving links' velocities
  from the physics (Link.world_linear_velocity / world_angular_velocity: the system enables those components on
  the links of every non-static model in pre_update, each time the set of models changes, before the physics
  runs that step), so the physical radar's Doppler of a moving model is the engine's own from the first frame on
  (where the engine reports none, the radar falls back to the model's pose change between frames);
* schedule: a sensor with rate r is due when sim time reaches its next update time (k / r from the first
  step, as gz-sensors schedules); `<update_rate>` 0 or absent: the sensor config's own rate;
* lockstep (default): a due sensor is simulated and published inside the step, so the step waits for it
  and every frame is produced whatever the host's speed; `<lockstep>false</lockstep>` hands frames to a
  worker thread instead and drops a due frame while the previous one still runs (counted, logged);
* output: radar -> `gz.msgs.Image` (the polar image, rows = range bins unless the sensor's output says
  otherwise), lidar -> `gz.msgs.PointCloudPacked` (the driver layout of its preset), on the sensor's
  `<topic>` through gz.transport13, stamped in sim time as the imitated driver stamps a sweep that starts at
  the step (the radar image: its start; velodyne: the last firing), frame id as Gazebo's sensors name it: the
  `<gz_frame_id>` when declared, else the sensor's scoped name `model::link::sensor`.

A sweep uses the pose of its step for all its azimuths / columns (the future poses of the sweep are not
known yet inside the step). gz-sim's Python bindings (gz.sim8, gz.math7, sdformat14) are imported only by the
hooks; the logic below them (`SensorRuntime`) takes plain callables and is tested without Gazebo.
"""
from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..errors import ConfigError, RadaraysError
from .scene_sdf import world_sdf_request
from .sensors import GAZEBO_LIDAR_TYPES, SensorSpec, find_sensors, plan_config

log = logging.getLogger(__name__)

MODULE_NAME = "radarays_ros.gazebo.system"
PLUGIN_LINE = ('<plugin filename="gz-sim-python-system-loader-system" name="gz::sim::systems::PythonSystemLoader">'
               f'<module_name>{MODULE_NAME}</module_name></plugin>')
GZ_TYPES = {"radar": "gz.msgs.Image", "lidar": "gz.msgs.PointCloudPacked"}
# sensor_msgs/Image encodings -> gz.msgs.PixelFormatType
PIXEL_FORMATS = {"mono8": 1, "mono16": 2, "rgb8": 3, "rgba8": 4, "bgra8": 5, "bgr8": 8, "32FC1": 13}


@dataclass(frozen=True)
class SystemOptions:
    """The `<plugin>` element's options."""

    lockstep: bool = True
    backend: str = "embree"

    @staticmethod
    def from_xml(text: str) -> "SystemOptions":
        from lxml import etree

        root = etree.fromstring(text.encode()) if text.strip() else None
        values = {}
        if root is not None:
            lock = (root.findtext("lockstep") or "").strip().lower()
            if lock:
                if lock not in ("true", "false", "1", "0"):
                    raise ConfigError(f"radarays system: <lockstep> '{lock}'; allowed: true, false")
                values["lockstep"] = lock in ("true", "1")
            backend = (root.findtext("backend") or "").strip()
            if backend:
                values["backend"] = backend
        return SystemOptions(**values)


# -- schedule -------------------------------------------------------------------------------------
class RateSchedule:
    """When a sensor updates, in sim time (ns): at its first step, then every period after it; a step
    that jumps over several update times gives one frame and the schedule continues after that step."""

    def __init__(self, period_ns: int):
        if period_ns <= 0:
            raise ConfigError(f"radarays system: sensor period {period_ns} ns; expected > 0")
        self.period_ns = int(period_ns)
        self.next_ns: int | None = None

    def due(self, t_ns: int) -> bool:
        if self.next_ns is None:
            self.next_ns = t_ns
        if t_ns < self.next_ns:
            return False
        self.next_ns += self.period_ns
        if self.next_ns <= t_ns:
            self.next_ns = t_ns + self.period_ns
        return True


def gazebo_frame_id(spec: SensorSpec) -> str:
    """The frame id Gazebo's sensors give: `<gz_frame_id>` when declared, else the scoped sensor name."""
    return spec.declared_frame or f"{spec.parent}::{spec.name}"


def gz_topic(spec: SensorSpec) -> str:
    """The gz topic of a sensor's frames: `<topic>`; a Gazebo lidar block's cloud on `<topic>/points`, where
    gz-sensors' GpuLidarSensor advertises its PointCloudPacked (its LaserScan keeps `<topic>`)."""
    topic = "/" + spec.topic.strip("/")
    return topic + "/points" if spec.gz_type in GAZEBO_LIDAR_TYPES else topic


# -- rosbags messages -> gz messages ---------------------------------------------------------------
def _header(gz_header, ros_header) -> None:
    gz_header.stamp.sec = int(ros_header.stamp.sec)
    gz_header.stamp.nsec = int(ros_header.stamp.nanosec)
    entry = gz_header.data.add()
    entry.key = "frame_id"
    entry.value.append(ros_header.frame_id)


def image_to_gz(msg, image_cls):
    """A sensor_msgs/Image (rosbags object) as gz.msgs.Image."""
    if msg.encoding not in PIXEL_FORMATS:
        raise ConfigError(f"radarays system: image encoding '{msg.encoding}' has no gz pixel format; "
                          f"allowed: {', '.join(PIXEL_FORMATS)}")
    out = image_cls()
    _header(out.header, msg.header)
    out.width, out.height, out.step = int(msg.width), int(msg.height), int(msg.step)
    out.pixel_format_type = PIXEL_FORMATS[msg.encoding]
    out.data = np.asarray(msg.data, dtype=np.uint8).tobytes()
    return out


def cloud_to_gz(msg, cloud_cls):
    """A sensor_msgs/PointCloud2 (rosbags object) as gz.msgs.PointCloudPacked (gz numbers datatypes from 0:
    INT8 = 0 where ROS has INT8 = 1)."""
    out = cloud_cls()
    _header(out.header, msg.header)
    for f in msg.fields:
        field = out.field.add()
        field.name, field.offset, field.datatype, field.count = f.name, int(f.offset), int(f.datatype) - 1, int(f.count)
    out.height, out.width = int(msg.height), int(msg.width)
    out.is_bigendian = bool(msg.is_bigendian)
    out.point_step, out.row_step = int(msg.point_step), int(msg.row_step)
    out.data = np.asarray(msg.data, dtype=np.uint8).tobytes()
    out.is_dense = bool(msg.is_dense)
    return out


# -- the runtime (no Gazebo here) ------------------------------------------------------------------
@dataclass
class _Sensor:
    spec: SensorSpec
    unit: object
    schedule: RateSchedule
    frame_id: str
    topic: str
    frames: int = 0
    dropped: int = 0


class SensorRuntime:
    """The sensors of one world on one Scene.

    link_pose(scoped_link) -> 4x4 world pose or None; publish(kind, topic, ros_msg) sends a frame;
    link_twist(scoped_link) -> (world linear velocity of its origin, world angular velocity) or None (unknown;
    None: no velocities at all)."""

    def __init__(self, scene, specs: list[SensorSpec], backend, link_pose: Callable, publish: Callable,
                 lockstep: bool = True, moving: list | None = None, link_twist: Callable | None = None):
        from ..sensors.units import make_unit

        self.scene, self.link_pose, self.publish, self.lockstep = scene, link_pose, publish, lockstep
        self.link_twist = link_twist
        self._twists_known = -1  # how many moving links had velocities at the last frame (logged when it changes)
        self.moving = list(moving or [])  # (entity name, scoped link, link_offset) of non-static entities
        self.sensors: list[_Sensor] = []
        self.rejected: list[str] = []  # "<source>: <error>" of sensors whose configuration is refused
        for spec in specs:
            frame_id = gazebo_frame_id(spec)
            try:
                config, overrides = plan_config(spec)
                unit = make_unit(spec.kind, spec.name, scene, backend, config=config, frame_id=frame_id,
                                 overrides=overrides)
            except RadaraysError as exc:  # one bad sensor block: that sensor stays off, the others run
                self.rejected.append(f"{spec.source}: {exc}")
                log.error("radarays system: sensor %s not started: %s", spec.source, exc)
                continue
            self.sensors.append(_Sensor(spec, unit, RateSchedule(unit.period_ns), frame_id, gz_topic(spec)))
        self._busy = threading.Lock()
        self._worker: threading.Thread | None = None

    def step(self, t_ns: int) -> int:
        """Run the sensors due at sim time t_ns; the number of frames started."""
        due = [s for s in self.sensors if s.schedule.due(t_ns)]
        if not due:
            return 0
        if self.lockstep:
            self._frames(due, t_ns, self._poses(), self._twists())
            return len(due)
        if not self._busy.acquire(blocking=False):
            for s in due:
                s.dropped += 1
            return 0
        poses, twists = self._poses(), self._twists()  # read inside the step: the ECM must not be touched from the worker

        def run():
            try:
                self._frames(due, t_ns, poses, twists)
            finally:
                self._busy.release()

        self._worker = threading.Thread(target=run, name="radarays-frames", daemon=True)
        self._worker.start()
        return len(due)

    def wait(self, timeout: float = 30.0) -> None:
        if self._worker is not None:
            self._worker.join(timeout)

    def _poses(self) -> dict:
        links = {link for _, link, _ in self.moving} | {s.spec.parent for s in self.sensors}
        return {link: self.link_pose(link) for link in links}

    def _twists(self) -> dict:
        """Moving link -> its (velocity, angular velocity) where link_twist knows them (else absent)."""
        if self.link_twist is None or not self.moving:  # (a world without moving models: nothing to say)
            return {}
        twists = {link: self.link_twist(link) for link in {link for _, link, _ in self.moving}}
        known = {link: twist for link, twist in twists.items() if twist is not None}
        if len(known) != self._twists_known:
            fastest = max(known.items(), key=lambda kv: float(np.linalg.norm(kv[1][0])), default=None)
            log.info("radarays system: velocities of %d of %d moving links from the physics%s", len(known), len(twists),
                     f" (fastest: {fastest[0]} at {np.linalg.norm(fastest[1][0]):.2f} m/s)" if fastest else "")
            self._twists_known = len(known)
        return known

    def _frames(self, due: list[_Sensor], t_ns: int, poses: dict, twists: dict | None = None) -> None:
        twists = twists or {}
        moved = [(name, link, poses[link] @ offset) for name, link, offset in self.moving if poses.get(link) is not None]
        if moved:
            self.scene.set_poses([(name, pose) for name, _, pose in moved],
                                 [entity_twist(twists.get(link), poses[link], pose) for _, link, pose in moved])
        for s in due:
            parent = poses.get(s.spec.parent)
            if parent is None:
                s.dropped += 1
                log.warning("radarays system: sensor '%s': link '%s' not in the world; frame skipped",
                            s.spec.name, s.spec.parent)
                continue
            result = s.unit.simulate(parent @ np.asarray(s.spec.pose, float), t_ns)
            wanted = {"radar/image"} if s.spec.kind == "radar" else {"points"}
            for msg in s.unit.messages(result, t_ns, wanted).values():
                self.publish(s.spec.kind, s.topic, msg)
            s.frames += 1


def entity_twist(link_twist, link_pose: np.ndarray, entity_pose: np.ndarray):
    """An entity's (velocity of its origin, angular velocity) from its link's (rigid: v + w x r, r from the link's
    origin to the entity's); None where the link's is unknown."""
    from ..radar.physical.motion import point_velocity

    if link_twist is None:
        return None
    velocity, angular = (np.asarray(v, np.float64) for v in link_twist)
    return point_velocity(velocity, angular, link_pose[:3, 3], entity_pose[:3, 3]), angular


def moving_entities(specs) -> list:
    """(entity name, scoped link, link_offset) of the non-static EntitySpecs of a parsed world."""
    out = []
    for e in specs:
        if not e.static and e.link_offset is not None:
            out.append((e.name, e.name.rsplit("::", 1)[0], np.asarray(e.link_offset, float)))
    return out


# -- the gz-sim 8 system ---------------------------------------------------------------------------
def _moving_links(ecm, models) -> list[int]:
    """The link entities of the non-static models among `models` and their nested models (gz.sim8)."""
    from gz.sim8 import Model

    links, pending = [], list(models)
    while pending:
        model = Model(pending.pop())
        if model.static(ecm):
            continue
        links += model.links(ecm)
        pending += model.models(ecm)
    return links


def _pose_matrix(pose) -> np.ndarray:
    """gz.math7 Pose3d -> 4x4."""
    from .entity_tree import poses_to_matrices

    p, q = pose.pos(), pose.rot()
    return poses_to_matrices(np.array([[p.x(), p.y(), p.z()]]), np.array([[q.x(), q.y(), q.z(), q.w()]]))[0]


def _ns(duration) -> int:
    """A pybind11 chrono duration (datetime.timedelta, microsecond resolution) in ns."""
    return (duration.days * 86400 + duration.seconds) * 1_000_000_000 + duration.microseconds * 1000


def _console_logging() -> None:
    """Our log lines on the server's console (the embedded interpreter has no logging set up)."""
    ours = logging.getLogger("radarays_ros")
    if not ours.handlers and not logging.getLogger().handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("[radarays] %(levelname)s %(message)s"))
        ours.addHandler(handler)
        ours.setLevel(logging.INFO)


class RadaraysSystem:
    """The object gz-sim's python_system_loader gets from `get_system()`."""

    def __init__(self):
        self.options = SystemOptions()
        self.world_entity = None
        self.world_name = ""
        self.runtime: SensorRuntime | None = None
        self._models: tuple | None = None
        self._retry_at_ns = 0
        self._last_error = ""
        self._node = None
        self._publishers: dict = {}
        self._failed = False
        self._velocity_models: tuple | None = None  # the models whose links pre_update last enabled velocities of

    def configure(self, entity, sdf, ecm, event_mgr) -> None:
        _console_logging()
        try:
            self.options = SystemOptions.from_xml(sdf.to_string(""))
        except Exception as exc:  # noqa: BLE001 - a bad option: say so once, keep the defaults
            log.error("radarays system: %s; using the defaults", exc)
        self.world_entity = entity
        log.info("radarays system configured (lockstep=%s, backend=%s)", self.options.lockstep, self.options.backend)

    def pre_update(self, info, ecm) -> None:
        """Where the ECM may change, before the physics runs the step: the velocity components of the links of every
        non-static model, whenever the set of models changes (the physics fills them from this step on, so the
        frames of this step's post_update already read them)."""
        if self._failed:
            return
        try:
            from gz.sim8 import Link, World

            models = tuple(sorted(World(self.world_entity).models(ecm)))
            if models == self._velocity_models:
                return
            self._velocity_models = models
            for link in _moving_links(ecm, models):
                Link(link).enable_velocity_checks(ecm, True)
        except Exception as exc:  # noqa: BLE001 - without them the radar differences poses: say so, go on
            log.warning("radarays system: link velocities not enabled (%s); Doppler from pose changes", exc)

    def post_update(self, info, ecm) -> None:
        if info.paused or self._failed:
            return
        t_ns = _ns(info.sim_time)
        try:
            from gz.sim8 import World

            world = World(self.world_entity)
            models = tuple(sorted(world.models(ecm)))
            if models != self._models or (self.runtime is None and t_ns >= self._retry_at_ns):
                self.world_name, self._models = world.name(ecm) or "", models
                try:
                    self._load(ecm)
                except Exception as exc:  # noqa: BLE001 - a world that does not load now may later: retry in 1 s
                    self.runtime, self._retry_at_ns = None, t_ns + 1_000_000_000
                    text = f"{type(exc).__name__}: {exc}"
                    if text != self._last_error:
                        log.error("radarays system: the world cannot be loaded (%s); trying again each sim second",
                                  text)
                        self._last_error = text
                    return
            if self.runtime is not None:
                self.runtime.step(t_ns)
        except Exception as exc:  # noqa: BLE001 - never take the server down: log once, stop the sensors
            log.exception("radarays system stopped: %s", exc)
            self._failed = True

    def _transport(self):
        if self._node is None:
            from gz.transport13 import Node

            self._node = Node()
        return self._node

    def _world_sdf(self) -> str:
        """gz-sim's generate_world_sdf, in this process (gz-transport calls a local replier directly, here in
        the simulation thread, while the ECM holds still)."""
        from . import protos

        service = f"/world/{self.world_name}/generate_world_sdf"
        ok, payload = self._transport().request_raw(service, world_sdf_request(), "gz.msgs.SdfGeneratorConfig",
                                                    "gz.msgs.StringMsg", 5000)
        if not ok:
            raise RuntimeError(f"{service} gave no answer")
        return protos.decode("StringMsg", bytes(payload)).data

    def _load(self, ecm) -> None:
        from pathlib import Path

        from ..tracing.backend import make_backend
        from ..world.entities import add_entities
        from ..world.materials import MaterialLibrary
        from ..world.scene import Scene
        from ..world.sdf import parse_sdf_string
        from .scene_sdf import declare_prefixes

        text = declare_prefixes(self._world_sdf())
        source = f"generate_world_sdf of world '{self.world_name}'"
        scene = Scene(MaterialLibrary.load_user(None))
        parsed = parse_sdf_string(text, Path.cwd(), scene.materials, source=source, strict=False)
        add_entities(scene, parsed.entities)
        specs = [s for s in find_sensors(text) if s.gz_type in ("radarays_radar", "radarays_lidar")]
        backend = make_backend(self.options.backend, scene)
        moving = moving_entities(parsed.entities)
        self.runtime = SensorRuntime(scene, specs, backend, lambda link: self._link_pose(ecm, link), self._publish,
                                     lockstep=self.options.lockstep, moving=moving,
                                     link_twist=lambda link: self._link_twist(ecm, link))
        log.info("radarays system: world '%s', %d entities, sensors: %s", self.world_name, len(scene),
                 ", ".join(f"{s.spec.name} ({s.spec.kind}, {s.topic}, {s.frame_id})" for s in self.runtime.sensors))

    def _link_entity(self, ecm, scoped: str) -> int:
        """The entity of link `model[::model...]::link`, 0 when the world has none."""
        from gz.sim8 import Model, World

        *models, link_name = scoped.split("::")
        if not models:
            return 0
        entity = World(self.world_entity).model_by_name(ecm, models[0])
        for name in models[1:]:
            children = {Model(e).name(ecm): e for e in Model(entity).models(ecm)}
            entity = children.get(name, 0)
        return Model(entity).link_by_name(ecm, link_name) if entity else 0

    def _link_pose(self, ecm, scoped: str):
        import gz.math7  # noqa: F401 - registers Pose3d, which Link.world_pose returns (sdformat14 imports it too)
        from gz.sim8 import Link

        link = self._link_entity(ecm, scoped)
        pose = Link(link).world_pose(ecm) if link else None
        return None if pose is None else _pose_matrix(pose)

    def _link_twist(self, ecm, scoped: str):
        """(world linear velocity of the link's origin, world angular velocity), None unless the physics reports
        both (their components exist from pre_update on)."""
        import gz.math7  # noqa: F401 - registers Vector3d
        from gz.sim8 import Link

        link = self._link_entity(ecm, scoped)
        if not link:
            return None
        linear, angular = Link(link).world_linear_velocity(ecm), Link(link).world_angular_velocity(ecm)
        if linear is None or angular is None:
            return None
        twist = tuple(np.array([v.x(), v.y(), v.z()], np.float64) for v in (linear, angular))
        return twist if all(np.isfinite(v).all() for v in twist) else None

    def _publish(self, kind: str, topic: str, msg) -> None:
        from gz.msgs10.image_pb2 import Image
        from gz.msgs10.pointcloud_packed_pb2 import PointCloudPacked

        if topic not in self._publishers:
            self._publishers[topic] = self._transport().advertise(topic, Image if kind == "radar" else PointCloudPacked)
        out = image_to_gz(msg, Image) if kind == "radar" else cloud_to_gz(msg, PointCloudPacked)
        self._publishers[topic].publish(out)


def get_system() -> RadaraysSystem:
    """Entry point of gz-sim's python_system_loader."""
    return RadaraysSystem()
