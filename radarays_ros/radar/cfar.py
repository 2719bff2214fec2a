"""CFAR detection along range: cell-averaging (CA) and ordered-statistic (OS) CFAR.

For a square-law detector in exponential (Rayleigh-amplitude) noise, N training cells (N/2 each side
of the cell under test, beyond `guard` cells each side):
* CA-CFAR: threshold T = alpha * mean(training), alpha = N (Pfa^(-1/N) - 1)
  (Richards, "Fundamentals of Radar Signal Processing", 2nd ed., Eq. 6.17);
* OS-CFAR: T = alpha * X_(k), the k-th smallest training cell; Pfa = prod_{i=0}^{k-1} (N - i) / (N - i + alpha)
  (Rohling, IEEE TAES 19(4), 1983, Eq. 14), alpha solved numerically; k = 3N/4 by default.
Inputs are linear power (use `counts_to_power` for Navtech counts). Cells without a full training
window (the first and last guard + train bins of each azimuth) are never detections.
"""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ..errors import ConfigError


def counts_to_power(counts: np.ndarray, db_per_count: float = 0.5) -> np.ndarray:
    """Relative linear power of log-detector counts (0.5 dB per count: Navtech)."""
    return 10.0 ** (np.asarray(counts, np.float64) * db_per_count / 10.0)


def ca_alpha(n_train: int, pfa: float) -> float:
    return n_train * (pfa ** (-1.0 / n_train) - 1.0)


def os_pfa(alpha: float, n_train: int, k: int) -> float:
    i = np.arange(k)
    return float(np.prod((n_train - i) / (n_train - i + alpha)))


def os_alpha(n_train: int, k: int, pfa: float) -> float:
    lo, hi = 0.0, 1.0
    while os_pfa(hi, n_train, k) > pfa:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if os_pfa(mid, n_train, k) > pfa else (lo, mid)
    return 0.5 * (lo + hi)


def _check(guard: int, train: int, pfa: float, n_bins: int) -> None:
    if guard < 0 or train < 1 or not 0 < pfa < 1:
        raise ConfigError(f"cfar: guard = {guard} (>= 0), train = {train} (>= 1), pfa = {pfa} (in (0, 1)) out of range")
    if 2 * (guard + train) + 1 > n_bins:
        raise ConfigError(f"cfar: guard + train = {guard + train} needs more than {n_bins} range bins")


def _training(power: np.ndarray, guard: int, train: int) -> np.ndarray:
    """(A, B - 2(g + t), 2t) training cells of every cell with a full window."""
    span = 2 * (guard + train) + 1
    window = sliding_window_view(power, span, axis=1)
    return np.concatenate([window[..., :train], window[..., train + 2 * guard + 1:]], axis=-1)


def cfar(power: np.ndarray, method: str = "ca", guard: int = 4, train: int = 16, pfa: float = 1e-3,
         k: int | None = None) -> np.ndarray:
    """(A, B) bool detections of a linear-power image along range."""
    power = np.asarray(power, np.float64)
    a, b = power.shape
    _check(guard, train, pfa, b)
    n = 2 * train
    edge = guard + train
    out = np.zeros((a, b), bool)
    cut = power[:, edge:b - edge]
    if method == "ca":
        csum = np.concatenate([np.zeros((a, 1)), np.cumsum(power, axis=1)], axis=1)
        idx = np.arange(edge, b - edge)
        left = csum[:, idx - guard] - csum[:, idx - guard - train]
        right = csum[:, idx + guard + train + 1] - csum[:, idx + guard + 1]
        out[:, edge:b - edge] = cut > ca_alpha(n, pfa) * (left + right) / n
        return out
    if method == "os":
        k = int(k if k is not None else round(0.75 * n))
        if not 1 <= k <= n:
            raise ConfigError(f"cfar: os k = {k}: must be in [1, {n}] (2 x train)")
        alpha = os_alpha(n, k, pfa)
        for start in range(0, a, 32):  # rows in chunks: the windows are (rows, bins, 2 train)
            cells = _training(power[start:start + 32], guard, train)
            kth = np.partition(cells, k - 1, axis=-1)[..., k - 1]
            out[start:start + 32, edge:b - edge] = cut[start:start + 32] > alpha * kth
        return out
    raise ConfigError(f"cfar: method {method!r}: must be ca or os")
