"""Log detector in Navtech units: counts = (10 log10(P / 1 mW) - zero_dBm) / step, 8 bits, saturating.

Navtech's radar SDK stores each FFT bin as an 8-bit fixed-point dB value with 0.5 dB per count
(Navtech SDK `FFT_types.h`), so counts = 2 x dB above the instrument's zero, 255 = 127.5 dB.
The FFT a Navtech computes is an integer one: the power it takes the log of is an integer number of
least-significant steps, so the lowest levels form a comb (0, 2 x 10 log10 2 = 6.0, 9.5, 12.0 counts)
and anything under one step reads exactly 0 (receiver.integer_power; the zero level is one step).
"""
from __future__ import annotations

import numpy as np


def counts_float(power_w: np.ndarray, zero_dbm: float, db_per_count: float, out: np.ndarray | None = None,
                 integer: bool = False) -> np.ndarray:
    """Counts before rounding (float32): may lie outside 0..255. out: a float32 array to write them into.
    integer: the FFT power is an integer number of steps of the zero level (an integer FFT's |X|^2,
    truncated) before the log, and 0 steps read 0: counts = 10 log10(max(floor(P / P0), 1)) / step, a comb
    of 0, 6.0, 9.5, 12.0, ... counts at the lowest levels and exact zeros under P0."""
    if integer:
        out = np.multiply(power_w, np.float32(10.0 ** ((30.0 - zero_dbm) / 10.0)), out=out, dtype=np.float32)
        np.floor(out, out=out)
        np.maximum(out, np.float32(1.0), out=out)
        np.log10(out, out=out)
        out *= np.float32(10.0 / db_per_count)
        return out
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
