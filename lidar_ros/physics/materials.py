"""The lidar part of each material, parsed once into per-material-id arrays.

Material classes follow LiMOX (Rott et al., Sensors 2024, §4.1), plus a mirror (BlenSor §3.5):

==================  ==========================================================================
class               what a ray does there
==================  ==========================================================================
general             returns; reflectivity ρ(θ) from `model` (Lambertian default) or `angle_table`
transparent         is ignored: the ray continues (optional `transmittance` t per crossing)
absorbent           ends: no point at all (e.g. water, black velvet)
retroreflective     returns towards the source with very high reflectivity (may saturate)
mirror              reflects specularly (fraction `specular`); the point lies on what the
                    reflected ray hits, at the total path length along the original ray
==================  ==========================================================================

Keys of a material's `lidar:` mapping::

    class: general            # general | transparent | absorbent | retroreflective | mirror
    reflectivity: 0.3         # at 0° incidence, fraction of a Lambertian white target (1.0);
                              # default 0.3 (retroreflective: 1.0)
    model: lambertian         # lambertian: ρ(θ)=ρ(0)·cos θ | table | constant (no angle dependence);
                              # default lambertian (retroreflective: constant; with a table: table)
    angle_table: [9 values]   # ρ at 0°, 10°, …, 80° (Ritter et al. 945 nm data used by LiMOX)
    transmittance: 1.0        # transparent only: fraction passing one crossing (applied both ways)
    gain: 1.0                 # retroreflective only: ρ(θ) = gain × (reflectivity or table); the
                              # sheeting's return over a white Lambertian target, e.g. 100-1000
    specular: 1.0             # mirror only: fraction mirrored (applied both ways)
    leaf_area_density: 1.0    # general only: the mesh is a tree crown or hedge, a leaf volume of this LAD
                              # (m²/m³) for sensors with `foliage: {volume: true}` (foliage.py); its
                              # `reflectivity` is then the leaves' near-infrared reflectance (leaf_angles.py)
    leaf_angles: spherical    # with leaf_area_density: the leaf-angle distribution (spherical: G = 1/2)
    leaf_size_m: 0.07         # with leaf_area_density: leaf width; sub-rays nearer than it share leaves
                              # (leaf_sharing.py)

`reflectivity` is accepted for every class (libraries often list one) but only general and
retroreflective surfaces return light of their own.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from radarays_ros.compiled import kernel
from radarays_ros.errors import ConfigError
from radarays_ros.world.materials import Material, MaterialLibrary

from ._validate import check_keys, choice, number
from .foliage import PROJECTION, extinction_per_m
from .leaf_sharing import LEAF_SIZE_M

# Class codes stored in LidarMaterials.material_class (int8).
GENERAL, TRANSPARENT, ABSORBENT, RETROREFLECTIVE, MIRROR = 0, 1, 2, 3, 4
CLASS_NAMES = ("general", "transparent", "absorbent", "retroreflective", "mirror")
CLASS_CODES = {name: code for code, name in enumerate(CLASS_NAMES)}
NO_SURFACE = -1  # class code of a miss

# Reflectivity model codes stored in LidarMaterials.model (int8).
LAMBERTIAN, TABLE, CONSTANT = 0, 1, 2
MODEL_NAMES = ("lambertian", "table", "constant")

TABLE_ANGLES_DEG = np.arange(0.0, 81.0, 10.0)  # 0°, 10°, …, 80°: the 9 bins of LiMOX §4.1
LIDAR_KEYS = ("class", "reflectivity", "model", "angle_table", "gain", "transmittance", "specular", "leaf_area_density",
              "leaf_angles", "leaf_size_m")
MAX_LEAF_AREA_DENSITY = 50.0  # m²/m³: far above any measured crown (a few m²/m³), below nonsense
MAX_REFLECTIVITY = {"general": 10.0, "retroreflective": 1.0e4}  # ρ > 1: brighter than a white target
DEFAULT_REFLECTIVITY = 0.3  # a grey diffuse surface when a library says nothing


def gather(table: np.ndarray, ids) -> np.ndarray:
    """table[ids] for per-ray ids (-1, a miss, reads the table's last row): the ids made np.intp, then
    numpy's fancy-indexing fast path. Measured on 262144 int32 ids into a 13-row table: 0.31 ms, against
    0.58 ms for np.take and 0.67 ms for fancy indexing with the int32 ids themselves."""
    return table[np.asarray(ids, np.intp)]


@dataclass(frozen=True)
class LidarMaterials:
    """Lidar properties indexed by material id (the scene library's order).

    material_class (M,) int8 class code (GENERAL … MIRROR)
    model (M,) int8          reflectivity model code (LAMBERTIAN, TABLE, CONSTANT)
    reflectivity (M,) f32    ρ at 0° incidence
    table (M, 10) f32        ρ at 0°, 10°, …, 90° (90°: 0; LAMBERTIAN rows hold ρ(0)·cos θ, CONSTANT rows ρ(0))
    pass_factor (M,) f32     two-way power factor of a crossing/reflection: t² (transparent), s² (mirror), else 1
    names                    material names, for messages and outputs
    foliage_extinction (M,) f64  G·LAD (1/m) of a leaf volume (foliage.py); 0 = a plain surface
    leaf_size (M,) f64       leaf width (m) of a leaf volume (leaf_sharing.py)
    """

    material_class: np.ndarray
    model: np.ndarray
    reflectivity: np.ndarray
    table: np.ndarray
    pass_factor: np.ndarray
    names: tuple[str, ...]
    foliage_extinction: np.ndarray | None = None  # None: no material is foliage
    leaf_size: np.ndarray | None = None

    def __post_init__(self):
        # lookup tables with one extra last row, so that material id -1 (a miss) indexes "nothing"
        def ext(values, miss):
            return np.append(values, np.asarray(miss, values.dtype))

        cls, model, rho0 = self.material_class, self.model, np.asarray(self.reflectivity, np.float32)
        object.__setattr__(self, "_cls_ext", ext(cls, NO_SURFACE))
        models = set(model.tolist())
        object.__setattr__(self, "single_model", models.pop() if len(models) == 1 else None)
        # per-ray lookups of the hot path (reflectivity.py, interaction.py), each one gather per frame:
        # ρ(θ) = lambertian[id]·cos θ + constant[id] (+ the table rows), rays that do not return from
        # the first surface they meet (transparent, mirror, absorbent)
        object.__setattr__(self, "_lambertian_ext", ext(np.where(model == LAMBERTIAN, rho0, 0).astype(np.float32), 0))
        object.__setattr__(self, "_constant_ext", ext(np.where(model == CONSTANT, rho0, 0).astype(np.float32), 0))
        object.__setattr__(self, "_tabled_ext", ext(model == TABLE, False))
        object.__setattr__(self, "has_constant", bool(np.any(model == CONSTANT)))
        object.__setattr__(self, "has_table", bool(np.any(model == TABLE)))
        passing = (cls == TRANSPARENT) | (cls == MIRROR) | (cls == ABSORBENT)
        object.__setattr__(self, "_not_first_ext", ext(passing, False))
        extinction = np.zeros(len(cls)) if self.foliage_extinction is None else np.asarray(self.foliage_extinction, np.float64)
        object.__setattr__(self, "_extinction_ext", ext(extinction, 0.0))
        object.__setattr__(self, "has_foliage", bool(np.any(extinction > 0)))
        size = np.full(len(cls), LEAF_SIZE_M) if self.leaf_size is None else np.asarray(self.leaf_size, np.float64)
        object.__setattr__(self, "_leaf_size_ext", ext(size, LEAF_SIZE_M))
        # first_round's one code per id (without, with leaf volumes): class + 1 | not_first << 3 | continuing << 4
        cls_ext, crown = (self._cls_ext.astype(np.int16) + 1).astype(np.uint8), self._extinction_ext > 0
        going_on = (self._cls_ext == TRANSPARENT) | (self._cls_ext == MIRROR)
        object.__setattr__(self, "_first_round_codes", tuple(
            (cls_ext | ((self._not_first_ext | (crown & volumes)) << 3) | ((going_on | (crown & volumes)) << 4)
             ).astype(np.uint8) for volumes in (False, True)))

    def __len__(self) -> int:
        return len(self.names)

    def class_of(self, material_ids: np.ndarray) -> np.ndarray:
        """(N,) int8 class code per traced material id; NO_SURFACE for -1 (a miss)."""
        try:
            return gather(self._cls_ext, material_ids)
        except IndexError:
            raise ConfigError(
                f"material id {int(np.max(material_ids))} was hit but the lidar materials know only "
                f"{len(self)} ({', '.join(self.names)}); build LidarMaterials from the scene's library"
            ) from None

    def extinction_of(self, material_ids: np.ndarray) -> np.ndarray:
        """(N,) float64 G·LAD (1/m) of the leaf volume each traced material id is; 0 for plain surfaces and misses."""
        return gather(self._extinction_ext, material_ids)

    def leaf_size_of(self, material_ids: np.ndarray) -> np.ndarray:
        """(N,) float64 leaf width (m) of the leaf volume each material id is."""
        return gather(self._leaf_size_ext, material_ids)

    def not_returning(self, material_ids: np.ndarray) -> np.ndarray:
        """(N,) bool: the traced surface does not return the ray itself (transparent, mirror, absorbent)."""
        try:
            return gather(self._not_first_ext, material_ids)
        except IndexError:
            self.class_of(material_ids)  # raises the explanatory error
            raise

    def first_round(self, material_ids: np.ndarray, volumes: bool) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
        """What the first trace's surfaces do with each ray, in one compiled pass over the (N,) int32 ids:
        (count, not_first, continuing, klass). not_first: the surface does not return the ray itself
        (`not_returning`), or, with `volumes`, it is a leaf volume's face (the ray goes in); continuing: the
        ray goes on past it (transparent, mirror, or a leaf volume's face with `volumes`); klass: `class_of`;
        count: how many rays are not_first. The same values as those gathers (one pass instead of three
        gathers, each of which first made the ids np.intp: 2-3 ms of an OS1-128 realistic frame)."""
        ids = np.asarray(material_ids)
        if ids.dtype != np.int32 or ids.ndim != 1:
            ids = np.asarray(ids, np.int64).reshape(-1)
        n = len(ids)
        not_first, continuing, klass = np.empty(n, bool), np.empty(n, bool), np.empty(n, np.int8)
        count = _first_round_kernel(ids, self._first_round_codes[bool(volumes)], not_first, continuing, klass)
        if count < 0:
            self.class_of(ids)  # raises the explanatory error
            raise IndexError("material id past the material table")
        return count, not_first, continuing, klass

    @classmethod
    def from_library(cls, lib: MaterialLibrary) -> "LidarMaterials":
        """Parse and validate the `lidar:` part of every material of `lib`."""
        return cls.from_materials(list(lib.materials))

    @classmethod
    def from_materials(cls, materials: list[Material]) -> "LidarMaterials":
        parsed = [_parse(m) for m in materials]
        n = len(parsed)
        return cls(
            material_class=np.array([p[0] for p in parsed], np.int8).reshape(n),
            model=np.array([p[1] for p in parsed], np.int8).reshape(n),
            reflectivity=np.array([p[2] for p in parsed], np.float32).reshape(n),
            table=np.array([p[3] for p in parsed], np.float32).reshape(n, 10),
            pass_factor=np.array([p[4] for p in parsed], np.float32).reshape(n),
            names=tuple(m.name for m in materials),
            foliage_extinction=np.array([p[5] for p in parsed], np.float64).reshape(n),
            leaf_size=np.array([p[6] for p in parsed], np.float64).reshape(n),
        )


def _parse(material: Material) -> tuple[int, int, float, list[float], float, float, float]:
    where = f"{material.origin or 'materials.' + material.name}.lidar"
    data = check_keys(material.lidar, LIDAR_KEYS, where)
    klass = choice(*CLASS_NAMES).check(data.get("class", "general"), f"{where}.class")
    code = CLASS_CODES[klass]

    if "transmittance" in data and klass != "transparent":
        raise ConfigError(f"{where}.transmittance: only allowed with class transparent (class is {klass})")
    if "specular" in data and klass != "mirror":
        raise ConfigError(f"{where}.specular: only allowed with class mirror (class is {klass})")
    if "gain" in data and klass != "retroreflective":
        raise ConfigError(f"{where}.gain: only allowed with class retroreflective (class is {klass})")
    if "leaf_area_density" in data and klass != "general":
        raise ConfigError(f"{where}.leaf_area_density: only allowed with class general (class is {klass})")
    for key in ("leaf_angles", "leaf_size_m"):
        if key in data and "leaf_area_density" not in data:
            raise ConfigError(f"{where}.{key}: only allowed with leaf_area_density (a leaf volume)")
    extinction, leaf_size = 0.0, LEAF_SIZE_M
    if "leaf_area_density" in data:
        lad = number(0.0, MAX_LEAF_AREA_DENSITY, low_open=True).check(data["leaf_area_density"], f"{where}.leaf_area_density")
        angles = choice(*PROJECTION).check(data.get("leaf_angles", "spherical"), f"{where}.leaf_angles")
        extinction = extinction_per_m(lad, angles)
        leaf_size = number(0.001, 2.0).check(data.get("leaf_size_m", LEAF_SIZE_M), f"{where}.leaf_size_m")

    high = MAX_REFLECTIVITY.get(klass, 10.0)
    table = None
    if "angle_table" in data:
        table = _parse_table(data["angle_table"], where, high)
    default_model = "table" if table is not None else ("constant" if klass == "retroreflective" else "lambertian")
    model = choice(*MODEL_NAMES).check(data.get("model", default_model), f"{where}.model")
    if model == "table" and table is None:
        raise ConfigError(f"{where}.model: 'table' needs angle_table (9 values at 0°, 10°, …, 80°)")
    if table is not None and model != "table":
        raise ConfigError(f"{where}.model: {model!r} conflicts with angle_table; allowed with a table: table")

    if "reflectivity" in data:
        rho0 = number(0.0, high).check(data["reflectivity"], f"{where}.reflectivity")
        if table is not None and abs(rho0 - table[0]) > 1e-6 * max(1.0, rho0):
            raise ConfigError(
                f"{where}.reflectivity: {rho0:g} differs from angle_table[0] = {table[0]:g}; "
                "give one or make them equal"
            )
    else:
        rho0 = table[0] if table is not None else (1.0 if klass == "retroreflective" else DEFAULT_REFLECTIVITY)
    if table is None:  # keep a full table in every row so lookups need no branch on the model
        table = list(rho0 * np.cos(np.radians(TABLE_ANGLES_DEG))) if model == "lambertian" else [rho0] * 9

    pass_factor = 1.0
    if klass == "transparent":
        pass_factor = number(0.0, 1.0).check(data.get("transmittance", 1.0), f"{where}.transmittance") ** 2
    elif klass == "mirror":
        pass_factor = number(0.0, 1.0).check(data.get("specular", 1.0), f"{where}.specular") ** 2
    at_90 = rho0 if model == "constant" else 0.0  # LiMOX bins stop at 80°: fall linearly to 0 at grazing
    if klass == "retroreflective":
        gain = number(1.0, 1.0e4).check(data.get("gain", 1.0), f"{where}.gain")
        rho0, table, at_90 = rho0 * gain, [v * gain for v in table], at_90 * gain
    return code, MODEL_NAMES.index(model), rho0, list(table) + [at_90], pass_factor, extinction, leaf_size


def _parse_table(values: Any, where: str, high: float) -> list[float]:
    if not isinstance(values, (list, tuple)) or len(values) != len(TABLE_ANGLES_DEG):
        raise ConfigError(
            f"{where}.angle_table: expected a list of 9 reflectivities at 0°, 10°, …, 80°; got {values!r}"
        )
    return [number(0.0, high).check(v, f"{where}.angle_table[{i}]") for i, v in enumerate(values)]


@kernel
def _first_round_kernel(ids, codes, not_first, continuing, klass):
    """Per ray: its id's code (class + 1 | not_first << 3 | continuing << 4; id -1, a miss, reads the last row, as
    numpy indexing does). Returns how many rays are not_first, or -1 for an id past the table (no exit in the
    loop: a loop without branches runs several rays at once)."""
    m = codes.shape[0]
    count = 0
    bad = 0
    for i in range(ids.shape[0]):
        k = ids[i] + m if ids[i] < 0 else ids[i]
        inside = k >= 0 and k < m
        bad += not inside
        c = codes[k if inside else 0]
        klass[i] = np.int8(c & 7) - np.int8(1)
        stop = (c >> 3) & 1
        not_first[i] = stop
        continuing[i] = (c >> 4) & 1
        count += stop
    return -1 if bad else count
