"""Signal photon counts with shot noise, a noise floor where there is no return, and saturation.

The mean photon count of a return is the extended-target lidar equation K·ρ(θ)/r² (intensity.py, Heiden
et al. 2020 §III: received radiance ∝ 1/R²) with K the product line's count for a white target at 1 m.
Photon arrivals are a Poisson process, so the count is Poisson(mean) (photon counting; drawn by
poisson_counts.py: exact below a mean of 10, a corrected normal within 2.6e-4 in distribution above);
a pixel without a return still counts background/dark photons, Poisson(noise_floor); a detector
saturates at `saturation` counts.
"""
from __future__ import annotations

import numpy as np

from radarays_ros.compiled import kernel

from .overlap import MIN_SIGNAL_RANGE, overlap, range_overlap
from .poisson_counts import poisson_counts


def photon_counts(mean: np.ndarray, returned: np.ndarray, noise_floor: float, saturation: float,
                  rng: np.random.Generator) -> np.ndarray:
    """(N,) uint16 counts: Poisson(mean) on returns, Poisson(noise_floor) elsewhere, capped at saturation."""
    return poisson_counts(poisson_means(mean, returned, noise_floor), rng, int(saturation))


def signal_means(clean_range: np.ndarray, rho: np.ndarray, returned: np.ndarray, signal_scale: float,
                 overlap_range: float, noise_floor: float, factor: np.ndarray | None = None) -> np.ndarray:
    """(N,) float64 Poisson mean of each pixel's signal: K·ρ(θ)/r² (r ≥ 0.1 m; intensity.py) times the near-range
    overlap O(r) (overlap.py, when overlap_range > 0) on returns, the noise floor elsewhere (then as
    poisson_means). One compiled pass, the same bits as `signal_means_numpy` (O(r) itself stays numpy's
    float32 exp). factor: O(r) of these ranges when the caller has it (`range_overlap`)."""
    clean = np.asarray(clean_range, np.float32).reshape(-1)
    if overlap_range <= 0:
        factor = _NO_FACTOR
    elif factor is None:
        factor = range_overlap(clean, overlap_range)
    lam = np.empty(len(clean), np.float64)
    _signal_kernel(clean, np.asarray(rho, np.float32).reshape(-1), np.asarray(returned, np.bool_).reshape(-1),
                   np.float32(signal_scale), factor, float(noise_floor), lam)
    return lam


def signal_means_numpy(clean_range, rho, returned, signal_scale, overlap_range, noise_floor) -> np.ndarray:
    """signal_means in numpy passes: the reference of the compiled loop."""
    r = np.fmax(np.asarray(clean_range, np.float32).astype(np.float64), MIN_SIGNAL_RANGE)
    mean = signal_scale * np.asarray(rho, np.float32) / (r * r)  # K·ρ in float32 (NEP 50), then float64
    if overlap_range > 0:
        mean = mean * overlap(r, overlap_range)
    return poisson_means_numpy(mean, returned, noise_floor)


def poisson_means(mean: np.ndarray, returned: np.ndarray, noise_floor: float) -> np.ndarray:
    """(N,) float64 Poisson mean of each pixel: `mean` on returns (NaN or inf: 0), the noise floor elsewhere,
    never below 0. One compiled pass, the same bits as `poisson_means_numpy` (measured: its numpy passes took
    1.5 ms per 65536 pixels, nan_to_num the most; numpy's Poisson draws themselves 5 ms)."""
    lam = np.empty(len(returned), np.float64)
    _means_kernel(np.asarray(mean, np.float64).reshape(-1), np.asarray(returned, np.bool_).reshape(-1),
                  float(noise_floor), lam)
    return lam


def poisson_means_numpy(mean: np.ndarray, returned: np.ndarray, noise_floor: float) -> np.ndarray:
    """poisson_means in numpy passes: the reference of the compiled loop."""
    lam = np.where(returned, np.nan_to_num(np.asarray(mean, np.float64), nan=0.0, posinf=0.0), noise_floor)
    return np.maximum(lam, 0.0)


_NO_FACTOR = np.empty(0, np.float32)


@kernel
def _signal_kernel(clean, rho, returned, signal_scale, factor, noise_floor, lam):
    for i in range(lam.shape[0]):
        if returned[i]:
            r = max(np.float64(clean[i]), MIN_SIGNAL_RANGE) if clean[i] == clean[i] else MIN_SIGNAL_RANGE  # np.fmax
            value = np.float64(signal_scale * rho[i]) / (r * r)
            if factor.shape[0]:
                value = value * np.float64(factor[i])
        else:
            value = noise_floor
        if not np.isfinite(value):  # as _means_kernel
            value = 0.0
        lam[i] = value if value >= 0.0 else 0.0


@kernel
def _means_kernel(mean, returned, noise_floor, lam):
    for i in range(lam.shape[0]):
        value = mean[i] if returned[i] else noise_floor
        if not np.isfinite(value):  # NaN, inf: 0; -inf (nan_to_num: the most negative float) ends at 0 below
            value = 0.0
        lam[i] = value if value >= 0.0 else 0.0  # np.maximum(x, 0.0): x where x >= 0 (-0.0 stays -0.0)
