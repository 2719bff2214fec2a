"""Material library: named materials with a radar part and a lidar part, and rules assigning them.

File format (YAML)::

    materials:
      concrete:
        radar: {velocity: 0.001, brdf: radarays, A: 0.6, B: 0.3, C: 30}
        lidar: {class: general, reflectivity: 0.25}
        source: "where the numbers come from"
    assign:                      # first matching rule wins, per face
      - {object: room, material: concrete}         # OBJ object/group, glTF/DAE node name
      - {entity: "shelf*::*", material: wood}      # scoped entity name model::link::visual
      - {mesh_material: "Glass*", material: glass} # the mesh file's own material name
    default: concrete

The world layer checks the structure; the radar and lidar layers parse and validate their own part
(`radar:` / `lidar:`) and name the file and key when a value is wrong. A mesh material whose name equals
a library material (case-insensitive) gets that material when no rule matched.
"""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from ..config_file import read_yaml
from ..validate import plain
from ..errors import ConfigError
from ..resources import data_path
from .mesh import TriMesh

RULE_KEYS = ("entity", "object", "mesh_material")
MATERIAL_KEYS = {"radar", "lidar", "source", "description"}


@dataclass(frozen=True)
class Material:
    name: str
    radar: Mapping[str, Any] = field(default_factory=dict)
    lidar: Mapping[str, Any] = field(default_factory=dict)
    origin: str = ""  # file (and key) this material was defined in, for error messages


@dataclass(frozen=True)
class AssignRule:
    kind: str  # one of RULE_KEYS
    pattern: str
    material: str
    origin: str = ""

    def matches(self, name: str) -> bool:
        return fnmatch.fnmatchcase(name, self.pattern)


