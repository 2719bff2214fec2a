"""Drawing returns into the polar image: range binning and the range-spread kernel (Mock et al., RadaRays, RA-L 2025: returns summed per (azimuth, range) pixel, blurred along range).

bin = floor((range - offset) / resolution); returns at or beyond the last bin are dropped. With a
kernel, a return at bin c adds strength * w[i] to bin c - m + i (sum), and, as RadaRays, bin 0 is
never written unless range.write_bin_zero; kernel `none` keeps the maximum return of each bin.
Optionally the radar range equation scales each return by (reference_range / R)^4 first.
"""
from __future__ import annotations

import numpy as np
import numpy as xm  # the formulas' vocabulary (radarays_ros/twin.py)

from ..compiled import kernel
from .kernels import kernel_weights


def draw_returns(azimuth, range_m, energy, n_azimuths: int, range_cfg, kernel_cfg, output_cfg) -> np.ndarray:
    """Energies (A, B) float64 from raw returns (azimuth index, apparent range, strength)."""
    n_bins = range_cfg.n_bins
    res = range_cfg.resolution
    energy = np.asarray(energy, np.float64)
    if output_cfg.radar_equation and len(energy):
        energy = energy * range_gain(np.asarray(range_m), range_cfg.offset, res, output_cfg.reference_range)
    cell = range_cell(np.asarray(range_m), range_cfg.offset, res)
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
    delta = np.bincount(flat, energy, minlength=n_azimuths * n_bins).reshape(n_azimuths, n_bins)
    weights, m = kernel_weights(kernel_cfg.type, kernel_cfg.width, kernel_cfg.mode, kernel_cfg.gaussian_sigma)
    image = np.zeros((n_azimuths, n_bins))
    _spread(delta, np.asarray(weights, np.float64), m, image)
    if not range_cfg.write_bin_zero:
        image[:, 0] = 0.0  # RadaRays never writes row 0 while spreading
    return image


def range_cell(range_m: float, offset: float, resolution: float) -> float:
    """The range bin of a return, floor((range - offset) / resolution) (as a float: negative or past the last
    bin means dropped). Written once (radarays_ros/twin.py)."""
    return xm.floor((range_m - offset) / resolution)


def range_gain(range_m: float, offset: float, resolution: float, reference_range: float) -> float:
    """(reference_range / R)^4, the radar range equation's falloff relative to the reference range, with
    R = range - offset, at least one bin (resolution). Written once: numpy runs it on the host, Warp compiles
    it for device frames (radarays_ros/twin.py). ASCII only in these lines."""
    r = xm.maximum(range_m - offset, resolution)
    return (reference_range / r) ** 4.0


@kernel
def _spread(delta, weights, m, image):
    """image[a, c - m + i] += delta[a, c] * weights[i] for every occupied cell (delta > 0: energies are
    positive) in increasing c, so every bin sums its sources in increasing bin order (the float64 sums
    of spreading return by return, in that order); what falls before bin 0 or past the last bin is cut off."""
    n_bins, width = delta.shape[1], weights.shape[0]
    for a in range(delta.shape[0]):
        for c in range(n_bins):
            value = delta[a, c]
            if value > 0:
                for i in range(max(0, m - c), min(width, n_bins + m - c)):
                    image[a, c - m + i] += value * weights[i]
