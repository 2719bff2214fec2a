"""A ray-tracing Scene that mirrors a running Gazebo world (poses, spawned and deleted models).

    mirror = GazeboMirror(MirrorConfig(world="radarays_demo", sdf="worlds/gz_radarays_demo.sdf"))
    mirror.start()                     # loads the SDF (or asks Gazebo for it), follows the world
    backend = make_backend("embree", mirror.scene)
    if mirror.alive:                   # never publish scans of a world that stopped
        mirror.refresh(); ... trace ...  # the newest poses, whatever the rate cap
    mirror.close()

What it follows (Gazebo's SceneBroadcaster, over gz-transport; nothing of this is bridged to ROS):

* `/world/<w>/scene/info` service (Scene): the model -> link -> visual tree with entity ids and
  parent-relative poses, asked once at start and again whenever Gazebo comes back.
* `/world/<w>/pose/info` (or `dynamic_pose/info`) topic (Pose_V): entity ids with parent-relative
  poses. World poses are composed up the tree (model · link · visual, nested models included) and
  only entities that moved more than `min_translation` / `min_rotation` (1 mm, 1 mrad, as
  Rmagine's mirror) are moved in the Scene, at most `max_rate_hz` times a second (the newest
  message wins; a capped one is applied by the next message or, at the end of a stream, within
  50 ms by the mirror thread).
* `/world/<w>/scene/info` topic (Scene): spawned models; their visuals join the scene through the
  world layer (`model_entities`), so materials, mesh URIs and names follow the same rules as the
  SDF loader. `/world/<w>/scene/deletion` (UInt32_V): removed entity ids; their subtree leaves.
  Material tags of spawned models: see material_tags.py.
* `/world/<w>/clock` (Clock) and the Pose_V header stamps: `sim_time_ns`, Gazebo's simulated time,
  for stamping scans when /clock is not bridged to ROS.
* The geometry of the world itself comes from the SDF file given, or from Gazebo's
  `/world/<w>/generate_world_sdf` service when none is given (gz-sim 8's answer uses an undeclared
  `gz:` prefix: declared before parsing, scene_sdf.declare_prefixes).

Entities are named `model::link::visual` (nested `outer::inner::link::visual`) on both sides.
Liveness, for sensor loops: see liveness.py. The parts: entity_tree.py (the tree and its pose
arrays), liveness.py (when the mirror may be trusted), material_tags.py (tags of spawned models),
scene_sdf.py (Scene message -> SDF, Gazebo's SDF made parseable); this module wires them to the
transport and runs the mirror thread.

Robustness: the mirror thread never dies. A client that refuses a topic other than the pose topic
(the official bindings without a message class, say) costs that topic only, with one warning naming
what is lost (degraded mode); a refused pose topic is retried every second with one error line.
Anything a service answer holds (malformed XML, unreadable meshes or images, bad bytes) is logged
in one line and the mirror goes on with what it has (for the world SDF: the models from scene/info).

TF pose source (for setups that bridge Gazebo's PosePublisher to ROS instead): see tf_source.py.
"""
from __future__ import annotations

import logging
import math
import re
import threading
import time
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import Path

import numpy as np

from ..errors import ConfigError, RadaraysError
from ..threads import context_thread
from ..world.entities import LoadReport, add_entities
from ..world.materials import MaterialLibrary
from ..world.scene import Scene
from . import pose_decode, protos
from .entity_tree import EntityTree, TreeArrays, moved_beyond, poses_to_matrices, visual_ids
from .liveness import Liveness
from .material_tags import GeneratedTags, tags_from_model_file
from .scene_sdf import declare_prefixes, model_sdf, world_sdf_request

__all__ = ["GazeboMirror", "MirrorConfig", "model_sdf", "moved_beyond", "poses_to_matrices"]

log = logging.getLogger(__name__)