class MaterialLibrary:
    """Materials indexed by id (their position), assignment rules and a default."""

    def __init__(self, materials: list[Material], rules: list[AssignRule] | None = None, default: str | None = None,
                 check: bool = True):
        """`check=False` leaves names in rules/default unchecked: a user file that refers to shipped materials
        is checked when merged over the shipped library (`merged`)."""
        if not materials and check:
            materials = [Material("default")]
        self.materials: list[Material] = []
        self._ids: dict[str, int] = {}
        self.version = 0  # bumped by every add/replace: simulators re-read their tables when it changes
        for m in materials:
            self.add(m)
        self.rules = list(rules or [])
        self.default = default if default is not None or not check else self.materials[0].name
        if check:
            self.check()

    def check(self) -> None:
        """Every rule and the default must name a material of this library."""
        for rule in self.rules:
            self.id_of(rule.material, what=f"assign rule {rule.kind}: {rule.pattern} (in {rule.origin})")
        self.id_of(self.default, what="default")

    # -- construction -------------------------------------------------------------------------
    @classmethod
    def load(cls, path: str | Path | None = None) -> "MaterialLibrary":
        """Read a library file; None reads the shipped library (package data materials/default.yaml).

        A user file may refer to shipped materials; `load_user` merges it over the shipped library."""
        path = Path(path) if path is not None else data_path("materials", "default.yaml")
        lib = cls.from_dict(read_yaml(path, "material library"), origin=str(path))
        if not lib.materials:
            raise ConfigError(f"material library {path}: defines no materials")
        if lib.default is None:
            lib.default = lib.materials[0].name
        lib.check()
        return lib

    @classmethod
    def load_user(cls, path: str | Path | None) -> "MaterialLibrary":
        """The shipped library with a user file (which may name shipped materials) merged over it."""
        shipped = cls.load()
        if path is None:
            return shipped
        from ..resources import shipped_example

        path = shipped_example(path) or Path(path)  # `materials_room`: the shipped example of that name
        return shipped.merged(cls.from_dict(read_yaml(path, "material library"), origin=str(path)))

    @classmethod
    def from_dict(cls, data: Any, origin: str = "<dict>") -> "MaterialLibrary":
        if not isinstance(data, dict):
            raise ConfigError(f"material library {origin}: expected a mapping with 'materials', 'assign', 'default'")
        unknown = set(data) - {"materials", "assign", "default"}
        if unknown:
            raise ConfigError(f"material library {origin}: unknown key(s) {sorted(unknown)}; allowed: materials, assign, default")
        raw = data.get("materials") or {}
        if not isinstance(raw, dict):
            raise ConfigError(f"material library {origin}: 'materials' must map names to material entries")
        materials = [_parse_material(name, entry, origin) for name, entry in raw.items()]
        assign = data.get("assign") or []
        if not isinstance(assign, list):
            raise ConfigError(f"material library {origin}: 'assign' must be a list of rules, got {plain(assign)}")
        rules = [_parse_rule(i, r, origin) for i, r in enumerate(assign)]
        default = data.get("default")
        return cls(materials, rules, None if default is None else str(default), check=False)

    def add(self, material: Material) -> int:
        """Add (or replace, by name) a material; returns its id."""
        self.version += 1
        if material.name in self._ids:
            idx = self._ids[material.name]
            self.materials[idx] = material
            return idx
        self._ids[material.name] = len(self.materials)
        self.materials.append(material)
        return self._ids[material.name]

    def merged(self, other: "MaterialLibrary") -> "MaterialLibrary":
        """This library with `other`'s materials added (replacing same names) and its rules first."""
        lib = MaterialLibrary(list(self.materials), other.rules + self.rules, other.default or self.default, check=False)
        for m in other.materials:
            lib.add(m)
        lib.check()
        return lib

    # -- lookup -------------------------------------------------------------------------------
    def id_of(self, name: str, what: str = "material") -> int:
        try:
            return self._ids[name]
        except KeyError:
            raise ConfigError(f"{what}: unknown material '{name}'; known: {', '.join(self.names)}") from None

    @property
    def names(self) -> list[str]:
        return [m.name for m in self.materials]

    def __len__(self) -> int:
        return len(self.materials)

    def __getitem__(self, idx: int) -> Material:
        return self.materials[idx]

    def resolve_faces(self, entity_name: str, mesh: TriMesh, override: str | None = None) -> np.ndarray:
        """Material id of every face of an entity's mesh (int32, shape (F,)).

        `override` (a material name, e.g. from an SDF <radarays_material> tag) wins over every rule.
        """
        n = mesh.n_faces
        if override is not None:
            return np.full(n, self.id_of(override), dtype=np.int32)
        # Decide per distinct (part, mesh material) pair, not per face: a handful of pairs at most.
        mesh_mats = np.asarray(mesh.face_mesh_materials)
        keys = np.stack([mesh.face_parts, mesh_mats], axis=1) if n else np.zeros((0, 2), np.int32)
        out = np.empty(n, dtype=np.int32)
        if n == 0:
            return out
        uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
        ids = []
        for part, mat in uniq:
            part_name = mesh.part_names[part] if 0 <= part < len(mesh.part_names) else ""
            mat_name = mesh.mesh_material_names[mat] if mat >= 0 else ""
            ids.append(self._pick(entity_name, part_name, mat_name))
        out[:] = np.asarray(ids, dtype=np.int32)[inverse.reshape(-1)]
        return out

    def _pick(self, entity: str, part: str, mesh_material: str) -> int:
        names = {"entity": entity, "object": part, "mesh_material": mesh_material}
        for rule in self.rules:
            if names[rule.kind] and rule.matches(names[rule.kind]):
                return self._ids[rule.material]
        lowered = {k.lower(): v for k, v in self._ids.items()}
        if mesh_material and mesh_material.lower() in lowered:
            return lowered[mesh_material.lower()]
        return self._ids[self.default]


def _parse_material(name: Any, entry: Any, origin: str) -> Material:
    where = f"material library {origin}: materials.{name}"
    if entry is None:
        entry = {}
    if not isinstance(entry, dict):
        raise ConfigError(f"{where}: expected a mapping with keys {sorted(MATERIAL_KEYS)}")
    unknown = set(entry) - MATERIAL_KEYS
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {sorted(unknown)}; allowed: {sorted(MATERIAL_KEYS)}")
    for part in ("radar", "lidar"):
        if not isinstance(entry.get(part) or {}, dict):
            raise ConfigError(f"{where}.{part}: expected a mapping")
    return Material(str(name), dict(entry.get("radar") or {}), dict(entry.get("lidar") or {}), f"{origin}: materials.{name}")


def _parse_rule(index: int, rule: Any, origin: str) -> AssignRule:
    where = f"material library {origin}: assign[{index}]"
    if not isinstance(rule, dict) or "material" not in rule:
        raise ConfigError(f"{where}: expected {{<{'|'.join(RULE_KEYS)}>: pattern, material: name}}")
    kinds = [k for k in RULE_KEYS if k in rule]
    extra = set(rule) - set(RULE_KEYS) - {"material"}
    if len(kinds) != 1 or extra:
        raise ConfigError(f"{where}: needs exactly one of {', '.join(RULE_KEYS)} besides 'material'")
    return AssignRule(kinds[0], str(rule[kinds[0]]), str(rule["material"]), f"{origin}: assign[{index}]")
