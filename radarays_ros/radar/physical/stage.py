"""The physical sensor stage: returns -> complex field per (azimuth, range bin) -> receiver -> counts.

    field = conv_range(sqrt(V) z + sqrt(N / enbw) n, K) + sum_glints a K(k - x) + leakage
    P = |field|^2 x 10^(-STC(R) / 10),  counts = log detector (0.5 dB per count, 8 bits)

That is the plain receiver (thermal noise at the input, STC on everything). A receiver with any chain
stage (receiver_chain.py: phase-noise skirts, IF filters, thermal noise after them, ADC clipping, leakage
plateau) runs _chain_stage: the same draws, with the clutter scaled by the chain's signal gain over its
noise before the range response, the field by the chain's noise over range (per azimuth: clipping and
skirts) after it, and the points by the filters at their range.

V: expected clutter power per bin (clutter footprints spread over their range extent); z: unit speckle
field (speckle.py; 1 with scatter.speckle off, then the expected power is used instead of a draw);
n: unit white noise, N the thermal noise per bin (thermal_noise.py); K: range response taps
(range_response.py, peak 1, so a point reads its power at a bin centre and noise reads N after the
window). Glints and the Tx-Rx leakage are points at their exact (sub-bin) range. With fmcw.doppler the
ranges shift by the chirp's range-Doppler coupling (doppler.py).

Cost: a Navtech frame is 2.7 M cells for some 10^5 returns, so clutter and noise are drawn apart, each
where it matters: clutter only up to the last range where it comes within 40 dB of the noise, white noise
straight in the range spectrum on the frequencies the window passes; every full-image step is float32
and in place. Rows are worked in blocks of ROWS_PER_SEED, one task per block on a small thread pool
(numpy and pocketfft release the GIL): the block sums its clutter, draws, continues the azimuth
correlation from the block before (the one wait between tasks), transforms and detects. Each block draws
from its own generator, seeded from the frame's, so the bytes do not depend on the thread count.
"""
from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import scipy.fft as sp_fft
from scipy.signal import oaconvolve

from ...threads import run_all, thread_count
from . import antenna, detector, doppler, receiver_chain, speckle, stage_loops, stc, thermal_noise
from .range_response import RangeKernel, range_kernel


ROWS_PER_SEED = 25  # azimuth rows per block: each block has its own seeded generator and is one thread task
CLUTTER_FLOOR = 1e-4  # clutter 40 dB under the noise per bin changes nothing (< 0.0005 dB): not drawn past the last above
NOISE_LOST = 1e-6  # noise power left out of the spectral draw (-60 dB)
STAGE_THREADS = 8  # at most, where the run names no thread count


@dataclass
class StageOutput:
    counts_f32: np.ndarray  # (A, B) float32 counts before rounding
    counts: np.ndarray  # (A, B) uint8
    power_w: np.ndarray  # (A, B) float32 power after STC
    velocity: np.ndarray | None  # (A, B) float32 power-weighted radial velocity (m/s) or None
    chirp_up: np.ndarray  # (A,) bool


def power_steps(azimuth, start_bin, end_bin, power, shape) -> np.ndarray:
    """(A, J + 1) float64 difference array of the powers spread uniformly over [start_bin, end_bin)
    (fractional bin units): its running sum along each row is occupied_power. J <= B: the columns up to
    the last that holds any power (all later columns are zero). Signed "powers" too (the velocity channel
    spreads power x velocity); returns of zero power or empty extent add nothing.

    Bin i0 = floor(start) holds density x (i0 + 1 - start), bins i0+1 .. i1-1 the density, bin i1 = floor(end)
    density x (end - i1) (one bin: density x (end - start)), density = power / (end - start), both ends
    clipped to [0, B]; summed as four difference passes (stage_loops.py, compiled)."""
    return stage_loops.power_steps(azimuth, start_bin, end_bin, power, shape)


