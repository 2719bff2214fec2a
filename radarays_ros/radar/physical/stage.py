"""The physical sensor stage: returns -> complex field per (azimuth, range bin) -> receiver -> counts.

    field = conv_range(sqrt(V) z + sqrt(N / enbw) n, K) + sum_glints a K(k - x) + leakage
    P = |field|^2 x 10^(-STC(R) / 10),  counts = log detector (0.5 dB per count, 8 bits)

V: expected clutter power per bin (clutter footprints spread over their range extent); z: unit speckle
field (speckle.py; 1 with scatter.speckle off, then the expected power is used instead of a draw);
n: unit white noise, N the thermal noise per bin (thermal_noise.py); K: range response taps
(range_response.py, peak 1, so a point reads its power at a bin centre and noise reads N after the
window). Glints and the Tx-Rx leakage are points at their exact (sub-bin) range. With fmcw.doppler the
ranges shift by the chirp's range-Doppler coupling (doppler.py).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.fft as sp_fft
from scipy.signal import oaconvolve

from . import antenna, detector, doppler, speckle, stc, thermal_noise
from .range_response import RangeKernel, range_kernel


@dataclass
class StageOutput:
    counts_f32: np.ndarray  # (A, B) float32 counts before rounding
    counts: np.ndarray  # (A, B) uint8
    power_w: np.ndarray  # (A, B) float32 power after STC
    velocity: np.ndarray | None  # (A, B) float32 power-weighted radial velocity (m/s) or None
    chirp_up: np.ndarray  # (A,) bool


def spread_power(azimuth, start_bin, end_bin, power, shape) -> np.ndarray:
    """(A, B) float64: each power spread uniformly over [start_bin, end_bin) (fractional bin units)."""
    a, b = shape
    if not len(power):
        return np.zeros(shape)
    density = power / np.maximum(end_bin - start_bin, 1e-9)
    lo, hi = np.clip(start_bin, 0, b), np.clip(end_bin, 0, b)
    ok = hi > lo
    azimuth, lo, hi, density = azimuth[ok], lo[ok], hi[ok], density[ok]
    i0 = np.minimum(np.floor(lo).astype(np.int64), b - 1)
    i1 = np.minimum(np.floor(hi).astype(np.int64), b - 1)
    row = azimuth.astype(np.int64) * (b + 1)  # rows of b + 1: the difference array's end marker fits
    same = i0 == i1
    # the partial first and last bins directly; whole bins between them through a difference array
    direct = np.bincount(np.concatenate([row + i0, row + i1]),
                         np.concatenate([np.where(same, density * (hi - lo), density * (i0 + 1 - lo)),
                                         np.where(same, 0.0, density * (hi - i1))]), minlength=a * (b + 1))
    inner = ~same & (i1 > i0 + 1)
    steps = np.bincount(np.concatenate([row[inner] + i0[inner] + 1, row[inner] + i1[inner]]),
                        np.concatenate([density[inner], -density[inner]]), minlength=a * (b + 1))
    out = steps.astype(np.float64, copy=False).reshape(a, b + 1)  # (bincount of no weights is integer)
    np.cumsum(out, axis=1, out=out)  # in place: these are 22 MB arrays
    out += direct.reshape(a, b + 1)
    np.maximum(out, 0.0, out=out)  # the running sum leaves -1e-30 round-off
    return out[:, :b]


def glint_taps(azimuth, position_bins, amplitude, kernel: RangeKernel, n_bins: int):
    """(rows, cols, values): every point's amplitude x the range response around its position (sparse)."""
    if not len(amplitude):
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.complex128)
    taps = np.arange(-kernel.half - 1, kernel.half + 2)
    k = np.floor(position_bins).astype(np.int64)[:, None] + taps[None, :]
    weight = kernel.at(k - (position_bins[:, None] - 0.5))  # bin k covers [k, k+1): its centre is k + 0.5
    ok = (k >= 0) & (k < n_bins) & (weight != 0)
    rows = np.broadcast_to(np.asarray(azimuth, np.int64)[:, None], k.shape)[ok]
    return rows, k[ok], (amplitude[:, None] * weight)[ok]


def convolve_range(field: np.ndarray, taps: np.ndarray) -> np.ndarray:
    """Each row convolved with the symmetric taps (same length), single-precision FFT on two threads.
    Its round-off sits ~140 dB under a row's strongest clutter, below the 127.5 dB an 8-bit Navtech image
    spans (point targets are added after, exactly)."""
    half = len(taps) // 2
    n = sp_fft.next_fast_len(field.shape[1] + len(taps) - 1)
    spectrum = sp_fft.fft(field, n=n, axis=1, workers=2)
    spectrum *= sp_fft.fft(taps.astype(np.complex64), n=n, workers=2)[None, :]
    out = sp_fft.ifft(spectrum, axis=1, workers=2, overwrite_x=True)
    return out[:, half:half + field.shape[1]]


