"""Drawing returns into the polar image: range binning and the range-spread kernel (Mock et al., RadaRays, RA-L 2025: returns summed per (azimuth, range) pixel, blurred along range).

bin = floor((range - offset) / resolution); returns at or beyond the last bin are dropped. With a
kernel, a return at bin c adds strength * w[i] to bin c - m + i (sum), and, as RadaRays, bin 0 is
never written unless range.write_bin_zero; kernel `none` keeps the maximum return of each bin.
Optionally the radar range equation scales each return by (reference_range / R)^4 first.
"""
from __future__ import annotations

import numpy as np

from .kernels import kernel_weights


def draw_returns(azimuth, range_m, energy, n_azimuths: int, range_cfg, kernel_cfg, output_cfg) -> np.ndarray:
    """Energies (A, B) float64 from raw returns (azimuth index, apparent range, strength)."""
    n_bins = range_cfg.n_bins
    res = range_cfg.resolution
    energy = np.asarray(energy, np.float64)
    if output_cfg.radar_equation and len(energy):
        r = np.maximum(np.asarray(range_m) - range_cfg.offset, res)
        energy = energy * (output_cfg.reference_range / r) ** 4
    cell = np.floor((np.asarray(range_m) - range_cfg.offset) / res)
    ok = (cell >= 0) & (cell < n_bins) & (energy > 0)
    if not ok.any():
        return np.zeros((n_azimuths, n_bins))
    flat = np.asarray(azimuth)[ok].astype(np.int64) * n_bins + cell[ok].astype(np.int64)
    energy = energy[ok]
    if kernel_cfg.type == "none":
        image = np.zeros(n_azimuths * n_bins)
        np.maximum.at(image, flat, energy)
        return image.reshape(n_azimuths, n_bins)
    # Sum the returns of each (azimuth, bin) first: the kernel is linear, so spreading the sums is the
    # same as spreading every return, and there are far fewer occupied cells than returns.
    delta = np.bincount(flat, energy, minlength=n_azimuths * n_bins)
    marked = np.zeros(n_azimuths * n_bins, bool)
    marked[flat] = True  # energies are > 0, so these are exactly the non-zero cells (a bool scan is cheaper)
    occupied = np.flatnonzero(marked)
    weights, m = kernel_weights(kernel_cfg.type, kernel_cfg.width, kernel_cfg.mode, kernel_cfg.gaussian_sigma)
    width = len(weights)
    # Spread into rows padded by the kernel width: padded column col + i holds bin col - m + i, so
    # every index is in range and what falls before bin 0 or past the last bin is simply cut off.
    # One scatter per kernel tap: within a tap the targets are distinct (occupied cells are), so a
    # plain fancy-index add is exact; taps run from last to first so that every bin sums its sources
    # in increasing bin order (the order np.bincount used here before: the same float64 sums).
    padded_len = n_bins + width
    start = occupied + (occupied // n_bins) * width  # row * padded_len + col
    sums = delta[occupied]
    padded = np.zeros(n_azimuths * padded_len)
    for i in range(width - 1, -1, -1):
        padded[start + i] += sums * weights[i]
    image = padded.reshape(n_azimuths, padded_len)[:, m:m + n_bins].copy()
    if not range_cfg.write_bin_zero:
        image[:, 0] = 0.0  # RadaRays never writes row 0 while spreading
    return image
