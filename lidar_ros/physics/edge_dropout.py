"""Dropouts where a beam's footprint splits: silhouettes and depth edges (mixed pixels).

A beam whose footprint lies on one surface returns one clean pulse. Where it straddles an edge, part of
the footprint's power w (footprint.py) returns from elsewhere — another surface beyond the receiver's echo
separation, or nothing (sky) — and the pulse the receiver times is a distorted, partial one. Real units
reject many such returns: their holes cluster at silhouettes, not on flat walls (issue 23, the shared real
frames). Model: the reported echo is kept with probability equal to its coverage, the share of the
footprint's power in it,

    c = Σ_{i ∈ echo} w_i,     P_keep = c

so a beam half on a pole and half on the sky is lost half of the time, a beam wholly on a wall never.
Sub-ray i belongs to the echo when |r_i − r_echo| ≤ separation (echoes.py's grouping). The detection
curve (detection_probability.py) then weighs what is kept by its SNR: far, dark and grazing returns.
"""
from __future__ import annotations

import numpy as np

from radarays_ros.compiled import kernel

from .echoes import Echo

# numpy sums a row of fewer than 8 values one after the other (its pairwise sum starts at 8): up to that width
# the compiled loop below adds in the same order, so it gives the same bits; wider rows (glass adds 2K columns)
# take numpy's own sum
SEQUENTIAL_SUM_WIDTH = 8


def echo_coverage(ranges: np.ndarray, weights: np.ndarray, echo_range: np.ndarray, separation: float) -> np.ndarray:
    """(N,) float32 c: the weight of the sub-rays of each beam ((N, K) ranges, inf = none) within `separation`
    of its echo's range (inf: no echo, c = 0). One compiled pass (measured: 65536 x 4 sub-rays 2.5 ms in
    numpy's five passes, 0.2 ms here), the same bits as `echo_coverage_numpy`."""
    r = np.asarray(ranges, np.float32)
    if r.ndim != 2 or r.shape[1] >= SEQUENTIAL_SUM_WIDTH:
        return echo_coverage_numpy(r, weights, echo_range, separation)
    out = np.empty(len(r), np.float32)
    _coverage_kernel(r, np.ascontiguousarray(weights, np.float32), np.asarray(echo_range, np.float32),
                     np.float32(separation), out)
    return out


def echo_coverage_numpy(ranges: np.ndarray, weights: np.ndarray, echo_range: np.ndarray,
                        separation: float) -> np.ndarray:
    """echo_coverage in numpy passes: the reference of the compiled loop (and the path of wide rows)."""
    r = np.asarray(ranges, np.float32)
    with np.errstate(invalid="ignore"):  # inf - inf: NaN, not near
        near = np.abs(r - np.asarray(echo_range, np.float32)[:, None]) <= np.float32(separation)
    return (near * np.asarray(weights, np.float32)[None, :]).sum(axis=1, dtype=np.float32)


@kernel
def _coverage_kernel(ranges, weights, echo_range, separation, out):
    """Per beam: the float32 sum, in sub-ray order, of the weights of its sub-rays within `separation` of the
    echo (a NaN distance, inf - inf, is not within; a far sub-ray adds +0 as numpy's near·w does)."""
    for n in range(ranges.shape[0]):
        echo = echo_range[n]
        total = np.float32(0.0)
        for i in range(ranges.shape[1]):
            near = abs(ranges[n, i] - echo) <= separation
            total += weights[i] if near else np.float32(0.0)
        out[n] = total


def edge_dropped(coverage: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """(N,) bool: beams whose echo is rejected, each with probability 1 − c (one uniform per beam)."""
    return rng.random(len(coverage), dtype=np.float32) >= np.asarray(coverage, np.float32)


def drop_split_echoes(ranges: np.ndarray, weights: np.ndarray, first: Echo, second: Echo | None, separation: float,
                      rng: np.random.Generator) -> None:
    """The model above applied to a beam's reported echoes, in place: the echo `first` ((N,) arrays; echoes.py)
    of each beam ((N, K) sub-ray ranges, inf = none) is rejected with probability 1 − c (one float32 uniform per
    beam, drawn as `edge_dropped` draws it). A rejected echo reads as none (range inf, reflectivity 0), unless
    the beam has a `second` echo (dual modes): that one is then the strongest (and only) one reported, moved up
    (range, reflectivity, dominant sub-ray) and none in its own place. The values of edge_dropped and the masks
    written with numpy (`drop_split_echoes_numpy`), in one compiled pass over the beams."""
    r = np.asarray(ranges, np.float32)
    coverage = _NO_COVERAGE
    if r.ndim != 2 or r.shape[1] >= SEQUENTIAL_SUM_WIDTH:
        coverage = echo_coverage_numpy(r, weights, first.range, separation)
    uniforms = rng.random(len(first.range), dtype=np.float32)
    other = second if second is not None else _NO_ECHO
    _drop_kernel(r, np.ascontiguousarray(weights, np.float32), np.float32(separation), coverage, uniforms,
                 first.range, first.reflectivity, first.dominant, second is not None, other.range, other.reflectivity,
                 other.dominant)


def drop_split_echoes_numpy(ranges, weights, first: Echo, second: Echo | None, separation, rng) -> None:
    """drop_split_echoes through echo_coverage, edge_dropped and numpy masks: the reference of the compiled pass."""
    lost = edge_dropped(echo_coverage(ranges, weights, first.range, separation), rng)
    lost &= first.present
    first.range[lost], first.reflectivity[lost] = np.inf, 0.0
    if second is not None:
        up = lost & second.present
        for name in ("range", "reflectivity", "dominant"):
            getattr(first, name)[up] = getattr(second, name)[up]
        second.range[up], second.reflectivity[up] = np.inf, 0.0


_NO_COVERAGE = np.empty(0, np.float32)
_NO_ECHO = Echo(np.empty(0, np.float32), np.empty(0, np.float32), np.empty(0, np.intp))


@kernel
def _drop_kernel(ranges, weights, separation, coverage, uniforms, range1, rho1, dominant1, dual, range2, rho2,
                 dominant2):
    """Per beam: c (given, or summed as _coverage_kernel sums it), rejected where uniform >= c and the echo is
    present; then moved up from the second echo, or none."""
    inf, zero = np.float32(np.inf), np.float32(0.0)
    for n in range(range1.shape[0]):
        echo = range1[n]
        if coverage.shape[0]:
            c = coverage[n]
        else:
            c = np.float32(0.0)
            for i in range(ranges.shape[1]):
                near = abs(ranges[n, i] - echo) <= separation
                c += weights[i] if near else np.float32(0.0)
        if not (uniforms[n] >= c and np.isfinite(echo)):
            continue
        if dual and np.isfinite(range2[n]):
            range1[n], rho1[n], dominant1[n] = range2[n], rho2[n], dominant2[n]
            range2[n], rho2[n] = inf, zero
        else:
            range1[n], rho1[n] = inf, zero
