"""Snell refraction and the Fresnel energy split with wave velocities (radar_model.md §1.4 step 5).

Paper Sec. III-B: sin(theta_0)/sin(theta_2) = v1/v2; refractive indices are proportional to 1/v,
so the code treats n1 := v2 and n2 := v1. Conventions kept from RadaRays' `fresnel`:

* theta_i = acos(-d.n) with the normal facing the ray; reflection r = d + 2 cos(theta_i) n.
* refraction exists only if v2 > 0 and v1 > 0 and theta_i is below the total-internal-reflection
  limit asin(v1/v2) (when v1 < v2); eta = v2/v1, t = eta d + (eta c - sqrt(1 - eta^2 (1 - c^2))) n.
* no refraction (v2 = 0 perfect reflector, or TIR): all energy is reflected (R = 1).
* near normal incidence (theta_i + theta_t < 1e-4): rs = rp = (v2 - v1)/(v2 + v1);
  otherwise rs = -sin(ti - tt)/sin(ti + tt), rp = tan(ti - tt)/tan(ti + tt).
* R = pol * rs^2 + (1 - pol) * rp^2 (pol = weight of the s component).

Example: v2 = 0.05 against air (0.3) at 0 deg: R = ((0.05 - 0.3)/0.35)^2 = 0.51.
"""
from __future__ import annotations

import numpy as np


def reflect(d: np.ndarray, n: np.ndarray, cos_i: np.ndarray) -> np.ndarray:
    """Mirror direction of unit d on a normal n facing the ray (cos_i = -d.n)."""
    return d + 2.0 * cos_i[:, None] * n


def fresnel_split(d: np.ndarray, n: np.ndarray, v1: np.ndarray, v2: np.ndarray, polarization: float):
    """Reflectance R, reflection direction, refraction direction and whether refraction exists.

    d, n: (N,3) unit incoming direction and normal facing the ray; v1, v2: (N,) velocities (m/ns)
    of the medium the wave is in and of the one behind the surface.
    """
    cos_i = np.clip(-np.einsum("ij,ij->i", d, n), 0.0, 1.0)
    theta_i = np.arccos(cos_i)
    r_dir = reflect(d, n, cos_i)

    safe_v1 = np.where(v1 > 0, v1, 1.0)
    eta = v2 / safe_v1
    k = 1.0 - eta * eta * (1.0 - cos_i * cos_i)  # cos^2 theta_t; < 0 means total internal reflection
    refracts = (v2 > 0) & (v1 > 0) & (k >= 0.0)
    cos_t = np.sqrt(np.where(refracts, k, 0.0))
    t_dir = eta[:, None] * d + (eta * cos_i - cos_t)[:, None] * n
    t_dir = np.where(refracts[:, None], t_dir, 0.0)

    theta_t = np.arccos(np.clip(cos_t, 0.0, 1.0))
    s = theta_i + theta_t
    dif = theta_i - theta_t
    with np.errstate(divide="ignore", invalid="ignore"):
        normal = (v2 - v1) / np.where(v2 + v1 > 0, v2 + v1, 1.0)
        rs = np.where(s < 1e-4, normal, -np.sin(dif) / np.sin(s))
        rp = np.where(s < 1e-4, normal, np.tan(dif) / np.tan(s))
    r_eff = polarization * rs * rs + (1.0 - polarization) * rp * rp
    r_eff = np.where(refracts & (s <= np.pi - 1e-4), r_eff, 1.0)
    r_eff = np.clip(np.nan_to_num(r_eff, nan=1.0), 0.0, 1.0)
    return r_eff, theta_i, r_dir, t_dir, refracts
