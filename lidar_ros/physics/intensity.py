"""Intensity-like fields of a lidar return, from its reflectivity ρ(θ) and range r.

ρ(θ) is the LiMOX reflectivity (§4.1: fraction of a white Lambertian target, already holding Lambert's
cos θ and any glass/mirror losses on the way); ρ > 1 means brighter than white (retroreflectors).

* reflectivity / intensity (float32): ρ(θ) itself, LiMOX's intensity output.
* calibrated reflectivity, 0..255, the scale both Velodyne ("calibrated reflectivity" mode: "diffuse
  reflectors report 0-100 for reflectivities 0-100 %, retroreflectors 101-255, 255 an ideal
  reflection") and Ouster (REFLECTIVITY channel, FW ≥ 2.1: 0-100 Lambertian %, 101-255
  retroreflective) use:  v = 100·ρ for ρ ≤ 1;  v = 101 + 154·ln ρ / ln ρ_full for ρ > 1, capped at 255
  (ρ_full = SurfaceConfig.retro_full_scale, the reflectivity shown as 255). Rounded to integers.
* Ouster signal (uint16 photons): the lidar equation of an extended target, received power ∝ ρ(θ)/r²
  (Heiden et al. 2020 §III: radiance falls as 1/R²): signal = round(K·ρ(θ)/r²) with
  K = signal_scale (photons of a white target at 1 m), r ≥ 0.1 m, saturating at 65535.
* Ouster ambient (uint16 photons): a simple daylight model, not radiometry: a returning surface
  shows Poisson(ambient_level·min(ρ(θ), 1)) photons, open sky (no return) Poisson(ambient_sky).
"""
from __future__ import annotations

import numpy as np

UINT16_MAX = 65535
MIN_SIGNAL_RANGE = 0.1  # m: keeps 1/r² finite for a target touching the window


def calibrated_reflectivity(rho: np.ndarray, retro_full_scale: float) -> np.ndarray:
    """Velodyne/Ouster calibrated reflectivity 0..255 (float32, integer-valued) of reflectivity `rho`."""
    rho = np.maximum(np.asarray(rho, np.float32), 0.0)
    diffuse = 100.0 * np.minimum(rho, 1.0)
    retro = 101.0 + 154.0 * np.log(np.maximum(rho, 1.0)) / np.log(retro_full_scale)
    value = np.where(rho > 1.0, np.minimum(retro, 255.0), diffuse)
    return np.round(value).astype(np.float32)


def ouster_signal(rho: np.ndarray, ranges: np.ndarray, signal_scale: float) -> np.ndarray:
    """Photon count ∝ ρ(θ)/r² (uint16, saturating). Non-finite ranges (no return) give 0."""
    r = np.asarray(ranges, np.float64)
    finite = np.isfinite(r)
    r = np.maximum(np.where(finite, r, 1.0), MIN_SIGNAL_RANGE)
    photons = signal_scale * np.maximum(np.asarray(rho, np.float64), 0.0) / (r * r)
    photons = np.where(finite, photons, 0.0)
    return np.minimum(np.round(photons), UINT16_MAX).astype(np.uint16)


def ouster_ambient(rho: np.ndarray, returned: np.ndarray, ambient_level: float, ambient_sky: float,
                   rng: np.random.Generator) -> np.ndarray:
    """Ambient photons (uint16): Poisson around ambient_level·min(ρ, 1) on surfaces, ambient_sky elsewhere."""
    mean = np.where(returned, ambient_level * np.clip(np.asarray(rho, np.float64), 0.0, 1.0), ambient_sky)
    if not np.any(mean > 0):
        return np.zeros(mean.shape, np.uint16)
    return np.minimum(rng.poisson(mean), UINT16_MAX).astype(np.uint16)
