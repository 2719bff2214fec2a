"""Surface texture (surface.texture_sigma, texture_length_m) from real frames co-registered with a simulated
frame of a known scene.

The simulator's texture (physics/texture.py) multiplies the albedo at world point p by exp(σ·n(p/ℓ) − σ²/2),
n a unit-variance value-noise field. A frame simulated without texture at the recording's pose gives each
pixel its untextured calibrated reflectivity q_s; where the real pixel q_r sees the same surface
(materials_fit.CO_REGISTERED, both diffuse 1-100 %), the log ratio, less its material's mean (the
material's level is materials_fit's),

    e = ln q_r − ln q_s − mean_material(ln q_r − ln q_s) = σ·n(p/ℓ) + ε,

with ε the whole-percent rounding of both channels (uniform: var ε = 1/(12 q_r²) + 1/(12 q_s²)). Hence

    σ² = mean(e²) − mean(var ε),      E[e_i e_j] = σ²·c(|p_i − p_j|/ℓ)   (pixels i ≠ j: ε independent)

with c(u) the autocorrelation of n at a distance u in lattice cells, averaged over directions; it is
tabulated once from texture.field itself (seeded points and directions, CORRELATION_POINTS of them), not
from a formula of our own. ℓ is the value whose c(d/ℓ) fits the binned products of neighbouring pixels
(1, 2 and 4 pixels apart along rows and columns, one material) best in least squares, found on a log grid
and refined. Identifiability: σ is fitted when σ² exceeds SIGMA_Z standard errors (else the frames show
no texture: 0, off); ℓ only where the pair distances reach both sides of it (the best ℓ inside the grid,
and the products spanning c from > 0.5 to < 0.2), else reported.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..physics.texture import field
from .materials_fit import CO_REGISTERED

CORRELATION_POINTS = 20000
U_GRID = np.linspace(0.0, 3.0, 61)        # lag in lattice cells (c = 0 from 2 cells on along an axis)
LENGTH_GRID = np.geomspace(0.005, 10.0, 200)  # m
LAGS = ((0, 1), (0, 2), (0, 4), (1, 0), (2, 0))  # (row, column) offsets of the pairs
SIGMA_Z = 4.0
MIN_PIXELS = 200


@lru_cache(maxsize=1)
def correlation_table() -> np.ndarray:
    """c(u) on U_GRID: the mean of n(p)·n(p + u·d) over seeded points p and isotropic unit directions d."""
    rng = np.random.default_rng(20240)
    p = rng.uniform(-1000.0, 1000.0, (CORRELATION_POINTS, 3))
    d = rng.normal(size=(CORRELATION_POINTS, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    base = field(p, 1.0, 7)
    return np.array([float(np.mean(base * field(p + u * d, 1.0, 7))) for u in U_GRID])


def correlation(u: np.ndarray) -> np.ndarray:
    """c(u), interpolated on the table (0 beyond it)."""
    return np.interp(np.asarray(u, float), U_GRID, correlation_table(), right=0.0)


@dataclass(frozen=True)
class TextureFit:
    sigma: float
    length_m: float
    sigma_error: float
    pixels: int
    sigma_identifiable: bool
    length_identifiable: bool
    verdict: str


def fit_texture(real_range, real_refl, sim_range, sim_refl, sim_xyz, material_ids, start_length: float = 0.3) -> TextureFit:
    """σ and ℓ of the texture (module docstring) from co-registered (H, W) arrays; sim_xyz (H, W, 3) are the
    simulated frame's points (any rigid frame: only distances are used)."""
    rr, rs = np.asarray(real_range, float), np.asarray(sim_range, float)
    qr, qs = np.asarray(real_refl, float), np.asarray(sim_refl, float)
    mat = np.asarray(material_ids)
    xyz = np.asarray(sim_xyz, float)
    with np.errstate(invalid="ignore", divide="ignore"):
        ok = (np.isfinite(rr) & np.isfinite(rs) & (np.abs(rr - rs) <= CO_REGISTERED * rs) & (qs >= 1) & (qs <= 100)
              & (qr >= 1) & (qr <= 100) & (mat >= 0))
        lr = np.where(ok, np.log(qr) - np.log(qs), np.nan)
    e = np.full(lr.shape, np.nan)
    for m in np.unique(mat[ok]):
        sel = ok & (mat == m)
        e[sel] = lr[sel] - lr[sel].mean()
    n = int(ok.sum())
    if n < MIN_PIXELS:
        return TextureFit(0.0, start_length, math.nan, n, False, False,
                          f"unidentifiable: {n} co-registered pixels (< {MIN_PIXELS})")
    quant = (1.0 / 12.0) * (1.0 / qr[ok] ** 2 + 1.0 / qs[ok] ** 2)
    sq = e[ok] ** 2 - quant
    var = float(sq.mean())
    var_error = float(sq.std() / math.sqrt(n))
    if not var > SIGMA_Z * var_error:
        return TextureFit(0.0, start_length, math.nan, n, True, False,
                          f"fitted: no texture above the reflectivity rounding ({n} pixels)")
    sigma = math.sqrt(var)
    sigma_error = 0.5 * var_error / sigma
    dist, prod = [], []
    h, w = e.shape
    for dr, dc in LAGS:
        a = (slice(0, h - dr), slice(0, w - dc))
        b = (slice(dr, h), slice(dc, w))
        both = np.isfinite(e[a]) & np.isfinite(e[b]) & (mat[a] == mat[b])
        dist.append(np.linalg.norm(xyz[a] - xyz[b], axis=-1)[both])
        prod.append((e[a] * e[b])[both])
    dist, prod = np.concatenate(dist), np.concatenate(prod)
    edges = np.quantile(dist, np.linspace(0, 1, 21))
    which = np.clip(np.searchsorted(edges, dist, side="right") - 1, 0, 19)
    count = np.bincount(which, minlength=20)
    keep = count > 10
    d_bin = (np.bincount(which, dist, 20)[keep] / count[keep])
    p_bin = (np.bincount(which, prod, 20)[keep] / count[keep]) / var

    def misfit(length):
        return float(np.sum(count[keep] * (p_bin - correlation(d_bin / length)) ** 2))

    costs = np.array([misfit(L) for L in LENGTH_GRID])
    i = int(np.argmin(costs))
    lo, hi = LENGTH_GRID[max(i - 1, 0)], LENGTH_GRID[min(i + 1, len(LENGTH_GRID) - 1)]
    fine = np.geomspace(lo, hi, 41)
    length = float(fine[int(np.argmin([misfit(L) for L in fine]))])
    c = correlation(d_bin / length)
    spans = c.max() > 0.5 and c.min() < 0.2
    inside = 0 < i < len(LENGTH_GRID) - 1
    if not (spans and inside):
        return TextureFit(sigma, start_length, sigma_error, n, True, False,
                          f"sigma fitted from {n} pixels; length unidentifiable: the neighbour distances "
                          f"({d_bin.min():.3g}-{d_bin.max():.3g} m) do not reach both sides of it")
    return TextureFit(sigma, length, sigma_error, n, True, True, f"fitted from {n} pixels")
