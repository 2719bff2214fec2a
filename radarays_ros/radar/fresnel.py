"""Snell refraction and the Fresnel energy split with wave velocities (radar_model.md §1.4 step 5).

The paper (radar_model.md §0): Snell with wave velocities, sin(theta_0)/sin(theta_2) = v1/v2;
refractive indices are proportional to 1/v (RadaRays sets n1 := v2, n2 := v1). With the normal
facing the ray and c_i = cos(theta_i) = -d.n:

* reflection r = d + 2 c_i n;
* refraction only if v2 > 0 and below the total-internal-reflection limit (sin(theta_i) <= v1/v2):
  eta = v2/v1, c_t = sqrt(1 - eta^2 (1 - c_i^2)), t = eta d + (eta c_i - c_t) n;
* no refraction (v2 = 0: perfect reflector; or TIR): all energy is reflected, R = 1;
* rs = (v2 c_i - v1 c_t)/(v2 c_i + v1 c_t) = -sin(ti - tt)/sin(ti + tt),
  rp = (v1 c_i - v2 c_t)/(v1 c_i + v2 c_t) = tan(ti - tt)/tan(ti + tt) (RadaRays' angle forms,
  written with cosines: the same values without arccos/sin/tan, and at normal incidence both
  become (v2 - v1)/(v2 + v1), RadaRays' special case);
* R = pol rs^2 + (1 - pol) rp^2 (pol = weight of the s component).

Example: v2 = 0.05 against air (0.3) at 0 deg: R = ((0.05 - 0.3)/0.35)^2 = 0.51.
Works in the dtype of d and n (float32 in the simulator, float64 in tests).
"""
from __future__ import annotations

import numpy as np


def fresnel_split(d: np.ndarray, n: np.ndarray, v1: np.ndarray, v2: np.ndarray, polarization: float):
    """(R, cos_i, reflection dir, refraction dir (0 where none), refracts) per ray.

    d, n: (N,3) unit incoming direction and normal facing the ray; v1, v2: (N,) velocities (m/ns)
    of the medium the wave is in and of the one behind the surface.
    """
    dtype = d.dtype
    v1 = v1.astype(dtype, copy=False)
    v2 = v2.astype(dtype, copy=False)
    cos_i = np.einsum("ij,ij->i", d, n)
    np.negative(cos_i, out=cos_i)
    np.clip(cos_i, 0.0, 1.0, out=cos_i)
    r_dir = d + (2.0 * cos_i)[:, None] * n

    eta = v2 / np.where(v1 > 0, v1, 1.0).astype(dtype)
    k = 1.0 - eta * eta * (1.0 - cos_i * cos_i)
    refracts = (v2 > 0) & (v1 > 0) & (k >= 0.0)
    cos_t = np.sqrt(np.maximum(k, 0.0))
    t_dir = eta[:, None] * d + (eta * cos_i - cos_t)[:, None] * n
    t_dir[~refracts] = 0.0

    a, b = v2 * cos_i, v1 * cos_t
    c, e = v1 * cos_i, v2 * cos_t
    den_s, den_p = a + b, c + e
    ok = refracts & (den_s > 0) & (den_p > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        rs = (a - b) / den_s
        rp = (c - e) / den_p
    r_eff = polarization * rs * rs + (1.0 - polarization) * rp * rp
    r_eff = np.where(ok, r_eff, 1.0).astype(np.float64)
    return r_eff, cos_i, r_dir, t_dir, refracts
