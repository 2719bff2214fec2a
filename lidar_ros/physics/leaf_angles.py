"""The leaf a lidar ray meets in a crown: its incidence cosine and normal (spherical leaf-angle distribution).

The leaves a ray of direction Ω meets are not a random sample of the crown's leaves: each is met in proportion
to its area projected on the ray, |Ω·Ω_L|. So the normal Ω_L of the leaf met has the density g(Ω_L)·|Ω·Ω_L|/G(Ω),
the integrand of Ross's G-function (Ross, "The Radiation Regime and Architecture of Plant Stands", 1981,
ch. 2). For the spherical distribution (g even over the sphere) the cosine μ = |Ω·Ω_L| of a random leaf is
uniform on [0, 1], and that of the leaf met has the density 2μ:

    μ = √U,   E[μ] = 2/3;   the leaf's azimuth about the ray φ = 2πV   (U, V uniform on [0, 1))

A leaf is a Lambertian reflector (reflectivity.py: ρ(θ) = ρ_L·μ) of the crown material's near-infrared leaf
reflectance ρ_L: green leaves reflect 0.4-0.5 on the near-infrared plateau (750-1300 nm, so at 865 nm and
905 nm alike) and transmit about as much (LOPEX93, Hosgood et al., EUR 16095 EN, 1995; PROSPECT, Jacquemoud &
Baret, Remote Sens. Environ. 34:75-91, 1990). The part a leaf transmits leaves the beam diffused: it is not
followed (single scattering).
"""
from __future__ import annotations

import numpy as np

from radarays_ros.compiled import kernel


def leaf_cosines(u: np.ndarray) -> np.ndarray:
    """(n,) float32 μ = √U: the incidence cosines of the leaves n rays meet, of uniforms u on [0, 1)."""
    return np.sqrt(np.asarray(u, np.float64)).astype(np.float32)


def leaf_normals(d: np.ndarray, mu: np.ndarray, v: np.ndarray) -> np.ndarray:
    """(n, 3) float32 unit normals of the leaves met, facing the rays: n = −μ·d + √(1 − μ²)(cos φ e₁ + sin φ e₂)
    with φ = 2πV (v: uniforms on [0, 1)) and e₁, e₂ ⟂ d the orthonormal basis of Duff et al., "Building an
    Orthonormal Basis, Revisited", JCGT 6(1), 2017 (branch-free, exact for every unit d).

    In float64, cos φ and sin φ by numpy (its vectorised libm, whose last bits a compiled loop's libm need not
    share), the rest in one compiled pass with numpy's operations in numpy's order (the same bits as numpy
    throughout: ~20 numpy calls on a frame's few thousand leaves took ~0.35 ms of a realistic OS1-128 frame)."""
    phi = 2.0 * np.pi * np.asarray(v, np.float64)
    out = np.empty((len(phi), 3), np.float32)
    _leaf_normals_kernel(np.asarray(d), np.asarray(mu), np.cos(phi), np.sin(phi), out)
    return out


@kernel
def _leaf_normals_kernel(d, mu, cos_phi, sin_phi, out):
    for i in range(out.shape[0]):
        x, y, z = np.float64(d[i, 0]), np.float64(d[i, 1]), np.float64(d[i, 2])
        m = np.float64(mu[i])
        sign = 1.0 if z >= 0.0 else -1.0
        a = -1.0 / (sign + z)
        b = x * y * a
        e1 = (1.0 + sign * x * x * a, sign * b, -sign * x)
        e2 = (b, sign + y * y * a, -y)
        side = np.sqrt(max(1.0 - m * m, 0.0))
        c, s = cos_phi[i], sin_phi[i]
        out[i, 0] = np.float32(-m * x + side * (c * e1[0] + s * e2[0]))
        out[i, 1] = np.float32(-m * y + side * (c * e1[1] + s * e2[1]))
        out[i, 2] = np.float32(-m * z + side * (c * e1[2] + s * e2[2]))
