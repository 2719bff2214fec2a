"""Detection as a probability around the range–reflectivity limit, plus random single-pixel dropouts.

A return is detected when its signal S passes the receiver's threshold T in noise of standard deviation
σ: P_d = ½·erfc((T − S)/(√2·σ)) = Φ((S − T)/σ) (threshold detection in Gaussian noise:
detection probability rises smoothly with SNR rather than at a hard range).
The datasheet limit r_L(ρ) (detection.py) is where S = T (P_d = ½). An extended target's signal falls as
ρ/r², so at range r the same surface gives S/T = (r_L(ρ)/r)², and with k = T/σ (`snr_at_limit`):

    P_d = Φ(k·((r_L(ρ)/r)² − 1))

k → ∞ is the hard limit again; k = 4 lets a surface at 0.9·r_L be seen 83 % of the time, at 1.1·r_L 15 %.
Datasheet pairs quoted at a detection probability P other than ½ (Ouster: "> 90 % detection
probability", with the ½ figures beside them) are moved to the ½ curve before the fit: P = Φ(k·((r_½/r_P)² − 1))
gives r_½ = r_P·√(1 + Φ⁻¹(P)/k) (`median_limits`). Ouster OS1 Rev 6: 10 % at 45 m (> 90 %) and 55 m (> 50 %),
80 % at 100 m and 120 m; with k = 4: 45 → 51.7 m, 100 → 114.9 m, within 6 % of the datasheet's ½ figures.

Dropouts: each pixel independently lost with probability p (Bernoulli), as real frames show single
missing pixels everywhere.
"""
from __future__ import annotations

import numpy as np
from scipy.special import ndtr

from radarays_ros.compiled import kernel
from radarays_ros.counter_random import random_bits_inlined, ray_draws, uniform_inlined

from .detection import DetectionLimit, limit_at
from .noise import DROPOUT_WORD

# Φ(x) is exactly 1.0 in float64 from x ≈ 8.29 on (1 − Φ(x) < 2⁻⁵³ / 2), so returns this far inside the
# limit are detected without evaluating ndtr (the same bits: test_lidar_effects checks Φ there)
CERTAIN_SNR = 8.5


def median_limits(limits, probability: float, snr_at_limit: float):
    """The (ρ, range) pairs detected with probability ½ on the curve above, from pairs quoted at `probability`:
    r_½ = r_P·√(1 + Φ⁻¹(P)/k). P = ½ returns the pairs themselves (the same objects)."""
    if probability == 0.5:
        return limits
    from scipy.special import ndtri

    factor = float(np.sqrt(1.0 + ndtri(probability) / snr_at_limit))
    return tuple((rho, r * factor) for rho, r in limits)


def detection_probability(ranges: np.ndarray, rho: np.ndarray, limit: DetectionLimit, snr_at_limit: float) -> np.ndarray:
    """(N,) float64 P_d per return; 0 for misses (range not finite) and black surfaces (ρ ≤ 0)."""
    r = np.asarray(ranges)
    p = np.empty(len(r))
    x = np.empty(len(r))
    unsure = np.flatnonzero(_probability_kernel(r, np.asarray(rho), limit.curve, float(snr_at_limit), p, x))
    p[unsure] = ndtr(x[unsure])  # the costly part, only for returns near or past the limit
    return p


@kernel
def _probability_kernel(r, rho, curve, snr_at_limit, p, x):
    """p = P_d where it is certain (0 or 1); elsewhere x = k·((r_L/r)² − 1) and the ray is marked
    (returned mask) for Φ(x). All in float64, as the formula above."""
    unsure = np.zeros(r.shape[0], np.bool_)
    for i in range(r.shape[0]):
        ri, rhoi = np.float64(r[i]), np.float64(rho[i])
        if not (np.isfinite(ri) and rhoi > 0):  # only returns are weighed
            p[i] = 0.0
            continue
        q = limit_at(rhoi, curve) / max(ri, 1e-6)  # inf where the limit is none: P_d = 1
        x[i] = snr_at_limit * (q * q - 1.0)
        if x[i] >= CERTAIN_SNR:
            p[i] = 1.0
        else:  # NaN included: ndtr decides
            unsure[i] = True
    return unsure


def detected(ranges, rho, limit: DetectionLimit, snr_at_limit: float, rng: np.random.Generator) -> np.ndarray:
    """(N,) bool: a Bernoulli draw of P_d per ray (one uniform per ray, misses included: a ray's draw
    does not depend on which other rays returned)."""
    return rng.random(len(ranges)) < detection_probability(ranges, rho, limit, snr_at_limit)


def detected_returns(ranges, rho, keep: np.ndarray | None, limit: DetectionLimit, snr_at_limit: float,
                     dropout_probability: float, rng: np.random.Generator):
    """(keep, clean, kept_rho): which returns the sensor reports, their ranges (NaN elsewhere) and their ρ (0
    elsewhere), the convention of model.Returns. keep None: the Bernoulli draws of `detected`; else the given hard
    limit's mask (not changed). Then `dropouts` when dropout_probability > 0. The same draws in the same order as
    `detected` then `dropouts`, and the same bits as their numpy form (test_lidar_perf_loops), in one pass after
    the draws and Φ instead of a comparison, an and-not and two np.where's."""
    n = len(ranges)
    if keep is None:
        uniforms = rng.random(n)  # first, as `detected` draws it
        probability = detection_probability(ranges, rho, limit, snr_at_limit)
        keep = np.empty(n, bool)
    else:
        uniforms = probability = _NO_DRAWS
    lost = dropouts(n, dropout_probability, rng) if dropout_probability > 0 else _NO_LOSS
    clean, kept_rho = np.empty(n, np.float32), np.empty(n, np.float32)
    _kept_returns(uniforms, probability, lost, np.asarray(ranges), np.asarray(rho), keep, clean, kept_rho)
    return keep, clean, kept_rho


_NO_DRAWS = np.empty(0)
_NO_LOSS = np.empty(0, bool)


@kernel
def _kept_returns(uniforms, probability, lost, ranges, rho, keep, clean, kept_rho):
    """keep = u < P_d (when drawn; else keep is read) and not lost (when dropouts are on); clean = range where
    kept else NaN, kept_rho = ρ where kept else 0, both float32."""
    drawn, dropping = uniforms.shape[0] > 0, lost.shape[0] > 0
    for i in range(keep.shape[0]):
        kept = uniforms[i] < probability[i] if drawn else keep[i]
        if dropping and lost[i]:
            kept = False
        keep[i] = kept
        clean[i] = np.float32(ranges[i]) if kept else np.float32(np.nan)
        kept_rho[i] = np.float32(rho[i]) if kept else np.float32(0.0)


def dropouts(n: int, probability: float, rng: np.random.Generator) -> np.ndarray:
    """(N,) bool: pixels lost at random, each with `probability`: a uniform of each ray's counter word DROPOUT_WORD
    (noise.py; rng: a RayDraws, or a plain Generator that gives the key), as the device kernel draws it."""
    key, first = ray_draws(rng)
    lost = np.empty(n, bool)
    _dropouts(lost, key, first, np.float32(probability))
    return lost


@kernel
def _dropouts(lost, key, first, probability):
    for i in range(lost.shape[0]):
        lost[i] = uniform_inlined(random_bits_inlined(key, first + np.uint64(i), np.uint64(DROPOUT_WORD))) < probability
