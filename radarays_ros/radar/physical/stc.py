"""Sensitivity-time control: near-range attenuation that offsets the R^-4 law.

    A(R) = min(40 log10(R_stc / R), A_max) dB for R < R_stc, else 0
(Skolnik, "Radar Handbook", 3rd ed., Sec. 2.7 "Sensitivity time control"; in an FMCW radar it is the
IF high-pass filter, beat frequency being proportional to range, so it filters the noise there too).
"""
from __future__ import annotations

import numpy as np


def attenuation_db(range_m: np.ndarray, stc_range_m: float, max_db: float) -> np.ndarray:
    r = np.maximum(np.asarray(range_m, np.float64), 1e-3)
    if stc_range_m <= 0:
        return np.zeros_like(r)
    return np.clip(40.0 * np.log10(stc_range_m / r), 0.0, max_db)
