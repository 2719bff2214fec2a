"""The receiver as the chain it is: what is shaped by which stage, in order.

    antenna -> mixer:   signals (clutter, glints, leakage) + leakage phase-noise skirt S(R) (phase_noise.py)
                        [+ every return's own skirt along its azimuth when receiver.phase_noise_targets]
                        [+ thermal noise N here when receiver.thermal_noise_at = input]
    IF filters:         x G(R) = STC(R) |H_hp(R)|^2 |H_lp(R)|^2   (stc.py, if_filters.py)
    IF amplifier:       + thermal noise N = k T F / T_chirp (thermal_noise.py) when thermal_noise_at = if
    ADC:                clipping at full scale: gain compression g and distortion D spread over the range
                        line (clipping.py)
    range FFT, |.|^2:   log detector, 0.5 dB per count (detector.py)

So per range bin the expected power of a noise-only image is
    E P(R) = G(R) (S(R) + [S_returns,row(R)] + [N]_input) + [N]_if + D_row
(each term independent, circular Gaussian), and a signal of received power P at range R reads
g_row G(R) P at its peak. With thermal noise at the IF (after the filters) the near range keeps its
ordinary noise: the high-pass attenuates targets and the skirt there, not the amplifier's own noise.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import clipping, if_filters, phase_noise, stage_loops, stc, thermal_noise
from .range_response import resolution


@dataclass(frozen=True)
class Chain:
    gain: np.ndarray  # (B,) G(R): power gain of the IF filters (and STC) at each bin centre
    pre_noise: np.ndarray  # (B,) noise power per bin before the filters (skirt, [thermal])
    post_noise: float  # noise power per bin after the filters ([thermal])
    thermal: float  # N, k T F / T per bin
    full_scale_w: float | None  # input power of a tone that reaches ADC full scale (None: no clipping)
    samples: int  # real ADC samples per chirp
    skirts: "Skirts | None" = None  # the returns' own phase-noise skirts (None: the leakage's only)

    @property
    def floor(self) -> np.ndarray:
        """(B,) expected noise power per bin after the chain, before any distortion."""
        return self.gain * self.pre_noise + self.post_noise

    def clip(self, tone_w) -> tuple[np.ndarray, np.ndarray]:
        """(gain, distortion per bin) of rows whose tones sum to tone_w at the ADC (clipping.py)."""
        tone_w = np.asarray(tone_w, np.float64)
        if self.full_scale_w is None:
            return np.ones_like(tone_w), np.zeros_like(tone_w)
        return clipping.distortion_per_bin(tone_w, self.full_scale_w, self.samples)


CELL_M = 1.0  # the returns' skirts are summed on cells of this size (the skirt is smooth beyond its source's cell)


@dataclass(frozen=True)
class Skirts:
    """The phase-noise skirts of returns (phase_noise.skirt_per_watt), summed on coarse range cells:
    S(row, cell j) = sum_i P(row, cell i) K[i, j], then interpolated linearly to the bins. K is 0 for
    the source's own and neighbouring cells (there the return's own range response dominates) and for
    sources nearer than `first_m` (the leakage, whose skirt the chain holds already)."""
    kernel: np.ndarray  # (C, C) W per bin per W of source
    cell_of_bin: np.ndarray  # (B,) coarse cell of each bin (for summing sources)
    lo: np.ndarray  # (B,) the cells each bin centre is interpolated from, linearly: (1 - weight) S[lo] + weight S[hi]
    hi: np.ndarray
    weight: np.ndarray

    def of_sources(self, power_cells: np.ndarray) -> np.ndarray:
        """(rows, B) float32 skirt power per bin of (rows, C) source powers (one compiled pass: the product over
        the source cells that hold power, then the interpolation to the bins; stage_loops.skirt_power)."""
        return stage_loops.skirt_power(power_cells, self.kernel, self.lo, self.hi, self.weight)

    def cells(self, bin_power: np.ndarray) -> np.ndarray:
        """(rows, C) sums over each cell of (rows, J <= B) powers per bin."""
        return stage_loops.cell_sums(bin_power, self.cell_of_bin, self.kernel.shape[0])

    def running_cells(self, steps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(rows, J) powers per bin of a difference array (stage.running_power, in place) and their cells
        (rows, C) as `cells` sums them, in one pass (stage_loops.running_sum_cells)."""
        cells = stage_loops.running_sum_cells(steps, self.cell_of_bin, self.kernel.shape[0])
        return steps[:, :-1], cells


