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
* Material tags of spawned models (`<radarays_material>`, `<radarays><material>`): the Scene message
  carries geometry but no custom SDF elements, so a spawned model first gets the library's rules,
  then its tags from two sources:
  1. at once, its own model file, when a mesh URI of it points into a model directory
     (`model://NAME/...` resolved along the resource paths, or an absolute path below a directory
     holding model.config / model.sdf): the tags of visuals with the same link::visual names;
  2. then, on a worker thread, Gazebo's `generate_world_sdf` answer (gz-sim writes each model's
     SDF element, custom elements included, or an `<include>` of its file): tags found there win.
     A visual untagged in both keeps the rules' material. A model spawned from an SDF string with
     primitive geometry only gets its tags from source 2.
* `/world/<w>/clock` (Clock) and the Pose_V header stamps: `sim_time_ns`, Gazebo's simulated time,
  for stamping scans when /clock is not bridged to ROS.
* The geometry of the world itself comes from the SDF file given, or from Gazebo's
  `/world/<w>/generate_world_sdf` service when none is given.

Entities are named `model::link::visual` (nested `outer::inner::link::visual`) on both sides.
Liveness, for sensor loops: `alive` is true only while a pose publisher is known, a pose message
came within `stale_after_s` and the tree is in step with Gazebo. A sensor loop checks it before every
frame and publishes nothing while it is false (the scene would show a world that no longer moves).
When Gazebo goes away one warning is logged; when it returns one info line, the tree is re-read,
models spawned or deleted meanwhile are reconciled, and only then does `alive` turn true again. A
Gazebo restarted (or a world reset) within `stale_after_s` is noticed by its Pose_V stamps going back
in time, and re-read the same way.

