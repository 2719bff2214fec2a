"""Snell refraction and the Fresnel energy split with wave velocities (Mock et al., RadaRays, RA-L 2025).

The paper (Mock et al., RadaRays, RA-L 2025): Snell with wave velocities, sin(theta_0)/sin(theta_2) = v1/v2;
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
import numpy as xm  # the formulas' vocabulary (radarays_ros/twin.py)

from ..twin import vec3


def row_dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise dot product of two (N, 3) arrays (faster than einsum for 3 columns)."""
    return a[:, 0] * b[:, 0] + a[:, 1] * b[:, 1] + a[:, 2] * b[:, 2]


def incidence_cosine(d: np.ndarray, n: np.ndarray) -> np.ndarray:
    """cos(theta_i) = -d.n, clipped to [0, 1] (n faces the ray)."""
    return incidence_cosine_of(row_dot(d, n))


def incidence_cosine_of(d_dot_n: float) -> float:
    """cos(theta_i) = -d.n of a ray d meeting a surface whose normal n faces it, clipped to [0, 1] (rounding of
    unit vectors). Written once: numpy runs it on the host, Warp compiles it for device frames (twin.py)."""
    return xm.clip(-d_dot_n, 0.0, 1.0)


def fresnel_coefficients(cos_i: np.ndarray, v1: np.ndarray, v2: np.ndarray, polarization: float):
    """(R (float64), refracts, eta, cos_t): reflectance and what refract() needs, per ray."""
    dtype = cos_i.dtype
    v1 = v1.astype(dtype, copy=False)
    v2 = v2.astype(dtype, copy=False)
    eta = velocity_ratio(v1, v2)
    k = refraction_cosine_squared(cos_i, eta)
    refracts = (v2 > 0) & (v1 > 0) & (k >= 0.0)
    cos_t = np.sqrt(np.maximum(k, 0.0))
    ok = refracts & fresnel_defined(cos_i, cos_t, v1, v2)
    with np.errstate(divide="ignore", invalid="ignore"):
        r_eff = fresnel_reflectance(cos_i, cos_t, v1, v2, polarization)
    return np.where(ok, r_eff, 1.0).astype(np.float64), refracts, eta, cos_t


def velocity_ratio(v1: float, v2: float) -> float:
    """eta = v2 / v1, Snell's ratio of the wave velocities behind and before the surface (v1 = 0: v2, no
    refraction follows). Written once: numpy runs it on the host, Warp compiles it for device frames
    (radarays_ros/twin.py). ASCII only in these lines."""
    return v2 / xm.where(v1 > 0.0, v1, xm.float32(1.0))


def refraction_cosine_squared(cos_i: float, eta: float) -> float:
    """cos^2(theta_t) = 1 - eta^2 (1 - cos^2(theta_i)) from Snell's law sin(theta_t) = eta sin(theta_i);
    negative beyond total internal reflection (then no wave is refracted). Written once (twin.py)."""
    return 1.0 - eta * eta * (1.0 - cos_i * cos_i)


def fresnel_defined(cos_i: float, cos_t: float, v1: float, v2: float) -> bool:
    """Both denominators of rs and rp positive (fresnel_reflectance is defined; else R = 1). Written once (twin.py)."""
    return xm.minimum(v2 * cos_i + v1 * cos_t, v1 * cos_i + v2 * cos_t) > 0.0


def fresnel_reflectance(cos_i: float, cos_t: float, v1: float, v2: float, polarization: float) -> float:
    """R = pol rs^2 + (1 - pol) rp^2 from the incidence and refraction cosines and the wave velocities, where a
    refracted wave exists and both denominators are positive (the callers check). Written once: numpy runs it
    on the host, Warp compiles its source for device frames (radarays_ros/twin.py). ASCII only in these lines."""
    a = v2 * cos_i
    b = v1 * cos_t
    c = v1 * cos_i
    e = v2 * cos_t
    rs = (a - b) / (a + b)
    rp = (c - e) / (c + e)
    return polarization * rs * rs + (1.0 - polarization) * rp * rp


def reflect(d: np.ndarray, n: np.ndarray, cos_i: np.ndarray) -> np.ndarray:
    """Mirror directions of (N, 3) rays d on normals n (reflection_direction per row)."""
    return reflection_direction(d, n, cos_i[:, None])


def refract(d: np.ndarray, n: np.ndarray, eta: np.ndarray, cos_i: np.ndarray, cos_t: np.ndarray) -> np.ndarray:
    """Snell directions of (N, 3) rays (refraction_direction per row; only meaningful where refraction exists)."""
    return refraction_direction(d, n, eta[:, None], cos_i[:, None], cos_t[:, None])


def reflection_direction(d: vec3, n: vec3, cos_i: float) -> vec3:
    """Mirror direction r = d + 2 cos(theta_i) n. Written once: numpy runs it on the host (reflect), Warp
    compiles it for device frames (radarays_ros/twin.py). ASCII only in these lines."""
    return d + (2.0 * cos_i) * n


def refraction_direction(d: vec3, n: vec3, eta: float, cos_i: float, cos_t: float) -> vec3:
    """Snell direction t = eta d + (eta cos_i - cos_t) n. Written once (radarays_ros/twin.py)."""
    return eta * d + (eta * cos_i - cos_t) * n


def fresnel_split(d: np.ndarray, n: np.ndarray, v1: np.ndarray, v2: np.ndarray, polarization: float):
    """(R, cos_i, reflection dir, refraction dir (0 where none), refracts) per ray.

    d, n: (N,3) unit incoming direction and normal facing the ray; v1, v2: (N,) velocities (m/ns)
    of the medium the wave is in and of the one behind the surface.
    """
    cos_i = incidence_cosine(d, n)
    r_eff, refracts, eta, cos_t = fresnel_coefficients(cos_i, v1, v2, polarization)
    t_dir = refract(d, n, eta, cos_i, cos_t)
    t_dir[~refracts] = 0.0
    return r_eff, cos_i, reflect(d, n, cos_i), t_dir, refracts
