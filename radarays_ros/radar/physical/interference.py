"""Mutual interference: another spinning FMCW radar's chirps crossing ours.

The other radar's transmission reaches our receiver one way (Friis):

    P_i = P_t,a G_a(dir) G_v(dir) lambda^2 / ((4 pi)^2 d^2 L)

(G: peak gain x one-way pattern toward the other antenna; 1/d^2 against an echo's 1/R^4, so another
radar is heard far beyond what either can see; Brooker, "Mutual Interference of Millimeter-Wave Radar
Systems", IEEE Trans. EMC 49(1), 2007). It beats with our chirp: b(t) = f_v(t) - f_a(t - d/c), linear in t
(Goppelt, Bloecher & Menzel, "Automotive radar - investigation of mutual interference mechanisms",
Adv. Radio Sci. 8, 2010):

* slopes differ (the other sweeps the other way, or faster): b sweeps through zero at t* and passes the IF
  band only briefly: a burst whose energy per hertz of beat is P_i / |ds| (twice over a real IF, where -b
  folds onto b). Over our chirp time T, in the thermal floor's units (k T F / T: power in a bin of 1 / T),
  each range bin gets
      P_bin = 2 P_i / (|ds| T^2) x w(u*)^2 / <w^2>
  (w the range window at the burst's place u* = (t* - t_k) / T in the chirp, <w^2> its mean: white noise
  reads its level through it). A floor over the whole azimuth line: the bright radial spoke;
* equal slopes: b is a constant tone while both chirps overlap (time o): a ghost point at range
  c |b| / (2 s) of power P_i (o / T)^2, random phase.

The other radar's chirp j starts at tau_0 + j P_a (P_a = 1 / (its azimuth count x rate)) with its antenna
at its column j mod count; tau_0 (its clock against ours) is drawn per frame unless configured. Its signal
arrives only over a free line of sight (a trace from our antenna to it).

With fmcw.doppler (as for echoes), its signal arrives shifted one way by f_d = v_c f_a / c (v_c: how fast we
close on each other along the line between us, (v_ours - v_its) . u, u from us to it): the beat is b - f_d,
so a tone moves by c f_d / (2 s) in range (0.4 m for Navtech chirps at 15 m/s) and a burst by f_d / |ds| in time.
A radar of our own rig moves with us: no shift.

Where the other radars stand this frame (fixed, on an entity, on our rig): interferers.py.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import antenna, range_response, thermal_noise
from .doppler import chirp_signs
from .interferers import Interferer
from .radar_equation import dbm_to_watt
from .stage import CLUTTER_FLOOR  # a burst this far under the thermal floor changes nothing: left out

C = 299_792_458.0
INTERFERENCE_STREAM = 0x1F7E  # the frame's draws of the other radar's clock and the tones' phases
HOUSING_M = 0.5  # a hit this close to the other antenna is its own housing, not a wall between us
NEIGHBOURS = 2  # its chirps looked at beyond those that can overlap ours


def chirp_start(sign: np.ndarray, carrier_hz: float, bandwidth_hz: float) -> np.ndarray:
    """The frequency a chirp starts at: the band's lower edge going up, its upper edge going down."""
    return carrier_hz - sign * 0.5 * bandwidth_hz


@dataclass
class _Pairs:
    """Our chirps k (rows) against its chirps j (columns) that may overlap them."""
    power: np.ndarray  # (A, J) P_i: its power at our receiver while its chirp j lasts (0: blocked)
    alpha: np.ndarray  # (A, J) the beat b = alpha + beta (t - t_k), Hz
    beta: np.ndarray  # (A, J) Hz/s
    crossing: np.ndarray  # (A, J) the slopes differ: the beat sweeps through zero (else a constant tone)
    ours: np.ndarray  # (A, 1) t_k, s after t0
    heard: np.ndarray  # (A, J) its chirp j's start as it arrives here, s after t0


