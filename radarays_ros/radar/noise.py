"""Ambient noise with the energy-dependent floor, and system (white) noise (radar_model.md §2).

Per column with M = the column maximum before the energy_max scaling and s = energy_max * S the
scaled signal:

    s' = (1 - s/M)^4                               large where there is no signal
    amp = M (s' at_signal_0 + (1 - s') at_signal_1)
    F(r) = M ((e_max - e_min) exp(-loss r) + e_min),   r = (i + 0.5) * resolution
    N = |amp p + F(r)|,  p = U(0,1) (uniform) or the two-octave Perlin mix (perlin)

RadaRays draws a new Perlin x-offset o = U(0,1)*1000 for every column, so neighbouring columns are
uncorrelated; `perlin_coherent` draws one offset per frame and the noise is smooth across azimuth too.
"""
from __future__ import annotations

import numpy as np

from .perlin import perlin_hilo_rows


def ambient_noise(cfg, signal: np.ndarray, colmax: np.ndarray, resolution: float, rng: np.random.Generator) -> np.ndarray:
    """N (A, B) for the scaled signal (A, B) and per-column maxima M (A,); zeros when ambient = none."""
    a, b = signal.shape
    if cfg.ambient == "none":
        return np.zeros_like(signal)
    if cfg.ambient == "uniform":
        p = rng.uniform(0.0, 1.0, (a, b))
    else:
        offsets = rng.uniform(0.0, 1.0, 1 if cfg.perlin_coherent else a) * 1000.0
        offsets = np.broadcast_to(offsets, (a,))
        p = perlin_hilo_rows(offsets, b, np.arange(a), cfg.perlin_scale_low, cfg.perlin_scale_high, cfg.perlin_p_low)
    m = colmax[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(m > 0, signal / np.where(m > 0, m, 1.0), 0.0)
    s_prime = (1.0 - ratio) ** 4
    amp = m * (s_prime * cfg.at_signal_0 + (1.0 - s_prime) * cfg.at_signal_1)
    r = (np.arange(b) + 0.5) * resolution
    floor = m * ((cfg.energy_max - cfg.energy_min) * np.exp(-cfg.energy_loss * r)[None, :] + cfg.energy_min)
    return np.abs(amp * p + floor)


def system_noise(shape, std: float, rng: np.random.Generator) -> np.ndarray:
    """White Gaussian noise in output units (0 when std = 0; no draw is made then)."""
    if std <= 0:
        return np.zeros(shape)
    return rng.normal(0.0, std, shape)
