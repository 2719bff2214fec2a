"""Log detector in Navtech units: counts = (10 log10(P / 1 mW) - zero_dBm) / step, 8 bits, saturating.

Navtech's radar SDK stores each FFT bin as an 8-bit fixed-point dB value with 0.5 dB per count
(Navtech `FFT_types.h`; realism.md), so counts = 2 x dB above the instrument's zero, 255 = 127.5 dB.
"""
from __future__ import annotations

import numpy as np


def counts_float(power_w: np.ndarray, zero_dbm: float, db_per_count: float) -> np.ndarray:
    """Counts before rounding (float32): may lie outside 0..255."""
    p = np.maximum(power_w, np.float32(1e-30))
    out = np.log10(p, dtype=np.float32)
    out *= np.float32(10.0 / db_per_count)
    out += np.float32((30.0 - zero_dbm) / db_per_count)
    return out


def quantise(counts: np.ndarray) -> np.ndarray:
    """Round to the nearest count and saturate to 0..255."""
    out = np.rint(counts)
    np.clip(out, 0, 255, out=out)
    return out.astype(np.uint8)
