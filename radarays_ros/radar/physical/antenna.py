"""Antenna power patterns, one-way and two-way (transmit x receive).

One-way power gain normalised to 1 on boresight, as a function of the angle x off boresight and the
one-way -3 dB full width w:

* gaussian: g(x) = exp(-4 ln2 (x / w)^2)                     (no sidelobes)
* sinc:     g(x) = sinc^2(0.88589 x / w),  sinc(u) = sin(pi u) / (pi u)
            (uniformly illuminated aperture; first sidelobe -13.3 dB one-way, -26.5 dB two-way;
             Balanis, "Antenna Theory", 3rd ed., Sec. 12.5; 0.88589 = 2 x 0.44295, where sinc^2 = 1/2)
* cosec^2 (elevation, optional): below the lower -3 dB edge e0 of the main lobe the gain follows
  g(e0) (sin d0 / sin d)^2 for depression d below the horizon (Skolnik, "Radar Handbook", 3rd ed.,
  Sec. 6.7, cosecant-squared beams: constant received power from ground targets at one height).

A monostatic two-way pattern is g_tx(dir) g_rx(dir) = g(dir)^2: its -3 dB width is w / sqrt(2) for a
Gaussian and 0.7213 w for the sinc pattern. A bistatic (multipath) return arriving from another
direction gets g_tx(sent) g_rx(arrival). The pattern is applied exactly once, as a weight; the
sampling density is divided out (beam_sampling.py).
"""
from __future__ import annotations

import math

import numpy as np

SINC_HALF_POWER = 0.44295  # sinc(u)^2 = 1/2


def one_way(x: np.ndarray, width: float, shape: str) -> np.ndarray:
    """One-way power pattern at angle x (radians) for the one-way -3 dB full width (radians)."""
    x = np.asarray(x, np.float64)
    if shape == "gaussian":
        return np.exp(-4.0 * math.log(2.0) * (x / width) ** 2)
    if shape == "sinc":
        return np.sinc(2.0 * SINC_HALF_POWER * x / width) ** 2
    raise ValueError(f"unknown antenna pattern {shape!r}; allowed gaussian, sinc")


def elevation_one_way(e: np.ndarray, cfg) -> np.ndarray:
    """One-way elevation power pattern at elevation e (radians above the horizontal plane)."""
    width = math.radians(cfg.elevation_width_deg)
    tilt = math.radians(cfg.elevation_tilt_deg)
    g = one_way(np.asarray(e) - tilt, width, cfg.elevation_pattern)
    if cfg.cosec2:
        e0 = tilt - width / 2.0
        d0 = max(-e0, math.radians(1.0))
        depression = -np.asarray(e, np.float64)
        fill = 0.5 * (math.sin(d0) / np.sin(np.clip(depression, d0, math.pi / 2))) ** 2
        g = np.where(depression > d0, np.maximum(g, fill), g)
    return g


def gain(beta: np.ndarray, e: np.ndarray, cfg) -> np.ndarray:
    """One-way power pattern (peak 1) at azimuth offset beta and elevation e (radians)."""
    return one_way(beta, math.radians(cfg.azimuth_width_deg), cfg.azimuth_pattern) * elevation_one_way(e, cfg)


def two_way_width(width: float, shape: str) -> float:
    """-3 dB full width of the monostatic two-way pattern g^2 (numerically, same units as width)."""
    x = np.linspace(0.0, width, 200_001)
    g2 = one_way(x, width, shape) ** 2
    return 2.0 * float(np.interp(0.5, g2[::-1], x[::-1]))


def field_correlation(step: float, width: float, shape: str) -> float:
    """Correlation of the clutter fields of two beams `step` apart in azimuth: the normalised overlap of
    their two-way field patterns, int f(x) f(x + step) dx / int f^2 dx with f = g_tx^(1/2) g_rx^(1/2) = g.
    (Random scatterers: the field of a beam is the pattern-weighted sum of independent phasors.)"""
    x = np.linspace(-8.0 * width, 8.0 * width, 16_001)
    f = one_way(x, width, shape)
    f_shift = one_way(x + step, width, shape)
    return float(np.sum(f * f_shift) / np.sum(f * f))
