"""Stratified importance sampling of the beam, redrawn for every azimuth and frame.

Per axis (azimuth offset beta, elevation e) the samples follow the density
    p(x) = m g2(x) / int g2 + (1 - m) / (x_max - x_min),   m = 0.7,  g2 = two-way pattern of that axis
(importance sampling: most rays where the pattern is strong, some in the sidelobes), stratified: sample
j is the inverse CDF of (j + U_j) / n with a fresh U_j per azimuth and frame, so no fixed ranges recur
(no ground rings). Each sample carries its angular cell d = the width of its stratum (radians; about
1 / (n p(x))), so sums over the samples estimate integrals over angle whatever the ray count:
sum f(x_j) d_j -> int f dx (a jittered midpoint rule; the pattern is applied once, as a weight, by the
caller; the sampling density is divided out here). Strata tile the interval, so their footprints tile
a surface.
"""
from __future__ import annotations

import numpy as np

IMPORTANCE = 0.7
GRID = 4097


def axis_density(x: np.ndarray, g2: np.ndarray) -> np.ndarray:
    """The sampling density on a grid x (ascending) for the two-way pattern g2 on that grid."""
    span = x[-1] - x[0]
    total = np.trapezoid(g2, x) if hasattr(np, "trapezoid") else np.trapz(g2, x)
    return IMPORTANCE * g2 / total + (1.0 - IMPORTANCE) / span


def stratified(rng: np.random.Generator, rows: int, n: int, lo: float, hi: float, pattern):
    """(x, d, x_lo, x_hi): (rows, n) sample angles in [lo, hi], their angular cells (stratum widths) and the
    bounds of their strata (which tile [lo, hi]), for the one-way pattern callable `pattern(x)`; one
    fresh stratified draw per row."""
    grid = np.linspace(lo, hi, GRID)
    density = axis_density(grid, pattern(grid) ** 2)
    cdf = np.concatenate([[0.0], np.cumsum(0.5 * (density[1:] + density[:-1]) * np.diff(grid))])
    cdf /= cdf[-1]
    u = (np.arange(n)[None, :] + rng.uniform(0.0, 1.0, (rows, n))) / n
    x = np.interp(u, cdf, grid)
    bounds = np.interp(np.arange(n + 1) / n, cdf, grid)
    lo_b, hi_b = np.broadcast_to(bounds[:-1], x.shape), np.broadcast_to(bounds[1:], x.shape)
    return x, hi_b - lo_b, lo_b, hi_b
