"""Coherent (specular) reflectivity of a rough surface: the Rayleigh roughness factor.

    rho_coh(theta) = |Gamma|^2 exp(-(4 pi h cos(theta) / lambda)^2)

for rms height h and incidence theta from the normal (Ament 1953; Beckmann & Spizzichino, "The
Scattering of Electromagnetic Waves from Rough Surfaces", 1963, Ch. 5). |Gamma|^2 is the power
reflectivity at normal incidence, ((1 - sqrt(eps_r)) / (1 + sqrt(eps_r)))^2 for a dielectric, 1 for
metal (kept angle-independent here). At 77 GHz (lambda 3.9 mm) a 1 mm rough wall keeps e^-10 of its
mirror reflection at normal incidence, smooth metal and glass almost all; every road is a mirror at
grazing incidence.
"""
from __future__ import annotations

import numpy as np


def normal_reflectivity(eps_r: float) -> float:
    """|Gamma|^2 at normal incidence of a dielectric with relative permittivity eps_r (inf = metal)."""
    if not np.isfinite(eps_r):
        return 1.0
    n = np.sqrt(eps_r)
    return float(((1.0 - n) / (1.0 + n)) ** 2)


def coherent_reflectivity(gamma2: np.ndarray, rms_height: np.ndarray, cos_theta: np.ndarray, wavelength: float) -> np.ndarray:
    return gamma2 * np.exp(-(4.0 * np.pi * rms_height * cos_theta / wavelength) ** 2)
