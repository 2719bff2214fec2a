"""Poisson counts of many pixels, each with its own mean λ: exact below λ = 10, a corrected normal above.

Photon arrivals are a Poisson process, so a pixel's count is Poisson(λ) (photons.py: signal; ambient.py:
near_ir). Why not numpy's `Generator.poisson`: every pixel has another λ, so its sampler sets up anew for
each (PTRS: a square root, a logarithm and three divisions per pixel) and took 41-57 ns per pixel here
(two uniforms each; measured 2026-11-28 on this project's 2-core host): 13 ms of an OS1-128 × 1024
realistic frame (signal and near_ir of 131072 pixels), the largest part of the frame after the tracing.
This draws one number per pixel from numpy's bulk generators and shapes it in one compiled loop:

* λ < 10: inversion of the Poisson CDF with one uniform u (exact: the smallest k with F(k) ≥ u, F summed
  from p(0) = e^-λ by p(k) = p(k-1)·λ/k; Devroye 1986, "Non-Uniform Random Variate Generation", ch. X.3).
* λ ≥ 10: the Cornish-Fisher expansion of the quantile (Cornish & Fisher 1937, Rev. Inst. Int. Stat. 5:307)
  with the Poisson cumulants, all λ (skewness λ^-1/2, excess kurtosis 1/λ), at a standard normal z, rounded
  to the nearest count:

      k = floor(λ + √(λ − 1/12)·z + (z² − 1)/6 + (z − z³)/(72√λ) + 1/2),   at least 0.

  The +1/2 is the continuity correction (count k covers [k − 1/2, k + 1/2)); √(λ − 1/12) instead of √λ
  takes back the variance 1/12 that rounding adds (Sheppard 1898), so mean and variance are λ.
  Accuracy (P(k ≤ n) = Φ(z_n) with x(z_n) = n + 1/2, against exact Poisson): the largest CDF difference
  (Kolmogorov-Smirnov distance) is 2.6e-4 at λ = 10 (the switch-over), 4.9e-5 at 30, 7.9e-6 at 100,
  2.5e-7 at 1000 (falling as λ^-3/2); mean/λ within 1e-6 and variance/λ within 1e-4 of 1 from λ = 10 on
  (the plain rounded normal N(λ, λ): 2.1e-2 at λ = 10, 6.6e-3 at 100). A frame of 131072 pixels cannot tell
  2.6e-4 from exact: a K-S test needs ~10⁷ draws at one λ to see it.
  (test_lidar_poisson_counts.py checks these figures, and mean, variance, χ² and K-S of draws against scipy's Poisson.)

Draws, for the same seed the same counts on any thread count: first `rng.random` for the pixels with
λ < 10 in pixel order, then the float32 Box-Muller normals of noise.standard_normal for the others in pixel
order (one call each; |z| ≤ 5.8 there, so the 6.6e-9 of normal mass beyond is missing: far below 2.6e-4).
Measured (65536 frame-like means, 5 % at 3, the rest exponential around 150; process CPU, best of 20):
numpy's Generator.poisson 3.3 ms, this 1.5 ms.
"""
from __future__ import annotations

import numpy as np

from radarays_ros.compiled import inlined, kernel

from .noise import standard_normal

SWITCH = 10.0  # λ from which the Cornish-Fisher count is drawn (numpy's own switch from inversion to PTRS)
MEAN_MAX = 1e15  # means above this are refused (a count must fit int64; photon means are far below)


def poisson_counts(lam: np.ndarray, rng: np.random.Generator, ceiling: int = 65535) -> np.ndarray:
    """(N,) uint16 Poisson(λ) counts of the means `lam` (float64, finite, ≥ 0), capped at `ceiling`
    (≤ 65535: a detector's saturation, the uint16 range)."""
    lam = np.ascontiguousarray(lam, np.float64).reshape(-1)
    if not 0 <= ceiling <= 65535:
        raise ValueError(f"ceiling: {ceiling!r}; allowed: 0..65535")
    exp_minus_lam = np.empty(len(lam), np.float64)  # -λ of the means below SWITCH, in pixel order, then e^-λ
    small = _count_small(lam, SWITCH, MEAN_MAX, exp_minus_lam)
    if small < 0:
        bad = lam[~((lam >= 0) & (lam <= MEAN_MAX))][0]
        raise ValueError(f"Poisson mean: {bad!r}; allowed: finite, 0..{MEAN_MAX:g}")
    uniforms = rng.random(small)
    normals = standard_normal(rng, len(lam) - small)
    out = np.empty(len(lam), np.uint16)
    np.exp(exp_minus_lam[:small], out=exp_minus_lam[:small])  # e^-λ at once (SIMD), only where λ < 10 reads it
    _counts_kernel(lam, exp_minus_lam, uniforms, normals, SWITCH, np.int64(ceiling), out)
    return out


@kernel
def _count_small(lam, switch, mean_max, negated):
    """How many means are below `switch`, their negatives written to negated[:count] in pixel order; -1 if any
    mean is NaN, negative or above mean_max (no early exit: a loop without branches runs several at once)."""
    small = 0
    bad = 0
    for i in range(lam.shape[0]):
        bad += not (lam[i] >= 0.0 and lam[i] <= mean_max)
        negated[small] = -lam[i]  # kept only where the mean is small (the next one overwrites it otherwise)
        small += lam[i] < switch
    return -1 if bad else small


@inlined
def _inverted(lam, p0, u):
    """The smallest k with F(k) ≥ u (F the Poisson(λ) CDF, p0 = e^-λ); stops where p(k) underflows (F = 1
    there) or at the table's end (λ < 10: P(k ≥ 200) < 1e-150)."""
    p = p0
    cdf = p
    k = 0
    while u > cdf and p > 0.0 and k < _RECIPROCALS.shape[0] - 1:
        k += 1
        p *= lam * _RECIPROCALS[k]  # 1/k from a table: a multiplication instead of a division per step
        cdf += p
    return k


@inlined
def _cornish_fisher(lam, z):
    """The corrected normal count of the docstring (λ ≥ 10)."""
    x = lam + np.sqrt(lam - 1.0 / 12.0) * z + (z * z - 1.0) / 6.0 + (z - z * z * z) / (72.0 * np.sqrt(lam))
    return max(np.floor(x + 0.5), 0.0)


_RECIPROCALS = 1.0 / np.maximum(np.arange(201, dtype=np.float64), 1.0)


@kernel
def _counts_kernel(lam, exp_minus_lam, uniforms, normals, switch, ceiling, out):
    i_small = 0
    i_large = 0
    for i in range(lam.shape[0]):
        if lam[i] < switch:
            k = np.float64(_inverted(lam[i], exp_minus_lam[i_small], uniforms[i_small]))
            i_small += 1
        else:
            k = _cornish_fisher(lam[i], np.float64(normals[i_large]))
            i_large += 1
        out[i] = np.uint16(min(k, np.float64(ceiling)))