def returns(cfg, other: Interferer, origins, column_rot, times_ns, t0_ns: int, line_of_sight, velocities=None):
    """(Clutter, Glints) of the other radar in our frame: per azimuth k (origins (A, 3), column_rot (A, 3, 3)
    world <- column, times_ns (A,)), a floor over every bin for each crossing chirp (near = the first bin,
    far = past the last, power spread over them) and a point for each overlapping chirp of equal slope.
    line_of_sight(origins, directions, distances) -> (A,) bool: nothing between us and it; velocities: (A, 3) m/s
    of our antenna (None: still), for the Doppler shift with fmcw.doppler."""
    key = [cfg.seed, int(t0_ns) % 2**63, INTERFERENCE_STREAM] + ([other.index] if other.index else [])
    rng = np.random.default_rng(key)  # each other radar its own draws (the section's own: the key it always had)
    pairs = _pairs(cfg, other, origins, column_rot, times_ns, t0_ns, line_of_sight, _clock(other, t0_ns, rng),
                   velocities)
    return _bursts(cfg, other, pairs), _tones(cfg, other, pairs, rng)


def _clock(other: Interferer, t0_ns: int, rng) -> float:
    """tau_0: when its azimuth 0 chirp starts, s after t0, within one of its sweeps."""
    sweep_ns = round(1e9 / other.config.azimuth.rate_hz)
    offset = other.clock_offset_s
    if offset is None:
        return rng.random() * sweep_ns * 1e-9
    return ((round(offset * 1e9) - int(t0_ns)) % sweep_ns) * 1e-9


def _pairs(cfg, other: Interferer, origins, column_rot, times_ns, t0_ns, line_of_sight, tau0: float,
           velocities=None) -> _Pairs:
    fm, oc = cfg.fmcw, other.config
    t = (np.asarray(times_ns, np.int64) - int(t0_ns)) * 1e-9
    place = other.position if other.position.ndim == 2 else other.position[None, :] + other.velocity[None, :] * t[:, None]
    to_it = place - np.asarray(origins, np.float64)
    d = np.maximum(np.linalg.norm(to_it, axis=1), 1e-6)
    u = to_it / d[:, None]
    clear = np.asarray(line_of_sight(origins, u, np.maximum(d - HOUSING_M, 0.0)), bool)
    period = 1.0 / (oc.azimuth.count * oc.azimuth.rate_hz)
    span = math.ceil((oc.fmcw.chirp_time_s + float(d.max()) / C) / period) + NEIGHBOURS
    j = np.floor((t - tau0) / period).astype(np.int64)[:, None] + np.arange(-span, NEIGHBOURS + 1)[None, :]
    column = np.mod(j, oc.azimuth.count)
    power = _friis(cfg, other, u, d, column_rot, column) * (clear / d ** 2)[:, None]
    sign_v = chirp_signs(len(t), fm.chirp)[:, None]
    sign_a = chirp_signs(oc.azimuth.count, oc.fmcw.chirp)[column]
    slope_v, slope_a = fm.bandwidth_hz / fm.chirp_time_s, oc.fmcw.bandwidth_hz / oc.fmcw.chirp_time_s
    heard = period * j + tau0 + (d / C)[:, None]
    ours = t[:, None]
    alpha = (chirp_start(sign_v, fm.carrier_hz, fm.bandwidth_hz)
             - chirp_start(sign_a, oc.fmcw.carrier_hz, oc.fmcw.bandwidth_hz) - sign_a * slope_a * (ours - heard))
    if fm.doppler and velocities is not None and other.position.ndim == 1:  # (our rig's radars move with us)
        alpha = alpha - (_closing_speed(velocities, other.velocity, u) * oc.fmcw.carrier_hz / C)[:, None]
    beta = sign_v * slope_v - sign_a * slope_a
    return _Pairs(power, alpha, beta, np.abs(beta) > 1e-9 * slope_v, ours, heard)


def _closing_speed(ours: np.ndarray, its: np.ndarray, u: np.ndarray) -> np.ndarray:
    """(A,) m/s at which we close on each other along u (A, 3), the unit vector from us to it."""
    return np.einsum("ki,ki->k", np.asarray(ours, np.float64) - its[None, :], u)


