"""Range ambiguity of a time-of-flight sensor (BlenSor §3.4).

A pulse-repetition (or modulation) frequency f gives the unambiguous range R_u = c/(2f): an echo of a
target farther than R_u arrives after the next pulse left and is measured from that one, so the
sensor reports r mod R_u (BlenSor's ToF camera: dist − max_dist/2 beyond max_dist/2, i.e. R_u = max_dist/2,
the first fold of the same rule).
"""
from __future__ import annotations

import numpy as np

SPEED_OF_LIGHT = 299_792_458.0


def fold(ranges: np.ndarray, unambiguous_m: float) -> np.ndarray:
    """Reported ranges r mod R_u (float32; NaN stays NaN). R_u ≤ 0: unchanged."""
    r = np.asarray(ranges, np.float32)
    if unambiguous_m <= 0:
        return r
    return np.fmod(r, np.float32(unambiguous_m)).astype(np.float32)