def _skirts(cfg, centres: np.ndarray) -> Skirts:
    rx, fm = cfg.receiver, cfg.fmcw
    offset = cfg.range.offset
    reach = float(centres[-1]) + 0.5 * cfg.range.resolution
    n = max(1, int(math.ceil((reach - offset) / CELL_M)))
    mid = offset + (np.arange(n) + 0.5) * CELL_M
    kernel = phase_noise.skirt_per_watt(mid[None, :], mid[:, None], rx.phase_noise_dbc_hz, rx.phase_noise_offset_hz,
                                        rx.flicker_corner_hz, fm.bandwidth_hz, fm.chirp_time_s)
    near = np.abs(np.arange(n)[:, None] - np.arange(n)[None, :]) <= 1
    kernel[near] = 0.0
    if rx.leakage_dbm is not None:
        kernel[mid < rx.leakage_range_m + 0.5 * rx.leakage_spread_m + CELL_M] = 0.0
    cell_of_bin = np.minimum(((centres - offset) / CELL_M).astype(np.int64), n - 1)
    position = np.clip((centres - offset) / CELL_M - 0.5, 0.0, n - 1)
    lo = np.minimum(position.astype(np.int64), n - 1)
    return Skirts(kernel, cell_of_bin, lo, np.minimum(lo + 1, n - 1), position - lo)


def dbm_to_w(dbm: float) -> float:
    return 10.0 ** ((dbm - 30.0) / 10.0)


def is_plain(rx) -> bool:
    """True for a receiver without any chain stage beyond STC and thermal noise at the input (the stage's
    earlier model, kept bit for bit)."""
    return (rx.thermal_noise_at == "input" and rx.phase_noise_dbc_hz is None and rx.highpass_range_m <= 0
            and rx.lowpass_range_m <= 0 and rx.full_scale_dbm is None and rx.leakage_spread_m <= 0)


def adc_samples(cfg) -> int:
    """Real samples per chirp: receiver.adc_samples, else Nyquist at the last bin: 2 R_max / (c / 2B)."""
    if cfg.receiver.adc_samples is not None:
        return int(cfg.receiver.adc_samples)
    reach = cfg.range.offset + cfg.range.n_bins * cfg.range.resolution
    return max(2, int(math.ceil(2.0 * reach / resolution(cfg.fmcw.bandwidth_hz))))


def gain_at(cfg, range_m) -> np.ndarray:
    """G(R) = STC x high-pass x low-pass power gain at any ranges (m)."""
    rx = cfg.receiver
    r = np.asarray(range_m, np.float64)
    return (10.0 ** (-stc.attenuation_db(r, rx.stc_range_m, rx.stc_max_db) / 10.0)
            * if_filters.highpass_gain(r, rx.highpass_range_m, rx.highpass_order)
            * if_filters.lowpass_gain(r, rx.lowpass_range_m, rx.lowpass_order))


def build(cfg, centres: np.ndarray) -> Chain:
    """The chain of a config at range-bin centres (m)."""
    rx, fm = cfg.receiver, cfg.fmcw
    n = thermal_noise.noise_power_w(rx, fm)
    gain = gain_at(cfg, centres)
    pre = np.zeros(len(centres))
    if rx.phase_noise_dbc_hz is not None and rx.leakage_dbm is not None:
        pre = pre + phase_noise.leakage_skirt_w(centres, dbm_to_w(rx.leakage_dbm), rx.leakage_range_m,
                                                rx.phase_noise_dbc_hz, rx.phase_noise_offset_hz,
                                                rx.flicker_corner_hz, fm.bandwidth_hz, fm.chirp_time_s)
    post = 0.0
    if rx.thermal_noise_at == "input":
        pre = pre + n
    else:
        post = n
    full = None if rx.full_scale_dbm is None else dbm_to_w(rx.full_scale_dbm)
    skirts = _skirts(cfg, centres) if rx.phase_noise_targets and rx.phase_noise_dbc_hz is not None else None
    return Chain(gain, pre, post, n, full, adc_samples(cfg), skirts)
