"""Delete-a-group jackknife: the covariance of a statistic of a frame, measured from the frame itself.

A frame's rows (azimuths) are split into G contiguous groups of (almost) equal size. The statistic is computed
G times, each time without one group: theta_(g). With theta_(.) their mean, the jackknife covariance is

    Cov(theta) ~ (G - 1) / G * sum_g (theta_(g) - theta_(.)) (theta_(g) - theta_(.))^T

(Quenouille 1956; Tukey 1958; for groups: Kott, "The delete-a-group jackknife", J. Official Statistics 17(4),
521-526, 2001). It needs no model of the statistic's distribution (here: rank means of clipped, rounded,
range-correlated log counts, for which no closed form is at hand), only that the groups are independent: the
rows of a frame's quiet part are (noise is white over azimuth; clutter seen through the beam correlates adjacent
azimuths, which is why the groups are contiguous: only the rows at a group's two edges share a neighbour with
another group). Deleting a whole group (d = rows / G rows at a time, not one row) is what makes it consistent for
quantile-type statistics such as the rank means: the delete-d jackknife of Shao & Wu ("A general theory for
jackknife variance estimation", Ann. Statist. 17(3), 1176-1197, 1989) needs sqrt(n) / d -> 0, and a one-row
jackknife of a median is inconsistent (Efron, "The Jackknife, the Bootstrap and Other Resampling Plans", 1982).
The estimate has about G - 1 degrees of freedom per entry.

`deviations` returns the scaled deviations D (G x m) with Cov ~ D^T D, so that a projection J^T Cov J is
(D J)^T (D J) without forming the m x m matrix (rank G - 1 < m: usable in such quadratic forms and on its
diagonal, not invertible).
"""
from __future__ import annotations

import numpy as np


def row_groups(n_rows: int, groups: int) -> list[slice]:
    """G contiguous, nearly equal row ranges covering 0..n_rows (fewer when there are fewer rows)."""
    g = max(1, min(groups, n_rows))
    edges = np.round(np.linspace(0, n_rows, g + 1)).astype(int)
    return [slice(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:])]


def deviations(replicates: np.ndarray) -> np.ndarray:
    """(G, m) leave-one-group-out values -> (G, m) D with the jackknife covariance D^T D."""
    replicates = np.asarray(replicates, dtype=np.float64)
    g = replicates.shape[0]
    if g < 2:
        return np.zeros_like(replicates)
    return np.sqrt((g - 1) / g) * (replicates - replicates.mean(axis=0))
