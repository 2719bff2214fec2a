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


# beams per block of form_echoes: a block's K x N temporaries stay in the L2 cache (measured 1.2-1.7x on
# 65536 beams of 4 sub-rays; a VLP-16 piece, 14400 beams, is one block). Every beam's echoes are its own,
# so blocks give the same bits as one pass.
ECHO_BLOCK = 16384


def form_echoes(ranges: np.ndarray, rho: np.ndarray, weights: np.ndarray, separation: float, mode: str) -> list[Echo]:
    """The echoes a beam reports: [echo] or, for 'dual', [strongest, second].

    ranges, rho: (N, K) per sub-ray (range inf = no return); weights: (K,) summing to 1.
    Most beams see one surface: their returns span at most `separation`, so they form one echo, summed
    here sub-ray by sub-ray over contiguous (N,) columns; only the others (depth edges) are sorted.
    """
    n, k = ranges.shape
    if n <= ECHO_BLOCK:
        return _form_echoes(ranges, rho, weights, separation, mode)
    starts = range(0, n, ECHO_BLOCK)
    blocks = [_form_echoes(ranges[a:a + ECHO_BLOCK], rho[a:a + ECHO_BLOCK], weights, separation, mode) for a in starts]
    return [Echo(np.concatenate([b[e].range for b in blocks]), np.concatenate([b[e].reflectivity for b in blocks]),
                 np.concatenate([b[e].dominant + a * k for a, b in zip(starts, blocks)])) for e in range(len(blocks[0]))]


def _form_echoes(ranges: np.ndarray, rho: np.ndarray, weights: np.ndarray, separation: float, mode: str) -> list[Echo]:
    """form_echoes of one block of beams."""
    n, k = ranges.shape
    # (K, N): one contiguous row per sub-ray, so every sum over a beam's sub-rays is K row additions
    # (measured: half the time of the (N, K) reductions and their temporaries, a VLP-16 frame of 4 sub-rays)
    r = np.ascontiguousarray(np.asarray(ranges, np.float32).T)
    hit = np.isfinite(r)
    r_hit = np.where(hit, r, np.float32(0.0))  # ranges, 0 for misses
    # w_i ρ_i, written (K, N) C-contiguous: the product of the transposed view would keep its column-major
    # layout, and summing that over axis 0 walks N columns of K elements (the same sums, 10x slower)
    part = np.multiply(np.asarray(rho, np.float32).T, np.asarray(weights, np.float32)[:, None],
                       out=np.empty((k, n), np.float32))
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


def _grouped(ranges: np.ndarray, rho: np.ndarray, weights: np.ndarray, separation: float, mode: str) -> list[Echo]:
    """form_echoes for any beams: sub-returns sorted by range, grouped where gaps exceed `separation`.

    Each sorted sub-return gets the label of its echo (a running count of the gaps before it); the echoes'
    sums are accumulated position by position in range order, then the first / last / strongest /
    second-strongest echo (ties: the nearer one) is picked per beam. Only the few beams at depth edges
    come here: the work is a fixed number of numpy calls on K x (edge beams) arrays."""
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
    label = np.zeros((k, n), np.intp)  # echo of each sorted sub-return (a miss: the last echo's, adds nothing)
    if mode != "mixed" and k > 1:
        with np.errstate(invalid="ignore"):
            np.cumsum(hs[1:] & (rs[1:] - rs[:-1] > separation), axis=0, out=label[1:])
    # per echo (K rows, row = label): strength Σ P_i, Σ P_i r_i, Σ w_i ρ_i, and its strongest sub-return
    s, m, p = (np.zeros(k * n, np.float32) for _ in range(3))
    best = np.full(k * n, -1.0, np.float32)
    dom = np.zeros(k * n, np.intp)
    cols = np.arange(n)
    for i in range(k):  # in range order, as a receiver sums the pulses (the same float32 sums, bit for bit)
        at = label[i] * n + cols
        s[at] += power[i]
        m[at] += power[i] * np.where(hs[i], rs[i], np.float32(0.0))
        p[at] += part[i]
        better = hs[i] & (power[i] > best[at])
        best[at[better]] = power[i][better]
        dom[at[better]] = sub[i][better]
    s, m, p, best, dom = (v.reshape(k, n) for v in (s, m, p, best, dom))
    with np.errstate(invalid="ignore", divide="ignore"):
        rng = np.where(s > 0, m / np.where(s > 0, s, np.float32(1.0)), np.float32(np.inf)).astype(np.float32)
    closed = best >= 0  # echoes with a return in them
    count = closed.sum(axis=0)  # echoes per beam
    ranked = np.where(closed & (s > -1), s, -np.inf)  # NaN strengths never win

    def echo(g, present):
        """Echo g (K-row index per beam) where `present`, else none (range inf)."""
        g = np.where(present, g, 0)
        return Echo(np.where(present, rng[g, cols], np.float32(np.inf)),
                    np.where(present, p[g, cols], np.float32(0.0)), np.where(present, dom[g, cols], cols * k))

    if mode == "first":
        return [echo(np.argmax(closed, axis=0), count > 0)]
    last = k - 1 - np.argmax(closed[::-1], axis=0)
    if mode == "last":
        return [echo(last, count > 0)]
    top = np.argmax(ranked, axis=0)  # the first of the strongest
    has_top = ranked[top, cols] > -np.inf
    strongest = echo(top, has_top)
    if mode in ("strongest", "mixed"):
        return [strongest]
    # dual: strongest + last; when the last is the strongest, the second strongest
    ranked[top, cols] = -np.inf
    runner_up = np.argmax(ranked, axis=0)
    same = has_top & (last == top)
    second = echo(np.where(same, runner_up, last), np.where(same, ranked[runner_up, cols] > -np.inf, count > 0))
    none = count < 2
    second.range[none] = np.inf
    second.reflectivity[none] = 0.0
    return [strongest, second]
