"""Detection as a probability around the range–reflectivity limit, plus random single-pixel dropouts.

A return is detected when its signal S passes the receiver's threshold T in noise of standard deviation
σ: P_d = ½·erfc((T − S)/(√2·σ)) = Φ((S − T)/σ) (threshold detection in Gaussian noise; realism.md:
"detection probability rises smoothly with SNR rather than at a hard range").
The datasheet limit r_L(ρ) (detection.py) is where S = T (P_d = ½). An extended target's signal falls as
ρ/r², so at range r the same surface gives S/T = (r_L(ρ)/r)², and with k = T/σ (`snr_at_limit`):

    P_d = Φ(k·((r_L(ρ)/r)² − 1))

k → ∞ is the hard limit again; k = 4 lets a surface at 0.9·r_L be seen 83 % of the time, at 1.1·r_L 15 %.
Dropouts: each pixel independently lost with probability p (Bernoulli), as real frames show single
missing pixels everywhere.
"""
from __future__ import annotations

import numpy as np
from scipy.special import ndtr

from .detection import DetectionLimit

# Φ(x) is exactly 1.0 in float64 from x ≈ 8.29 on (1 − Φ(x) < 2⁻⁵³ / 2), so returns this far inside the
# limit are detected without evaluating ndtr (the same bits: test_lidar_effects checks Φ there)
CERTAIN_SNR = 8.5


def detection_probability(ranges: np.ndarray, rho: np.ndarray, limit: DetectionLimit, snr_at_limit: float) -> np.ndarray:
    """(N,) float64 P_d per return; 0 for misses (range not finite) and black surfaces (ρ ≤ 0)."""
    r = np.asarray(ranges)
    rho = np.asarray(rho)
    out = np.zeros(len(r))
    ok = np.flatnonzero(np.isfinite(r) & (rho > 0))  # only returns are weighed
    reach = limit.max_range(rho[ok])
    ratio = (reach / np.maximum(r[ok].astype(np.float64), 1e-6)) ** 2  # inf where the limit is none: P_d = 1
    x = snr_at_limit * (ratio - 1.0)
    p = np.ones(len(x))
    unsure = np.flatnonzero(~(x >= CERTAIN_SNR))  # NaN included: ndtr decides
    p[unsure] = ndtr(x[unsure])  # the costly part, only for returns near or past the limit
    out[ok] = p
    return out


def detected(ranges, rho, limit: DetectionLimit, snr_at_limit: float, rng: np.random.Generator) -> np.ndarray:
    """(N,) bool: a Bernoulli draw of P_d per ray (one uniform per ray, misses included: a ray's draw
    does not depend on which other rays returned)."""
    return rng.random(len(ranges)) < detection_probability(ranges, rho, limit, snr_at_limit)


def dropouts(n: int, probability: float, rng: np.random.Generator) -> np.ndarray:
    """(N,) bool: pixels lost at random, each with `probability`."""
    return rng.random(n) < probability