def run_stage(clutter, glints, cfg, rng: np.random.Generator) -> StageOutput:
    a, b = cfg.azimuth.count, cfg.range.n_bins
    bin_m, offset = cfg.range.resolution, cfg.range.offset
    fm, rx = cfg.fmcw, cfg.receiver
    kernel = range_kernel(fm.window, fm.bandwidth_hz, bin_m, fm.response_half_width)
    signs = doppler.chirp_signs(a, fm.chirp)
    near, far, g_range = clutter.near_m, clutter.far_m, glints.range_m
    if fm.doppler:
        c_shift = doppler.range_shift(clutter.velocity, signs[clutter.azimuth], fm.carrier_hz, fm.chirp_time_s, fm.bandwidth_hz)
        near, far = near + c_shift, far + c_shift
        g_range = g_range + doppler.range_shift(glints.velocity, signs[glints.azimuth], fm.carrier_hz, fm.chirp_time_s, fm.bandwidth_hz)
    start, end = (near - offset) / bin_m, (far - offset) / bin_m
    variance = spread_power(clutter.azimuth, start, end, clutter.power_w, (a, b))
    g_amp, g_pos, g_az = glints.amplitude, (g_range - offset) / bin_m, glints.azimuth
    if rx.leakage_dbm is not None:
        leak = math.sqrt(10.0 ** ((rx.leakage_dbm - 30.0) / 10.0))
        g_amp = np.concatenate([g_amp, np.full(a, leak, np.complex128)])
        g_pos = np.concatenate([g_pos, np.full(a, (rx.leakage_range_m - offset) / bin_m)])
        g_az = np.concatenate([g_az, np.arange(a)])
    noise = thermal_noise.noise_power_w(rx, fm)
    visible = np.abs(g_amp) ** 2 > 1e-4 * noise  # points 40 dB under the noise floor change nothing
    point_taps = glint_taps(g_az[visible], g_pos[visible], g_amp[visible], kernel, b)
    if cfg.scatter.speckle:
        rho = 0.0
        white = np.float32(noise / kernel.enbw_bins)  # pre-window noise per bin: N per bin after the window
        total = variance.astype(np.float32)
        total += white
        if cfg.scatter.azimuth_correlation and a > 1:
            rho = antenna.field_correlation(math.radians(abs(cfg.azimuth.step_deg)),
                                            math.radians(cfg.antenna.azimuth_width_deg), cfg.antenna.azimuth_pattern)
            rho = np.float32(rho) * (1.0 - white / total)  # = rho V / (V + N)
        z = speckle.unit_field(rng, (a, b), rho)
        z *= np.sqrt(total)
        field = convolve_range(z, kernel.taps)
        rows, cols, values = point_taps
        np.add.at(field, (rows, cols), values.astype(np.complex64))
        power = np.square(field.real) + np.square(field.imag)
    else:  # expected power: E|points + clutter + noise|^2
        points = np.zeros((a, b), np.complex128)
        np.add.at(points, point_taps[:2], point_taps[2])
        power = (oaconvolve(variance, kernel.taps[None, :] ** 2, mode="same", axes=1) + noise
                 + np.abs(points) ** 2).astype(np.float32)
    centres = offset + (np.arange(b) + 0.5) * bin_m
    power *= (10.0 ** (-stc.attenuation_db(centres, rx.stc_range_m, rx.stc_max_db) / 10.0)).astype(np.float32)[None, :]
    counts = detector.counts_float(power, rx.zero_dbm, rx.db_per_count)
    velocity = None
    if fm.velocity_channel:
        weight = spread_power(clutter.azimuth, start, end, clutter.power_w * clutter.velocity, (a, b))
        g_w = np.abs(glints.amplitude) ** 2
        cell = np.clip(np.floor((g_range - offset) / bin_m).astype(np.int64), 0, b - 1)
        flat = glints.azimuth * b + cell
        total_w = variance.reshape(-1) + np.bincount(flat, g_w, minlength=a * b)
        total_v = weight.reshape(-1) + np.bincount(flat, g_w * glints.velocity, minlength=a * b)
        velocity = np.where(total_w > 0, total_v / np.maximum(total_w, 1e-300), 0.0).reshape(a, b).astype(np.float32)
    return StageOutput(counts, detector.quantise(counts), power, velocity, signs > 0)