TF pose source (for setups that bridge Gazebo's PosePublisher to ROS instead): see tf_source.py.
"""
from __future__ import annotations

import logging
import math
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import ConfigError, RadaraysError
from ..world.entities import LoadReport, add_entities
from ..world.materials import Material, MaterialLibrary
from ..world.scene import Scene
from ..world.transforms import quaternions_to_matrices
from . import pose_decode, protos

log = logging.getLogger(__name__)

POSE_TOPICS = ("pose/info", "dynamic_pose/info")
TIME_BACK_TOLERANCE_NS = 1_000_000  # Pose_V stamps this much earlier than the last one mean a restart/reset
TAG_ATTEMPTS = 3  # generate_world_sdf requests for the tags of a spawned model before giving up


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


@dataclass
class _Node:
    id: int
    name: str  # scoped
    parent: int | None  # entity id of the parent node, None for a top-level model
    kind: str  # model | link | visual
    local: np.ndarray  # 4x4 parent <- node
    static: bool = False
    children: list[int] = field(default_factory=list)


class _Arrays:
    """The tree as arrays, rebuilt when it changes: local poses, parents, depth levels, visual rows."""

    def __init__(self, nodes: dict[int, _Node], entity_of: dict[int, int]):
        self.ids = np.array(sorted(nodes), dtype=np.int64)
        row = {i: r for r, i in enumerate(self.ids.tolist())}
        self.local = np.stack([nodes[i].local for i in self.ids.tolist()]) if len(self.ids) else np.zeros((0, 4, 4))
        parent = np.array([row.get(nodes[i].parent, -1) for i in self.ids.tolist()], dtype=np.int64)
        depth = np.zeros(len(self.ids), dtype=np.int64)
        for r in range(len(self.ids)):  # depth by walking up (trees are shallow)
            p, d = parent[r], 0
            while p >= 0:
                p, d = parent[p], d + 1
            depth[r] = d
        self.parent = parent
        self.levels = [np.flatnonzero(depth == d) for d in range(1, int(depth.max()) + 1)] if len(depth) else []
        visual_ids = [i for i in self.ids.tolist() if i in entity_of]
        self.entity_rows = np.array([row[i] for i in visual_ids], dtype=np.int64)
        self.entity_ids = np.array([entity_of[i] for i in visual_ids], dtype=np.int64)
        self.applied: np.ndarray | None = None  # last poses given to the scene, per entity row
        self.raw = np.full((len(self.ids), 7), np.nan)  # last position + quaternion read per row (NaN: none yet)
        self.bodies: list | None = None  # pose bytes of the last message applied (unchanged ones are skipped)

    def world(self) -> np.ndarray:
        out = self.local.copy()
        for rows in self.levels:
            out[rows] = out[self.parent[rows]] @ self.local[rows]
        return out


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
        self._nodes: dict[int, _Node] = {}
        self._by_name: dict[str, int] = {}  # scoped name -> node id
        self._entity_of: dict[int, int] = {}  # visual node id -> scene entity id
        self._mirrored: set[str] = set()  # entity names that correspond to Gazebo visuals
        self._arrays: _Arrays | None = None
        self._ready = False  # tree known
        self._pending: tuple | None = None  # (parsed Pose_V view, its bytes): the newest only, decoded when applied
        self._last_apply = 0.0
        self._last_pose_time = -math.inf  # monotonic time of the last pose message
        self._was_alive = False
        self._needs_resync = False
        self._subscribed = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._tag_queue: dict[str, int] = {}  # spawned model name -> generate_world_sdf attempts left
        self._tag_thread: threading.Thread | None = None
        self._last_stamp_ns: int | None = None  # last Pose_V header stamp (restart/reset detection)
        self.sim_time_ns: int | None = None  # Gazebo sim time: last /world/<w>/clock or Pose_V stamp
        self.updates = 0  # pose messages applied
        self.moved = 0  # entity moves given to the scene

    # -- public ---------------------------------------------------------------------------------
    @property
    def alive(self) -> bool:
        """Gazebo is publishing poses (a publisher is known and spoke within stale_after_s)."""
        topic = self._topic(self.config.pose_topic) if self.world else None
        fresh = time.monotonic() - self._last_pose_time <= self.config.stale_after_s
        synced = self._ready and not self._needs_resync
        return bool(synced and fresh and topic and self.client.alive(topic))

    @property
    def last_update(self) -> float:
        """time.monotonic() of the last pose message (-inf before the first)."""
        return self._last_pose_time

    def frame_pose(self, scoped_name: str) -> np.ndarray | None:
        """Current world pose of a model, link or visual of the Gazebo tree by scoped name
        ('robot::chassis'), also of models left out of the scene (`ignore`, e.g. the robot carrying
        the sensors): sensor pose = frame_pose(SensorSpec.parent) @ SensorSpec.pose. None if unknown."""
        with self._lock:
            node_id = self._by_name.get(scoped_name)
            return None if node_id is None else self._world_pose(node_id)

    def start(self) -> "GazeboMirror":
        """Load the SDF file (errors raise here), then follow Gazebo on a background thread."""
        if self.client is None:
            from .client import make_client

            self.client = make_client()
        if self._load_sdf and self.config.sdf:
            self._add_world_sdf(Path(self.config.sdf).read_text(), Path(self.config.sdf).parent, self.config.sdf)
            self._load_sdf = False
        self._thread = threading.Thread(target=self._run, name="gazebo-mirror", daemon=True)
        self._thread.start()
        return self

    def wait_ready(self, timeout: float = 10.0) -> bool:
        """Block until the tree is known and poses are being followed (or timeout)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end and not self._ready:
            time.sleep(0.01)
        return self._ready

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=3)
        if self._tag_thread is not None:
            self._tag_thread.join(timeout=self.config.service_timeout_s)
        if self._own_client and self.client is not None:
            self.client.close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()

    # -- the mirror thread: discovery, initial sync, liveness ------------------------------------
    def _run(self) -> None:
        self._quiet = False  # a 'waiting' line was logged for the current wait
        while not self._stop.is_set():
            try:
                if not self.world:
                    self.world = self._find_world()
                    if not self.world:
                        if not self._quiet:
                            log.warning("Gazebo mirror: no Gazebo world found on gz-transport yet; waiting")
                            self._quiet = True
                        self._stop.wait(0.2)
                        continue
                if not self._subscribed:
                    self._subscribe()
                if not self._ready or self._needs_resync:
                    if self._sync():
                        log.info("Gazebo mirror: following world '%s' (%d entities in the scene)",
                                 self.world, len(self.scene))
                    else:
                        if not self._quiet:
                            log.warning("Gazebo mirror: waiting for Gazebo world '%s' (its scene/info service "
                                        "does not answer)", self.world)
                            self._quiet = True
                        self._stop.wait(0.2)
                        continue
                self._quiet = False
                self._watch_liveness()
                if self._tag_queue and self.alive:
                    self._start_tag_refresh()
            except RadaraysError as exc:  # a bad spawned model or world: keep the last good state
                log.error("Gazebo mirror: %s", exc)
            self._wait_for_work(0.05)

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

    def _subscribe(self) -> None:
        self.client.subscribe(self._topic(self.config.pose_topic), self.on_poses)
        self.client.subscribe(self._topic("scene/info"), self.on_spawned)
        self.client.subscribe(self._topic("scene/deletion"), self.on_deleted)
        self.client.subscribe(self._topic("clock"), self.on_clock)
        self._subscribed = True

    def _watch_liveness(self) -> None:
        alive = self.alive
        if alive and not self._was_alive:
            log.info("Gazebo mirror: world '%s' is publishing poses", self.world)
        elif self._was_alive and not alive and not self._needs_resync:  # (a restart already said so)
            log.warning("Gazebo mirror: world '%s' stopped publishing poses; scans pause until it returns",
                        self.world)
            self._needs_resync = True  # ids and models may differ when it comes back
            self._quiet = True  # that line says it all: no 'waiting' line for the same outage
        self._was_alive = alive

    def _request(self, suffix: str) -> bytes | None:
        try:
            payload, type_name = self.client.request(self._topic(suffix), b"", timeout=self.config.service_timeout_s)
        except (TimeoutError, RuntimeError):
            return None
        return protos.decode(type_name or "Scene", payload)

    def _sync(self) -> bool:
        """(Re)read the tree from the scene/info service; load the world SDF first if still needed."""
        if self._load_sdf:
            generated = self._request("generate_world_sdf")
            if generated is None:
                return False
            self._load_sdf = False
            try:
                self._add_world_sdf(generated.data, Path.cwd(), f"generate_world_sdf of world '{self.world}'")
            except RadaraysError as exc:  # the tree's geometry messages still give every model
                log.error("Gazebo mirror: the world SDF from Gazebo cannot be loaded (%s); mirroring the "
                          "models from scene/info instead", exc)
        scene_msg = self._request("scene/info")
        if scene_msg is None:
            return False
        self.apply_scene_info(scene_msg)
        return True

    def apply_scene_info(self, scene_msg) -> None:
        """Take the whole tree from a Scene message (the scene/info service's answer): map visuals to
        entities, add models the scene lacks, drop mirrored ones Gazebo no longer has."""
        with self._lock:
            old_mirrored = set(self._mirrored)
            self._nodes.clear()
            self._by_name.clear()
            self._entity_of.clear()
            self._mirrored.clear()
            for model in scene_msg.model:
                self._add_model_nodes(model, None, "")
            self._reconcile(scene_msg.model, old_mirrored)
            self._ready, self._needs_resync = True, False

    def _add_world_sdf(self, text: str, base_dir: Path, source: str) -> None:
        from ..world.sdf import parse_sdf_string

        parsed = parse_sdf_string(text, base_dir, self.scene.materials, source=source, ignore=self.config.ignore,
                                  resource_paths=self.config.resource_paths, strict=False)
        self.scene.warnings.extend(parsed.report.warnings)
        self.scene.unresolved.extend(parsed.report.unresolved)
        add_entities(self.scene, parsed.entities)

    # -- the tree -------------------------------------------------------------------------------
    def _add_model_nodes(self, model, parent: int | None, prefix: str) -> list[int]:
        """Nodes of a Scene Model message (recursively); returns the ids of its visuals."""
        scoped = prefix + model.name
        self._put(_Node(model.id, scoped, parent, "model", _pose_matrix(model.pose), model.is_static))
        visuals = []
        for link in model.link:
            self._put(_Node(link.id, f"{scoped}::{link.name}", model.id, "link", _pose_matrix(link.pose)))
            for visual in link.visual:
                self._put(_Node(visual.id, f"{scoped}::{link.name}::{visual.name}", link.id, "visual",
                                _pose_matrix(visual.pose)))
                visuals.append(visual.id)
        for nested in model.model:
            visuals += self._add_model_nodes(nested, model.id, scoped + "::")
        return visuals

    def _put(self, node: _Node) -> None:
        self._nodes[node.id] = node
        self._by_name[node.name] = node.id
        if node.parent in self._nodes:
            self._nodes[node.parent].children.append(node.id)
        self._arrays = None

    def _link_visual(self, visual_id: int) -> bool:
        node = self._nodes[visual_id]
        entity = self.scene.find(node.name)
        if entity is None:
            return False
        self._entity_of[visual_id] = entity
        self._mirrored.add(node.name)
        return True

    def _reconcile(self, models, old_mirrored: set[str]) -> None:
        """After (re)reading the tree: map visuals to entities, add models Gazebo has and the scene
        lacks (spawned before we looked), drop mirrored entities Gazebo no longer has."""
        for model in models:
            missing = [v for v in self._visual_ids(model) if not self._link_visual(v)]
            if missing and all(self._nodes[v].name not in old_mirrored for v in missing) and self._spawnable(model):
                try:
                    self._spawn_model(model)
                    self._tag_queue[model.name] = TAG_ATTEMPTS
                except RadaraysError as exc:
                    log.error("Gazebo mirror: model '%s' cannot be mirrored: %s", model.name, exc)
        for name in old_mirrored - self._mirrored:
            if self.scene.find(name) is not None:
                self.scene.remove_entity(name)
                log.info("Gazebo mirror: '%s' is gone from the world", name)
        self._arrays = None
        self._apply_tree_poses()

    def _visual_ids(self, model) -> list[int]:
        ids = [v.id for link in model.link for v in link.visual]
        for nested in model.model:
            ids += self._visual_ids(nested)
        return ids

    def _spawnable(self, model) -> bool:
        # Models that the SDF load skipped on purpose (ignored names) stay out.
        from fnmatch import fnmatch

        return not any(fnmatch(model.name, pattern) for pattern in self.config.ignore)

    def _spawn_model(self, model) -> None:
        from ..world.sdf import model_entities

        world_pose = self._world_pose(model.id)
        xml = model_sdf(model)
        report = LoadReport()
        specs = model_entities(xml, pose=world_pose, materials=self.scene.materials, static=model.is_static,
                               ignore=self.config.ignore, resource_paths=self.config.resource_paths,
                               strict=False, report=report,
                               source=f"model '{model.name}' from Gazebo world '{self.world}'")
        for warning in report.warnings:  # e.g. a mesh URI that resolves nowhere: that visual is skipped
            log.warning("Gazebo mirror: %s", warning)
        self.scene.unresolved.extend(report.unresolved)
        specs = [s for s in specs if self.scene.find(s.name) is None]
        tags = self._tags_from_model_file(model)
        for spec in specs:
            if spec.material_override is None and spec.name in tags:
                spec.material_override, spec.material = tags[spec.name]
        add_entities(self.scene, specs)
        for visual_id in self._visual_ids(model):
            self._link_visual(visual_id)
        log.info("Gazebo mirror: model '%s' joined the scene (%d entities)", model.name, len(specs))

    # -- material tags of spawned models ----------------------------------------------------------
    def _tags_from_model_file(self, model) -> dict:
        """Tags of a spawned model's own model file, found from its mesh URIs, renamed to the spawned
        model; only names of visuals the spawned model has (see the module doc, source 1)."""
        from ..world.sdf import material_tags

        model_file = self._model_file_of_meshes(model)
        if model_file is None:
            return {}
        try:
            found = material_tags(model_file.read_bytes(), model_file.parent, self.scene.materials,
                                  source=str(model_file), resource_paths=self.config.resource_paths)
        except (RadaraysError, OSError) as exc:
            log.warning("Gazebo mirror: material tags of '%s' not read from %s: %s", model.name, model_file, exc)
            return {}
        wanted = {self._nodes[v].name for v in self._visual_ids(model) if v in self._nodes}
        out = {}
        for name, (override, material) in found.items():
            renamed = f"{model.name}::{name.split('::', 1)[1]}" if "::" in name else name
            if renamed in wanted:
                if material is not None and override.startswith("sdf:"):
                    override = f"sdf:{renamed}"
                    material = Material(override, material.radar, material.lidar, material.origin)
                out[renamed] = (override, material)
        return out

    def _model_file_of_meshes(self, model) -> Path | None:
        from ..world.sdf import model_file_of
        from ..world.uris import ResourceResolver

        resolver = ResourceResolver(self.config.resource_paths)
        for link in model.link:
            for visual in link.visual:
                uri = visual.geometry.mesh.filename if visual.geometry.type == protos.Geometry.MESH else ""
                directory = None
                if uri.startswith("model://"):
                    directory, _ = resolver.try_resolve("model://" + uri[len("model://"):].split("/", 1)[0])
                elif uri.startswith("file://") or uri.startswith("/"):
                    path = Path(uri[len("file://"):] if uri.startswith("file://") else uri)
                    directory = next((d for d in list(path.parents)[:4]
                                      if (d / "model.config").is_file() or (d / "model.sdf").is_file()), None)
                if directory is not None and directory.is_dir():
                    try:
                        return model_file_of(directory, f"model directory {directory}")
                    except RadaraysError:
                        continue
        return None

    def _start_tag_refresh(self) -> None:
        """Ask for tags on a thread of its own: a service call may block for service_timeout_s, and the
        mirror thread must keep watching liveness meanwhile."""
        if self._tag_thread is not None and self._tag_thread.is_alive():
            return
        self._tag_thread = threading.Thread(target=self._refresh_material_tags, name="gazebo-mirror-tags", daemon=True)
        self._tag_thread.start()

    def _refresh_material_tags(self) -> None:
        """Read the tags of recently spawned models from Gazebo's generate_world_sdf (source 2)."""
        try:
            self._read_generated_tags()
        except Exception:  # a worker thread: say what failed, never die silently
            log.exception("Gazebo mirror: reading material tags from generate_world_sdf failed")

    def _read_generated_tags(self) -> None:
        from ..world.sdf import material_tags

        with self._lock:
            names = set(self._tag_queue)
        generated = self._request("generate_world_sdf")
        if generated is None:
            with self._lock:
                for name in names:
                    left = self._tag_queue.get(name, 0) - 1
                    if left > 0:
                        self._tag_queue[name] = left
                    elif self._tag_queue.pop(name, None) is not None:
                        log.warning("Gazebo mirror: material tags of spawned model '%s' not read: "
                                    "generate_world_sdf did not answer; the library's rules apply", name)
            return
        try:
            report = LoadReport()
            tags = material_tags(generated.data, Path.cwd(), self.scene.materials, models=names,
                                 source=f"generate_world_sdf of world '{self.world}'",
                                 resource_paths=self.config.resource_paths, report=report)
        except RadaraysError as exc:
            log.error("Gazebo mirror: material tags of %s not read: %s", ", ".join(sorted(names)), exc)
            tags = {}
        with self._lock:
            for name in names:
                self._tag_queue.pop(name, None)
            for name, (override, material) in tags.items():
                try:
                    self._apply_material(name, override, material)
                except RadaraysError as exc:
                    log.error("Gazebo mirror: material '%s' of '%s' not applied: %s", override, name, exc)

    def _apply_material(self, name: str, override: str, material) -> None:
        """Give a mirrored entity a tagged material; it is re-added (same mesh and pose) if its faces
        had another one, and the visual node follows the new entity id."""
        entity_id = self.scene.find(name)
        if entity_id is None:
            return
        if material is not None:
            self.scene.materials.add(material)
        wanted = self.scene.materials.id_of(override)
        with self.scene.lock:
            entity = self.scene.entity(entity_id)
            if np.all(entity.face_materials == wanted):
                return
            self.scene.remove_entity(entity_id)
            new_id = self.scene.add_entity(name, entity.mesh, entity.pose, entity.static, override)
        node_id = self._by_name.get(name)
        if node_id is not None and node_id in self._entity_of:
            self._entity_of[node_id] = new_id
        self._arrays = None
        log.info("Gazebo mirror: '%s' takes material '%s' from its SDF tags", name, override)

    def _world_pose(self, node_id: int) -> np.ndarray:
        pose = np.eye(4)
        node = self._nodes.get(node_id)
        while node is not None:
            pose = node.local @ pose
            node = self._nodes.get(node.parent) if node.parent is not None else None
        return pose

    def _remove_subtree(self, node_id: int) -> None:
        node = self._nodes.pop(node_id, None)
        if node is None:
            return
        if self._by_name.get(node.name) == node_id:
            del self._by_name[node.name]
        for child in node.children:
            self._remove_subtree(child)
        if node.parent in self._nodes and node_id in self._nodes[node.parent].children:
            self._nodes[node.parent].children.remove(node_id)
        entity = self._entity_of.pop(node_id, None)
        if entity is not None and self.scene.find(node.name) is not None:
            self.scene.remove_entity(entity)
        self._mirrored.discard(node.name)
        self._arrays = None

    # -- message entry points (called on the transport thread; usable by any transport) ----------
    def on_poses(self, payload: bytes, type_name: str) -> None:
        """A serialized Pose_V: parent-relative poses by entity id."""
        protos.message_class(type_name or "Pose_V")  # an unknown type name is an error, as for the others
        view = pose_decode.parse_view(payload)  # cheap; the poses are decoded only if this one is applied
        self._last_pose_time = time.monotonic()
        stamp_ns = pose_decode.stamp_ns(view)
        with self._lock:
            if stamp_ns:  # an unset header says nothing about the time
                self._check_time_went_back(stamp_ns)
                self._last_stamp_ns = self.sim_time_ns = stamp_ns
            self._pending = (view, payload)  # Pose_V carries every pose: a newer message replaces an older
        self.tick()  # capped (or not synced yet): a later message or the mirror thread's loop applies it

    def _check_time_went_back(self, stamp_ns: int) -> None:
        """A Pose_V stamp earlier than the last one: Gazebo restarted (faster than `stale_after_s`) or
        its world was reset. Entity ids and spawned models may differ: re-read the tree; `alive` is
        false until then."""
        last = self._last_stamp_ns
        if last is None or stamp_ns + TIME_BACK_TOLERANCE_NS >= last or not self._ready or self._needs_resync:
            return
        log.info("Gazebo mirror: world '%s' sim time went back from %.3f s to %.3f s (restarted or reset); "
                 "re-reading its models", self.world, last / 1e9, stamp_ns / 1e9)
        self._needs_resync = True

    def refresh(self) -> bool:
        """Apply the newest pose message now, whatever `max_rate_hz` says; returns whether one was
        applied. A sensor loop calls it right before tracing a frame: the scene then holds Gazebo's
        latest poses even with a low cap (which keeps the cost of following fast pose streams down)."""
        with self._lock:
            if self._pending is None or not self._ready or self._needs_resync:
                return False
            msg, self._pending = self._pending, None
            self._last_apply = time.monotonic()
            self._apply_pose_v(msg)
            return True

    def tick(self) -> bool:
        """Apply the newest pose message if the rate cap allows it now; returns whether it did
        (or there was nothing to apply). The mirror thread calls it for messages held back."""
        with self._lock:
            if self._pending is None:
                return True
            if not self._ready or self._needs_resync:
                return False  # ids mean nothing until the tree is (re)read
            now = time.monotonic()
            if now - self._last_apply < 1.0 / self.config.max_rate_hz:
                return False  # capped: the next message or the mirror thread's loop applies the newest
            msg, self._pending = self._pending, None
            self._last_apply = now
            self._apply_pose_v(msg)
            return True

    def _apply_pose_v(self, pending: tuple) -> None:
        arrays = self._tree_arrays()
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
        if not changed.any():
            return  # the same numbers as last time: the same world poses
        rows, raw = rows[changed], raw[changed]
        arrays.raw[rows] = raw
        arrays.local[rows] = poses_to_matrices(raw[:, :3], raw[:, 3:])  # node.local views these rows
        self._apply_world(arrays)

    def _tree_arrays(self) -> _Arrays:
        if self._arrays is None:
            self._arrays = _Arrays(self._nodes, self._entity_of)
            for r, node_id in enumerate(self._arrays.ids.tolist()):
                self._nodes[node_id].local = self._arrays.local[r]  # a view: pose updates reach both
        return self._arrays

    def _apply_tree_poses(self) -> None:
        self._apply_world(self._tree_arrays())

    def _apply_world(self, arrays: _Arrays) -> None:
        if not len(arrays.entity_rows):
            return
        world = arrays.world()[arrays.entity_rows]
        if arrays.applied is None:  # first time: compare with what the scene holds
            arrays.applied = np.stack([self.scene.entity(int(e)).pose for e in arrays.entity_ids])
        moved = moved_beyond(arrays.applied, world, self.config.min_translation, self.config.min_rotation)
        if not moved.any():
            return
        index = np.flatnonzero(moved)
        set_array = getattr(self.scene, "set_poses_array", None)  # vectorised validation, when the Scene has it
        if set_array is not None:
            set_array(arrays.entity_ids[index], world[index])
        else:
            self.scene.set_poses([(int(arrays.entity_ids[i]), world[i]) for i in index])
        arrays.applied[index] = world[index]
        self.moved += len(index)

    def on_clock(self, payload: bytes, type_name: str) -> None:
        """A serialized Clock (/world/<w>/clock): its sim time becomes `sim_time_ns`."""
        sim = protos.decode(type_name or "Clock", payload).sim
        self.sim_time_ns = sim.sec * 1_000_000_000 + sim.nsec

    def on_spawned(self, payload: bytes, type_name: str) -> None:
        """A serialized Scene holding newly created models (the scene/info topic)."""
        msg = protos.decode(type_name or "Scene", payload)
        with self._lock:
            if not self._ready or self._needs_resync:
                return  # the scene/info request of the (re)sync will include it
            for model in msg.model:
                if model.id in self._nodes:
                    continue
                self._add_model_nodes(model, None, "")
                try:
                    self._spawn_model(model)
                    self._tag_queue[model.name] = TAG_ATTEMPTS  # a worker asks Gazebo for its SDF
                except RadaraysError as exc:
                    log.error("Gazebo mirror: spawned model '%s' cannot be mirrored: %s", model.name, exc)
            self._arrays = None

    def on_deleted(self, payload: bytes, type_name: str) -> None:
        """A serialized UInt32_V of removed entity ids (the scene/deletion topic)."""
        msg = protos.decode(type_name or "UInt32_V", payload)
        with self._lock:
            names = [self._nodes[i].name for i in msg.data if i in self._nodes and self._nodes[i].kind == "model"]
            for entity_id in msg.data:
                self._remove_subtree(int(entity_id))
        for name in names:
            log.info("Gazebo mirror: model '%s' left the scene", name)


