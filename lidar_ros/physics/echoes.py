"""Per-beam echoes from the returns of a beam's sub-rays (multi-echo lidar; mixed pixels).

Each sub-ray i of a beam carries power w_i (footprint.py) and returns from range r_i with
reflectivity ρ_i (ρ(θ) with every loss on the way). A pulsed receiver sees the sum of the sub-ray
pulses; pulses nearer to each other than the pulse can resolve (`separation`, ≈ c·τ/2 for pulse
length τ) add up into one echo (HELIOS++ full-waveform echo detection, simplified to this
separation rule). An echo E has

  strength   P_E = Σ_{i∈E} w_i·ρ_i / r_i²       (extended-target lidar equation, ∝ ρ/r²)
  range      r_E = Σ w_i·ρ_i/r_i² · r_i / P_E    (the centroid of the summed pulse: a mixed pixel where a
                                                 footprint straddles a depth step smaller than `separation`)
  reflectivity ρ_E = Σ_{i∈E} w_i·ρ_i           (only the part of the footprint it covers: partial hits
                                                 are darker, so the detection limit drops them at edges)

and reports the surface of its strongest sub-ray (entity, material, normal). Return modes, as the
Velodyne and Ouster manuals describe them: strongest (largest P_E), last (farthest), first (nearest),
dual = strongest + last (when the last is the strongest: the second strongest, as Velodyne's dual mode
reports it), dual_strongest = strongest + second strongest (Ouster's dual-return profiles: RANGE2 is the
second strongest echo, nearer or farther than the first; Ouster firmware user manual), dual_first = strongest +
first (when the first is the strongest: the second strongest; Hesai's "first + strongest" dual mode, 0x3C; its
"last + strongest", 0x39, is `dual`). `mixed`: every sub-return forms one echo (a continuous-wave or long-pulse receiver, Heiden
et al. 2020: all returns of a beam sum before the range is measured), so any depth edge gives mixed pixels.
"""
from __future__ import annotations

import numpy as np

from radarays_ros.compiled import inlined, kernel

MODES = ("strongest", "last", "first", "dual", "mixed", "dual_strongest", "dual_first")
DUAL_MODES = ("dual", "dual_strongest", "dual_first")
MIN_RANGE = 0.1  # m, keeps 1/r² finite


class Echo:
    """One echo per beam: range (N,) f32 (inf = none), reflectivity (N,) f32, dominant (N,) flat
    sub-ray index of its strongest sub-ray (the surface it reports)."""

    def __init__(self, range_m, reflectivity, dominant):
        self.range, self.reflectivity, self.dominant = range_m, reflectivity, dominant

    @property
    def present(self) -> np.ndarray:
        return np.isfinite(self.range)


MODE_CODES = {mode: code for code, mode in enumerate(MODES)}
_STRONGEST, _LAST, _FIRST, _DUAL, _MIXED, _DUAL_STRONGEST, _DUAL_FIRST = range(len(MODES))
_ZERO, _ONE, _INF = np.float32(0.0), np.float32(1.0), np.float32(np.inf)
_MIN_RANGE = np.float32(MIN_RANGE)


def form_echoes(ranges: np.ndarray, rho: np.ndarray, weights: np.ndarray, separation: float, mode: str) -> list[Echo]:
    """The echoes a beam reports: [echo] or, for the dual modes (DUAL_MODES), [strongest, second].

    ranges, rho: (N, K) per sub-ray (range inf = no return); weights: (K,) summing to 1. All float32
    arithmetic, one beam at a time in a compiled loop (radarays_ros.compiled)."""
    n, k = np.shape(ranges)
    r = np.ascontiguousarray(ranges, np.float32)
    q = np.ascontiguousarray(rho, np.float32)
    w = np.ascontiguousarray(weights, np.float32)
    echoes = [Echo(np.empty(n, np.float32), np.empty(n, np.float32), np.empty(n, np.intp))
              for _ in range(2 if mode in DUAL_MODES else 1)]
    second = echoes[-1]  # written only for the dual modes
    _echo_kernel(r, q, w, np.float32(separation), MODE_CODES[mode], echoes[0].range, echoes[0].reflectivity,
                 echoes[0].dominant, second.range, second.reflectivity, second.dominant)
    return echoes


