"""Log detector in Navtech units: counts = (10 log10(P / 1 mW) - zero_dBm) / step, 8 bits, saturating.

Navtech's radar SDK stores each FFT bin as an 8-bit fixed-point dB value with 0.5 dB per count
(Navtech SDK `FFT_types.h`), so counts = 2 x dB above the instrument's zero, 255 = 127.5 dB.
The FFT a Navtech computes is an integer one: the power it takes the log of is an integer number of
least-significant steps, so the lowest levels form a comb (0, 2 x 10 log10 2 = 6.0, 9.5, 12.0 counts)
and anything under one step reads exactly 0 (receiver.integer_power; the zero level is one step).

detect_integer is counts_float(integer=True) then quantise in one compiled pass: an integer power of
n < TABLE_STEPS steps reads both from a table of those same numpy operations on every such n (same bits
on any machine: the table is numpy's log10), larger ones (strong returns, few) go through counts_float.
Why: the five numpy passes and the rounding over a Navtech frame's 2.7 M cells, with a float32 log10 per
cell, cost 26 ms of a frame on one core; the pass 7 ms (navtech_ras6 on the 1 M-triangle world: 99.4 % of
its cells under 2^16 steps).
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from ...compiled import kernel

TABLE_STEPS = 2**16  # integer powers read from the table: up to 48 dB over the zero level (96 counts); 256 KiB


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


@lru_cache(maxsize=8)
def _integer_table(db_per_count: float) -> tuple[np.ndarray, np.ndarray]:
    """(counts float32, counts uint8) of counts_float(integer=True) + quantise for n = 0 .. TABLE_STEPS - 1
    steps (n = 0 reads as 1 step, as there), by those functions themselves."""
    steps = np.arange(TABLE_STEPS, dtype=np.float32)
    counts = counts_float(steps, 30.0, db_per_count, integer=True)  # zero_dbm = 30 dBm: 1 W per step
    return counts, quantise(counts)


def detect_integer(power_w: np.ndarray, zero_dbm: float, db_per_count: float, counts: np.ndarray,
                   counts_u8: np.ndarray) -> None:
    """counts_float(power_w, zero_dbm, db_per_count, out=counts, integer=True), then quantise(counts, out=counts_u8),
    the same bytes, in one pass: (rows, B) power in (rounded to float32 first, as counts_float rounds it), C-contiguous
    (rows, B) float32 and uint8 out."""
    if not (counts.flags.c_contiguous and counts_u8.flags.c_contiguous):
        raise ValueError("detect_integer writes C-contiguous counts only")
    power_w = np.asarray(power_w, np.float32)
    table, table_u8 = _integer_table(float(db_per_count))
    flat, flat_u8 = counts.reshape(-1), counts_u8.reshape(-1)  # (views)
    beyond = np.empty(flat.shape[0], np.int64)
    n_beyond = _detect_integer(power_w, np.float32(10.0 ** ((30.0 - zero_dbm) / 10.0)), table, table_u8, counts,
                               counts_u8, beyond)
    if n_beyond:  # the cells past the table (or NaN): their step counts were written to counts
        at = beyond[:n_beyond]
        strong = counts_float(flat[at], 30.0, db_per_count, integer=True)
        flat[at] = strong
        flat_u8[at] = quantise(strong)


@kernel
def _detect_integer(power_w, scale, table, table_u8, counts, counts_u8, beyond):
    """The table's entry of each cell's floor(P x scale) (float32 product, as counts_float), or, past the table
    (or negative, or NaN), that floor itself in counts and its flat index in beyond; returns how many went there."""
    rows, cols = power_w.shape
    n_table = np.float32(table.shape[0])
    n_beyond = 0
    for r in range(rows):
        for c in range(cols):
            steps = power_w[r, c] * scale
            if steps >= np.float32(0.0) and steps < n_table:
                k = int(steps)  # floor(steps), 0 ..; 0 steps: counts_float reads 1 step, as table[0]
                counts[r, c] = table[k]
                counts_u8[r, c] = table_u8[k]
            else:
                counts[r, c] = np.floor(steps)
                beyond[n_beyond] = r * cols + c
                n_beyond += 1
    return n_beyond