def running_power(steps: np.ndarray, signed: bool = False) -> np.ndarray:
    """The powers of a difference array (power_steps), in place: (rows, J) float64. Summed in float64:
    strong near returns cancel to ~1e-16 of themselves, far under the noise. signed: values that may be
    negative (power x velocity), else the -1e-30 round-off of the running sum is cut to 0."""
    stage_loops.running_sum(steps, signed)  # np.cumsum along rows, then np.maximum(., 0): one compiled pass
    return steps[:, :-1]


def occupied_power(azimuth, start_bin, end_bin, power, shape, signed: bool = False) -> np.ndarray:
    """(A, J) float64, J <= B: each power spread uniformly over [start_bin, end_bin) (fractional bin
    units), cut after the last column that holds any (all later columns are zero)."""
    return running_power(power_steps(azimuth, start_bin, end_bin, power, shape), signed)


def spread_power(azimuth, start_bin, end_bin, power, shape, signed: bool = False) -> np.ndarray:
    """(A, B) float64: occupied_power over every column."""
    occupied = occupied_power(azimuth, start_bin, end_bin, power, shape, signed)
    out = np.zeros(shape)
    out[:, :occupied.shape[1]] = occupied
    return out


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


@lru_cache(maxsize=16)
def _taps_spectrum(taps: tuple, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(rfft of the taps over n points (complex64), the band of frequencies that holds all but NOISE_LOST
    of the window's noise power: white noise filtered by the taps has no power elsewhere worth a draw)."""
    spectrum = sp_fft.rfft(np.asarray(taps, np.float64), n)
    power = np.abs(spectrum) ** 2
    power[1:(n + 1) // 2] *= 2.0  # one-sided: the other half mirrors these
    order = np.argsort(power)[::-1]
    kept = order[:np.searchsorted(np.cumsum(power[order]), (1.0 - NOISE_LOST) * power.sum()) + 1]
    return spectrum.astype(np.complex64), slice(int(kept.min()), int(kept.max()) + 1)  # (a band: a low-pass)


def _fft_length(n_bins: int, taps: np.ndarray) -> int:
    return sp_fft.next_fast_len(n_bins + len(taps) - 1, real=True)


def _parallel(task, items, workers: int | None = None) -> list:
    """task(item) for every item, on a small thread pool of this process (inline for one item or one
    worker). `workers`: the pool's size, the tracing threads of the run (`radarays batch --threads`), else
    the cores this process may use, at most STAGE_THREADS. The pools are the kept "frame" pools of
    radarays_ros/threads.py (one per size, a forked worker makes its own)."""
    return run_all("frame", task, items, thread_count(workers, cap=STAGE_THREADS))


def _rows_of(azimuth: np.ndarray, a: int, make):
    """clutter_steps(k0, k1) for _speckled_frame: make(selection, k0, k1) on the returns of rows k0..k1-1
    (blocks of ROWS_PER_SEED), in their order. Each block's difference array is then summed in its own
    task, bin by bin in the same order as over the whole frame: the same floats."""
    # the returns in block order, each block's in their order (a stable sort by block: one compiled counting pass)
    order, bounds = stage_loops.stable_by_block(azimuth, ROWS_PER_SEED, (a + ROWS_PER_SEED - 1) // ROWS_PER_SEED)
    return lambda k0, k1: make(order[bounds[k0 // ROWS_PER_SEED]:bounds[k0 // ROWS_PER_SEED + 1]], k0, k1)


def _sorted_points(point_taps):
    rows, cols, values = point_taps
    order = np.argsort(rows, kind="stable")
    return rows[order], cols[order], values[order].astype(np.complex64)


def _noise_spectrum(rng, rows: int, n: int, white: float, spectrum, support: slice) -> tuple[np.ndarray, np.ndarray]:
    """(re, im) planes' rfft spectra of white noise of `white` per bin (a unit circular Gaussian per bin:
    N(0, 1/2) per part) filtered by the taps, on the `support` band only: (rows, width) each, the spectrum's
    columns support (zero elsewhere; the caller adds them there).
    The rfft of n real N(0, s2) samples is real N(0, n s2) at 0 (and n/2), circular with n s2 elsewhere."""
    width = support.stop - support.start
    re, im = speckle.unit_parts(rng, (rows, 2 * width))
    band = np.arange(support.start, support.stop)
    real = (band == 0) | (2 * band == n)  # frequency 0 and, for even n, n/2: real for real samples
    gain = np.float32(math.sqrt(n * white / 2.0)) * spectrum[support]
    out = []
    for k in range(2):
        part = slice(k * width, (k + 1) * width)
        values = np.empty((rows, width), np.complex64)
        values.real, values.imag = re[:, part], im[:, part]
        values[:, real] = re[:, part][:, real] * np.float32(math.sqrt(2.0))  # real N(0, 1) there
        values *= gain
        out.append(values)
    return out[0], out[1]


def _full_spectrum(band: np.ndarray, n: int, support: slice) -> np.ndarray:
    """(rows, n // 2 + 1) complex64: the band's values at the columns support, zero elsewhere."""
    full = np.zeros((band.shape[0], n // 2 + 1), np.complex64)
    full[:, support] = band
    return full


def _speckled_frame(clutter_steps, white, rho, kernel: RangeKernel, points, receive, shape, rng,
                    workers: int | None = None, shaping=None) -> np.ndarray:
    """(A, B) float32 |conv_range(sqrt(V) z + sqrt(white) n, K) + points|^2, each block of rows then
    handed to receive(rows, power) (clutter_steps(k0, k1): power_steps of the clutter power V on rows k0..k1-1).

    Clutter and noise are drawn apart, so that each costs what it covers. Clutter: sqrt(V) z on the
    columns up to the block's last with clutter above CLUTTER_FLOOR x the noise, z correlated over
    azimuth (speckle.correlate_rows_beam), then into the range spectrum. Noise: white, so drawn straight in
    the range spectrum, on the frequencies the window passes (a quarter of them for Navtech bins).
    One inverse FFT per plane gives the field; points are added exactly; receive.
    shaping (the receiver chain, None: none): shaping(k0, k1, steps) -> (clutter, (s_sig, s_post, s_pts)) of the
    block's rows, from the clutter's difference array (the clutter power V: running_power of it): the clutter
    amplitude is scaled by s_sig before the range response, the field after it by s_post (the noise, drawn
    white, becomes the chain's noise over range), the points by s_pts per row (their chain gain over range is
    in their amplitudes already)."""
    a, b = shape
    n = _fft_length(b, kernel.taps)
    spectrum, support = _taps_spectrum(tuple(kernel.taps), n)
    half = len(kernel.taps) // 2
    blocks = [(k, min(k + ROWS_PER_SEED, a)) for k in range(0, a, ROWS_PER_SEED)]
    seeds = rng.integers(0, 2**63 - 1, size=len(blocks))
    p_rows, p_cols, p_values = points
    last_rows: list = [None] * len(blocks)  # each block's last clutter row, once correlated
    correlated = [threading.Event() for _ in blocks]
    power = np.empty(shape, np.float32)

    def draw(i):
        k0, k1 = blocks[i]
        block_rng = np.random.default_rng(seeds[i])
        scales = None
        if shaping is None:
            clutter = running_power(clutter_steps(k0, k1))
        else:
            clutter, scales = shaping(k0, k1, clutter_steps(k0, k1))
        # the clutter amplitude sqrt(clutter x s_sig^2) (s_sig: the chain over the noise's scale) is drawn up to the
        # last column with any row above CLUTTER_FLOOR x the noise (stage_loops.clutter_width), and formed in finish
        width = stage_loops.clutter_width(clutter, None if scales is None else scales[0], CLUTTER_FLOOR * white)
        re, im = speckle.unit_parts(block_rng, (k1 - k0, width))
        return re, im, clutter, _noise_spectrum(block_rng, k1 - k0, n, white, spectrum, support), scales

    def correlate(i, re, im):  # waits for the block before: the one link between the blocks
        if rho[0] > 0:
            previous = None
            if i:
                correlated[i - 1].wait()
                if last_rows[i - 1] is None:
                    raise RuntimeError("the row block before failed")
                previous = last_rows[i - 1]
            _correlate_rows_after(re, im, rho, previous)
        last_rows[i] = [(re[k].copy(), im[k].copy()) for k in range(max(len(re) - 2, 0), len(re))]

    def finish(i, re, im, clutter, noise, scales):
        k0, k1 = blocks[i]
        planes = []
        # the field x its amplitude sqrt(clutter x s_sig^2), in the transform's zero-padded rows (one compiled pass)
        amplified = (None, None)
        if re.shape[1]:
            amplified = stage_loops.amplified_rows(re, im, clutter, None if scales is None else scales[0], n)
        for padded, band in zip(amplified, noise):
            if padded is not None:  # the clutter's spectrum through the taps, plus the noise on its band
                field = sp_fft.rfft(padded, axis=1)
                field *= spectrum
                field[:, support] += band
            else:
                field = _full_spectrum(band, n, support)
            planes.append(sp_fft.irfft(field, n, axis=1, overwrite_x=True))  # (the block's bins: columns half..)
        re, im = planes
        lo, hi = np.searchsorted(p_rows, [k0, k1])
        at = (p_rows[lo:hi] - k0, p_cols[lo:hi])
        values = p_values[lo:hi]
        if scales is not None:
            values = values * scales[2][np.minimum(at[0], len(scales[2]) - 1)]
        out = power[k0:k1]  # planes x s_post, + points, |.|^2: one compiled pass (stage_loops.py)
        stage_loops.finish_rows(re, im, None if scales is None else scales[1], at[0], at[1], values.real, values.imag,
                                out, first=half)
        receive(slice(k0, k1), out)

    def block(i):  # tasks start in order, so the block a task waits for is done or running
        try:
            re, im, clutter, noise, scales = draw(i)
            correlate(i, re, im)
        finally:  # set also on failure (last_rows[i] stays None): the next block must not wait for ever
            correlated[i].set()
        finish(i, re, im, clutter, noise, scales)

    _parallel(block, range(len(blocks)), workers)
    return power


def _correlate_rows_after(re, im, rho: tuple[float, float], previous) -> None:
    """The azimuth autoregression of a block's clutter field (speckle.correlate_rows_beam, rho: the beam
    overlap at one and two azimuth steps): its first rows continue `previous` (the last (re, im) rows of
    the block before, oldest first; None for the first block) where those have clutter columns; the other
    columns start afresh."""
    shared = min(previous[-1][0].shape[0], re.shape[1]) if previous else 0
    if shared:
        speckle.correlate_rows_beam(re[:, :shared], im[:, :shared], rho, [(r[:shared], i[:shared]) for r, i in previous])
    if re.shape[1] > shared:
        speckle.correlate_rows_beam(re[:, shared:], im[:, shared:], rho)


def beam_correlation(cfg) -> tuple[float, float]:
    """(rho1, rho2): the clutter field's correlation between beams one and two azimuth steps apart (the
    two-way pattern overlap, antenna.field_correlation); (0, 0) without scatter.azimuth_correlation."""
    if not cfg.scatter.azimuth_correlation or cfg.azimuth.count <= 1:
        return 0.0, 0.0
    step, width = math.radians(abs(cfg.azimuth.step_deg)), math.radians(cfg.antenna.azimuth_width_deg)
    return _overlaps(step, width, cfg.antenna.azimuth_pattern)


@lru_cache(maxsize=16)
def _overlaps(step: float, width: float, shape: str) -> tuple[float, float]:
    """antenna.field_correlation at one and two steps: the config's alone, so computed once per config, not per
    frame (two sums over 16001 pattern samples: 1 ms of a frame)."""
    return tuple(antenna.field_correlation(m * step, width, shape) for m in (1, 2))


@lru_cache(maxsize=8)
def _chain_of(cfg):
    """(bin centres, receiver_chain.build at them, its floor, gain and sqrt(gain) as float32): the config's alone,
    so built once per config, not per frame (the skirt kernel alone took 2 ms of a ras6 frame). Its arrays are
    made read-only: every frame of the config shares them."""
    b, bin_m, offset = cfg.range.n_bins, cfg.range.resolution, cfg.range.offset
    centres = offset + (np.arange(b) + 0.5) * bin_m
    chain = receiver_chain.build(cfg, centres)
    floor = chain.floor
    derived = (floor, floor.astype(np.float32), chain.gain.astype(np.float32), np.sqrt(chain.gain).astype(np.float32))
    shared = [centres, chain.gain, chain.pre_noise, *derived]
    if chain.skirts is not None:
        shared += [chain.skirts.kernel, chain.skirts.cell_of_bin, chain.skirts.lo, chain.skirts.hi, chain.skirts.weight]
    for array in shared:
        array.setflags(write=False)
    return (centres, chain) + derived


def run_stage(clutter, glints, cfg, rng: np.random.Generator, workers: int | None = None) -> StageOutput:
    """The sensor stage of one frame; `workers`: threads for its row blocks (None: the cores)."""
    a, b = cfg.azimuth.count, cfg.range.n_bins
    bin_m, offset = cfg.range.resolution, cfg.range.offset
    fm, rx = cfg.fmcw, cfg.receiver
    kernel = range_kernel(fm.window, fm.bandwidth_hz, bin_m, fm.response_half_width)
    signs = doppler.chirp_signs(a, fm.chirp)
    g_range = glints.range_m

    def clutter_bins(sel):  # [start, end) in fractional bins of the clutter returns sel (elementwise: any subset)
        near, far = clutter.near_m[sel], clutter.far_m[sel]
        if fm.doppler:
            c_shift = doppler.range_shift(clutter.velocity[sel], signs[clutter.azimuth[sel]], fm.carrier_hz,
                                          fm.chirp_time_s, fm.bandwidth_hz)
            near, far = near + c_shift, far + c_shift
        return (near - offset) / bin_m, (far - offset) / bin_m

    if fm.doppler:
        g_range = g_range + doppler.range_shift(glints.velocity, signs[glints.azimuth], fm.carrier_hz, fm.chirp_time_s, fm.bandwidth_hz)
    g_amp, g_pos, g_az = glints.amplitude, (g_range - offset) / bin_m, glints.azimuth
    if not receiver_chain.is_plain(rx):
        return _chain_stage(clutter, glints, cfg, rng, workers, kernel, signs, clutter_bins, g_range)
    if rx.leakage_dbm is not None:
        leak = math.sqrt(10.0 ** ((rx.leakage_dbm - 30.0) / 10.0))
        g_amp = np.concatenate([g_amp, np.full(a, leak, np.complex128)])
        g_pos = np.concatenate([g_pos, np.full(a, (rx.leakage_range_m - offset) / bin_m)])
        g_az = np.concatenate([g_az, np.arange(a)])
    noise = thermal_noise.noise_power_w(rx, fm)
    visible = np.abs(g_amp) ** 2 > 1e-4 * noise  # points 40 dB under the noise floor change nothing
    point_taps = glint_taps(g_az[visible], g_pos[visible], g_amp[visible], kernel, b)
    centres = offset + (np.arange(b) + 0.5) * bin_m
    gain = (10.0 ** (-stc.attenuation_db(centres, rx.stc_range_m, rx.stc_max_db) / 10.0)).astype(np.float32)
    counts, counts_u8 = np.empty((a, b), np.float32), np.empty((a, b), np.uint8)

    def receive(rows: slice, power_rows: np.ndarray) -> None:  # STC, then the log detector, in place
        power_rows *= gain
        detector.counts_float(power_rows, rx.zero_dbm, rx.db_per_count, out=counts[rows])
        detector.quantise(counts[rows], out=counts_u8[rows])

    if cfg.scatter.speckle:
        rho = beam_correlation(cfg)
        # white: pre-window noise per bin, N per bin after the window
        clutter_steps = _rows_of(clutter.azimuth, a, lambda sel, k0, k1: power_steps(
            clutter.azimuth[sel] - k0, *clutter_bins(sel), clutter.power_w[sel], (k1 - k0, b)))
        power = _speckled_frame(clutter_steps, noise / kernel.enbw_bins, rho, kernel, _sorted_points(point_taps), receive,
                                (a, b), rng, workers)
    else:  # expected power: E|points + clutter + noise|^2
        variance = running_power(power_steps(clutter.azimuth, *clutter_bins(slice(None)), clutter.power_w, (a, b)))
        full = np.zeros((a, b))
        full[:, :variance.shape[1]] = variance
        points = np.zeros((a, b), np.complex128)
        np.add.at(points, point_taps[:2], point_taps[2])
        power = (oaconvolve(full, kernel.taps[None, :] ** 2, mode="same", axes=1) + noise
                 + np.abs(points) ** 2).astype(np.float32)
        receive(slice(0, a), power)
    return StageOutput(counts, counts_u8, power, _velocity(clutter, glints, cfg, clutter_bins, g_range), signs > 0)


def _velocity(clutter, glints, cfg, clutter_bins, g_range):
    a, b = cfg.azimuth.count, cfg.range.n_bins
    bin_m, offset, fm = cfg.range.resolution, cfg.range.offset, cfg.fmcw
    velocity = None
    if fm.velocity_channel:
        start, end = clutter_bins(slice(None))
        full = spread_power(clutter.azimuth, start, end, clutter.power_w, (a, b))
        weight = spread_power(clutter.azimuth, start, end, clutter.power_w * clutter.velocity, (a, b), signed=True)
        g_w = np.abs(glints.amplitude) ** 2
        cell = np.clip(np.floor((g_range - offset) / bin_m).astype(np.int64), 0, b - 1)
        flat = glints.azimuth * b + cell
        total_w = full.reshape(-1) + np.bincount(flat, g_w, minlength=a * b)
        total_v = weight.reshape(-1) + np.bincount(flat, g_w * glints.velocity, minlength=a * b)
        velocity = np.where(total_w > 0, total_v / np.maximum(total_w, 1e-300), 0.0).reshape(a, b).astype(np.float32)
    return velocity


def _chain_stage(clutter, glints, cfg, rng, workers, kernel: RangeKernel, signs, clutter_bins, g_range) -> StageOutput:
    """run_stage through the receiver chain (receiver_chain.py): signals and the phase-noise skirt through
    STC and the IF filters, thermal noise where the config puts it, ADC clipping per azimuth, detector."""
    a, b = cfg.azimuth.count, cfg.range.n_bins
    bin_m, offset = cfg.range.resolution, cfg.range.offset
    rx = cfg.receiver
    clutter = _float64_returns(clutter)  # one arithmetic for any caller's arrays: the compiled block pass reads these
    centres, chain, floor, floor32, gain32, root_gain32 = _chain_of(cfg)
    reference = chain.thermal  # the drawn white noise's level; the chain scales it to its floor over range
    g_amp, g_az = glints.amplitude, glints.azimuth
    if rx.leakage_dbm is not None and rx.leakage_spread_m <= 0:  # a point
        g_amp = np.concatenate([g_amp, np.full(a, math.sqrt(receiver_chain.dbm_to_w(rx.leakage_dbm)), np.complex128)])
        g_range = np.concatenate([g_range, np.full(a, rx.leakage_range_m)])
        g_az = np.concatenate([g_az, np.arange(a)])
    plateau = None  # the leakage plateau: one clutter return per azimuth, after the frame's own
    if rx.leakage_dbm is not None and rx.leakage_spread_m > 0:  # a plateau: clutter of the leakage's power
        half = 0.5 * rx.leakage_spread_m
        plateau = type(clutter)(np.arange(a), np.full(a, max(rx.leakage_range_m - half, offset)),
                                np.full(a, rx.leakage_range_m + half),
                                np.full(a, receiver_chain.dbm_to_w(rx.leakage_dbm)), np.zeros(a))
    own = clutter  # the speckled block pass reads the plateau apart (stage_loops.block_power_steps): no joined copy
    if plateau is not None and (not cfg.scatter.speckle or cfg.fmcw.velocity_channel):  # the passes over one set
        clutter = type(clutter)(*(np.concatenate([getattr(own, name), getattr(plateau, name)])
                                  for name in ("azimuth", "near_m", "far_m", "power_w", "velocity")))
    g_amp = g_amp * np.sqrt(receiver_chain.gain_at(cfg, g_range))  # the IF filters at each point's exact range
    g_pos = (g_range - offset) / bin_m
    visible = np.abs(g_amp) ** 2 > 1e-4 * float(floor.min())  # 40 dB under the floor: nothing
    point_taps = glint_taps(g_az[visible], g_pos[visible], g_amp[visible], kernel, b)
    tone = np.bincount(g_az, np.abs(g_amp) ** 2, minlength=a)  # each azimuth's point power at the ADC
    point_cells = None
    if chain.skirts is not None:  # each azimuth's point power (at the antenna) per coarse cell: skirt sources
        cells = chain.skirts.cell_of_bin[np.clip(((g_range - offset) / bin_m).astype(np.int64), 0, b - 1)]
        n_cells = chain.skirts.kernel.shape[0]
        point_cells = np.bincount(g_az * n_cells + cells, np.abs(g_amp) ** 2 / np.maximum(receiver_chain.gain_at(cfg, g_range), 1e-300),
                                  minlength=a * n_cells).reshape(a, n_cells)
    counts, counts_u8 = np.empty((a, b), np.float32), np.empty((a, b), np.uint8)
    one = np.ones(1)

    def scales(k0, k1, clutter_rows, clutter_cells=None):
        """(s_sig, s_post, s_pts) of rows k0..k1-1 (clutter_rows: their clutter power before the chain;
        clutter_cells: its sums per skirt cell, chain.skirts.cells(clutter_rows), when the caller has them)."""
        j = clutter_rows.shape[1]
        rows_tone = tone[k0:k1] + (clutter_rows * chain.gain[:j]).sum(axis=1)
        g, distortion = chain.clip(rows_tone)
        if chain.skirts is not None:  # the returns' skirts: row-dependent noise before the filters (float32)
            if clutter_cells is None:
                clutter_cells = chain.skirts.cells(clutter_rows)
            sources = point_cells[k0:k1] + clutter_cells
            # post = sqrt((skirts x G + floor + D) / N), sig = sqrt(G g) / post: float32, one compiled pass
            sig, post = stage_loops.skirt_scales(chain.skirts.of_sources(sources), gain32, floor32,
                                                 distortion.astype(np.float32), np.float32(1.0 / reference),
                                                 root_gain32, np.sqrt(g).astype(np.float32))
            return sig, post, np.sqrt(g)
        if not distortion.any():
            post = np.sqrt(floor / reference)[None, :]
            return (np.sqrt(chain.gain)[None, :] / post).astype(np.float32), post.astype(np.float32), one
        post = np.sqrt((floor[None, :] + distortion[:, None]) / reference)
        sig = np.sqrt(chain.gain[None, :] * g[:, None]) / post
        return sig.astype(np.float32), post.astype(np.float32), np.sqrt(g)

    def receive(rows: slice, power_rows: np.ndarray) -> None:  # the log detector, in place
        if rx.integer_power:  # the same bytes in one compiled pass
            detector.detect_integer(power_rows, rx.zero_dbm, rx.db_per_count, counts[rows], counts_u8[rows])
            return
        detector.counts_float(power_rows, rx.zero_dbm, rx.db_per_count, out=counts[rows])
        detector.quantise(counts[rows], out=counts_u8[rows])

    def shaping(k0, k1, steps):  # the block's clutter power (with its skirt cells: one pass) and its scales
        if chain.skirts is None:
            rows = running_power(steps)
            return rows, scales(k0, k1, rows)
        rows, cells = chain.skirts.running_cells(steps)
        return rows, scales(k0, k1, rows, cells)

    # power_steps of the block's returns, with clutter_bins_of's bins: gathered, binned and spread in one compiled pass;
    # the plateau's returns of the block's rows after its own (where a joined set would put them: the same sums)
    clutter_steps = _rows_of(own.azimuth, a, lambda sel, k0, k1: stage_loops.block_power_steps(
        sel, k0, own, signs, cfg.fmcw, offset, bin_m, (k1 - k0, b), per_azimuth=plateau))
    if cfg.scatter.speckle:
        rho = beam_correlation(cfg)
        power = _speckled_frame(clutter_steps, reference / kernel.enbw_bins, rho, kernel, _sorted_points(point_taps),
                                receive, (a, b), rng, workers, shaping=shaping)
    else:  # expected power: E|points + clutter + noise|^2 through the chain
        variance = running_power(power_steps(clutter.azimuth, *clutter_bins_of(clutter, slice(None), cfg, signs),
                                             clutter.power_w, (a, b)))
        full = np.zeros((a, b))
        full[:, :variance.shape[1]] = variance
        sig, post, pts = scales(0, a, variance)
        sig = np.broadcast_to(sig, (a, b)).astype(np.float64) * np.broadcast_to(post, (a, b))
        points = np.zeros((a, b), np.complex128)
        np.add.at(points, point_taps[:2], point_taps[2])
        pts = np.broadcast_to(pts, (a,))[:, None]
        power = (oaconvolve(full, kernel.taps[None, :] ** 2, mode="same", axes=1) * sig ** 2
                 + reference * np.broadcast_to(post, (a, b)) ** 2 + np.abs(points * pts) ** 2).astype(np.float32)
        receive(slice(0, a), power)
    return StageOutput(counts, counts_u8, power, _velocity(clutter, glints, cfg, lambda sel: clutter_bins_of(clutter, sel, cfg, signs),
                                                               g_range[:len(glints.range_m)]), signs > 0)


def _float64_returns(clutter):
    """The clutter returns with an int64 azimuth and float64 ranges, powers and velocities (the geometry's own
    arrays are: then no copy)."""
    return type(clutter)(np.asarray(clutter.azimuth, np.int64), *(np.asarray(getattr(clutter, name), np.float64)
                                                                  for name in ("near_m", "far_m", "power_w", "velocity")))


def clutter_bins_of(clutter, sel, cfg, signs):
    """[start, end) in fractional bins of the clutter returns sel (with the chirp's range-Doppler shift)."""
    fm, bin_m, offset = cfg.fmcw, cfg.range.resolution, cfg.range.offset
    near, far = clutter.near_m[sel], clutter.far_m[sel]
    if fm.doppler:
        shift = doppler.range_shift(clutter.velocity[sel], signs[clutter.azimuth[sel]], fm.carrier_hz,
                                    fm.chirp_time_s, fm.bandwidth_hz)
        near, far = near + shift, far + shift
    return (near - offset) / bin_m, (far - offset) / bin_m
