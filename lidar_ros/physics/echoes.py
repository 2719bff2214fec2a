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


def argmax_rows(a: np.ndarray) -> np.ndarray:
    """np.argmax(a, axis=0) of a (K, N) array (ties: the first row), as K − 1 row comparisons: numpy's
    argmax along the short axis walks N columns of K elements one by one (measured 1.7x slower for
    K = 4, N = 14400)."""
    best = a[0].copy()
    index = np.zeros(a.shape[1], np.intp)
    for i in range(1, a.shape[0]):
        index[a[i] > best] = i
        np.maximum(best, a[i], out=best)
    return index


def form_echoes(ranges: np.ndarray, rho: np.ndarray, weights: np.ndarray, separation: float, mode: str) -> list[Echo]:
    """The echoes a beam reports: [echo] or, for 'dual', [strongest, second].

    ranges, rho: (N, K) per sub-ray (range inf = no return); weights: (K,) summing to 1.
    Most beams see one surface: their returns span at most `separation`, so they form one echo, summed
    here sub-ray by sub-ray over contiguous (N,) columns; only the others (depth edges) are sorted.
    """
    n, k = ranges.shape
    # (K, N): one contiguous row per sub-ray, so every sum over a beam's sub-rays is K row additions
    # (measured: half the time of the (N, K) reductions and their temporaries, a VLP-16 frame of 4 sub-rays)
    r = np.ascontiguousarray(np.asarray(ranges, np.float32).T)
    hit = np.isfinite(r)
    r_hit = np.where(hit, r, np.float32(0.0))  # ranges, 0 for misses
    part = np.asarray(rho, np.float32).T * np.asarray(weights, np.float32)[:, None]  # w_i ρ_i
    part *= hit
    square = np.maximum(r_hit, np.float32(MIN_RANGE))  # misses: any positive number (their part is 0)
    square *= square
    power = np.divide(part, square, out=square)  # w_i ρ_i / r_i²
    if mode == "mixed" or k == 1:
        single = np.ones(n, bool)
    else:  # ranges are positive: the farthest hit is the largest of r_hit, 0 when none
        single = ~(r_hit.max(axis=0) - r.min(axis=0) > separation)  # no return at all: 0 - inf
    strength = power.sum(axis=0)
    seen = strength > 0
    weighted = (power * r_hit).sum(axis=0)
    np.divide(weighted, strength, out=weighted, where=seen)
    weighted[~seen] = np.inf
    power[~hit] = -1.0  # the dominant sub-ray is a hit one
    echo = Echo(weighted, part.sum(axis=0), np.arange(n) * k + argmax_rows(power))
    echo.range[~hit.any(axis=0)] = np.inf
    out = [echo] if mode != "dual" else [echo, Echo(np.full(n, np.inf, np.float32), np.zeros(n, np.float32),
                                                   np.arange(n) * k)]
    edges = np.flatnonzero(~single)
    if len(edges):  # beams straddling a depth step: the general grouping
        for whole, piece in zip(out, _grouped(ranges[edges], rho[edges], weights, separation, mode)):
            whole.range[edges] = piece.range
            whole.reflectivity[edges] = piece.reflectivity
            whole.dominant[edges] = edges * k + (piece.dominant - np.arange(len(edges)) * k)
    return out


SLOTS_OF_MODE = {"strongest": ("top",), "mixed": ("top",), "first": ("first",), "last": ("last",),
                 "dual": ("top", "second", "last")}


