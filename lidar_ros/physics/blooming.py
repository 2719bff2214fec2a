"""Blooming: halo returns beside a very bright (retroreflective) return.

A retroreflector returns so much light that stray light inside the receiver (lens flare, crosstalk between
neighbouring detector channels) reaches the pixels beside it, which then report a return at the
retroreflector's range: real frames show a halo of points around road signs, wider than the sign
(saturation and blooming: halo returns around retroreflectors). Model: a return of
reflectivity ρ ≥ threshold leaks into its neighbours in the same row up to `width` columns away, each
seeing an apparent return at the same range with reflectivity

    ρ_halo(k) = ρ · leak^k      (k = 1 … width columns away; leak = per-column stray-light fraction)

which replaces the neighbour's own echo where it is stronger (ρ/r²); the detection model then decides, so
a faint halo around a far sign vanishes and a near sign blooms widely.
"""
from __future__ import annotations

import numpy as np


def bloom(ranges: np.ndarray, rho: np.ndarray, cols: int, threshold: float, width: int, leak: float, first: int = 0):
    """(ranges, rho, halo mask) of beams laid out row by row (`cols` per row) after blooming; new arrays.

    Beams are flat (N,) in pixel order starting at pixel `first`; a halo never crosses into the next row."""
    r = np.asarray(ranges, np.float32).copy()
    p = np.asarray(rho, np.float32).copy()
    halo = np.zeros(len(r), bool)
    bright = np.flatnonzero(np.isfinite(ranges) & (np.asarray(rho) >= threshold))
    if not len(bright) or width <= 0:
        return r, p, halo
    strength = np.where(np.isfinite(r), p / np.maximum(np.where(np.isfinite(r), r, 1.0), 0.1) ** 2, 0.0)
    for k in range(1, width + 1):
        for side in (-k, k):
            to = bright + side
            ok = (to >= 0) & (to < len(r))
            src, to = bright[ok], to[ok]
            ok = (to + first) // cols == (src + first) // cols  # same row
            src, to = src[ok], to[ok]
            value = rho[src] * np.float32(leak**k)
            wins = value / np.maximum(ranges[src], 0.1) ** 2 > strength[to]
            src, to = src[wins], to[wins]
            r[to], p[to] = ranges[src], value[wins]
            strength[to] = p[to] / np.maximum(r[to], 0.1) ** 2
            halo[to] = True
    return r, p, halo
