"""Fit RadaRays' per-material parameters (v, A, B, C) to real frames of a known scene and poses.

As RadaRays does (Mock et al., RA-L 2025, Sec. VI): simulate the recording's frames with candidate
materials, score each against the real frame by the mutual information score (MIS) and optionally SSIM
(similarity.py), and search the parameters derivative-free: Nelder-Mead over the parameters scaled to
[0, 1] within their bounds (velocity [0, 0.3] m/ns = AIR_VELOCITY, A and B in [0, 1], C on a log scale
in [1, 10^4], inside radar/brdf.py's limits), from a seeded set of starts. The simulator is seeded by
the config, so an evaluation is a deterministic function of the parameters.

A parameter that moves the score by less than NO_EFFECT over a tenth of its range at the start (a
material not seen in these frames, a velocity the image cannot tell) is reported, not fitted.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize

from ...errors import ConfigError
from ..materials import AIR_VELOCITY, RadarMaterials
from ..similarity import mutual_information, ssim

# key -> (lo, hi, transform): search bounds inside the radarays BRDF's rule (radar/brdf.py) and [0, AIR_VELOCITY]
MATERIAL_BOUNDS = {"velocity": (0.0, AIR_VELOCITY, "identity"), "A": (0.0, 1.0, "identity"),
                   "B": (0.0, 1.0, "identity"), "C": (1.0, 1e4, "log")}
NO_EFFECT = 1e-4  # score change (nats) over a tenth of a parameter's range below which it has no effect


@dataclass(frozen=True)
class MaterialParam:
    material: str
    key: str

    @property
    def name(self) -> str:
        return f"{self.material}.{self.key}"

    def _t(self, v):
        return math.log(v) if MATERIAL_BOUNDS[self.key][2] == "log" else v

    def to_unit(self, value: float) -> float:
        lo, hi, _ = MATERIAL_BOUNDS[self.key]
        return (self._t(min(max(value, lo), hi)) - self._t(lo)) / (self._t(hi) - self._t(lo))

    def from_unit(self, u: float) -> float:
        lo, hi, kind = MATERIAL_BOUNDS[self.key]
        t = self._t(lo) + min(max(u, 0.0), 1.0) * (self._t(hi) - self._t(lo))
        return min(max(math.exp(t) if kind == "log" else t, lo), hi)


def with_values(materials: RadarMaterials, params, values) -> RadarMaterials:
    """A copy of the radar materials with the given (material, key) values (radarays BRDF only)."""
    velocity = materials.velocity.copy()
    table = [dict(p) for p in materials.params]
    for p, v in zip(params, values):
        i = materials.names.index(p.material)
        if p.key == "velocity":
            velocity[i] = v
        else:
            table[i][p.key] = float(v)
    return RadarMaterials(list(materials.names), velocity, list(materials.brdf), table, materials.transmittance.copy(),
                          dict(materials.functions))


def material_params(materials: RadarMaterials, names, keys=tuple(MATERIAL_BOUNDS)) -> list[MaterialParam]:
    """`keys` (default v, A, B, C) of each named material; ConfigError for unknown names or keys, or a BRDF
    other than radarays."""
    bad = [k for k in keys if k not in MATERIAL_BOUNDS]
    if bad:
        raise ConfigError(f"--material-keys {','.join(bad)}: unknown; allowed: {', '.join(MATERIAL_BOUNDS)}")
    out = []
    for name in names:
        if name not in materials.names:
            raise ConfigError(f"--fit-materials {name}: no such material in the world; materials: {', '.join(materials.names)}")
        kind = materials.brdf[materials.names.index(name)]
        if kind != "radarays":
            raise ConfigError(f"--fit-materials {name}: brdf {kind}; the material fit covers the RadaRays model (brdf radarays)")
        out += [MaterialParam(name, key) for key in keys]
    return out


def score(sim_images, real_images, ssim_weight: float = 0.0) -> float:
    """Mean MIS (+ ssim_weight x mean SSIM) over frames: higher is better."""
    s = [mutual_information(a, b) + (ssim_weight * ssim(a, b) if ssim_weight else 0.0) for a, b in zip(sim_images, real_images)]
    return float(np.mean(s))


@dataclass
class MaterialFit:
    materials: RadarMaterials
    values: dict[str, float]
    start_values: dict[str, float]
    dropped: dict[str, str]
    objective: list[float]  # -score per evaluation
    best: list[float]
    score_before: float
    score_after: float
    images_before: list
    images_after: list
    message: str


def fit_materials(render, real_images, materials: RadarMaterials, params: list[MaterialParam], seed: int = 0,
                  starts: int = 2, max_evaluations: int = 120, ssim_weight: float = 0.0, progress=None) -> MaterialFit:
    """render(materials) -> list of uint8 images, one per real image (the caller owns scene, poses, simulator)."""
    objective, best = [], []

    def evaluate(ps, u):
        images = render(with_values(materials, ps, [p.from_unit(v) for p, v in zip(ps, u)]))
        value = -score(images, real_images, ssim_weight)
        objective.append(value)
        best.append(min(value, best[-1]) if best else value)
        if progress is not None:
            progress(len(objective), value, best[-1])
        return value

    u0 = np.array([p.to_unit(_get(materials, p)) for p in params])
    f0 = evaluate(params, u0)
    dropped, kept = {}, []
    for i, p in enumerate(params):  # sensitivity: a tenth of the range each way
        du = u0.copy()
        du[i] = u0[i] + 0.1 if u0[i] + 0.1 <= 1 else u0[i] - 0.1
        if abs(evaluate(params, du) - f0) < NO_EFFECT:
            dropped[p.name] = "no effect on the score in these frames (not identifiable from these data)"
        else:
            kept.append(p)
    u_best = np.array([p.to_unit(_get(materials, p)) for p in kept])
    message = "nothing identifiable to fit"
    if kept:
        rng = np.random.default_rng([seed, 0x3A7])
        budget = max(max_evaluations - len(objective), 4 * len(kept))
        f_best = math.inf
        for s in range(max(starts, 1)):
            x0 = u_best if s == 0 else rng.random(len(kept))
            found = minimize(lambda u: evaluate(kept, u), x0, method="Nelder-Mead", bounds=[(0.0, 1.0)] * len(kept),
                             options=dict(maxfev=budget // max(starts, 1), xatol=1e-3, fatol=1e-5))
            if found.fun < f_best:
                f_best, u_fit, message = found.fun, found.x, str(found.message)
        u_best = u_fit
    values = {p.name: p.from_unit(u) for p, u in zip(kept, u_best)}
    fitted = with_values(materials, kept, [values[p.name] for p in kept])
    before, after = render(materials), render(fitted)
    return MaterialFit(fitted, values, {p.name: _get(materials, p) for p in params}, dropped, objective, best,
                       score(before, real_images, ssim_weight), score(after, real_images, ssim_weight), before, after, message)


def _get(materials: RadarMaterials, p: MaterialParam) -> float:
    i = materials.names.index(p.material)
    return float(materials.velocity[i]) if p.key == "velocity" else float(materials.params[i][p.key])