def _grouped(ranges: np.ndarray, rho: np.ndarray, weights: np.ndarray, separation: float, mode: str) -> list[Echo]:
    """form_echoes for any beams: sub-returns sorted by range, grouped where gaps exceed `separation`.

    One pass over the K sorted sub-returns with (N,) running sums of the open echo; an echo that closes
    updates the first / last / strongest / second-strongest echo seen so far (ties: the nearer one)."""
    n, k = ranges.shape
    r = np.asarray(ranges, np.float32)
    order = np.argsort(r, axis=1, kind="stable")  # sub-rays of each beam by range; misses (inf) last
    rs = np.ascontiguousarray(np.take_along_axis(r, order, 1).T)  # (K, N)
    hs = np.isfinite(rs)
    part = np.take_along_axis(np.asarray(rho, np.float32) * np.asarray(weights, np.float32)[None, :], order, 1).T
    part = np.where(hs, part, np.float32(0.0))  # w_i ρ_i
    safe = np.where(hs, np.maximum(rs, np.float32(MIN_RANGE)), np.float32(1.0))
    power = part / (safe * safe)  # w_i ρ_i / r_i²
    sub = (np.arange(n) * k)[None, :] + order.T  # flat sub-ray index of each sorted sub-return
    zero = np.zeros(n, np.float32)
    # the open echo
    s_, m_, p_, best, dom, label = zero.copy(), zero.copy(), zero.copy(), np.full(n, -1.0, np.float32), sub[0].copy(), np.zeros(n, np.int64)
    count = np.zeros(n, np.int64)  # closed echoes so far
    # only the slots the mode reports are kept (each costs masked writes per closing echo)
    needed = SLOTS_OF_MODE[mode]
    slots = {name: [np.full(n, np.inf, np.float32), zero.copy(), np.arange(n) * k, np.full(n, -1.0, np.float32),
                    np.full(n, -1, np.int64)] for name in ("first", "last", "top", "second")}

    def put(slot, mask, values):
        if slot not in needed:
            return
        for target, value in zip(slots[slot], values):
            target[mask] = value[mask] if np.ndim(value) else value

    def close(mask):
        """Close the open echo of beams `mask` (those with a return in it)."""
        done = mask & (best >= 0)
        if not done.any():
            return
        with np.errstate(invalid="ignore", divide="ignore"):
            rng = np.where(s_ > 0, m_ / np.where(s_ > 0, s_, np.float32(1.0)), np.float32(np.inf)).astype(np.float32)
        values = (rng, p_.copy(), dom.copy(), s_.copy(), label.copy())
        if "first" in needed:
            put("first", done & (count == 0), values)
        put("last", done, values)
        if "top" in needed:
            stronger = done & (s_ > slots["top"][3])
            if "second" in needed:
                runner_up = done & ~stronger & (s_ > slots["second"][3])
                put("second", stronger, tuple(v.copy() for v in slots["top"]))
                put("second", runner_up, values)
            put("top", stronger, values)
        count[done] += 1

    def add(i, mask):
        nonlocal s_, m_, p_
        s_ = np.where(mask, s_ + power[i], s_)
        m_ = np.where(mask, m_ + power[i] * np.where(hs[i], rs[i], np.float32(0.0)), m_)
        p_ = np.where(mask, p_ + part[i], p_)
        better = mask & (power[i] > best)
        best[better] = power[i][better]
        dom[better] = sub[i][better]

    add(0, hs[0])
    for i in range(1, k):
        with np.errstate(invalid="ignore"):
            new = hs[i] & (rs[i] - rs[i - 1] > separation) if mode != "mixed" else np.zeros(n, bool)
        close(new)
        s_[new], m_[new], p_[new], best[new] = 0.0, 0.0, 0.0, -1.0
        label[new] += 1
        add(i, hs[i])
    close(np.ones(n, bool))

    def echo(slot):
        rng, refl, dominant = slots[slot][0], slots[slot][1], slots[slot][2]
        return Echo(rng.copy(), refl.copy(), dominant.copy())

    if mode in ("strongest", "mixed"):
        return [echo("top")]
    if mode == "first":
        return [echo("first")]
    if mode == "last":
        return [echo("last")]
    # dual: strongest + last; when the last is the strongest, the second strongest
    second = echo("last")
    same = slots["last"][4] == slots["top"][4]
    for mine, other in zip((second.range, second.reflectivity, second.dominant), slots["second"][:3]):
        mine[same] = other[same]
    none = count < 2
    second.range[none] = np.inf
    second.reflectivity[none] = 0.0
    return [echo("top"), second]
