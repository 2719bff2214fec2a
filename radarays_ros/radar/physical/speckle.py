"""Speckle: the field of distributed clutter as a circular complex Gaussian, correlated over azimuth.

A range cell holding many scatterers of random phase (two-way path 4 pi R / lambda plus roughness) has
a complex amplitude that is a sum of random phasors: circular complex Gaussian, so the amplitude is
Rayleigh and the intensity exponential with mean = the summed powers (Goodman, "Speckle Phenomena in
Optics", 2007, Sec. 2.2-2.3; sums of independent circular Gaussians stay circular Gaussian, so a cell's
field is drawn once with the variance of its summed expected power, whatever the ray count).
A unit circular Gaussian is drawn in its polar form, |z|^2 ~ Exp(1) and arg z ~ U(0, 2 pi) independent
(Goodman Sec. 2.2: the same distribution as two N(0, 1/2) parts; numpy draws exponentials and uniforms
several times faster than float32 normals), kept as two float32 planes (re, im).
Neighbouring azimuths see overlapping scatterer sets; their fields correlate by the overlap of the
two-way field patterns, rho (antenna.field_correlation), modelled as a first-order autoregression
along azimuth: z_k = rho z_(k-1) + sqrt(1 - rho^2) n_k (unit variance, intensity correlation rho^2).
Thermal noise is drawn apart and independent (stage.py), so a cell of clutter V and noise N correlates
with its neighbour by rho V / (V + N), and noise-only cells stay independent from azimuth to azimuth.
"""
from __future__ import annotations

import math

import numpy as np


def unit_parts(rng: np.random.Generator, shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """(re, im) float32 planes of a white circular Gaussian field, E|z|^2 = 1."""
    magnitude = rng.standard_exponential(shape, dtype=np.float32)
    np.sqrt(magnitude, out=magnitude)
    phase = rng.random(shape, dtype=np.float32)
    phase *= np.float32(2.0 * math.pi)
    re = np.cos(phase)
    im = np.sin(phase, out=phase)
    re *= magnitude
    im *= magnitude
    return re, im


def correlate_rows(re: np.ndarray, im: np.ndarray, rho, previous=None) -> None:
    """In place: row k becomes rho_k z_(k-1) + sqrt(1 - rho_k^2) z_k. Row 0 stays as drawn (unit
    variance), or continues `previous` (the (re, im) rows before it) when given.
    rho: a number, or an array of the planes' shape (each cell's correlation with the previous row)."""
    first = 0 if previous is not None else 1
    if np.ndim(rho) == 0:  # one number: no per-cell arrays
        rho = np.float32(rho)
        scale = np.float32(math.sqrt(max(1.0 - float(rho) ** 2, 0.0)))
        row_rho = lambda k: rho  # noqa: E731
    else:
        rho = np.broadcast_to(np.asarray(rho, np.float32), re.shape)
        scale = np.sqrt(np.maximum(np.float32(1.0) - np.square(rho[first:]), np.float32(0.0)))
        row_rho = rho.__getitem__
    re[first:] *= scale
    im[first:] *= scale
    carried = np.empty(re.shape[1], np.float32)
    before = previous if previous is not None else (re[0], im[0])
    for k in range(first, len(re)):
        for plane, last in zip((re, im), before):
            plane[k] += np.multiply(row_rho(k), last, out=carried)
        before = re[k], im[k]


def unit_field(rng: np.random.Generator, shape: tuple[int, int], rho) -> np.ndarray:
    """(A, B) complex64 circular Gaussian field, E|z|^2 = 1, correlation rho between adjacent rows
    (a number, or an (A, B) array: the correlation of each cell with the one in the previous row)."""
    re, im = unit_parts(rng, shape)
    if not (np.ndim(rho) == 0 and rho <= 0):
        correlate_rows(re, im, rho)
    field = np.empty(shape, np.complex64)
    field.real, field.imag = re, im
    return field