# -- pure helpers ---------------------------------------------------------------------------------
def _pose_matrix(pose) -> np.ndarray:
    p, q = pose.position, pose.orientation
    return poses_to_matrices(np.array([[p.x, p.y, p.z]]), np.array([[q.x, q.y, q.z, q.w]]))[0]


def poses_to_matrices(positions: np.ndarray, quaternions_xyzw: np.ndarray) -> np.ndarray:
    """(N,3) positions and (N,4) x,y,z,w quaternions -> (N,4,4). An all-zero quaternion (an unset
    protobuf field) means identity; others are normalised."""
    q = np.array(quaternions_xyzw, dtype=np.float64)
    norm = np.linalg.norm(q, axis=1)
    unset = norm < 1e-12
    q[unset] = (0.0, 0.0, 0.0, 1.0)
    q /= np.where(unset, 1.0, norm)[:, None]
    out = np.zeros((len(q), 4, 4))
    out[:, :3, :3] = quaternions_to_matrices(q)
    out[:, :3, 3] = positions
    out[:, 3, 3] = 1.0
    return out


def moved_beyond(old: np.ndarray, new: np.ndarray, min_translation: float, min_rotation: float) -> np.ndarray:
    """(N,) bool: poses whose translation changed by more than min_translation or whose rotation
    changed by more than min_rotation (angle of old_R^T new_R).

    Compared without square roots and arccos (few numpy calls: this runs for every pose message):
    |d|^2 > t^2, and angle > a  <=>  trace(old_R^T new_R) = 1 + 2 cos(angle) < 1 + 2 cos(a) on [0, pi]."""
    d = new[:, :3, 3] - old[:, :3, 3]
    moved = np.einsum("ni,ni->n", d, d) > min_translation * min_translation
    if min_rotation < math.pi:  # no rotation is larger than pi
        moved |= np.einsum("nij,nij->n", old[:, :3, :3], new[:, :3, :3]) < 1.0 + 2.0 * math.cos(min_rotation)
    return moved


