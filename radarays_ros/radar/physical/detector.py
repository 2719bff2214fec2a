"""Log detector in Navtech units: counts = (10 log10(P / 1 mW) - zero_dBm) / step, 8 bits, saturating.

Navtech's radar SDK stores each FFT bin as an 8-bit fixed-point dB value with 0.5 dB per count
(Navtech SDK `FFT_types.h`), so counts = 2 x dB above the instrument's zero, 255 = 127.5 dB.
"""
from __future__ import annotations

import numpy as np


def counts_float(power_w: np.ndarray, zero_dbm: float, db_per_count: float, out: np.ndarray | None = None) -> np.ndarray:
    """Counts before rounding (float32): may lie outside 0..255. out: a float32 array to write them into."""
    out = np.maximum(power_w, np.float32(1e-30), out=out, dtype=np.float32)
    np.log10(out, out=out)
    out *= np.float32(10.0 / db_per_count)
    out += np.float32((30.0 - zero_dbm) / db_per_count)
    return out


def quantise(counts: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Round to the nearest count and saturate to 0..255 (out: a uint8 array to write them into)."""
    rounded = np.rint(counts)
    np.clip(rounded, 0, 255, out=rounded)
    if out is None:
        return rounded.astype(np.uint8)
    out[...] = rounded
    return out
