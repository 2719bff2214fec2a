"""IF filters of an FMCW receiver as power gains over range: the range-compensation high-pass and the
anti-alias low-pass.

In an FMCW radar the beat frequency is proportional to range (f_b = 2 R S / c), so an IF filter is a gain
over range. A Butterworth filter of order n has |H|^2 = 1 / (1 + (f_c / f)^(2n)) (high-pass) and
1 / (1 + (f / f_c)^(2n)) (low-pass) (Butterworth, "On the theory of filter amplifiers", 1930; any
filter text). The high-pass is the FMCW radar's sensitivity-time control: order 2 rises 40 dB per
decade, the R^-4 of a point target, below its corner (Stove, "Linear FMCW radar techniques", IEE Proc. F
139(5), 1992, Sec. 4: the IF high-pass "range compensation" filter; Skolnik, "Radar Handbook" 3rd ed.,
Sec. 2.7). The low-pass keeps the beat band under the ADC's Nyquist frequency. Corners are given as the
ranges whose beat frequency they are, so the gains need no chirp slope.
"""
from __future__ import annotations

import numpy as np


def highpass_gain(range_m, corner_m: float, order: int) -> np.ndarray:
    """|H_hp|^2 at each range (1 everywhere for corner_m <= 0)."""
    r = np.maximum(np.asarray(range_m, np.float64), 1e-6)
    if corner_m <= 0:
        return np.ones_like(r)
    return 1.0 / (1.0 + (corner_m / r) ** (2 * order))


def lowpass_gain(range_m, corner_m: float, order: int) -> np.ndarray:
    """|H_lp|^2 at each range (1 everywhere for corner_m <= 0)."""
    r = np.asarray(range_m, np.float64)
    if corner_m <= 0:
        return np.ones_like(r)
    return 1.0 / (1.0 + (r / corner_m) ** (2 * order))
