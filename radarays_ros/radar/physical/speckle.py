"""Speckle: the field of distributed clutter as a circular complex Gaussian, correlated over azimuth.

A range cell holding many scatterers of random phase (two-way path 4 pi R / lambda plus roughness) has
a complex amplitude that is a sum of random phasors: circular complex Gaussian, so the amplitude is
Rayleigh and the intensity exponential with mean = the summed powers (Goodman, "Speckle Phenomena in
Optics", 2007, Sec. 2.2-2.3; sums of independent circular Gaussians stay circular Gaussian, so a cell's
field is drawn once with the variance of its summed expected power, whatever the ray count).
A unit circular Gaussian is drawn in its polar form, |z|^2 ~ Exp(1) and arg z ~ U(0, 2 pi) independent
(Goodman Sec. 2.2: the same distribution as two N(0, 1/2) parts): the Box-Muller pair of one counter-based
64-bit word per cell, times sqrt(1/2) (radarays_ros/counter_random.py: |z|^2 = -ln u1 with u1 uniform on the
24-bit grid, arg z = 2 pi u2; one compiled pass, 2-2.5x faster than numpy's exponential, uniform, sqrt, cos and
sin passes), kept as two float32 planes (re, im).
Neighbouring azimuths see overlapping scatterer sets; their fields correlate by the overlap of the
two-way field patterns, rho(m) for beams m steps apart (antenna.field_correlation). The frame's clutter
field follows a second-order autoregression along azimuth whose correlations at one and two steps are
the beam overlap's (Yule-Walker; Box & Jenkins, "Time Series Analysis", Sec. 3.2.4):
    z_k = phi1 z_(k-1) + phi2 z_(k-2) + s n_k,
    phi1 = rho1 (1 - rho2) / (1 - rho1^2),  phi2 = (rho2 - rho1^2) / (1 - rho1^2),  s^2 = 1 - phi1 rho1 - phi2 rho2,
started stationary (z_1 = rho1 z_0 + sqrt(1 - rho1^2) n_1); the intensity correlation at m steps is
rho_m^2 (a first-order one, rho1^m, would read a sinc beam at half its width apart 0.21 at two steps
instead of the overlap's 0.047). correlate_rows is the first-order form (one number or one per cell).
Thermal noise is drawn apart and independent (stage.py), so a cell of clutter V and noise N correlates
with its neighbour by rho V / (V + N), and noise-only cells stay independent from azimuth to azimuth.
"""
from __future__ import annotations

import math

import numpy as np

from ...counter_random import circular_gaussians
from . import stage_loops


def unit_parts(rng: np.random.Generator, shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """(re, im) float32 planes of a white circular Gaussian field, E|z|^2 = 1: counter-based draws keyed by one
    64-bit draw of `rng` (counter_random.circular_gaussians), so the same rng state gives the same bytes."""
    return circular_gaussians(rng.integers(0, 2**64, dtype=np.uint64, endpoint=False), shape)


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


def beam_autoregression(rho1: float, rho2: float) -> tuple[float, float, float]:
    """(phi1, phi2, s) of the second-order autoregression with field correlations rho1, rho2 at one and
    two steps (Yule-Walker). A pair no unit-variance AR(2) can hold (|rho1| ~ 1, or rho2 outside the
    positive-definite range 2 rho1^2 - 1 < rho2 < 1) falls back to the first-order form (rho1, 0, ..)."""
    rho1, rho2 = float(rho1), float(rho2)
    d = 1.0 - rho1 * rho1
    if d > 1e-6 and 2.0 * rho1 * rho1 - 1.0 < rho2 < 1.0:
        phi1 = rho1 * (1.0 - rho2) / d
        phi2 = (rho2 - rho1 * rho1) / d
        s2 = 1.0 - phi1 * rho1 - phi2 * rho2
        if s2 > 1e-9:
            return phi1, phi2, math.sqrt(s2)
    return rho1, 0.0, math.sqrt(max(d, 0.0))


def correlate_rows_beam(re: np.ndarray, im: np.ndarray, rhos: tuple[float, float], previous=None) -> None:
    """In place: the rows (azimuths) become the second-order autoregression of beam_autoregression(*rhos),
    unit variance. previous: the (re, im) rows before the first, oldest first (a list of 0, 1 or 2 pairs,
    each as wide as the planes); without two of them the first rows start the process stationary."""
    phi1, phi2, s = beam_autoregression(*rhos)
    rho1 = float(rhos[0])
    before = list(previous or [])[-2:]
    k = 0
    carried = np.empty(re.shape[1], np.float32)
    while k < len(re) and len(before) < 2:  # start: z_0 as drawn, z_1 = rho1 z_0 + sqrt(1 - rho1^2) n_1
        if before:
            scale = np.float32(math.sqrt(max(1.0 - rho1 * rho1, 0.0)))
            for plane, last in zip((re, im), before[-1]):
                plane[k] *= scale
                plane[k] += np.multiply(np.float32(rho1), last, out=carried)
        before.append((re[k], im[k]))
        k += 1
    if k >= len(re):
        return
    # z_k = s n_k + phi1 z_(k-1) + phi2 z_(k-2), row after row, float32 (stage_loops.autoregression: one pass)
    (re2, im2), (re1, im1) = before
    for plane, last2, last1 in ((re, re2, re1), (im, im2, im1)):
        stage_loops.autoregression(plane, k, np.ascontiguousarray(last2, np.float32), np.ascontiguousarray(last1, np.float32),
                                   np.float32(s), np.float32(phi1), np.float32(phi2))