def _friis(cfg, other: Interferer, u, d, column_rot, column) -> np.ndarray:
    """(A, J) P_i d^2: its transmit power, both peak gains and patterns (ours at azimuth k toward it, its own at
    column j toward us), lambda^2 / ((4 pi)^2 L)."""
    oc = other.config
    local = np.einsum("kji,kj->ki", column_rot, u)  # R^T u: its direction in our column frames
    g_v = antenna.gain(np.arctan2(local[:, 1], local[:, 0]), np.arcsin(np.clip(local[:, 2], -1, 1)), cfg.antenna)
    yaw = np.radians(oc.azimuth.start_deg + column * oc.azimuth.step_deg)
    # from it to us in its platform's frame (R^T of each row), then turned by its column
    back = -u @ other.rotation if other.rotation.ndim == 2 else np.einsum("ki,kij->kj", -u, other.rotation)
    along = np.cos(yaw) * back[:, None, 0] + np.sin(yaw) * back[:, None, 1]
    across = -np.sin(yaw) * back[:, None, 0] + np.cos(yaw) * back[:, None, 1]
    g_a = antenna.gain(np.arctan2(across, along), np.arcsin(np.clip(back[:, None, 2], -1, 1)), oc.antenna)
    g0 = 10.0 ** ((cfg.antenna.gain_dbi + oc.antenna.gain_dbi) / 10.0)
    wavelength = C / cfg.fmcw.carrier_hz
    loss = 10.0 ** (cfg.receiver.system_loss_db / 10.0)
    scale = dbm_to_watt(oc.receiver.transmit_power_dbm) * g0 * wavelength ** 2 / ((4.0 * math.pi) ** 2 * loss)
    return scale * g_v[:, None] * g_a


def _bursts(cfg, other: Interferer, pairs: _Pairs):
    """Clutter rows of the crossings inside both chirps: P_bin over every bin of azimuth k."""
    from .geometry import Clutter

    fm, chirp_a = cfg.fmcw, other.config.fmcw.chirp_time_s
    crossing = pairs.crossing
    beta = np.where(crossing, pairs.beta, 1.0)
    at = np.where(crossing, -pairs.alpha / beta, -1.0)  # t* - t_k
    inside = (crossing & (at >= 0) & (at <= fm.chirp_time_s) & (pairs.ours + at >= pairs.heard)
              & (pairs.ours + at <= pairs.heard + chirp_a))
    w2 = range_response.window(fm.window) ** 2
    place = np.minimum((np.clip(at, 0.0, None) / fm.chirp_time_s * len(w2)).astype(np.int64), len(w2) - 1)
    p_bin = 2.0 * pairs.power / (np.abs(beta) * fm.chirp_time_s ** 2) * w2[place] / w2.mean()
    rows, cols = np.nonzero(inside & (p_bin >= CLUTTER_FLOOR * thermal_noise.noise_power_w(cfg.receiver, fm)))
    bins, first = cfg.range.n_bins, cfg.range.offset
    enbw = range_response.range_kernel(fm.window, fm.bandwidth_hz, cfg.range.resolution, fm.response_half_width).enbw_bins
    return Clutter(rows.astype(np.int64), np.full(len(rows), first), np.full(len(rows), first + bins * cfg.range.resolution),
                   p_bin[rows, cols] * bins / enbw, np.zeros(len(rows)))  # read P_bin per bin through the window


def _tones(cfg, other: Interferer, pairs: _Pairs, rng):
    """Glints of equal slopes: a point at c |b| / (2 s) of power P_i (o / T)^2 while both chirps overlap."""
    from .geometry import Glints

    fm, chirp_a = cfg.fmcw, other.config.fmcw.chirp_time_s
    slope = fm.bandwidth_hz / fm.chirp_time_s
    overlap = np.clip(np.minimum(pairs.ours + fm.chirp_time_s, pairs.heard + chirp_a) - np.maximum(pairs.ours, pairs.heard),
                      0.0, None)
    at_range = C * np.abs(pairs.alpha) / (2.0 * slope)
    first, last = cfg.range.offset, cfg.range.offset + cfg.range.n_bins * cfg.range.resolution
    tone = (~pairs.crossing & (overlap > 0) & (pairs.power > 0) & (at_range >= first)
            & (at_range < last))
    rows, cols = np.nonzero(tone)
    phase = np.exp(2j * math.pi * rng.random(len(rows)))
    amplitude = np.sqrt(pairs.power[rows, cols]) * overlap[rows, cols] / fm.chirp_time_s * phase
    return Glints(rows.astype(np.int64), at_range[rows, cols], amplitude, np.zeros(len(rows)))
