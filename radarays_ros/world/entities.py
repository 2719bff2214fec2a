"""What world parsers produce: entity specifications, and the call that puts them into a Scene."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import ConfigError, WorldError
from .materials import Material, MaterialLibrary
from .mesh import TriMesh
from .scene import Scene


@dataclass
class EntitySpec:
    """One entity to add to a Scene.

    name: scoped `model::link::visual`; mesh: in the entity frame, scale applied; pose: 4x4 world <- entity;
    static: the model's `<static>` (inherited by nested models); material_override: a material name that
    wins over every assign rule (from `<radarays><material>` or `<radarays_material>`), else None;
    material: the definition of that override when the SDF defined it (`<radarays_material>`), which
    `add_entities` adds to the scene's library first; link_offset: 4x4 pose in its link's frame (link <-
    entity) for pose sources that move links (PosePublisher over TF), None where there is no link.
    """

    name: str
    mesh: TriMesh
    pose: np.ndarray
    static: bool = True
    material_override: str | None = None
    material: Material | None = None
    link_offset: np.ndarray | None = None


@dataclass
class LoadReport:
    """Non-fatal findings of a load: warnings (human-readable) and URIs that could not be resolved."""

    warnings: list[str] = field(default_factory=list)
    unresolved: list[str] = field(default_factory=list)

    def warn(self, message: str) -> None:
        self.warnings.append(message)


def material_library(materials=None) -> MaterialLibrary:
    """The shipped library, with `materials` (a MaterialLibrary or a YAML path) merged over it."""
    if isinstance(materials, MaterialLibrary):
        return MaterialLibrary.load(None).merged(materials)
    return MaterialLibrary.load_user(materials)


def add_entities(scene: Scene, specs: list[EntitySpec]) -> list[int]:
    """Add specs to a scene (their SDF-defined materials first); returns the new entity ids.

    All-or-nothing for names: an already existing entity name raises WorldError before anything is added.
    """
    with scene.lock:
        taken = [s.name for s in specs if scene.find(s.name) is not None]
        seen: set[str] = set()
        duplicates = [s.name for s in specs if s.name in seen or seen.add(s.name)]
        if taken or duplicates:
            raise WorldError(f"entity name(s) already in {scene.source or 'the scene'}: {', '.join(taken + duplicates)}")
        for s in specs:
            if s.material is not None:
                scene.materials.add(s.material)
        ids = []
        for s in specs:
            try:
                ids.append(scene.add_entity(s.name, s.mesh, s.pose, s.static, s.material_override))
            except ConfigError as exc:  # bad pose or unknown override: name the entity
                raise WorldError(f"entity '{s.name}': {exc}") from None
        return ids
