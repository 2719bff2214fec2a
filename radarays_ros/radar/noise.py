"""Ambient noise with the energy-dependent floor, and system (white) noise (Mock et al., RadaRays, RA-L 2025: system and ambient noise, uniform or Perlin).

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
import numpy as xm  # the formulas' vocabulary (radarays_ros/twin.py)

from ..compiled import inlined, kernel
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
    # N = M |(at1 + s' (at0 - at1)) p + f(r)| with f(r) = (e_max - e_min) exp(-loss r) + e_min, in float32
    m = np.asarray(colmax, np.float64)
    inv_m = np.divide(1.0, m, out=np.zeros_like(m), where=m > 0).astype(np.float32)
    r = (np.arange(b) + 0.5) * resolution
    floor = range_floor(r, cfg.energy_max, cfg.energy_min, cfg.energy_loss).astype(np.float32)
    t = np.empty((a, b), np.float32)
    _ambient_levels(np.asarray(signal, np.float32), inv_m, p.astype(np.float32, copy=False),
                    np.float32(cfg.at_signal_0 - cfg.at_signal_1), np.float32(cfg.at_signal_1), floor,
                    m.astype(np.float32), t)
    return t


def ambient_level(signal: float, inv_max: float, p: float, at_signal_step: float, at_signal_1: float,
                  floor: float) -> float:
    """N / M = |(at_signal_1 + s' (at_signal_0 - at_signal_1)) p + F(r)| with s' = (1 - s/M)^4 (the module
    docstring; at_signal_step = at_signal_0 - at_signal_1, inv_max = 1/M or 0 for an empty column). Written once:
    numpy runs it on the host, Warp compiles it for device frames (radarays_ros/twin.py). ASCII only here."""
    t = xm.float32(1.0) - signal * inv_max  # float32 constants: numba keeps float32 arithmetic with them
    t = t * t
    t = t * t
    return xm.abs((t * at_signal_step + at_signal_1) * p + floor)


_ambient_level_compiled = inlined(ambient_level)


@kernel
def _ambient_levels(signal, inv_max, p, at_signal_step, at_signal_1, floor, column_max, out):
    """out[a, b] = M_a ambient_level(...) per pixel in one pass (numpy's temporaries of a 400 x 6848 image cost
    a third more CPU time: measured 43 ms against 31 ms for the same arithmetic in place)."""
    for a in range(signal.shape[0]):
        for b in range(signal.shape[1]):
            out[a, b] = _ambient_level_compiled(signal[a, b], inv_max[a], p[a, b], at_signal_step, at_signal_1,
                                                floor[b]) * column_max[a]


def range_floor(r: float, energy_max: float, energy_min: float, energy_loss: float) -> float:
    """F(r) / M = (e_max - e_min) exp(-loss r) + e_min, the noise floor falling with range r (m). Written once
    (radarays_ros/twin.py)."""
    return (energy_max - energy_min) * xm.exp(-energy_loss * r) + energy_min


def ambient_bound(cfg, range_m: np.ndarray) -> np.ndarray:
    """The largest ambient noise N / M can reach at each range: |amp p + F(r)| <= max(at_signal_0,
    at_signal_1) + F(r), since |p| <= 1 (uniform in [0, 1); improved Perlin noise in [-1, 1]); 0 for none."""
    r = np.asarray(range_m, np.float64)
    if cfg.ambient == "none":
        return np.zeros_like(r)
    floor = range_floor(r, cfg.energy_max, cfg.energy_min, cfg.energy_loss)
    return max(cfg.at_signal_0, cfg.at_signal_1) + floor


def system_noise(shape, std: float, rng: np.random.Generator) -> np.ndarray:
    """White Gaussian noise in output units (0 when std = 0; no draw is made then)."""
    if std <= 0:
        return np.zeros(shape)
    return rng.normal(0.0, std, shape)
