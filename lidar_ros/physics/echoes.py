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
    """
    n, k = ranges.shape
    r = np.asarray(ranges, np.float64)
    hit = np.isfinite(r)
    power = np.where(hit, weights[None, :] * rho / np.maximum(np.where(hit, r, 1.0), MIN_RANGE) ** 2, 0.0)
    order = np.argsort(r, axis=1, kind="stable")
    rs = np.take_along_axis(r, order, 1)
    ps = np.take_along_axis(power, order, 1)
    ws = np.take_along_axis(np.where(hit, weights[None, :] * rho, 0.0), order, 1)
    hs = np.isfinite(rs)
    with np.errstate(invalid="ignore"):
        gap = np.diff(rs, axis=1)
    new = np.zeros((n, k), bool)
    if mode != "mixed":
        with np.errstate(invalid="ignore"):
            new[:, 1:] = ~(gap <= separation)  # NaN/inf gaps (misses) also start a new label
    label = np.cumsum(new, axis=1)  # echo number within the beam, sorted by range
    flat = (np.arange(n)[:, None] * k + label).ravel()
    valid = hs.ravel()
    size = n * k
    strength = np.bincount(flat[valid], ps.ravel()[valid], size)
    moment = np.bincount(flat[valid], (ps * np.where(hs, rs, 0.0)).ravel()[valid], size)
    refl = np.bincount(flat[valid], ws.ravel()[valid], size)
    exists = np.bincount(flat[valid], minlength=size) > 0
    # the strongest sub-ray of every echo: the largest power per label
    sub_index = (np.arange(n)[:, None] * k + order).ravel()
    by_power = np.lexsort((-ps.ravel(), flat))  # label-major, strongest first
    first_of_label = np.ones(size, bool)
    first_of_label[1:] = flat[by_power][1:] != flat[by_power][:-1]
    dominant = np.full(size, -1, np.int64)
    picked = by_power[first_of_label]
    dominant[flat[picked]] = sub_index[picked]

    strength = strength.reshape(n, k)
    exists = exists.reshape(n, k)
    with np.errstate(invalid="ignore", divide="ignore"):
        echo_range = np.where(exists, moment.reshape(n, k) / np.where(exists, strength, 1.0), np.inf)
    echo_refl = refl.reshape(n, k)
    dominant = dominant.reshape(n, k)
    rows = np.arange(n)
    score = np.where(exists, strength, -1.0)
    strongest = np.argmax(score, axis=1)
    count = exists.sum(axis=1)
    last = np.maximum(count - 1, 0)  # labels are in range order: the last existing label

    def echo(col):
        present = exists[rows, col]
        return Echo(np.where(present, echo_range[rows, col], np.inf).astype(np.float32),
                    np.where(present, echo_refl[rows, col], 0.0).astype(np.float32),
                    np.where(present, dominant[rows, col], rows * k))

    if mode in ("strongest", "mixed"):
        return [echo(strongest)]
    if mode == "first":
        return [echo(np.zeros(n, np.int64))]
    if mode == "last":
        return [echo(last)]
    second_score = score.copy()
    second_score[rows, strongest] = -2.0
    second_strongest = np.argmax(second_score, axis=1)
    second = np.where(last != strongest, last, second_strongest)
    second_echo = echo(second)
    none = count < 2
    second_echo.range[none] = np.inf
    second_echo.reflectivity[none] = 0.0
    return [echo(strongest), second_echo]
