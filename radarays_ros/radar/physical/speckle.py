"""Speckle: the field of distributed clutter as a circular complex Gaussian, correlated over azimuth.

A range cell holding many scatterers of random phase (two-way path 4 pi R / lambda plus roughness) has
a complex amplitude that is a sum of random phasors: circular complex Gaussian, so the amplitude is
Rayleigh and the intensity exponential with mean = the summed powers (Goodman, "Speckle Phenomena in
Optics", 2007, Sec. 2.2-2.3; sums of independent circular Gaussians stay circular Gaussian, so a cell's
field is drawn once with the variance of its summed expected power, whatever the ray count).
Neighbouring azimuths see overlapping scatterer sets; their fields correlate by the overlap of the
two-way field patterns, rho (antenna.field_correlation), modelled as a first-order autoregression
along azimuth: z_k = rho z_(k-1) + sqrt(1 - rho^2) n_k (unit variance, intensity correlation rho^2).
"""
from __future__ import annotations

import numpy as np
from scipy.signal import lfilter


def unit_field(rng: np.random.Generator, shape: tuple[int, int], rho: float) -> np.ndarray:
    """(A, B) complex64 circular Gaussian field, E|z|^2 = 1, correlation rho between adjacent rows."""
    z = rng.standard_normal((2,) + tuple(shape), dtype=np.float32)
    field = (z[0] + 1j * z[1]).astype(np.complex64)
    field *= np.float32(np.sqrt(0.5))
    if rho > 0:  # row 0 as drawn (unit variance), later rows scaled: a stationary AR(1)
        field[1:] *= np.float32(np.sqrt(1.0 - rho * rho))
        field = lfilter([1.0], [1.0, -rho], field, axis=0).astype(np.complex64)
    return field
