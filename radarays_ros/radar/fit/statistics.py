"""Scene-free statistics of a polar radar frame: what the receiver chain alone decides.

Counts are [azimuth, range bin] log-detector values. Real frames hold targets too; every statistic
here is taken over the quiet part of the frame, so that a target or a wall moves it little:

    level[j]    per range block j, the mean of the 10-50 % rank slice of its counts (the quiet lower
                half; a trimmed mean of many integers moves smoothly with the floor, a median steps)
    spread[j]   per block, mean of the 30-50 % ranks minus mean of the 5-25 % ranks: the width of the
                speckle distribution of the floor (exponential intensity: 5.6 dB std in dB)
    range_corr  Pearson correlation at range lags 1..4 of the counts winsorised at their block's 60 %
                quantile, minus the block levels: the range response's width (effective resolution)
    azimuth_corr  the same at azimuth lag 1 (the beam overlap of clutter; noise is independent)
    zero, saturated  fractions of cells at 0 and at the top count (255)

Range blocks are log-spaced in bins from the first bin (single bins at near range, where leakage and
STC shape the floor) to the last. The same function measures real and simulated frames alike.

Each statistic's standard error is measured from the frame itself (`quiet_stats_with_errors`: the
delete-a-group jackknife over contiguous row groups, fit/jackknife.py), floored at what the counts'
integer resolution and the cell count allow (fit/resolution_floor.py): the fit weighs each residual by
its inverse (fit/sensor.py).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .jackknife import deviations, row_groups
from .resolution_floor import standard_error_floor

N_BLOCKS = 40
MAX_LAG = 4
TOP_COUNT = 255
JACKKNIFE_GROUPS = 16  # row groups of the jackknife: ~15 degrees of freedom per standard error


def block_edges(n_bins: int, n_blocks: int = N_BLOCKS) -> np.ndarray:
    """Increasing bin edges [0, ..., n_bins], log-spaced (single bins first)."""
    edges = np.unique(np.round(np.geomspace(1, n_bins, n_blocks)).astype(np.int64))
    return np.unique(np.concatenate([[0], edges, [n_bins]]))


@dataclass
class QuietStats:
    edges: np.ndarray  # (J + 1,) bin edges of the blocks
    level: np.ndarray  # (J,) counts
    spread: np.ndarray  # (J,) counts
    range_corr: np.ndarray  # (MAX_LAG,)
    azimuth_corr: float
    zero: float
    saturated: float

    def vector(self) -> np.ndarray:
        """Every statistic in one vector, in its own units (counts, correlation, fraction): level, spread,
        range_corr, azimuth_corr, zero, saturated."""
        return np.concatenate([self.level, self.spread, self.range_corr,
                               [self.azimuth_corr, self.zero, self.saturated]])

    def summary(self, resolution_m: float) -> dict:
        """A few numbers a person reads: floor near / mid / far (counts), spread, correlations."""
        centres = 0.5 * (self.edges[:-1] + self.edges[1:]) * resolution_m
        pick = lambda r: float(np.interp(r, centres, self.level))  # noqa: E731
        far = centres[-1]
        return {"floor_1m": pick(1.0), "floor_10m": pick(10.0), "floor_mid": pick(far / 2), "floor_far": pick(far),
                "spread_counts": float(np.median(self.spread)), "range_corr_lag1": float(self.range_corr[0]),
                "azimuth_corr": float(self.azimuth_corr), "zero_fraction": float(self.zero),
                "saturated_fraction": float(self.saturated)}


def _rank_mean(sorted_block: np.ndarray, lo: float, hi: float) -> float:
    n = sorted_block.shape[0]
    i0, i1 = int(lo * n), max(int(hi * n), int(lo * n) + 1)
    return float(sorted_block[i0:i1].mean())


def _corr(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a - a.mean(), b - b.mean()
    den = np.sqrt(np.sum(a * a) * np.sum(b * b))
    return float(np.sum(a * b) / den) if den > 0 else 0.0


def quiet_stats(counts: np.ndarray, n_blocks: int = N_BLOCKS) -> QuietStats:
    counts = np.asarray(counts)
    a, b = counts.shape
    edges = block_edges(b, n_blocks)
    x = counts.astype(np.float64)
    level, spread, cut = [], [], np.empty(b)
    trend = np.empty(b)
    for j0, j1 in zip(edges[:-1], edges[1:]):
        block = np.sort(x[:, j0:j1], axis=None)
        level.append(_rank_mean(block, 0.10, 0.50))
        spread.append(_rank_mean(block, 0.30, 0.50) - _rank_mean(block, 0.05, 0.25))
        cut[j0:j1] = block[min(int(0.6 * len(block)), len(block) - 1)]
        trend[j0:j1] = level[-1]
    # winsorised at the block's 60 % quantile rather than masked: a target adds at most that much, and
    # the statistic moves smoothly when the quantile steps by one count (a mask would jump)
    d = np.minimum(x, cut[None, :]) - trend[None, :]
    range_corr = [_corr(d[:, :-lag].ravel(), d[:, lag:].ravel()) if b > lag else 0.0 for lag in range(1, MAX_LAG + 1)]
    az = _corr(d[:-1].ravel(), d[1:].ravel()) if a > 1 else 0.0
    return QuietStats(edges, np.array(level), np.array(spread), np.array(range_corr), az,
                      float(np.mean(counts == 0)), float(np.mean(counts >= TOP_COUNT)))


@dataclass
class FrameErrors:
    """A frame's statistics with what they would scatter by on another frame of the same chain."""
    stats: QuietStats
    rows: int
    standard_error: np.ndarray  # per entry of stats.vector(), floored (resolution_floor)
    jackknife: np.ndarray  # (G, m) deviations D, covariance ~ D^T D (unfloored)


def quiet_stats_with_errors(counts: np.ndarray, n_blocks: int = N_BLOCKS,
                            groups: int = JACKKNIFE_GROUPS) -> FrameErrors:
    """quiet_stats of the frame and the delete-a-group jackknife of its vector over `groups` row groups."""
    counts = np.asarray(counts)
    stats = quiet_stats(counts, n_blocks)
    parts = row_groups(counts.shape[0], groups)
    if len(parts) < 2:  # one row: nothing to leave out (the resolution floor alone sets the errors)
        dev = np.zeros((1, stats.vector().size))
    else:
        keep = np.ones(counts.shape[0], bool)
        replicates = []
        for part in parts:
            keep[:] = True
            keep[part] = False
            replicates.append(quiet_stats(counts[keep], n_blocks).vector())
        dev = deviations(np.array(replicates))
    jack = np.sqrt(np.sum(dev ** 2, axis=0))
    floor = standard_error_floor(stats, counts.shape[0])
    return FrameErrors(stats, counts.shape[0], np.maximum(jack, floor), dev)
