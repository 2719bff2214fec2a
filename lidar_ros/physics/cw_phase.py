"""Continuous-wave (amplitude-modulated) phase ranging with two frequencies (Heiden et al., ICRA 2020,
§III-B, after the Hokuyo URG-04LX).

A wave modulated at f returns from range R with phase ΔΦ = 4π·f·R/c (mod 2π), so
R = (1/4π)·(c/f)·ΔΦ is known only up to c/(2f) (3.22 m at f1 = 46.55 MHz). The phase is estimated from
samples of the received waveform s(t_i) = Σ_j A_j·cos(2π f t_i − ΔΦ_j) (every return of the beam adds
up before the phase is measured: mixed pixels and glass/mirror effects follow), by the discrete Fourier
estimate Φ = atan2(Σ s_i sin θ_i, Σ s_i cos θ_i), θ_i = 2π f t_i, over whole periods (here four samples
per period, the usual four-bucket demodulation, for `periods` periods; Heiden: 15 periods).
Two frequencies resolve the ambiguity: the wrap counts n1, n2 with R1 = c/(2 f1)·(Φ1/2π + n1) closest
to R2 = c/(2 f2)·(Φ2/2π + n2) within the combined unambiguous range c/(2|f1 − f2|) (22.5 m); the range
is their mean.
Radiance-dependent bias (Heiden eq. for the measured phase): ΔΦ' = ΔΦ − (a·L² + b·L + c), L the
received radiance: dark surfaces read closer or farther than bright ones (a staircase on a checkerboard).
"""
from __future__ import annotations

import numpy as np

from .backfolding import SPEED_OF_LIGHT

HOKUYO_FREQUENCIES_HZ = (46.55e6, 53.2e6)
SAMPLES_PER_PERIOD = 4


def phase_of(ranges: np.ndarray, frequency_hz: float) -> np.ndarray:
    """ΔΦ = 4π f R / c, wrapped to [0, 2π)."""
    return np.mod(4.0 * np.pi * frequency_hz * np.asarray(ranges, np.float64) / SPEED_OF_LIGHT, 2.0 * np.pi)


def estimate_phase(ranges: np.ndarray, amplitudes: np.ndarray, frequency_hz: float, periods: int = 15,
                   bias=(0.0, 0.0, 0.0), radiance: np.ndarray | None = None, sample_sigma: float = 0.0,
                   rng: np.random.Generator | None = None) -> np.ndarray:
    """(N,) measured phase in [0, 2π) of beams whose returns are ranges/amplitudes (N, J) (amplitude 0 = none).

    The waveform of every beam is sampled at θ_i = 2π i / SAMPLES_PER_PERIOD over `periods` periods, with
    Gaussian sample noise of std sample_sigma (needs rng), then the DFT estimate; then the radiance bias."""
    r = np.atleast_2d(np.asarray(ranges, np.float64))
    a = np.atleast_2d(np.asarray(amplitudes, np.float64))
    delta = np.where(a > 0, 4.0 * np.pi * frequency_hz * np.where(a > 0, r, 0.0) / SPEED_OF_LIGHT, 0.0)
    theta = 2.0 * np.pi * np.arange(SAMPLES_PER_PERIOD * periods) / SAMPLES_PER_PERIOD
    # s_i = Σ_j A_j cos(θ_i − ΔΦ_j), one row per beam
    samples = np.einsum("nj,nji->ni", a, np.cos(theta[None, None, :] - delta[:, :, None]))
    if sample_sigma > 0:
        samples = samples + rng.normal(0.0, sample_sigma, samples.shape)
    phase = np.arctan2(samples @ np.sin(theta), samples @ np.cos(theta))
    if radiance is not None and any(bias):
        a2, b1, c0 = bias
        lum = np.asarray(radiance, np.float64)
        phase = phase - (a2 * lum**2 + b1 * lum + c0)
    return np.mod(phase, 2.0 * np.pi)


def unwrap_two(phase1: np.ndarray, phase2: np.ndarray, f1: float, f2: float) -> np.ndarray:
    """Range from two wrapped phases: the wrap counts whose ranges agree best, averaged (m)."""
    u1, u2 = SPEED_OF_LIGHT / (2 * f1), SPEED_OF_LIGHT / (2 * f2)
    reach = SPEED_OF_LIGHT / (2 * abs(f1 - f2))
    n1 = np.arange(int(np.ceil(reach / u1)) + 1)
    n2 = np.arange(int(np.ceil(reach / u2)) + 1)
    r1 = u1 * (np.asarray(phase1)[:, None] / (2 * np.pi) + n1[None, :])  # (N, n1)
    r2 = u2 * (np.asarray(phase2)[:, None] / (2 * np.pi) + n2[None, :])  # (N, n2)
    gap = np.abs(r1[:, :, None] - r2[:, None, :])
    gap[(r1 >= reach)[:, :, None] | (r2 >= reach)[:, None, :]] = np.inf  # one answer within the combined range
    best = gap.reshape(len(r1), -1).argmin(axis=1)
    i, j = np.divmod(best, len(n2))
    rows = np.arange(len(r1))
    return 0.5 * (r1[rows, i] + r2[rows, j])


def cw_ranges(ranges: np.ndarray, amplitudes: np.ndarray, frequencies_hz=HOKUYO_FREQUENCIES_HZ, periods: int = 15,
              bias=(0.0, 0.0, 0.0), radiance: np.ndarray | None = None, sample_sigma: float = 0.0,
              rng: np.random.Generator | None = None) -> np.ndarray:
    """Measured ranges (N,) of beams with returns ranges/amplitudes (N, J): both phases, then unwrapping."""
    f1, f2 = frequencies_hz
    p1, p2 = (estimate_phase(ranges, amplitudes, f, periods, bias, radiance, sample_sigma, rng) for f in (f1, f2))
    return unwrap_two(p1, p2, f1, f2)
