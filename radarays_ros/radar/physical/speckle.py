"""Speckle: the field of distributed clutter as a circular complex Gaussian, correlated over azimuth.

A range cell holding many scatterers of random phase (two-way path 4 pi R / lambda plus roughness) has
a complex amplitude that is a sum of random phasors: circular complex Gaussian, so the amplitude is
Rayleigh and the intensity exponential with mean = the summed powers (Goodman, "Speckle Phenomena in
Optics", 2007, Sec. 2.2-2.3; sums of independent circular Gaussians stay circular Gaussian, so a cell's
field is drawn once with the variance of its summed expected power, whatever the ray count).
Neighbouring azimuths see overlapping scatterer sets; their fields correlate by the overlap of the
two-way field patterns, rho (antenna.field_correlation), modelled as a first-order autoregression
along azimuth: z_k = rho z_(k-1) + sqrt(1 - rho^2) n_k (unit variance, intensity correlation rho^2).
Clutter and thermal noise share one draw: a cell whose expected power is clutter V plus noise N gets
rho V / (V + N) - exactly the correlation of correlated clutter plus white noise between two cells of
equal V - so noise-only cells stay independent from azimuth to azimuth.
"""
from __future__ import annotations

import numpy as np


def unit_field(rng: np.random.Generator, shape: tuple[int, int], rho) -> np.ndarray:
    """(A, B) complex64 circular Gaussian field, E|z|^2 = 1, correlation rho between adjacent rows
    (a number, or an (A, B) array: the correlation of each cell with the one in the previous row)."""
    parts = rng.standard_normal(tuple(shape) + (2,), dtype=np.float32)
    parts *= np.float32(np.sqrt(0.5))
    field = parts.view(np.complex64)[..., 0]  # (re, im) pairs read as complex: no copy
    if np.ndim(rho) == 0 and rho <= 0:
        return field
    # row 0 as drawn (unit variance), later rows z_k = rho z_(k-1) + sqrt(1 - rho^2) n_k
    rho = np.broadcast_to(np.asarray(rho, np.float32), field.shape)
    scale = np.sqrt(np.maximum(1.0 - rho * rho, 0.0), dtype=np.float32)
    for k in range(1, len(field)):
        row = field[k]
        row *= scale[k]
        row += rho[k] * field[k - 1]
    return field
