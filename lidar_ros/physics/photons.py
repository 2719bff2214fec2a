"""Signal photon counts with shot noise, a noise floor where there is no return, and saturation.

The mean photon count of a return is the extended-target lidar equation K·ρ(θ)/r² (intensity.py, Heiden
et al. 2020 §III: received radiance ∝ 1/R²) with K the product line's count for a white target at 1 m.
Photon arrivals are a Poisson process, so the count is Poisson(mean) (photon counting);
a pixel without a return still counts background/dark photons, Poisson(noise_floor); a detector
saturates at `saturation` counts.
"""
from __future__ import annotations

import numpy as np


def photon_counts(mean: np.ndarray, returned: np.ndarray, noise_floor: float, saturation: float,
                  rng: np.random.Generator) -> np.ndarray:
    """(N,) uint16 counts: Poisson(mean) on returns, Poisson(noise_floor) elsewhere, capped at saturation."""
    lam = np.where(returned, np.nan_to_num(np.asarray(mean, np.float64), nan=0.0, posinf=0.0), noise_floor)
    counts = rng.poisson(np.maximum(lam, 0.0))
    return np.minimum(counts, int(saturation)).astype(np.uint16)