def model_sdf(model) -> str:
    """SDF text of a Scene Model message (links, visuals, geometry, nested models), for the world
    layer to build entities from exactly as it builds them from a world file."""
    parts = [f'<model name="{_xml(model.name)}"><static>{"true" if model.is_static else "false"}</static>']
    parts.append(f"<pose>{_pose_text(model.pose)}</pose>")
    for link in model.link:
        parts.append(f'<link name="{_xml(link.name)}"><pose>{_pose_text(link.pose)}</pose>')
        for visual in link.visual:
            geometry = _geometry_sdf(visual.geometry)
            if geometry is None:
                continue
            parts.append(f'<visual name="{_xml(visual.name)}"><pose>{_pose_text(visual.pose)}</pose>'
                         f"<geometry>{geometry}</geometry></visual>")
        parts.append("</link>")
    for nested in model.model:
        parts.append(model_sdf(nested))
    parts.append("</model>")
    return "".join(parts)


def _xml(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace('"', "&quot;")


def _pose_text(pose) -> str:
    from ..world.transforms import matrix_to_rpy

    m = _pose_matrix(pose)
    r, p, y = matrix_to_rpy(m[:3, :3])
    return " ".join(repr(float(v)) for v in (*m[:3, 3], r, p, y))


def _vec(v, n: int = 3) -> str:
    return " ".join(repr(float(getattr(v, a))) for a in "xyz"[:n])


def _geometry_sdf(g) -> str | None:
    G = protos.Geometry
    if g.type == G.BOX:
        return f"<box><size>{_vec(g.box.size)}</size></box>"
    if g.type == G.CYLINDER:
        return f"<cylinder><radius>{g.cylinder.radius!r}</radius><length>{g.cylinder.length!r}</length></cylinder>"
    if g.type == G.SPHERE:
        return f"<sphere><radius>{g.sphere.radius!r}</radius></sphere>"
    if g.type == G.CAPSULE:
        return f"<capsule><radius>{g.capsule.radius!r}</radius><length>{g.capsule.length!r}</length></capsule>"
    if g.type == G.ELLIPSOID:
        return f"<ellipsoid><radii>{_vec(g.ellipsoid.radii)}</radii></ellipsoid>"
    if g.type == G.PLANE:
        normal = _vec(g.plane.normal) if g.plane.HasField("normal") else "0 0 1"
        return f"<plane><normal>{normal}</normal><size>{_vec(g.plane.size, 2)}</size></plane>"
    if g.type == G.MESH:
        mesh = g.mesh
        scale = _vec(mesh.scale) if mesh.HasField("scale") else "1 1 1"
        submesh = ""
        if mesh.submesh:
            submesh = (f"<submesh><name>{_xml(mesh.submesh)}</name>"
                       f"<center>{'true' if mesh.center_submesh else 'false'}</center></submesh>")
        return f"<mesh><uri>{_xml(mesh.filename)}</uri><scale>{scale}</scale>{submesh}</mesh>"
    return None  # image, heightmap, lines...: nothing a ray tracer can use from the message