@kernel
def _echo_kernel(r, rho, w, separation, mode, range1, rho1, dominant1, range2, rho2, dominant2):
    """form_echoes over every beam. Most beams see one surface: their returns span at most `separation`,
    and they form one echo, summed in sub-ray order.

    Beams at a depth edge: their sub-returns, sorted by range (stable; misses last), form echoes in range
    order, a new one after each gap wider than `separation`; each echo sums its pulses in range order, as a
    receiver does. While they close one by one, the first and last echo with a return, the strongest (ties:
    the nearer) and the strongest of the others are kept; then reported by mode.

    The depth-edge code is written out in this loop, not in a helper that takes the arrays: each call of an
    inlined helper with array arguments costs an atomic reference count up and down per array (numba), which
    made a depth-edge beam cost ~150 ns (measured; 3-12 % of a frame's beams are at an edge)."""
    n, k = r.shape
    order = np.empty(k, np.intp)  # a depth-edge beam's sub-rays by range
    for j in range(n):
        nearest, farthest, any_hit = _INF, _ZERO, False
        strength, weighted, reflectivity = _ZERO, _ZERO, _ZERO
        top, top_power = 0, np.float32(-2.0)
        for i in range(k):  # the sums of a single echo, each in sub-ray order; selects, not branches
            ri = r[j, i]
            hit = ri < _INF  # ranges are positive or inf (no return)
            r_hit = ri if hit else _ZERO
            nearest = ri if ri < nearest else nearest
            farthest = r_hit if r_hit > farthest else farthest
            any_hit |= hit
            part = rho[j, i] * w[i] * np.float32(hit)  # w_i ρ_i
            square = r_hit if r_hit > _MIN_RANGE else _MIN_RANGE
            power = part / (square * square)  # w_i ρ_i / r_i²
            strength += power
            weighted += power * r_hit
            reflectivity += part
            rank = power if hit else np.float32(-1.0)  # the dominant sub-ray is a hit one (ties: the first)
            better = rank > top_power
            top = i if better else top
            top_power = rank if better else top_power
        if mode == _MIXED or k == 1 or not (farthest - nearest > separation):
            range1[j] = weighted / strength if strength > _ZERO and any_hit else _INF
            rho1[j] = reflectivity
            dominant1[j] = j * k + top
            if mode == _DUAL or mode == _DUAL_STRONGEST or mode == _DUAL_FIRST:
                range2[j], rho2[j], dominant2[j] = _INF, _ZERO, j * k
            continue
        # a beam at a depth edge (the docstring)
        for i in range(k):
            order[i] = i
        for done in range(k - 1):  # bubble sort: stable, K is small, and its swaps are selects, not branches
            for i in range(k - 1 - done):
                a, b = order[i], order[i + 1]
                swap = r[j, a] > r[j, b]
                order[i], order[i + 1] = (b, a) if swap else (a, b)
        none = (_ZERO, _ZERO, _ZERO, j * k)  # an echo's (strength, Σ P·r, Σ w·ρ, dominant sub-ray)
        first = last = loudest = runner_up = none
        count, loudest_strength, runner_up_strength = 0, -_INF, -_INF
        loudest_label = last_label = first_label = label = 0
        echo, best, previous = none, np.float32(-1.0), _ZERO
        for i in range(k + 1):
            ri = r[j, order[i]] if i < k else _INF
            if i == k or (i > 0 and ri < _INF and ri - previous > separation):  # the open echo closes
                closed = best >= _ZERO  # it has a return in it
                ranked = echo[0] if closed and echo[0] > np.float32(-1.0) else -_INF  # NaN never wins
                if closed:
                    count += 1
                    first = echo if count == 1 else first
                    first_label = label if count == 1 else first_label
                    last, last_label = echo, label
                if label == 0 or ranked > loudest_strength:  # the old strongest is now the strongest of the others
                    if label > 0:
                        runner_up, runner_up_strength = loudest, loudest_strength
                    loudest, loudest_strength, loudest_label = echo, ranked, label
                elif ranked > runner_up_strength:
                    runner_up, runner_up_strength = echo, ranked
                if i == k:
                    break
                echo, best, label = none, np.float32(-1.0), label + 1
            o = order[i]
            hit = ri < _INF
            previous = ri
            part = rho[j, o] * w[o] if hit else _ZERO
            safe = max(ri, _MIN_RANGE) if hit else _ONE
            power = part / (safe * safe)
            dominant = echo[3]
            if hit and power > best:
                best, dominant = power, j * k + o
            echo = (echo[0] + power, echo[1] + power * (ri if hit else _ZERO), echo[2] + part, dominant)
        if count == 0:
            last_label = k - 1  # as an empty beam's last echo: none
        if mode == _FIRST:
            range1[j], rho1[j], dominant1[j] = _reported(count > 0, first)
        elif mode == _LAST:
            range1[j], rho1[j], dominant1[j] = _reported(count > 0, last)
        else:
            has_top = loudest_strength > -_INF
            range1[j], rho1[j], dominant1[j] = _reported(has_top, loudest)
            if mode == _DUAL:  # strongest + last; when the last is the strongest, the second strongest
                same = has_top and last_label == loudest_label
                range2[j], rho2[j], dominant2[j] = _reported(runner_up_strength > -_INF if same else count > 0,
                                                             runner_up if same else last)
                if count < 2:
                    range2[j], rho2[j] = _INF, _ZERO
            elif mode == _DUAL_STRONGEST:  # strongest + the strongest of the others, nearer or farther
                range2[j], rho2[j], dominant2[j] = _reported(count > 1 and runner_up_strength > -_INF, runner_up)
            elif mode == _DUAL_FIRST:  # strongest + first; when the first is the strongest, the second strongest
                same = has_top and first_label == loudest_label
                range2[j], rho2[j], dominant2[j] = _reported(runner_up_strength > -_INF if same else count > 0,
                                                             runner_up if same else first)
                if count < 2:
                    range2[j], rho2[j] = _INF, _ZERO


@inlined
def _reported(present, echo):
    """(range, reflectivity, dominant sub-ray) a beam reports for `echo` (strength, Σ P·r, Σ w·ρ, dominant
    sub-ray) where `present`, else none."""
    strength, moment, reflectivity, dominant_of = echo
    if present:
        return (moment / strength if strength > _ZERO else _INF), reflectivity, dominant_of
    return _INF, _ZERO, dominant_of
