"""Receiver compression: a beat signal clipped at the ADC's full scale, and where its energy goes.

A hard limiter at +-C on a sinusoid of amplitude A > C (u = C / A, a = asin u) keeps the waveform up to
phase a and holds C beyond it; over a period (Davenport and Root, "Random Signals and Noise", 1958,
Ch. 13, hard and soft limiters; any nonlinear-distortion text):
    mean square  m = (2 / pi) [A^2 (a / 2 - sin(2a) / 4) + C^2 (pi / 2 - a)]
    fundamental  b1 = (4 / pi) [A (a / 2 - sin(2a) / 4) + C cos a]
    distortion   D = m - b1^2 / 2      (power in the harmonics)
The fundamental reads (b1 / A)^2 of its input power (gain compression). The harmonics of an FMCW beat
tone at k f_b fold about the ADC's Nyquist frequency and are smeared by the chirp's nonlinearity and
phase noise, so the distortion is spread over the whole range line: the radial spokes of a saturating
target. Modelled as white over the N real samples of a chirp: per range bin (bandwidth 1 / T), with the
row's input tone power P (W, as it reads at its peak bin),
    D_bin = P (D / (A^2 / 2)) 2 / N
since white noise of variance s^2 reads s^2 2 / (f_s T) = s^2 2 / N per bin against a tone of power A^2 / 2.
"""
from __future__ import annotations

import numpy as np


def clipped_sine(ratio) -> tuple[np.ndarray, np.ndarray]:
    """(fundamental power gain (b1 / A)^2, distortion D / (A^2 / 2)) of a sine of power `ratio` times the
    full-scale sine's (A^2 / C^2 = ratio); (1, 0) where ratio <= 1."""
    x = np.asarray(ratio, np.float64)
    big = x > 1.0
    if not big.any():  # (1, 0) everywhere, as the lines below give then: a dozen passes saved (most row blocks)
        return np.ones_like(x), np.zeros_like(x)
    u = np.where(big, 1.0 / np.sqrt(np.maximum(x, 1.0)), 1.0)  # C / A
    a = np.arcsin(u)
    part = a / 2.0 - np.sin(2.0 * a) / 4.0
    mean_square = (2.0 / np.pi) * (part + u ** 2 * (np.pi / 2.0 - a))  # in units of A^2
    b1 = (4.0 / np.pi) * (part + u * np.cos(a))  # in units of A
    gain = np.where(big, b1 ** 2, 1.0)
    distortion = np.where(big, np.maximum(mean_square - b1 ** 2 / 2.0, 0.0) / 0.5, 0.0)
    return gain, distortion


def distortion_per_bin(tone_w, full_scale_w: float, samples: int) -> tuple[np.ndarray, np.ndarray]:
    """(gain, D_bin W) of rows whose summed tone power at the ADC is tone_w (W): the fundamental's power
    gain and the distortion power per range bin (zero for rows under full scale)."""
    tone_w = np.asarray(tone_w, np.float64)
    gain, distortion = clipped_sine(tone_w / full_scale_w)
    return gain, tone_w * distortion * 2.0 / samples
