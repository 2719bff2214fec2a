"""Beam sampling: directions of the Ns rays of one azimuth, densities D1-D4.

The paper's beam densities (D3: r = N(0,1)·(b/2)/(√2·erf⁻¹(P)), Mock et al., RadaRays, RA-L 2025)
as coded in RadaRays' RadarCPU. A sample is an
angular offset from boresight, (alpha, beta) = u (cos phi, sin phi) * half-width, phi ~ U[-pi, pi),
with the radial part u = r/radius:

* D1: u = U(0,1)                       uniform in radius (denser at the centre)
* D2: u = sqrt(U(0,1))                 uniform over the disc
* D3: u = N(0,1) / z, z = sqrt(2) erfinv(p)   (signed; P(|u| < 1) = p_in_cone; the paper's default)
* D4: u = sqrt(|N(0,1)| / z)           P(u < 1) = p_in_cone

RadaRays evaluates erfinv with a single-precision polynomial; we use scipy's double-precision erfinv
(differences ~1e-7 relative). An elliptic beam stretches alpha (pitch, vertical) and beta (yaw,
horizontal) by their own half-widths (the paper mentions this; the released code has only a circle).
"""
from __future__ import annotations

import numpy as np
from scipy.special import erfinv


def radial_offsets(rng: np.random.Generator, n: int, distribution: str, p_in_cone: float) -> np.ndarray:
    """Radial offset u in units of the beam half-width (may be negative for D3)."""
    z = np.sqrt(2.0) * erfinv(p_in_cone)
    if distribution == "D1":
        return rng.uniform(0.0, 1.0, n)
    if distribution == "D2":
        return np.sqrt(rng.uniform(0.0, 1.0, n))
    if distribution == "D3":
        return rng.standard_normal(n) / z
    if distribution == "D4":
        return np.sqrt(np.abs(rng.standard_normal(n)) / z)
    raise ValueError(f"unknown beam distribution {distribution!r}; allowed D1, D2, D3, D4")


def sample_cone(rng: np.random.Generator, n: int, distribution: str, p_in_cone: float,
                width_h: float, width_v: float) -> tuple[np.ndarray, np.ndarray]:
    """(alpha, beta): pitch and yaw offsets in radians of n samples; widths are full widths in radians."""
    phi = rng.uniform(-np.pi, np.pi, n)
    u = radial_offsets(rng, n, distribution, p_in_cone)
    alpha = u * np.cos(phi) * (width_v / 2.0)
    beta = u * np.sin(phi) * (width_h / 2.0)
    return alpha, beta


def cone_directions(alpha: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """Unit directions in the azimuth column frame (+x boresight): Rz(beta) Ry(alpha) (1,0,0)."""
    ca = np.cos(alpha)
    return np.stack([ca * np.cos(beta), ca * np.sin(beta), -np.sin(alpha)], axis=1)


def inside_beam(alpha: np.ndarray, beta: np.ndarray, width_h: float, width_v: float) -> np.ndarray:
    """True for samples within the (elliptic) beam outline."""
    return (2.0 * beta / width_h) ** 2 + (2.0 * alpha / width_v) ** 2 < 1.0


def gain_weights(alpha: np.ndarray, beta: np.ndarray, width_h: float, width_v: float) -> np.ndarray:
    """Two-way Gaussian antenna gain of each sample (half power at the half-width), mean 1.

    Not in RadaRays, where the beam shape comes from the sample density only. The mean is normalised
    to one so that switching it on keeps the image scale.
    """
    one_way = np.exp(-np.log(2.0) * ((2.0 * beta / width_h) ** 2 + (2.0 * alpha / width_v) ** 2))
    g = one_way ** 2
    return g / g.mean()
