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


def form_echoes(ranges: np.ndarray, rho: np.ndarray, weights: np.ndarray, separation: float, mode: str) -> list[Echo]:
    """The echoes a beam reports: [echo] or, for 'dual', [strongest, second].

    ranges, rho: (N, K) per sub-ray (range inf = no return); weights: (K,) summing to 1.
    Most beams see one surface: their returns span at most `separation`, so they form one echo, summed
    here sub-ray by sub-ray over contiguous (N,) columns; only the others (depth edges) are sorted.
    """
    n, k = ranges.shape
    r = np.ascontiguousarray(np.asarray(ranges, np.float32).T)  # (K, N): one contiguous row per sub-ray
    part = np.asarray(rho, np.float32).T * np.asarray(weights, np.float32)[:, None]  # w_i ρ_i
    hit = np.isfinite(r)
    part = np.where(hit, part, np.float32(0.0))
    safe = np.where(hit, np.maximum(r, np.float32(MIN_RANGE)), np.float32(1.0))
    power = part / (safe * safe)  # w_i ρ_i / r_i²
    if mode == "mixed" or k == 1:
        single = np.ones(n, bool)
    else:
        near = np.min(r, axis=0)
        far = np.max(np.where(hit, r, np.float32(-np.inf)), axis=0)
        single = ~(far - near > separation)  # also the beams without any return (-inf - inf)
    strength = power.sum(axis=0)
    echo = Echo(np.where(strength > 0, (power * np.where(hit, r, np.float32(0.0))).sum(axis=0)
                         / np.where(strength > 0, strength, np.float32(1.0)), np.float32(np.inf)).astype(np.float32),
                part.sum(axis=0), np.arange(n) * k + np.argmax(np.where(hit, power, np.float32(-1.0)), axis=0))
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
    """form_echoes for any beams: sub-returns sorted by range, grouped where gaps exceed `separation`."""
    n, k = ranges.shape
    r = np.asarray(ranges, np.float32)
    order = np.argsort(r, axis=1, kind="stable")  # sub-rays of each beam by range; misses (inf) last
    rs = np.take_along_axis(r, order, 1)
    hs = np.isfinite(rs)
    part = np.take_along_axis(np.asarray(rho, np.float32) * np.asarray(weights, np.float32)[None, :], order, 1)
    part = np.where(hs, part, np.float32(0.0))  # w_i ρ_i
    safe = np.where(hs, np.maximum(rs, np.float32(MIN_RANGE)), np.float32(1.0))
    power = part / (safe * safe)  # w_i ρ_i / r_i²
    if mode == "mixed" or k == 1:
        label = np.zeros((n, k), np.int8)
    else:  # a new echo where the next return lies more than `separation` beyond the previous one
        new = np.zeros((n, k), bool)
        with np.errstate(invalid="ignore"):
            new[:, 1:] = rs[:, 1:] - rs[:, :-1] > separation
        new[:, 1:] &= hs[:, 1:]  # misses (inf, sorted last) stay in the last label, with zero weight
        label = np.cumsum(new, axis=1, dtype=np.int8)  # echo number within the beam, in range order
    echoes = int(label[:, -1].max()) + 1 if n else 1  # labels grow along a row: its last is its largest
    weighted_range = power * np.where(hs, rs, np.float32(0.0))
    strength = np.zeros((n, k), np.float32)
    moment = np.zeros((n, k), np.float32)
    reflect = np.zeros((n, k), np.float32)
    exists = np.zeros((n, k), bool)
    dominant = np.repeat((np.arange(n) * k)[:, None], k, axis=1)
    for j in range(echoes):  # one pass per echo number; most frames have one or two
        member = label == j
        member &= hs
        strength[:, j] = np.where(member, power, np.float32(0.0)).sum(axis=1)
        moment[:, j] = np.where(member, weighted_range, np.float32(0.0)).sum(axis=1)
        reflect[:, j] = np.where(member, part, np.float32(0.0)).sum(axis=1)
        exists[:, j] = member.any(axis=1)
        strongest_sub = np.argmax(np.where(member, power, np.float32(-1.0)), axis=1)  # the surface it reports
        dominant[:, j] += order[np.arange(n), strongest_sub]
    with np.errstate(invalid="ignore", divide="ignore"):
        echo_range = np.where(exists, moment / np.where(exists, strength, np.float32(1.0)), np.float32(np.inf))
    rows = np.arange(n)
    score = np.where(exists, strength, np.float32(-1.0))
    strongest = np.argmax(score, axis=1)
    count = exists.sum(axis=1)
    last = np.maximum(count - 1, 0)  # labels are in range order: the last existing label

    def echo(col):
        present = exists[rows, col]
        return Echo(np.where(present, echo_range[rows, col], np.float32(np.inf)).astype(np.float32),
                    np.where(present, reflect[rows, col], np.float32(0.0)).astype(np.float32),
                    np.where(present, dominant[rows, col], rows * k))

    if mode in ("strongest", "mixed"):
        return [echo(strongest)]
    if mode == "first":
        return [echo(np.zeros(n, np.int64))]
    if mode == "last":
        return [echo(last)]
    second_score = score.copy()
    second_score[rows, strongest] = -2.0
    second = np.where(last != strongest, last, np.argmax(second_score, axis=1))
    second_echo = echo(second)
    none = count < 2
    second_echo.range[none] = np.inf
    second_echo.reflectivity[none] = 0.0
    return [echo(strongest), second_echo]