POSE_TOPICS = ("pose/info", "dynamic_pose/info")
SERVICE_RESPONSES = {"scene/info": "Scene", "generate_world_sdf": "StringMsg"}  # when a client gives no type
# Request payloads: generate_world_sdf with expand_include_tags (a model spawned from a URDF the ROS way, kept as
# an <include>, otherwise comes back as malformed XML and every material tag and SDF sensor is lost).
SERVICE_REQUESTS = {"generate_world_sdf": world_sdf_request()}
# Topics the mirror can do without, and what is lost when a client refuses one.
OPTIONAL_TOPICS = {
    "scene/info": "models spawned from now on are mirrored only when Gazebo is next re-read",
    "scene/deletion": "removed models stay in the scene until Gazebo is next re-read",
    "clock": "Gazebo's sim time comes from the pose message stamps only",
}


@dataclass(frozen=True)
class MirrorConfig:
    """How to follow Gazebo. `world`: the world name ('' = the only one found on the network)."""

    world: str = ""
    sdf: str | None = None  # world file; None: ask Gazebo's generate_world_sdf service
    pose_topic: str = "pose/info"  # or "dynamic_pose/info"
    min_translation: float = 1e-3  # m
    min_rotation: float = 1e-3  # rad
    max_rate_hz: float = 200.0
    stale_after_s: float = 1.0
    service_timeout_s: float = 3.0
    materials: str | None = None  # material library YAML merged over the shipped one
    ignore: tuple[str, ...] = ()  # scoped-name globs not to mirror (e.g. the robot itself)
    resource_paths: tuple[str, ...] = ()

    def __post_init__(self):
        if self.pose_topic not in POSE_TOPICS:
            raise ConfigError(f"mirror pose_topic '{self.pose_topic}'; allowed: {', '.join(POSE_TOPICS)}")
        for key in ("min_translation", "min_rotation"):
            value = getattr(self, key)
            if not math.isfinite(value) or value < 0:
                raise ConfigError(f"mirror {key} = {value}; expected a finite number >= 0")
        for key in ("max_rate_hz", "stale_after_s", "service_timeout_s"):
            value = getattr(self, key)
            if not math.isfinite(value) or value <= 0:
                raise ConfigError(f"mirror {key} = {value}; expected a finite number > 0")
        if self.world and not re.fullmatch(r"[\w.\-]+", self.world):
            raise ConfigError(f"mirror world '{self.world}'; expected a Gazebo world name (letters, digits, _ . -)")


