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


def leaf_cosines(u: np.ndarray) -> np.ndarray:
    """(n,) float32 μ = √U: the incidence cosines of the leaves n rays meet, of uniforms u on [0, 1)."""
    return np.sqrt(np.asarray(u, np.float64)).astype(np.float32)


def leaf_normals(d: np.ndarray, mu: np.ndarray, v: np.ndarray) -> np.ndarray:
    """(n, 3) float32 unit normals of the leaves met, facing the rays: n = −μ·d + √(1 − μ²)(cos φ e₁ + sin φ e₂)
    with φ = 2πV (v: uniforms on [0, 1)) and e₁, e₂ ⟂ d the orthonormal basis of Duff et al., "Building an
    Orthonormal Basis, Revisited", JCGT 6(1), 2017 (branch-free, exact for every unit d)."""
    d = np.asarray(d, np.float64)
    mu = np.asarray(mu, np.float64)
    phi = 2.0 * np.pi * np.asarray(v, np.float64)
    x, y, z = d[:, 0], d[:, 1], d[:, 2]
    sign = np.where(z >= 0.0, 1.0, -1.0)
    a = -1.0 / (sign + z)
    b = x * y * a
    e1 = np.stack([1.0 + sign * x * x * a, sign * b, -sign * x], axis=1)
    e2 = np.stack([b, sign + y * y * a, -y], axis=1)
    side = np.sqrt(np.maximum(1.0 - mu * mu, 0.0))
    n = -mu[:, None] * d + side[:, None] * (np.cos(phi)[:, None] * e1 + np.sin(phi)[:, None] * e2)
    return n.astype(np.float32)
