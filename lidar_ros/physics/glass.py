"""Glass hit near head-on: its specular return (Fresnel at normal incidence), and ghost points of the
part it reflects (Heiden et al. 2020 §IV, Fig. 1: transparent plastic is invisible except where the
beam meets it nearly perpendicularly; BlenSor §3.5 for reflected paths).

* Fresnel reflectance at normal incidence (air to glass of index n): R0 = ((n − 1)/(n + 1))², 4 % for n = 1.5.
* Specular return: the reflected beam leaves at 2θ from the way back (θ: incidence angle). Spread over a
  Gaussian lobe of angular width σ (beam divergence plus surface waviness), it carries R0 into 2πσ² sr,
  i.e. radiance R0/(2πσ²) per sr at its centre, which a sensor reads like a Lambertian target of
  reflectivity π·R0/(2πσ²):
      ρ_spec(θ) = R0 / (2σ²) · exp(−(2θ)² / (2σ²))
  enormous head-on (σ = 0.5°: ρ ≈ 260 × white) and nothing a few σ off: glass flashes where it is square to
  the beam and is invisible elsewhere.
* Ghost: the R0 part of the beam reflects off the glass like off a mirror, meets a surface, and returns the
  same way (R0 twice); the point appears behind the glass along the original ray at the total path length.
The through-return (transmittance t² both ways) is the material's `transparent` class (interaction.py).
"""
from __future__ import annotations

import numpy as np

from radarays_ros.tracing.backend import at_times

from .materials import GENERAL, RETROREFLECTIVE, TRANSPARENT
from .reflectivity import reflectivity


def fresnel_normal(index: float) -> float:
    """R0 = ((n − 1)/(n + 1))²."""
    return ((index - 1.0) / (index + 1.0)) ** 2


def specular_reflectivity(cos_incidence: np.ndarray, r0: float, lobe_rad: float) -> np.ndarray:
    """ρ_spec(θ) = R0/(2σ²)·exp(−(2θ)²/(2σ²)) (float32)."""
    theta = np.arccos(np.clip(np.asarray(cos_incidence, np.float64), 0.0, 1.0))
    return (r0 / (2 * lobe_rad**2) * np.exp(-(2 * theta) ** 2 / (2 * lobe_rad**2))).astype(np.float32)


class GlassReturns:
    """Per ray: the specular return of its first surface when that is glass (range, ρ; inf/0 = none) and
    the ghost return of the glass's reflection (range, ρ; inf/0 = none)."""

    def __init__(self, n: int):
        self.specular_range = np.full(n, np.inf, np.float32)
        self.specular_rho = np.zeros(n, np.float32)
        self.ghost_range = np.full(n, np.inf, np.float32)
        self.ghost_rho = np.zeros(n, np.float32)
        self.ghost_entity = np.full(n, -1, np.int32)  # the surface the reflection met
        self.ghost_material = np.full(n, -1, np.int32)


def glass_returns(backend, origins: np.ndarray, unit: np.ndarray, first, materials, tmax: float, index: float,
                  lobe_rad: float, ghosts: bool, times=None) -> GlassReturns:
    """The glass returns of N rays whose first hits are `first` (the backend's Hits of the first round);
    times: the rays' firing times after the scene's poses (moving entities in the ghosts), or None."""
    n = len(unit)
    out = GlassReturns(n)
    klass = materials.class_of(first.material)
    glass = np.flatnonzero(klass == TRANSPARENT)
    if not len(glass):
        return out
    r0 = fresnel_normal(index)
    dist = first.distance[glass]
    normal = np.asarray(first.normal[glass], np.float32)
    d = unit[glass]
    cos = np.abs(np.einsum("ij,ij->i", d, normal))
    out.specular_range[glass] = dist
    out.specular_rho[glass] = specular_reflectivity(cos, r0, lobe_rad)
    if ghosts:
        point = origins[glass] + d * dist[:, None]
        reflected = d - 2.0 * np.einsum("ij,ij->i", d, normal)[:, None] * normal
        start = point + normal * np.float32(1e-4)  # the normal faces the arriving ray: lift off towards it
        hits = backend.trace(start.astype(np.float32), reflected.astype(np.float32), 0.0, max(float(tmax) - float(dist.min()), 0.0),
                             **at_times(times, glass))
        k = materials.class_of(hits.material)
        total = dist + hits.distance
        seen = (hits.entity >= 0) & ((k == GENERAL) | (k == RETROREFLECTIVE)) & (total <= tmax)
        cos2 = np.abs(np.einsum("ij,ij->i", reflected, np.asarray(hits.normal, np.float32)))
        rho = reflectivity(materials, np.where(seen, hits.material, -1), np.where(seen, cos2, 0.0).astype(np.float32))
        out.ghost_range[glass[seen]] = total[seen]
        out.ghost_rho[glass[seen]] = rho[seen] * r0 * r0
        out.ghost_entity[glass[seen]] = hits.entity[seen]
        out.ghost_material[glass[seen]] = hits.material[seen]
    return out
