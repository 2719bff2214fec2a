"""CFAR detection along range: cell-averaging (CA) and ordered-statistic (OS) CFAR.

For a square-law detector in exponential (Rayleigh-amplitude) noise, N training cells (N/2 each side
of the cell under test, beyond `guard` cells each side):
* CA-CFAR: threshold T = alpha * mean(training), alpha = N (Pfa^(-1/N) - 1)
  (Richards, "Fundamentals of Radar Signal Processing", 2nd ed., Eq. 6.17);
* OS-CFAR: T = alpha * X_(k), the k-th smallest training cell; Pfa = prod_{i=0}^{k-1} (N - i) / (N - i + alpha)
  (Rohling, IEEE TAES 19(4), 1983, Eq. 14), alpha solved numerically; k = 3N/4 by default.
Inputs are linear power (use `counts_to_power` for Navtech counts).

One cell-averaging estimator (ca_noise) serves `cfar` and the radar point clouds (io/radar_image.py),
with one edge rule: near either end of an azimuth the training window keeps the cells that lie inside
the image (n < N), and the threshold uses that n.

Correlated training cells: range bins finer than the resolution c / 2B (zero-padded FFTs) hold fields
correlated by r_l = sum_j K_j K_(j+l) / sum_j K_j^2 at lag l (K: the range response taps). The training
mean is then a sum of exponentials whose means are the eigenvalues of the cells' correlation matrix / n,
and Pfa(alpha) = prod_i 1 / (1 + alpha lambda_i) exactly (effective_cells); it is expressed as the
effective number n_eff of independent cells with the same threshold factor, alpha(n_eff), which windows
cut at the image's ends scale by their share of cells.
"""
from __future__ import annotations

import math

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ..errors import ConfigError


def counts_to_power(counts: np.ndarray, db_per_count: float = 0.5) -> np.ndarray:
    """Relative linear power of log-detector counts (0.5 dB per count: Navtech)."""
    return 10.0 ** (np.asarray(counts, np.float64) * db_per_count / 10.0)


def ca_alpha(n_train, pfa: float):
    """alpha(n) = n (Pfa^(-1/n) - 1) (n may be an array, and fractional: effective cells)."""
    n = np.asarray(n_train, np.float64)
    out = n * (pfa ** (-1.0 / np.maximum(n, 1e-12)) - 1.0)
    return float(out) if out.ndim == 0 else out


def field_correlation(taps) -> np.ndarray:
    """r_l, l = 0 .. len(taps) - 1: correlation at lag l of white noise through the range taps (real)."""
    k = np.asarray(taps, np.float64)
    full = np.correlate(k, k, mode="full")[len(k) - 1:]
    return full / full[0]


def effective_cells(guard: int, train: int, taps, pfa: float) -> float:
    """n_eff of a full window of correlated cells: the n whose independent-cell factor alpha(n) gives
    this window's exact false-alarm rate. The training sum of a circular Gaussian field with correlation
    matrix R (from field_correlation) is a sum of exponentials with means lambda_i, the eigenvalues of
    R / n, so Pfa(alpha) = prod_i 1 / (1 + alpha lambda_i) (Goodman 2007, Sec. 3.2; Richards Eq. 6.17 is
    its case R = I)."""
    r = field_correlation(taps)
    positions = np.concatenate([np.arange(-guard - train, -guard), np.arange(guard + 1, guard + train + 1)])
    lag = np.abs(positions[:, None] - positions[None, :])
    matrix = np.where(lag < len(r), r[np.minimum(lag, len(r) - 1)], 0.0)
    lam = np.clip(np.linalg.eigvalsh(matrix / len(positions)), 0.0, None)

    def log_pfa(alpha):
        return -np.sum(np.log1p(alpha * lam))

    lo, hi = 0.0, 1.0
    while log_pfa(hi) > math.log(pfa):
        hi *= 2.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if log_pfa(mid) > math.log(pfa) else (lo, mid)
    alpha = 0.5 * (lo + hi)
    n_lo, n_hi = 1e-3, float(len(positions))  # alpha(n) falls with n
    for _ in range(100):
        mid = 0.5 * (n_lo + n_hi)
        n_lo, n_hi = (n_lo, mid) if ca_alpha(mid, pfa) < alpha else (mid, n_hi)
    return 0.5 * (n_lo + n_hi)


def ca_noise(power: np.ndarray, guard: int, train: int) -> tuple[np.ndarray, np.ndarray]:
    """(mean, count) of the training cells of every cell along range: `train` cells each side beyond
    `guard`, the windows cut to the image (count: how many cells the mean holds, 0 where none)."""
    a, b = power.shape
    csum = np.concatenate([np.zeros((a, 1)), np.cumsum(power, axis=1)], axis=1)
    idx = np.arange(b)

    def window_sum(lo, hi):  # sum over [lo, hi) cut to the image
        lo, hi = np.clip(lo, 0, b), np.clip(hi, 0, b)
        return csum[:, hi] - csum[:, lo], (hi - lo)

    s1, n1 = window_sum(idx - guard - train, idx - guard)
    s2, n2 = window_sum(idx + guard + 1, idx + guard + 1 + train)
    count = n1 + n2
    return (s1 + s2) / np.maximum(count, 1), count


def ca_threshold(mean: np.ndarray, count: np.ndarray, train: int, pfa: float, n_effective: float | None = None) -> np.ndarray:
    """The CA threshold alpha(n) x mean, n the window's cells (scaled by n_effective / (2 train) for
    correlated cells); infinite where the window holds none."""
    n = count * ((n_effective if n_effective is not None else 2 * train) / (2.0 * train))
    alpha = np.where(count > 0, ca_alpha(np.maximum(n, 1e-9), pfa), np.inf)
    return alpha * mean


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
         k: int | None = None, n_effective: float | None = None) -> np.ndarray:
    """(A, B) bool detections of a linear-power image along range. n_effective (CA): the effective
    number of independent cells of a full window (effective_cells) when neighbouring bins correlate.
    OS-CFAR tests only the cells with a full window."""
    power = np.asarray(power, np.float64)
    a, b = power.shape
    _check(guard, train, pfa, b)
    n = 2 * train
    edge = guard + train
    out = np.zeros((a, b), bool)
    cut = power[:, edge:b - edge]
    if method == "ca":
        mean, count = ca_noise(power, guard, train)
        return power > ca_threshold(mean, count, train, pfa, n_effective)
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
