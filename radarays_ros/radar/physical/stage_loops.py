"""Compiled loops of the sensor stage (stage.py, receiver_chain.py): the same float operations, in the same
order, as the numpy code they replace, so the frame's bytes do not change (compiled.py: no fastmath, no
fused multiply-adds). No formula of their own: each docstring names the function whose arithmetic it repeats.

Why: the stage's per-return and per-cell passes were a few dozen numpy calls per row block, each a pass
over memory with its own temporaries (measured on a Navtech frame of a 1 M-triangle world, one core:
clutter difference arrays 25-29 ms, the returns' skirts 20 ms a frame); a loop makes one pass.
"""
from __future__ import annotations

import numpy as np

from ...compiled import kernel


def power_steps(azimuth, start_bin, end_bin, power, shape) -> np.ndarray:
    """stage.power_steps: (A, J + 1) float64 difference array of the powers spread uniformly over
    [start_bin, end_bin) (fractional bins), J the columns up to the last that holds any power."""
    a, b = shape
    azimuth = np.ascontiguousarray(azimuth, np.int64)
    start_bin = np.ascontiguousarray(start_bin, np.float64)
    end_bin = np.ascontiguousarray(end_bin, np.float64)
    power = np.ascontiguousarray(power, np.float64)
    width = _last_column(start_bin, end_bin, power, b) + 1
    if width == 0:  # nothing holds power
        return np.zeros((a, 1))
    steps = np.zeros(a * (width + 1))
    _steps(azimuth, start_bin, end_bin, power, b, width, steps)
    return steps.reshape(a, width + 1)


@kernel
def _clip(x, b):
    """np.clip(x, 0, b) of a float64 (NaN stays NaN)."""
    if x < 0.0:
        return 0.0
    if x > b:
        return float(b)
    return x


@kernel
def _last_column(start_bin, end_bin, power, b):
    """The largest last bin i1 of the returns that hold power (-1: none)."""
    last = -1
    for k in range(power.shape[0]):
        lo, hi = _clip(start_bin[k], b), _clip(end_bin[k], b)
        if hi > lo and power[k] != 0:
            last = max(last, min(int(hi), b - 1))
    return last


@kernel
def _steps(azimuth, start_bin, end_bin, power, b, width, steps):
    """The four np.bincount passes of stage.power_steps, in its order: first values at i0 of every return,
    then inner - first at i0 + 1, last - inner at i1, -last at i1 + 1 (float64 sums in that order)."""
    n = power.shape[0]
    for part in range(4):
        for k in range(n):
            lo, hi = _clip(start_bin[k], b), _clip(end_bin[k], b)
            if not (hi > lo and power[k] != 0):
                continue
            density = power[k] / max(end_bin[k] - start_bin[k], 1e-9)
            i0 = min(int(lo), b - 1)
            i1 = min(int(hi), b - 1)
            row = azimuth[k] * (width + 1)
            same = i0 == i1
            first = density * (hi - lo) if same else density * ((i0 + 1) - lo)
            last = 0.0 if same else density * (hi - i1)
            inner = 0.0 if same else density
            if part == 0:
                steps[row + i0] += first
            elif part == 1:
                steps[row + i0 + 1] += inner - first
            elif part == 2:
                steps[row + i1] += last - inner
            else:
                steps[row + i1 + 1] += -last

