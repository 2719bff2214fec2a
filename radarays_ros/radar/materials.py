"""Radar materials: the `radar:` part of each library material, parsed into per-material-id arrays.

Keys of a material's radar part:
    velocity: wave velocity in m/ns, in [0, 0.3]. 0 = perfect reflector, 0.3 (air) = invisible.
    brdf:     radarays (default) | paper | cook_torrance | a name from the `radarays_ros.brdf` entry points
    ...       the BRDF's parameters (radarays/paper: A, B, C; cook_torrance: diffuse, roughness, n,
              transmittance); all required except transmittance.
A material with an empty radar part gets what RadaRays' Gazebo plugin gives an untagged visual:
velocity 0, radarays A 1, B 0, C 3000 (a perfect reflector with a constant BRDF).
The wave medium "air" is an extra id (= number of materials) with velocity 0.3 m/ns.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import ConfigError
from ..validate import Rule
from . import brdf as brdf_module

AIR_VELOCITY = 0.3  # m/ns, the speed of light in air (RadaRays' c)
UNTAGGED = {"velocity": 0.0, "brdf": "radarays", "A": 1.0, "B": 0.0, "C": 3000.0}


@dataclass
class RadarMaterials:
    """Per material id: velocity, BRDF name and parameters; index `air` is the air medium."""

    names: list[str]
    velocity: np.ndarray  # (n + 1,) float64, last = air
    brdf: list[str]  # (n,) BRDF name per material
    params: list[dict]  # (n,) parameters per material
    transmittance: np.ndarray  # (n + 1,) fraction of energy kept per metre inside, 1 = lossless
    functions: dict = field(default_factory=dict)  # BRDF name -> callable

    def __post_init__(self):
        # per BRDF kind: which materials use it and each parameter as an array over material ids, so
        # that one vectorised call evaluates every return of that kind
        self.kinds = sorted(set(self.brdf))
        self.kind_of = np.array([self.kinds.index(k) for k in self.brdf] + [-1], np.int64)
        self.param_arrays = {}
        for kind in self.kinds:
            keys = sorted({key for b, p in zip(self.brdf, self.params) if b == kind for key in p})
            self.param_arrays[kind] = {key: np.array([p.get(key, np.nan) if b == kind else np.nan
                                                      for b, p in zip(self.brdf, self.params)] + [np.nan])
                                       for key in keys}

    @property
    def air(self) -> int:
        return len(self.names)

    def __len__(self) -> int:
        return len(self.names)

    @classmethod
    def from_library(cls, library) -> "RadarMaterials":
        """Parse and validate every material's radar part; errors name material.origin and the key."""
        names, velocity, kinds, params, trans, functions = [], [], [], [], [], {}
        for material in library.materials:
            v, kind, p, fn = parse_radar_part(material.radar, material.origin or f"material {material.name}")
            names.append(material.name)
            velocity.append(v)
            kinds.append(kind)
            params.append(p)
            trans.append(p.get("transmittance", 1.0) if kind == "cook_torrance" else 1.0)
            functions[kind] = fn
        return cls(names, np.array(velocity + [AIR_VELOCITY]), kinds, params, np.array(trans + [1.0]), functions)

    @classmethod
    def uniform(cls, velocity: float = 0.0, A: float = 1.0, B: float = 0.0, C: float = 3000.0) -> "RadarMaterials":
        """One material everywhere (RadaRays' MulRan setting), for quick experiments."""
        return cls(["uniform"], np.array([velocity, AIR_VELOCITY]), ["radarays"], [{"A": A, "B": B, "C": C}],
                   np.ones(2), {"radarays": brdf_module.radarays})

    def evaluate(self, material_ids: np.ndarray, theta: np.ndarray) -> np.ndarray:
        """BRDF factor of each return: material_ids (N,) index this table, theta (N,) radians.

        BRDF functions get theta and a dict of parameter arrays aligned with theta.
        """
        if len(self.kinds) == 1:
            kind = self.kinds[0]
            params = {k: v[material_ids] for k, v in self._params_as(kind, theta.dtype).items()}
            out = np.asarray(self.functions[kind](theta, params), dtype=np.float64)
        else:
            out = np.zeros(len(theta))
            which = self.kind_of[material_ids]
            for index, kind in enumerate(self.kinds):
                sel = np.flatnonzero(which == index)
                if len(sel):
                    params = {k: v[material_ids[sel]] for k, v in self._params_as(kind, theta.dtype).items()}
                    out[sel] = self.functions[kind](theta[sel], params)
        if not np.isfinite(out).all():  # one check; the repair only when a BRDF misbehaved
            out = np.nan_to_num(out)
        return np.maximum(out, 0.0)

    def _params_as(self, kind: str, dtype) -> dict:
        """The parameter tables of a BRDF kind in the dtype of theta (cast once, not per call)."""
        key = (kind, np.dtype(dtype))
        cache = self.__dict__.setdefault("_param_cache", {})
        if key not in cache:
            cache[key] = {k: v.astype(dtype) for k, v in self.param_arrays[kind].items()}
        return cache[key]


def parse_radar_part(radar: dict, where: str):
    """(velocity, brdf name, params, function) of one material's radar part, validated."""
    radar = dict(radar or {})
    if not radar:
        radar = dict(UNTAGGED)
    if "velocity" not in radar:
        raise ConfigError(f"{where}.radar: missing key 'velocity' (wave velocity in m/ns, 0 .. {AIR_VELOCITY})")
    velocity = _number(radar.pop("velocity"), f"{where}.radar.velocity", 0.0, AIR_VELOCITY)
    kind = radar.pop("brdf", "radarays")
    spec = brdf_module.resolve(str(kind))
    if spec is None:
        raise ConfigError(f"{where}.radar.brdf = {kind!r}: unknown BRDF; known: {', '.join(brdf_module.known_names())}")
    params = {}
    if spec.params:
        unknown = sorted(set(radar) - set(spec.params))
        if unknown:
            raise ConfigError(f"{where}.radar: unknown key(s) {unknown} for brdf {kind}; allowed: velocity, brdf, {', '.join(spec.params)}")
        for key, (lo, hi, default) in spec.params.items():
            if key not in radar:
                if default is None:
                    raise ConfigError(f"{where}.radar: missing key '{key}' of brdf {kind} (allowed {lo} .. {hi})")
                params[key] = default
            else:
                params[key] = _number(radar[key], f"{where}.radar.{key}", lo, hi)
        if kind == "paper" and params["A"] + params["B"] > 1.0:
            raise ConfigError(f"{where}.radar: brdf paper needs A + B <= 1 (got {params['A']} + {params['B']})")
    else:  # plugin BRDF: any numeric parameters
        for key, value in radar.items():
            params[key] = _number(value, f"{where}.radar.{key}", -np.inf, np.inf)
    return velocity, str(kind), params, spec.function


def _number(value, where: str, lo: float, hi: float) -> float:
    return Rule(float, None if lo == -np.inf else lo, None if hi == np.inf else hi).check(value, where)
