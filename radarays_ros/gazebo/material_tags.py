"""Material tags of models spawned into a running Gazebo (`<radarays_material>`, `<radarays><material>`).

The Scene message of a spawned model carries geometry but no custom SDF elements, so a spawned model
first gets the library's rules, then its tags from two sources:
1. at once, its own model file, when a mesh URI of it points into a model directory (`model://NAME/...`
   resolved along the resource paths, or an absolute path below a directory holding model.config /
   model.sdf): the tags of visuals with the same link::visual names (`tags_from_model_file`);
2. then, on a worker thread, Gazebo's `generate_world_sdf` answer (gz-sim writes each model's SDF
   element, custom elements included, or an `<include>` of its file): tags found there win
   (`GeneratedTags`). A visual untagged in both keeps the rules' material. A model spawned from an SDF
   string with primitive geometry only gets its tags from source 2.
"""
from __future__ import annotations

import logging
import threading
from pathlib import Path

import numpy as np

from ..errors import RadaraysError
from ..threads import context_thread
from ..world.entities import LoadReport
from ..world.materials import Material
from . import protos
from .entity_tree import EntityTree, visual_ids
from .scene_sdf import declare_prefixes

log = logging.getLogger("radarays_ros.gazebo.mirror")

TAG_ATTEMPTS = 3  # generate_world_sdf requests for the tags of a spawned model before giving up


def tags_from_model_file(model, tree: EntityTree, materials, resource_paths) -> dict:
    """Tags of a spawned model's own model file, found from its mesh URIs, renamed to the spawned
    model; only names of visuals the spawned model has (source 1)."""
    from ..world.sdf import material_tags

    model_file = model_file_of_meshes(model, resource_paths)
    if model_file is None:
        return {}
    try:
        found = material_tags(model_file.read_bytes(), model_file.parent, materials,
                              source=str(model_file), resource_paths=resource_paths)
    except (RadaraysError, OSError, ValueError) as exc:
        log.warning("Gazebo mirror: material tags of '%s' not read from %s: %s", model.name, model_file, exc)
        return {}
    wanted = {tree.nodes[v].name for v in visual_ids(model) if v in tree.nodes}
    out = {}
    for name, (override, material) in found.items():
        renamed = f"{model.name}::{name.split('::', 1)[1]}" if "::" in name else name
        if renamed in wanted:
            if material is not None and override.startswith("sdf:"):
                override = f"sdf:{renamed}"
                material = Material(override, material.radar, material.lidar, material.origin)
            out[renamed] = (override, material)
    return out


def model_file_of_meshes(model, resource_paths) -> Path | None:
    """The model file (model.config's SDF, model.sdf) of the directory a mesh URI of `model` lies in."""
    from ..world.sdf import model_file_of
    from ..world.uris import ResourceResolver

    resolver = ResourceResolver(resource_paths)
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


def apply_material(scene, tree: EntityTree, name: str, override: str, material) -> None:
    """Give a mirrored entity a tagged material; it is re-added (same mesh and pose) if its faces had
    another one, and the visual node follows the new entity id."""
    entity_id = scene.find(name)
    if entity_id is None:
        return
    if material is not None:
        scene.materials.add(material)
    wanted = scene.materials.id_of(override)
    with scene.lock:
        entity = scene.entity(entity_id)
        if np.all(entity.face_materials == wanted):
            return
        scene.remove_entity(entity_id)
        new_id = scene.add_entity(name, entity.mesh, entity.pose, entity.static, override)
    node_id = tree.by_name.get(name)
    if node_id is not None and node_id in tree.entity_of:
        tree.entity_of[node_id] = new_id
    tree.changed()
    log.info("Gazebo mirror: '%s' takes material '%s' from its SDF tags", name, override)


class GeneratedTags:
    """Spawned models waiting for their tags from generate_world_sdf (source 2), read on a thread of
    its own: a service call may block for the service timeout, and the mirror thread must keep
    watching liveness meanwhile. Whatever the answer holds (bad XML, unreadable files), the worker
    logs one line and the models keep the rules' materials; nothing of it reaches the mirror thread."""

    def __init__(self, mirror):
        self.mirror = mirror
        self.queue: dict[str, int] = {}  # spawned model name -> generate_world_sdf attempts left
        self._thread: threading.Thread | None = None

    def add(self, model_name: str) -> None:
        self.queue[model_name] = TAG_ATTEMPTS

    def start(self) -> None:
        if self._thread is not None and self._thread.is_alive():
            return
        self._thread = context_thread(self._refresh, "gazebo-mirror-tags")
        self._thread.start()

    def join(self, timeout: float) -> None:
        if self._thread is not None:
            self._thread.join(timeout=timeout)

    def _refresh(self) -> None:
        mirror = self.mirror
        with mirror._lock:
            names = set(self.queue)
        try:
            self._read(names)
        except Exception as exc:  # a worker thread: say what failed, never die silently, never retry forever
            log.error("Gazebo mirror: material tags of %s not read from generate_world_sdf (%s: %s); the "
                      "library's rules apply", ", ".join(sorted(names)), type(exc).__name__, exc)
            with mirror._lock:
                for name in names:
                    self.queue.pop(name, None)

    def _read(self, names: set[str]) -> None:
        from ..world.sdf import material_tags

        mirror = self.mirror
        generated = mirror._request("generate_world_sdf")
        if generated is None:
            with mirror._lock:
                for name in names:
                    left = self.queue.get(name, 0) - 1
                    if left > 0:
                        self.queue[name] = left
                    elif self.queue.pop(name, None) is not None:
                        log.warning("Gazebo mirror: material tags of spawned model '%s' not read: "
                                    "generate_world_sdf did not answer; the library's rules apply", name)
            return
        try:
            tags = material_tags(declare_prefixes(generated.data), Path.cwd(), mirror.scene.materials, models=names,
                                 source=f"generate_world_sdf of world '{mirror.world}'",
                                 resource_paths=mirror.config.resource_paths, report=LoadReport())
        except RadaraysError as exc:
            log.error("Gazebo mirror: material tags of %s not read: %s", ", ".join(sorted(names)), exc)
            tags = {}
        with mirror._lock:
            for name in names:
                self.queue.pop(name, None)
            for name, (override, material) in tags.items():
                try:
                    apply_material(mirror.scene, mirror.tree, name, override, material)
                except RadaraysError as exc:
                    log.error("Gazebo mirror: material '%s' of '%s' not applied: %s", override, name, exc)