class GazeboMirror:
    """Keeps `scene` in step with a Gazebo world (see the module docstring)."""

    def __init__(self, config: MirrorConfig = MirrorConfig(), scene: Scene | None = None, client=None):
        self.config = config
        self._own_client = client is None
        self.client = client
        self._load_sdf = scene is None
        self.scene = scene if scene is not None else Scene(MaterialLibrary.load_user(config.materials))
        self.world = config.world
        self._lock = threading.RLock()
        self.tree = EntityTree()
        self.liveness = Liveness(config.stale_after_s)
        self.tags = GeneratedTags(self)
        self._pending: tuple | None = None  # (parsed Pose_V view, its bytes): the newest only, decoded when applied
        self._last_apply = 0.0
        self._subscribed: set[str] = set()  # topic suffixes followed
        self._unanswered = "scene/info"  # the world service the last sync waited for (for the log)
        self.degraded: dict[str, str] = {}  # topic suffix -> why it is not followed
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_error = ""
        self.sim_time_ns: int | None = None  # Gazebo sim time: last /world/<w>/clock or Pose_V stamp
        self.updates = 0  # pose messages applied
        self.moved = 0  # entity moves given to the scene

    # -- public ---------------------------------------------------------------------------------
    @property
    def alive(self) -> bool:
        """Gazebo is publishing poses (a publisher is known and spoke within stale_after_s)."""
        topic = self._topic(self.config.pose_topic) if self.world else None
        return bool(self.liveness.synced and self.liveness.fresh() and topic and self.client.alive(topic))

    @property
    def last_update(self) -> float:
        """time.monotonic() of the last pose message (-inf before the first)."""
        return self.liveness.last_pose_time

    @property
    def _needs_resync(self) -> bool:
        return self.liveness.needs_resync

    @property
    def _last_stamp_ns(self) -> int | None:
        return self.liveness.last_stamp_ns

    @_last_stamp_ns.setter
    def _last_stamp_ns(self, value: int | None) -> None:
        self.liveness.last_stamp_ns = value

    def frame_pose(self, scoped_name: str) -> np.ndarray | None:
        """Current world pose of a model, link or visual of the Gazebo tree by scoped name
        ('robot::chassis'), also of models left out of the scene (`ignore`, e.g. the robot carrying
        the sensors): sensor pose = frame_pose(SensorSpec.parent) @ SensorSpec.pose. None if unknown."""
        with self._lock:
            node_id = self.tree.by_name.get(scoped_name)
            return None if node_id is None else self.tree.world_pose(node_id)

    def start(self) -> "GazeboMirror":
        """Load the SDF file (errors raise here), then follow Gazebo on a background thread."""
        if self.client is None:
            from .client import make_client

            self.client = make_client()
        if self._load_sdf and self.config.sdf:
            self._add_world_sdf(Path(self.config.sdf).read_text(), Path(self.config.sdf).parent, self.config.sdf)
            self._load_sdf = False
        self._thread = context_thread(self._run, "gazebo-mirror")
        self._thread.start()
        return self

    def wait_ready(self, timeout: float = 10.0) -> bool:
        """Block until the tree is known and poses are being followed (or timeout)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end and not self.liveness.ready:
            time.sleep(0.01)
        return self.liveness.ready

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=3)
        self.tags.join(timeout=self.config.service_timeout_s)
        if self._own_client and self.client is not None:
            self.client.close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()

    # -- the mirror thread: discovery, initial sync, liveness ------------------------------------
    def _run(self) -> None:
        self.liveness.quiet = False
        while not self._stop.is_set():
            try:
                if not self._step():
                    self._stop.wait(0.2)
                    continue
            except Exception as exc:  # noqa: BLE001 - the mirror thread outlives any bad answer or world
                self._error_once(f"{type(exc).__name__}: {exc}", exc)
                self._stop.wait(0.2)
                continue
            self._wait_for_work(0.05)

    def _step(self) -> bool:
        """One pass of the mirror thread; False when it has to wait for Gazebo."""
        if not self.world:
            self.world = self._find_world()
            if not self.world:
                self.liveness.say_once(logging.WARNING, "Gazebo mirror: no Gazebo world found on gz-transport yet; "
                                       "waiting")
                return False
        if self.config.pose_topic not in self._subscribed and not self._subscribe():
            self._stop.wait(0.8)  # retried every second
            return False
        if not self.liveness.synced:
            if not self._sync():
                self.liveness.say_once(logging.WARNING, "Gazebo mirror: waiting for Gazebo world '%s' (its "
                                       "%s service does not answer)", self.world, self._unanswered)
                return False
            log.info("Gazebo mirror: following world '%s' (%d entities in the scene)", self.world, len(self.scene))
        self.liveness.quiet = False
        self.liveness.watch(self.alive, self.world)
        if self.tags.queue and self.alive:
            self.tags.start()
        return True

    def _error_once(self, text: str, exc: Exception | None = None) -> None:
        if text != self._last_error:
            log.error("Gazebo mirror: %s", text, exc_info=exc if not isinstance(exc, RadaraysError) else None)
            self._last_error = text

    def _wait_for_work(self, timeout: float) -> None:
        """Sleep `timeout`, then apply a pose message held back by the rate cap if it is due. While
        poses stream in, the next message applies the newest one itself; this loop only catches
        the last of a stream (or one that came while the tree was being read). No wake-up of its
        own per held message: on a loaded machine every wake-up costs several times its work."""
        self._stop.wait(timeout)
        self.tick()

    def _topic(self, suffix: str) -> str:
        return f"/world/{self.world}/{suffix}"

    def _find_world(self) -> str:
        worlds = sorted({m.group(1) for t in self.client.topics()
                         if (m := re.fullmatch(r"/world/([^/]+)/" + re.escape(self.config.pose_topic), t))})
        if len(worlds) > 1:
            log.warning("Gazebo mirror: several worlds (%s); set MirrorConfig.world", ", ".join(worlds))
            return ""
        return worlds[0] if worlds else ""

    def _subscribe(self) -> bool:
        """Subscribe to the pose topic (False if the client refuses it) and to each optional topic
        not followed yet; a refused optional topic is given up with one warning (degraded mode)."""
        handlers = {self.config.pose_topic: self.on_poses, "scene/info": self.on_spawned,
                    "scene/deletion": self.on_deleted, "clock": self.on_clock}
        for suffix, handler in handlers.items():
            if suffix in self._subscribed or suffix in self.degraded:
                continue
            try:
                self.client.subscribe(self._topic(suffix), handler)
            except Exception as exc:  # noqa: BLE001 - a client's refusal must not end the mirror
                if suffix == self.config.pose_topic:
                    self._error_once(f"cannot follow {self._topic(suffix)}: {type(exc).__name__}: {exc}; retrying")
                    return False
                self.degraded[suffix] = f"{type(exc).__name__}: {exc}"
                log.warning("Gazebo mirror: %s is not followed (%s): %s", self._topic(suffix), exc,
                            OPTIONAL_TOPICS[suffix])
                continue
            self._subscribed.add(suffix)
        return True

    def _request(self, suffix: str):
        """The decoded answer of a world service, or None when it does not answer usably."""
        try:
            payload, type_name = self.client.request(self._topic(suffix), SERVICE_REQUESTS.get(suffix, b""),
                                                     timeout=self.config.service_timeout_s)
        except (TimeoutError, RuntimeError, OSError, ValueError):
            return None
        try:
            return protos.decode(type_name or SERVICE_RESPONSES[suffix], payload)
        except Exception as exc:  # noqa: BLE001 - bytes from the network (protobuf DecodeError, unknown type)
            self._error_once(f"the answer of {self._topic(suffix)} is unreadable: {type(exc).__name__}: {exc}")
            return None

    def _sync(self) -> bool:
        """(Re)read the tree from the scene/info service; load the world SDF first if still needed."""
        if self._load_sdf:
            generated = self._request("generate_world_sdf")
            if generated is None:
                self._unanswered = "generate_world_sdf"
                return False
            self._load_sdf = False
            try:
                self._add_world_sdf(declare_prefixes(generated.data), Path.cwd(),
                                    f"generate_world_sdf of world '{self.world}'")
            except Exception as exc:  # noqa: BLE001 - I/O, images, XML: the tree's geometry still gives every model
                log.error("Gazebo mirror: the world SDF from Gazebo cannot be loaded (%s: %s); mirroring the "
                          "models from scene/info instead", type(exc).__name__, exc)
        scene_msg = self._request("scene/info")
        if scene_msg is None:
            self._unanswered = "scene/info"
            return False
        self.apply_scene_info(scene_msg)
        return True

    def apply_scene_info(self, scene_msg) -> None:
        """Take the whole tree from a Scene message (the scene/info service's answer): map visuals to
        entities, add models the scene lacks, drop mirrored ones Gazebo no longer has."""
        with self._lock:
            old_mirrored = set(self.tree.mirrored)
            self.tree.clear()
            for model in scene_msg.model:
                self.tree.add_model(model)
            self._reconcile(scene_msg.model, old_mirrored)
            self.liveness.synced_now()

    def _add_world_sdf(self, text: str, base_dir: Path, source: str) -> None:
        from ..world.sdf import parse_sdf_string

        parsed = parse_sdf_string(text, base_dir, self.scene.materials, source=source, ignore=self.config.ignore,
                                  resource_paths=self.config.resource_paths, strict=False)
        self.scene.warnings.extend(parsed.report.warnings)
        self.scene.unresolved.extend(parsed.report.unresolved)
        add_entities(self.scene, parsed.entities)

    # -- models joining and leaving -------------------------------------------------------------
    def _reconcile(self, models, old_mirrored: set[str]) -> None:
        """After (re)reading the tree: map visuals to entities, add models Gazebo has and the scene
        lacks (spawned before we looked), drop mirrored entities Gazebo no longer has."""
        for model in models:
            missing = [v for v in visual_ids(model) if not self.tree.link_visual(v, self.scene)]
            if missing and all(self.tree.nodes[v].name not in old_mirrored for v in missing) \
                    and not any(fnmatch(model.name, pattern) for pattern in self.config.ignore):
                try:
                    self._spawn_model(model)
                    self.tags.add(model.name)
                except RadaraysError as exc:
                    log.error("Gazebo mirror: model '%s' cannot be mirrored: %s", model.name, exc)
        for name in old_mirrored - self.tree.mirrored:
            if self.scene.find(name) is not None:
                self.scene.remove_entity(name)
                log.info("Gazebo mirror: '%s' is gone from the world", name)
        self.tree.changed()
        self._apply_world(self.tree.arrays())

    def _spawn_model(self, model) -> None:
        from ..world.sdf import model_entities

        report = LoadReport()
        specs = model_entities(model_sdf(model), pose=self.tree.world_pose(model.id), materials=self.scene.materials,
                               static=model.is_static, ignore=self.config.ignore,
                               resource_paths=self.config.resource_paths, strict=False, report=report,
                               source=f"model '{model.name}' from Gazebo world '{self.world}'")
        for warning in report.warnings:  # e.g. a mesh URI that resolves nowhere: that visual is skipped
            log.warning("Gazebo mirror: %s", warning)
        self.scene.unresolved.extend(report.unresolved)
        specs = [s for s in specs if self.scene.find(s.name) is None]
        tags = tags_from_model_file(model, self.tree, self.scene.materials, self.config.resource_paths)
        for spec in specs:
            if spec.material_override is None and spec.name in tags:
                spec.material_override, spec.material = tags[spec.name]
        add_entities(self.scene, specs)
        for visual_id in visual_ids(model):
            self.tree.link_visual(visual_id, self.scene)
        log.info("Gazebo mirror: model '%s' joined the scene (%d entities)", model.name, len(specs))

    # -- message entry points (called on the transport thread; usable by any transport) ----------
    def on_poses(self, payload: bytes, type_name: str) -> None:
        """A serialized Pose_V: parent-relative poses by entity id."""
        protos.message_class(type_name or "Pose_V")  # an unknown type name is an error, as for the others
        view = pose_decode.parse_view(payload)  # cheap; the poses are decoded only if this one is applied
        stamp_ns = pose_decode.stamp_ns(view)
        with self._lock:
            self.liveness.pose_arrived(stamp_ns, self.world)
            if stamp_ns:
                self.sim_time_ns = stamp_ns
            self._pending = (view, payload)  # Pose_V carries every pose: a newer message replaces an older
        self.tick()  # capped (or not synced yet): a later message or the mirror thread's loop applies it

    def refresh(self) -> bool:
        """Apply the newest pose message now, whatever `max_rate_hz` says; returns whether one was
        applied. A sensor loop calls it right before tracing a frame: the scene then holds Gazebo's
        latest poses even with a low cap (which keeps the cost of following fast pose streams down), and the
        entities' velocities over the last two messages (hand_velocities)."""
        with self._lock:
            if self._pending is None or not self.liveness.synced:
                self.hand_velocities()
                return False
            msg, self._pending = self._pending, None
            self._last_apply = time.monotonic()
            self._apply_pose_v(msg)
            self.hand_velocities()
            return True

    def tick(self) -> bool:
        """Apply the newest pose message if the rate cap allows it now; returns whether it did
        (or there was nothing to apply). The mirror thread calls it for messages held back."""
        with self._lock:
            if self._pending is None:
                return True
            if not self.liveness.synced:
                return False  # ids mean nothing until the tree is (re)read
            now = time.monotonic()
            if now - self._last_apply < 1.0 / self.config.max_rate_hz:
                return False  # capped: the next message or the mirror thread's loop applies the newest
            msg, self._pending = self._pending, None
            self._last_apply = now
            self._apply_pose_v(msg)
            return True

    def _apply_pose_v(self, pending: tuple) -> None:
        arrays = self.tree.arrays()
        view, payload = pending
        if not len(arrays.ids) or not len(view.pose):
            return
        poses = pose_decode.decode_view(view, payload, arrays.bodies)
        arrays.bodies = poses.bodies
        rows = np.searchsorted(arrays.ids, poses.ids)
        rows[rows >= len(arrays.ids)] = 0
        known = arrays.ids[rows] == poses.ids  # lights and unknown entities are skipped
        raw = np.concatenate([poses.positions[known], poses.quaternions[known]], axis=1)
        rows = rows[known]
        changed = np.any(raw != arrays.raw[rows], axis=1)  # most links and visuals never move in their parent
        self.updates += 1
        stamp = pose_decode.stamp_ns(view)
        if not changed.any():  # the same numbers as last time: the same world poses (at a later time: standing still)
            if arrays.last is not None:
                arrays.before, arrays.last = arrays.last, (arrays.last[0], stamp)
            return
        rows, raw = rows[changed], raw[changed]
        arrays.raw[rows] = raw
        arrays.local[rows] = poses_to_matrices(raw[:, :3], raw[:, 3:])  # node.local views these rows
        self._apply_world(arrays, stamp)

    def _apply_world(self, arrays: TreeArrays, stamp: int = 0) -> None:
        if not len(arrays.entity_rows):
            return
        world = arrays.world()[arrays.entity_rows]
        arrays.before, arrays.last = arrays.last, (world, stamp)  # for the velocities (hand_velocities)
        if arrays.applied is None:  # first time: compare with what the scene holds
            arrays.applied = np.stack([self.scene.entity(int(e)).pose for e in arrays.entity_ids])
        moved = moved_beyond(arrays.applied, world, self.config.min_translation, self.config.min_rotation)
        if not moved.any():
            return
        index = np.flatnonzero(moved)
        set_array = getattr(self.scene, "set_poses_array", None)  # vectorised validation, when the Scene has it
        if set_array is not None:  # the velocities given at the last frame stay until the next (hand_velocities)
            set_array(arrays.entity_ids[index], world[index], keep_twists=True)
        else:
            self.scene.set_poses([(int(arrays.entity_ids[i]), world[i]) for i in index])
        arrays.applied[index] = world[index]
        self.moved += len(index)

    def hand_velocities(self) -> bool:
        """Give the scene every mirrored entity's velocity over the last two pose messages applied (their sim-time
        stamps; motion.rigid_motion): a moving model carries the stream's own, one that stopped zero. Done when a
        frame asks (refresh), not for each message (60 Hz of them). False when there are none to give (fewer than
        two messages, or no later stamp): the radar then differences the poses of its frames."""
        from ..radar.physical.motion import rigid_motion

        with self._lock:
            arrays = self.tree.arrays()
            if arrays.before is None or arrays.last is None or arrays.before[0].shape != arrays.last[0].shape:
                return False
            (before, since), (world, stamp) = arrays.before, arrays.last
            if not since or stamp <= since:
                return False
            if arrays.handed != stamp:
                try:
                    velocity, angular = rigid_motion(before, world, (stamp - since) * 1e-9)
                    self.scene.set_twists(arrays.entity_ids, velocity, angular)
                except (RadaraysError, ValueError) as exc:  # poses from the network that give no finite velocity
                    self._error_once(f"no entity velocities from the last two pose messages ({exc})")
                    return False
                arrays.handed = stamp
            return True

    def on_clock(self, payload: bytes, type_name: str) -> None:
        """A serialized Clock (/world/<w>/clock): its sim time becomes `sim_time_ns`."""
        sim = protos.decode(type_name or "Clock", payload).sim
        self.sim_time_ns = sim.sec * 1_000_000_000 + sim.nsec

    def on_spawned(self, payload: bytes, type_name: str) -> None:
        """A serialized Scene holding newly created models (the scene/info topic)."""
        msg = protos.decode(type_name or "Scene", payload)
        with self._lock:
            if not self.liveness.synced:
                return  # the scene/info request of the (re)sync will include it
            for model in msg.model:
                if model.id in self.tree.nodes:
                    continue
                self.tree.add_model(model)
                try:
                    self._spawn_model(model)
                    self.tags.add(model.name)  # a worker asks Gazebo for its SDF
                except RadaraysError as exc:
                    log.error("Gazebo mirror: spawned model '%s' cannot be mirrored: %s", model.name, exc)
            self.tree.changed()

    def on_deleted(self, payload: bytes, type_name: str) -> None:
        """A serialized UInt32_V of removed entity ids (the scene/deletion topic)."""
        msg = protos.decode(type_name or "UInt32_V", payload)
        with self._lock:
            nodes = self.tree.nodes
            names = [nodes[i].name for i in msg.data if i in nodes and nodes[i].kind == "model"]
            for entity_id in msg.data:
                self.tree.remove_subtree(int(entity_id), self.scene)
        for name in names:
            log.info("Gazebo mirror: model '%s' left the scene", name)
