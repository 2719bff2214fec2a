"""The smallest standard error a quiet-frame statistic can honestly be given (a floor under the jackknife's).

The jackknife (fit/jackknife.py) reads 0 where a statistic does not vary between row groups: a block whose
counts all sit at 0 (clipped), no saturated cell anywhere. An inverse-variance weight would then be infinite.
The floor is the standard error the statistic would have if its n cells were independent (correlation only
raises it), each for its own kind:

    level, spread (counts)      1 / sqrt(12 n): the counts are integers, and rounding adds a uniform error of
                                variance 1/12 per cell (Sheppard's correction; Kendall & Stuart, The Advanced
                                Theory of Statistics, vol. 1, section 3.18)
    correlation r over n pairs  (1 - r^2) / sqrt(n): the large-sample standard error of Pearson's r
                                (Fisher 1915; Kendall & Stuart, vol. 1, section 16.24)
    fraction p of n cells       sqrt(p~ (1 - p~) / n) with p~ = (k + 1/2) / (n + 1), k = p n: the binomial
                                standard error, p shrunk off 0 and 1 as Jeffreys' prior does (Brown, Cai &
                                DasGupta, "Interval estimation for a binomial proportion", Statist. Sci. 16(2),
                                101-133, 2001), so that "no saturated cell" still has a finite weight
"""
from __future__ import annotations

import numpy as np


def standard_error_floor(stats, rows: int) -> np.ndarray:
    """Per entry of stats.vector() (fit/statistics.QuietStats) of a frame of `rows` azimuths."""
    bins = np.diff(stats.edges)
    total_bins = int(stats.edges[-1])
    cells = rows * bins
    counts_floor = 1.0 / np.sqrt(12.0 * cells)
    lags = np.arange(1, stats.range_corr.size + 1)
    range_pairs = np.maximum(rows * (total_bins - lags), 1)
    range_floor = (1.0 - stats.range_corr ** 2) / np.sqrt(range_pairs)
    azimuth_floor = (1.0 - stats.azimuth_corr ** 2) / np.sqrt(max((rows - 1) * total_bins, 1))
    n = rows * total_bins
    fraction_floor = []
    for p in (stats.zero, stats.saturated):
        shrunk = (p * n + 0.5) / (n + 1.0)
        fraction_floor.append(np.sqrt(shrunk * (1.0 - shrunk) / n))
    return np.concatenate([counts_floor, counts_floor, range_floor, [azimuth_floor], fraction_floor])
