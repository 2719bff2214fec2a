"""Each pixel's stamped time: the nominal time of its measurement column plus that column's offset,

    t[pixel] = nominal[pixel] + offset[column(pixel)]

with the offsets (jitter and wander) drawn by column_timing.py. Kept apart from column_timing.py, whose constants
the sensor config reads, so that loading a config (and `radarays --help`) imports no compiler
(test_cli_startup.py)."""
from __future__ import annotations

import numpy as np

from radarays_ros.compiled import kernel


def stamped_times(nominal: np.ndarray, offsets: np.ndarray, pixel_column: np.ndarray) -> np.ndarray:
    """Each pixel's stamped time: nominal + offsets[pixel_column] (nominal's shape, float64), the gather and the
    sum in one compiled pass (the same bits as numpy's two)."""
    out = np.empty(np.shape(nominal), np.result_type(np.asarray(nominal).dtype, np.asarray(offsets).dtype))
    _stamped_times(np.ravel(nominal), np.asarray(offsets), np.ravel(pixel_column), out.reshape(-1))
    return out


@kernel
def _stamped_times(nominal, offsets, pixel_column, out):
    for i in range(out.shape[0]):
        out[i] = nominal[i] + offsets[pixel_column[i]]
