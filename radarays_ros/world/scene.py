"""The Scene: every entity of a world as a triangle mesh with a pose, a static flag and materials.

The Scene is the single source of truth. Ray-tracing backends subscribe to it and are told when an
entity is added, removed or moved, so that they can update without rebuilding the static world.
Entity ids are stable: removing an entity never renumbers the others.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Iterable, Protocol

import numpy as np

from ..errors import ConfigError, WorldError
from .materials import MaterialLibrary
from .mesh import TriMesh
from .transforms import MAX_COORDINATE_M, check_transform


def _proper_rigid(poses: np.ndarray, tol: float = 1e-6) -> np.ndarray:
    """(N,) bool: finite 4x4 transforms whose 3x3 part is a rotation (orthonormal, det +1)."""
    finite = np.isfinite(poses).all(axis=(1, 2))
    r = np.where(finite[:, None, None], poses[:, :3, :3], np.eye(3))
    orthonormal = np.abs(r @ np.swapaxes(r, 1, 2) - np.eye(3)).max(axis=(1, 2)) <= tol
    right_handed = np.linalg.det(r) > 0
    bottom = np.all(poses[:, 3] == (0.0, 0.0, 0.0, 1.0), axis=1)
    near = np.abs(np.where(finite[:, None], poses[:, :3, 3], 0.0)).max(axis=1) <= MAX_COORDINATE_M
    return finite & orthonormal & right_handed & bottom & near


def _twist_moves(velocity, angular):
    """Whether twists move their bodies: any non-zero velocity or angular velocity (the last axis: xyz), for one
    twist ((3,) each: a bool) or for many ((N, 3) each: (N,) bools)."""
    return np.any(velocity != 0, axis=-1) | np.any(angular != 0, axis=-1)


def _checked_twist(twist, name: str):
    """(velocity, angular velocity) as two finite float64 (3,) arrays, or None; else ConfigError naming the entity."""
    if twist is None:
        return None
    parts = [np.asarray(v, np.float64) for v in twist] if len(twist) == 2 else []
    if not parts or any(v.shape != (3,) or not np.isfinite(v).all() for v in parts):
        raise _twist_error(name)
    return parts[0], parts[1]


def _twist_error(name: str) -> ConfigError:
    return ConfigError(f"twist of entity '{name}': expected finite (velocity xyz m/s, angular velocity xyz rad/s)")


@dataclass
class Entity:
    id: int
    name: str  # scoped: model::link::visual (a bare mesh map: the file stem)
    mesh: TriMesh  # in the entity frame, scale applied
    pose: np.ndarray  # 4x4 world <- entity
    static: bool
    face_materials: np.ndarray  # (F,) int32 material ids
    # (velocity of its origin m/s, angular velocity rad/s), world frame, at its current pose, where the source that
    # moved it knows them (a scenario's trajectory); None: unknown (Doppler then differences its poses over frames)
    twist: tuple[np.ndarray, np.ndarray] | None = None

    @property
    def model(self) -> str:
        return self.name.split("::", 1)[0]

    @property
    def sweeps(self) -> bool:
        """True when its twist moves it: rays with times meet it where it is then (tracing.Rays)."""
        return self.twist is not None and bool(_twist_moves(*self.twist))


class SceneListener(Protocol):
    def on_entity_added(self, entity: Entity) -> None: ...
    def on_entity_removed(self, entity: Entity) -> None: ...
    def on_entity_moved(self, entity: Entity) -> None: ...


@dataclass
class Scene:
    materials: MaterialLibrary = field(default_factory=MaterialLibrary.load)
    source: str = ""
    warnings: list[str] = field(default_factory=list)  # documented, non-fatal problems found on load
    unresolved: list[str] = field(default_factory=list)  # URIs that could not be resolved

    def __post_init__(self):
        self._entities: dict[int, Entity] = {}
        self._by_name: dict[str, int] = {}
        self._by_model: dict[str, dict[int, None]] = {}  # model name -> its entities' ids, in the order added
        self._next_id = 0
        self._sweeping: set[int] = set()  # ids of the entities whose twist moves them (Entity.sweeps), kept as set
        self._listeners: list[SceneListener] = []
        self.lock = threading.RLock()  # held by writers (pose sources) and by backends while syncing

    # -- queries --------------------------------------------------------------------------------
    @property
    def entities(self) -> list[Entity]:
        return list(self._entities.values())

    def __len__(self) -> int:
        return len(self._entities)

    def entity(self, key: int | str) -> Entity:
        """An entity by id or scoped name."""
        if isinstance(key, str):
            if key not in self._by_name:
                raise WorldError(f"no entity named '{key}' in {self.source or 'the scene'}")
            key = self._by_name[key]
        try:
            return self._entities[int(key)]
        except (KeyError, ValueError):
            raise WorldError(f"no entity with id {key} in {self.source or 'the scene'}") from None

    def find(self, name: str) -> int | None:
        return self._by_name.get(name)

    def model_entities(self, model: str) -> list[Entity]:
        """The entities of model `model` (names `model` or `model::...`), by id; [] for none."""
        return [self._entities[i] for i in sorted(self._by_model.get(model, ()))]

    def sweeping_ids(self) -> frozenset:
        """The ids of the entities whose twist moves them (Entity.sweeps), without looking at each entity (a
        backend asks this every trace of rays with times)."""
        with self.lock:
            return frozenset(self._sweeping)

    def entity_names(self) -> list[str]:
        """Names indexed by entity id ('' for removed ids), for outputs such as hits.npz."""
        names = [""] * self._next_id
        for e in self._entities.values():
            names[e.id] = e.name
        return names

    @property
    def triangle_count(self) -> int:
        return sum(e.mesh.n_faces for e in self._entities.values())

    def bounds(self) -> np.ndarray:
        """(2, 3) world-frame axis-aligned bounds of all entities."""
        corners = [e.mesh.vertices @ e.pose[:3, :3].T + e.pose[:3, 3] for e in self._entities.values() if e.mesh.n_faces]
        if not corners:
            return np.zeros((2, 3))
        pts = np.concatenate(corners)
        return np.stack([pts.min(axis=0), pts.max(axis=0)])

    # -- changes --------------------------------------------------------------------------------
    def subscribe(self, listener: SceneListener) -> None:
        self._listeners.append(listener)

    def unsubscribe(self, listener: SceneListener) -> None:
        if listener in self._listeners:
            self._listeners.remove(listener)

    def add_entity(
        self,
        name: str,
        mesh: TriMesh,
        pose: np.ndarray | None = None,
        static: bool = True,
        material: str | None = None,
    ) -> int:
        """Add an entity; `material` forces one material on all faces, else the library's rules decide."""
        pose = check_transform(np.eye(4) if pose is None else pose, what=f"pose of entity '{name}'")
        with self.lock:
            if name in self._by_name:
                raise WorldError(f"entity '{name}' already exists in {self.source or 'the scene'}")
            face_materials = self.materials.resolve_faces(name, mesh, override=material)
            entity = Entity(self._next_id, name, mesh, pose, bool(static), face_materials)
            self._entities[entity.id] = entity
            self._by_name[name] = entity.id
            self._by_model.setdefault(entity.model, {})[entity.id] = None
            self._next_id += 1
            for listener in self._listeners:
                listener.on_entity_added(entity)
            return entity.id

    def remove_entity(self, key: int | str) -> None:
        with self.lock:
            entity = self.entity(key)
            del self._entities[entity.id]
            del self._by_name[entity.name]
            self._sweeping.discard(entity.id)
            members = self._by_model[entity.model]
            del members[entity.id]
            if not members:
                del self._by_model[entity.model]
            for listener in self._listeners:
                listener.on_entity_removed(entity)

    def set_pose(self, key: int | str, pose: np.ndarray) -> None:
        """Move an entity. A bad pose (NaN, not rigid) raises ConfigError and changes nothing."""
        with self.lock:
            entity = self.entity(key)
            entity.pose = check_transform(pose, what=f"pose of entity '{entity.name}'")
            entity.twist = None
            self._sweeping.discard(entity.id)
            for listener in self._listeners:
                listener.on_entity_moved(entity)

    def set_poses_array(self, ids, poses, keep_twists: bool = False) -> None:
        """Move many entities at once: ids (N,) ints, poses (N, 4, 4); checked as one batch. keep_twists: their
        velocities stay (a pose stream whose velocities are given per frame, set_twists), else unknown.

        All poses are validated (finite, proper rotation) before any is applied, so a bad one changes
        nothing; the error names the first offending entity. This is the path for pose streams
        (Gazebo's Pose_V at 60 Hz for hundreds of entities)."""
        ids = np.asarray(ids, dtype=np.int64).reshape(-1)
        # one copy of the batch, of which each entity keeps its own 4x4 view (a copy per entity cost
        # 0.5 us each, the lookups by `entity()` 1.2 us: 500 movers, 0.78 ms per update before)
        poses = np.array(poses, dtype=np.float64).reshape(-1, 4, 4)
        if len(ids) != len(poses):
            raise ConfigError(f"set_poses_array: {len(ids)} ids but {len(poses)} poses")
        bad = ~_proper_rigid(poses)
        with self.lock:
            known = self._entities
            entities = [known.get(i) for i in ids.tolist()]
            missing = [k for k, e in enumerate(entities) if e is None]
            if missing:  # the error of the first unknown id
                self.entity(int(ids[missing[0]]))
            if bad.any():
                name = entities[int(np.flatnonzero(bad)[0])].name
                raise ConfigError(f"pose of entity '{name}': not a finite rigid transform (NaN/inf, not a rotation, "
                                  f"or beyond ±{MAX_COORDINATE_M:g} m)")
            for entity, pose in zip(entities, poses):
                entity.pose = pose
                if not keep_twists:
                    entity.twist = None
            if not keep_twists:
                self._sweeping.difference_update(ids.tolist())
            for listener in self._listeners:
                moved = getattr(listener, "on_entities_moved", None)
                if moved is not None:
                    moved(entities)
                else:
                    for entity in entities:
                        listener.on_entity_moved(entity)

    def set_twists(self, ids, velocities, angular) -> None:
        """The velocities of entities at the poses they have (ids (N,); velocities of their origins and angular
        velocities (N, 3), world frame, finite, else ConfigError and nothing changes): what a pose stream measured
        between its last two messages. Nothing moves, so the backends are not told."""
        ids = np.asarray(ids, dtype=np.int64).reshape(-1)
        velocities, angular = (np.array(v, np.float64).reshape(len(ids), 3) for v in (velocities, angular))
        with self.lock:
            entities = [self.entity(int(i)) for i in ids]
            bad = ~(np.isfinite(velocities).all(axis=1) & np.isfinite(angular).all(axis=1))
            if bad.any():
                raise _twist_error(entities[int(np.flatnonzero(bad)[0])].name)
            for entity, v, w in zip(entities, velocities, angular):
                entity.twist = (v, w)
            moves = _twist_moves(velocities, angular)
            self._sweeping.difference_update(ids[~moves].tolist())
            self._sweeping.update(ids[moves].tolist())

    def set_poses(self, poses: Iterable[tuple[int | str, np.ndarray]], twists=None) -> None:
        """Move several entities; all poses are checked before any is applied. twists: for each pose, the
        entity's (velocity of its origin, angular velocity) there, world frame, finite (3,) each; None: unknown."""
        with self.lock:
            checked = [(self.entity(k), check_transform(p, what=f"pose of entity '{k}'")) for k, p in poses]
            known = [None] * len(checked) if twists is None else [_checked_twist(t, e.name) for t, (e, _) in
                                                                   zip(twists, checked, strict=True)]
            for (entity, pose), twist in zip(checked, known):
                entity.pose, entity.twist = pose, twist
                (self._sweeping.add if entity.sweeps else self._sweeping.discard)(entity.id)
                for listener in self._listeners:
                    listener.on_entity_moved(entity)
