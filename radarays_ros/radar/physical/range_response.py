"""FMCW range response: the range FFT's window seen in metres.

A point target at range R gives a beat tone f_b = 2 R S / c (chirp slope S = B / T); the range FFT of
the windowed beat signal has the window's spectrum around it (Richards, "Fundamentals of Radar Signal
Processing", 2nd ed., Sec. 5.2 and 4.5). In units of the range resolution dr = c / (2 B) a target at
offset x from a bin centre reads
    K(x) = |sum_n w[n] exp(-i 2 pi x n / N)|^2 / (sum_n w[n])^2      (power, K(0) = 1)
symmetric in x. -3 dB main-lobe widths (resolutions): rectangular 0.886, Hamming 1.30, Hann 1.44,
Blackman 1.68; first sidelobes -13.3, -42.7, -31.5, -58.1 dB (Harris, Proc. IEEE 66(1), 1978,
Table I). FFT bins finer than dr (zero padding) sample K more densely; the bins are range.resolution.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

C = 299_792_458.0
N_WINDOW = 512
HALF_POWER_WIDTH = {"rectangular": 0.886, "hamming": 1.30, "hann": 1.44, "blackman": 1.68}  # Harris Table I


def window(name: str, n: int = N_WINDOW) -> np.ndarray:
    k = np.arange(n)
    if name == "rectangular":
        return np.ones(n)
    if name == "hann":
        return 0.5 - 0.5 * np.cos(2 * np.pi * k / n)
    if name == "hamming":
        return 0.54 - 0.46 * np.cos(2 * np.pi * k / n)
    if name == "blackman":
        return 0.42 - 0.5 * np.cos(2 * np.pi * k / n) + 0.08 * np.cos(4 * np.pi * k / n)
    raise ValueError(f"unknown window {name!r}")


def resolution(bandwidth_hz: float) -> float:
    """dr = c / (2 B), metres."""
    return C / (2.0 * bandwidth_hz)


def amplitude_response(name: str, x: np.ndarray) -> np.ndarray:
    """Complex amplitude response (real, symmetric: the window's linear phase removed) at offsets x (resolutions)."""
    w = window(name)
    n = np.arange(N_WINDOW) - (N_WINDOW - 1) / 2.0  # centred: the spectrum of a symmetric window is real
    x = np.asarray(x, np.float64)
    spectrum = (w[None, :] * np.cos(2 * np.pi * x.reshape(-1, 1) * n[None, :] / N_WINDOW)).sum(axis=1)
    return (spectrum / w.sum()).reshape(x.shape)


@lru_cache(maxsize=16)
def range_kernel(window_name: str, bandwidth_hz: float, bin_m: float, half_width: float) -> "RangeKernel":
    """A RangeKernel, built once per parameter set (its table costs ~20 ms)."""
    return RangeKernel(window_name, bandwidth_hz, bin_m, half_width)


class RangeKernel:
    """The amplitude response sampled on the image's bins, for points at any sub-bin position."""

    STEPS = 64  # table samples per bin

    def __init__(self, window_name: str, bandwidth_hz: float, bin_m: float, half_width: float):
        self.bin_m = bin_m
        self.per_bin = bin_m / resolution(bandwidth_hz)  # resolutions per bin
        self.half = max(1, int(np.ceil(half_width / self.per_bin)))  # bins each side
        grid = np.arange(-(self.half + 1) * self.STEPS, (self.half + 1) * self.STEPS + 1) / self.STEPS
        self._grid = grid
        self._table = amplitude_response(window_name, grid * self.per_bin)
        self.taps = self._table[(grid == np.round(grid))]  # at whole bins, -half-1 .. half+1
        self.taps = self.taps[1:-1]
        self.enbw_bins = float(np.sum(self.taps ** 2))  # white noise power gain of the taps

    def at(self, offsets_bins: np.ndarray) -> np.ndarray:
        """Amplitude response at offsets (bins) from a point."""
        return np.interp(offsets_bins, self._grid, self._table, left=0.0, right=0.0)
