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
reports it). `mixed`: every sub-return forms one echo (a continuous-wave or long-pulse receiver, Heiden
et al. 2020: all returns of a beam sum before the range is measured), so any depth edge gives mixed pixels.
"""
from __future__ import annotations

import numpy as np

from radarays_ros.compiled import inlined, kernel

MODES = ("strongest", "last", "first", "dual", "mixed")
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
_STRONGEST, _LAST, _FIRST, _DUAL, _MIXED = range(len(MODES))
_ZERO, _ONE, _INF = np.float32(0.0), np.float32(1.0), np.float32(np.inf)
_MIN_RANGE = np.float32(MIN_RANGE)


def form_echoes(ranges: np.ndarray, rho: np.ndarray, weights: np.ndarray, separation: float, mode: str) -> list[Echo]:
    """The echoes a beam reports: [echo] or, for 'dual', [strongest, second].

    ranges, rho: (N, K) per sub-ray (range inf = no return); weights: (K,) summing to 1. All float32
    arithmetic, one beam at a time in a compiled loop (radarays_ros.compiled)."""
    n, k = np.shape(ranges)
    r = np.ascontiguousarray(ranges, np.float32)
    q = np.ascontiguousarray(rho, np.float32)
    w = np.ascontiguousarray(weights, np.float32)
    echoes = [Echo(np.empty(n, np.float32), np.empty(n, np.float32), np.empty(n, np.intp))
              for _ in range(2 if mode == "dual" else 1)]
    second = echoes[-1]  # written only for 'dual'
    _echo_kernel(r, q, w, np.float32(separation), MODE_CODES[mode], echoes[0].range, echoes[0].reflectivity,
                 echoes[0].dominant, second.range, second.reflectivity, second.dominant)
    return echoes


@kernel
def _echo_kernel(r, rho, w, separation, mode, range1, rho1, dominant1, range2, rho2, dominant2):
    """form_echoes over every beam. Most beams see one surface: their returns span at most `separation`,
    and they form one echo, summed in sub-ray order. Beams at a depth edge are sorted by range and
    grouped (_grouped_beam)."""
    n, k = r.shape
    scratch = (np.empty(k, np.intp), np.empty(k, np.float32), np.empty(k, np.float32), np.empty(k, np.float32),
               np.empty(k, np.float32), np.empty(k, np.intp))
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
            if mode == _DUAL:
                range2[j], rho2[j], dominant2[j] = _INF, _ZERO, j * k
        else:
            _grouped_beam(j, r, rho, w, separation, mode, scratch, range1, rho1, dominant1, range2, rho2, dominant2)


@inlined
def _grouped_beam(j, r, rho, w, separation, mode, scratch, range1, rho1, dominant1, range2, rho2, dominant2):
    """The echoes of beam j at a depth edge. Its sub-returns, sorted by range (stable; misses last), are
    labelled with their echo (a new one after each gap wider than `separation`); each echo sums its
    pulses in range order, as a receiver does; then the first / last / strongest / second-strongest echo
    (ties: the nearer one) is reported."""
    k = r.shape[1]
    order, strength, moment, reflectivity, best, dominant = scratch
    for i in range(k):
        order[i] = i
        strength[i], moment[i], reflectivity[i], best[i], dominant[i] = _ZERO, _ZERO, _ZERO, np.float32(-1.0), 0
    for i in range(1, k):  # insertion sort: stable, and K is small
        x, t = order[i], i
        while t > 0 and r[j, order[t - 1]] > r[j, x]:
            order[t] = order[t - 1]
            t -= 1
        order[t] = x
    label, previous = 0, _ZERO
    for i in range(k):
        o = order[i]
        ri = r[j, o]
        hit = np.isfinite(ri)
        if i > 0 and hit and ri - previous > separation:
            label += 1
        previous = ri
        part = rho[j, o] * w[o] if hit else _ZERO
        safe = max(ri, _MIN_RANGE) if hit else _ONE
        power = part / (safe * safe)
        strength[label] += power
        moment[label] += power * (ri if hit else _ZERO)
        reflectivity[label] += part
        if hit and power > best[label]:
            best[label], dominant[label] = power, j * k + o
    count, first, last, top, top_strength = 0, -1, k - 1, 0, -_INF
    for g in range(k):
        if best[g] >= _ZERO:  # an echo with a return in it
            count += 1
            first = g if first < 0 else first
            last = g
        ranked = strength[g] if best[g] >= _ZERO and strength[g] > np.float32(-1.0) else -_INF  # NaN never wins
        if g == 0 or ranked > top_strength:
            top, top_strength = g, ranked
    if count == 0:
        last = k - 1
    echo = (strength, moment, reflectivity, dominant)
    if mode == _FIRST:
        _put(j, k, max(first, 0), count > 0, echo, range1, rho1, dominant1)
    elif mode == _LAST:
        _put(j, k, last, count > 0, echo, range1, rho1, dominant1)
    else:
        has_top = top_strength > -_INF
        _put(j, k, top, has_top, echo, range1, rho1, dominant1)
        if mode == _DUAL:  # strongest + last; when the last is the strongest, the second strongest
            runner_up, runner_up_strength = 0, -_INF
            for g in range(k):
                ranked = strength[g] if g != top and best[g] >= _ZERO and strength[g] > np.float32(-1.0) else -_INF
                if g == 0 or ranked > runner_up_strength:
                    runner_up, runner_up_strength = g, ranked
            same = has_top and last == top
            _put(j, k, runner_up if same else last, runner_up_strength > -_INF if same else count > 0, echo,
                 range2, rho2, dominant2)
            if count < 2:
                range2[j], rho2[j] = _INF, _ZERO


@inlined
def _put(j, k, g, present, echo, ranges, rho, dominant):
    """Beam j reports echo g where `present`, else none (range inf)."""
    strength, moment, reflectivity, dominant_of = echo
    if present:
        ranges[j] = moment[g] / strength[g] if strength[g] > _ZERO else _INF
        rho[j], dominant[j] = reflectivity[g], dominant_of[g]
    else:
        ranges[j], rho[j], dominant[j] = _INF, _ZERO, j * k
