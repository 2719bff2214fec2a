"""Coherent glints: the radar cross-section of an aperture that sends the wave straight back.

    sigma = 4 pi A^2 / lambda^2

for an effective (projected) aperture A: a flat plate at normal incidence, a trihedral corner
(A = a^2 / sqrt(3) for a triangular one with edge a: sigma = 4 pi a^4 / (3 lambda^2); square:
A = sqrt(3) a^2, sigma = 12 pi a^4 / lambda^2), a dihedral in its plane (Knott, Shaeffer & Tuley,
"Radar Cross Section", 2nd ed., Table 7.1).

Here every ray tube whose mirror path (one or more mirror bounces) leaves back towards the sensor
carries the complex amplitude sqrt(4 pi) / lambda * a_i * sqrt(rho w) * exp(-i 2 pi path / lambda)
(a_i = projected tube area, rho = product of the coherent reflectivities, w = lobe weight of the
angle between the mirror direction and the way back). Summed coherently per range cell, tubes of
equal path (a corner's rays all have the same path) add in amplitude and give 4 pi A^2 / lambda^2:
the strength the geometry says, independent of how many rays hit the corner.
"""
from __future__ import annotations

import numpy as np


def lobe_weight(error_rad: np.ndarray, tolerance_rad: float) -> np.ndarray:
    """w = exp(-(error / tolerance)^2): the glint lobe around the exact way back."""
    return np.exp(-(np.asarray(error_rad) / tolerance_rad) ** 2)


def glint_amplitude(tube_area: np.ndarray, rho: np.ndarray, weight: np.ndarray, wavelength: float) -> np.ndarray:
    """sqrt(sigma) contribution (m) of each tube: sqrt(4 pi) / lambda * a_i * sqrt(rho w)."""
    return np.sqrt(4.0 * np.pi) / wavelength * tube_area * np.sqrt(rho * weight)
