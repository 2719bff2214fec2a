"""Intensity-like fields of a lidar return, from its reflectivity ρ(θ) and range r.

ρ(θ) is the LiMOX reflectivity (§4.1: fraction of a white Lambertian target, already holding Lambert's
cos θ and any glass/mirror losses on the way); ρ > 1 means brighter than white (retroreflectors).

* reflectivity / intensity (float32): ρ(θ) itself, LiMOX's intensity output.
* calibrated reflectivity, 0..255, the scale both Velodyne ("calibrated reflectivity" mode: "diffuse
  reflectors report 0-100 for reflectivities 0-100 %, retroreflectors 101-255, 255 an ideal
  reflection") and Ouster (REFLECTIVITY channel, FW ≥ 2.1: 0-100 Lambertian %, 101-255
  retroreflective) use:  v = 100·ρ for ρ ≤ 1;  v = 101 + 154·ln ρ / ln ρ_full for ρ > 1, capped at 255
  (ρ_full = SurfaceConfig.retro_full_scale, the reflectivity shown as 255). Rounded to integers.
* Ouster signal (uint16 photons): the lidar equation of an extended target, received power ∝ ρ(θ)/r²
  (Heiden et al. 2020 §III: radiance falls as 1/R²): signal = round(K·ρ(θ)/r²) with
  K = signal_scale (photons of a white target at 1 m), r ≥ 0.1 m, saturating at 65535; times the receiver's
  near-range overlap O(r) (overlap.py) where surface.overlap_range_m is set.
* measured reflectivity: what a sensor infers from its counted signal N, ρ̂ = N·r²/(K·O(r)) (Ouster's
  calibrated reflectivity "scales measured signal photons by range and sensor sensitivity", correcting the
  near-range overlap too): with Poisson counts (signal.poisson) the REFLECTIVITY channel carries their shot
  noise, relative spread 1/√N (a 10 % target at the limit, N ≈ 14: ±27 %).
* Ouster ambient (uint16 photons): a simple daylight model, not radiometry: the surface in view (its echo
  detected or not: ambient light is passive) shows ambient_level·min(ρ(θ), 1) photons, open sky (nothing in
  view) ambient_sky, each with shot noise.
"""
from __future__ import annotations

import numpy as np
import numpy as xm  # the formulas' vocabulary (radarays_ros/twin.py)

from radarays_ros.compiled import inlined, kernel

from radarays_ros.counter_random import gaussians, ray_draws

from .noise import AMBIENT_WORD
from .overlap import MIN_SIGNAL_RANGE, range_overlap

UINT16_MAX = 65535
PHOTONS_MAX = float(UINT16_MAX)  # a count's ceiling as the formulas below compare it (a float on both paths)


def calibrated_reflectivity(rho: np.ndarray, retro_full_scale: float) -> np.ndarray:
    """Velodyne/Ouster calibrated reflectivity 0..255 (float32, integer-valued) of reflectivity `rho`."""
    rho = np.asarray(rho, np.float32)
    value = np.empty(rho.shape, np.float32)
    if _diffuse_percent(rho.reshape(-1), value.reshape(-1)):  # retroreflectors: few rays, the logarithm on them alone
        retro = np.flatnonzero(rho > 1.0)
        value[retro] = retro_percent(rho[retro].astype(np.float64), np.log(retro_full_scale))
    return value


def ouster_signal(rho: np.ndarray, ranges: np.ndarray, signal_scale: float, overlap_range: float = 0.0) -> np.ndarray:
    """Photon count ∝ O(r)·ρ(θ)/r² (uint16, saturating). No return (range NaN or inf, ρ 0) gives 0.
    One compiled pass of signal_count (the bits of `ouster_signal_numpy`, its six numpy passes and a cast)."""
    rho = np.ascontiguousarray(rho, np.float32).reshape(-1)
    r = np.ascontiguousarray(ranges, np.float32).reshape(-1)
    factor = _NO_FACTOR if overlap_range <= 0 else range_overlap(r, overlap_range)
    out = np.empty(rho.shape, np.uint16)
    _ouster_signal_kernel(rho, r, np.float32(signal_scale), np.ascontiguousarray(factor, np.float32), out)
    return out.reshape(np.shape(ranges))


_NO_FACTOR = np.empty(0, np.float32)


def ouster_signal_numpy(rho: np.ndarray, ranges: np.ndarray, signal_scale: float, overlap_range: float = 0.0) -> np.ndarray:
    """ouster_signal through numpy passes: the reference of the compiled loop."""
    r2 = np.fmax(np.asarray(ranges, np.float32), np.float32(MIN_SIGNAL_RANGE))  # fmax: NaN -> 0.1
    factor = range_overlap(r2, overlap_range) if overlap_range > 0 else None
    # ρ ≥ 0 (validated materials); r = inf -> 0; O(r) = 1 when off (× 1 is exact)
    photons = signal_count(np.asarray(rho, np.float32), r2, np.float32(signal_scale),
                           np.float32(1.0) if factor is None else factor)
    return photons.astype(np.uint16)


def measured_reflectivity(counts: np.ndarray, ranges: np.ndarray, returned: np.ndarray, signal_scale: float,
                          overlap_range: float = 0.0, factor: np.ndarray | None = None) -> np.ndarray:
    """ρ̂ = N·r²/(K·O(r)) (float32) from signal counts N of returns at `ranges`; 0 where there is no return.
    factor: O(r) of these ranges (r ≥ 0.1 m) when the caller has it already."""
    r = np.fmax(np.asarray(ranges, np.float32), np.float32(MIN_SIGNAL_RANGE))
    if overlap_range > 0 and factor is None:
        factor = range_overlap(r, overlap_range)
    scale = np.float32(signal_scale) * (factor if overlap_range > 0 else np.float32(1.0))
    rho = np.asarray(counts, np.float32) * (r * r) / np.maximum(scale, np.float32(1e-30))
    return np.where(returned, rho, np.float32(0.0)).astype(np.float32)


def measured_calibrated_reflectivity(counts: np.ndarray, ranges: np.ndarray, returned: np.ndarray, signal_scale: float,
                                     retro_full_scale: float, overlap_range: float = 0.0,
                                     factor: np.ndarray | None = None) -> np.ndarray:
    """(N,) uint16 calibrated_reflectivity(measured_reflectivity(...)): the Ouster REFLECTIVITY channel of photon
    counts, in one compiled pass (the same float32 operations in the same order: the same bits; the numpy passes
    and their arrays took ~0.8 ms of a 131072-pixel frame). Retroreflectors (ρ̂ > 1, few) get retro_percent
    through numpy as in calibrated_reflectivity."""
    counts = np.ascontiguousarray(counts).reshape(-1)
    r = np.asarray(ranges, np.float32).reshape(-1)
    if overlap_range > 0 and factor is None:
        factor = range_overlap(r, overlap_range)
    factor = np.asarray(factor, np.float32).reshape(-1) if overlap_range > 0 else _NO_FACTOR
    measured = np.empty(len(r), np.float32)
    value = np.empty(len(r), np.float32)
    if _measured_percent(counts, r, np.asarray(returned, np.bool_).reshape(-1), np.float32(signal_scale), factor,
                         measured, value):
        retro = np.flatnonzero(measured > 1.0)
        value[retro] = retro_percent(measured[retro].astype(np.float64), np.log(retro_full_scale))
    return value.astype(np.uint16)


_NO_FACTOR = np.empty(0, np.float32)


@kernel
def _measured_percent(counts, ranges, returned, signal_scale, factor, measured, value):
    """measured = measured_reflectivity's ρ̂ (N·r²/max(K·O(r), 1e-30), r = fmax(range, 0.1), 0 without a return)
    and value = its diffuse percent, per pixel in float32; returns whether any ρ̂ exceeds 1."""
    retro = False
    tiny, low, zero = np.float32(1e-30), np.float32(MIN_SIGNAL_RANGE), np.float32(0.0)
    for i in range(measured.shape[0]):
        r = ranges[i] if ranges[i] >= low else low  # np.fmax: NaN -> 0.1
        scale = signal_scale * factor[i] if factor.shape[0] else signal_scale * np.float32(1.0)
        rho = np.float32(counts[i]) * (r * r) / (scale if (scale >= tiny or scale != scale) else tiny)  # np.maximum
        rho = rho if returned[i] else zero
        measured[i] = rho
        value[i] = _diffuse_percent_compiled(rho)
        retro = retro or rho > 1.0
    return retro


def ouster_ambient(ranges: np.ndarray, rho: np.ndarray, ambient_level: float, ambient_sky: float,
                   rng: np.random.Generator) -> np.ndarray:
    """Ambient photons (uint16) around ambient_level·min(ρ, 1) on a surface in view (range finite, ρ > 0),
    ambient_sky elsewhere.

    Shot noise: Poisson, drawn as its Gaussian approximation N(μ, μ) (same mean and variance; a fraction
    of the cost of exact Poisson draws, and close for the tens-to-hundreds of photons modelled here).
    rng: the rays' counter draws (a RayDraws; a plain Generator gives one key), word AMBIENT_WORD: the draws
    the device kernel makes for the same ray (warp_frame_kernels.py), so host and device near_ir agree.
    One compiled pass over the formulas below, the same bits as `ouster_ambient_numpy` (its 13 numpy passes took
    0.6 ms per 65536 pixels, besides the normal draws).
    """
    n = len(rho)
    if ambient_level <= 0 and ambient_sky <= 0:
        return np.zeros(n, np.uint16)
    out = np.empty(n, np.uint16)
    _flat_ambient_kernel(np.asarray(ranges, np.float32), np.asarray(rho, np.float32), np.float32(ambient_level),
                         np.float32(ambient_sky), _ambient_draws(rng, n), out)
    return out


def ouster_ambient_numpy(ranges, rho, ambient_level, ambient_sky, rng) -> np.ndarray:
    """ouster_ambient in numpy passes over the formulas: the reference of the compiled loop."""
    if ambient_level <= 0 and ambient_sky <= 0:
        return np.zeros(np.shape(rho), np.uint16)
    in_view = np.isfinite(ranges) & (rho > 0)
    rho = np.where(in_view, rho, np.float32(0.0))  # ρ ≥ 0 (validated materials)
    mean = flat_ambient_mean(np.asarray(rho, np.float32), in_view, np.float32(ambient_level), np.float32(ambient_sky))
    return shot_noise_count(mean, _ambient_draws(rng, len(mean))).astype(np.uint16)


def _ambient_draws(rng: np.random.Generator, n: int) -> np.ndarray:
    """(n,) standard normals of the rays' AMBIENT_WORD (counter draws by ray index)."""
    key, first = ray_draws(rng)
    return gaussians(key, first, AMBIENT_WORD, n)


# The per-return formulas of the fields above, written once: numpy runs them on the host, Warp compiles their
# source for device frames (radarays_ros/twin.py; lidar_ros/warp_frame_kernels.py). ASCII only in their lines.
def diffuse_percent(rho: float) -> float:
    """Calibrated reflectivity of a diffuse return: round(100 clip(rho, 0, 1)) (float32 constants: numba too)."""
    return xm.rint(xm.minimum(xm.maximum(rho, xm.float32(0.0)), xm.float32(1.0)) * xm.float32(100.0))


def retro_percent(rho: float, ln_full_scale: float) -> float:
    """Calibrated reflectivity of a retroreflector (rho > 1): round(101 + 154 ln(rho) / ln(rho_full)), at most 255."""
    return xm.rint(xm.minimum(101.0 + 154.0 * xm.log(rho) / ln_full_scale, 255.0))


def signal_count(rho: float, r: float, signal_scale: float, overlap: float) -> float:
    """Ouster signal photons round(min(K rho / r^2 O(r), 65535)) of a return at range r (r >= 0.1 m)."""
    return xm.rint(xm.minimum(rho / (r * r) * signal_scale * overlap, PHOTONS_MAX))


def flat_ambient_mean(rho: float, in_view: bool, ambient_level: float, ambient_sky: float) -> float:
    """Mean ambient photons: ambient_level min(rho, 1) on a surface in view, ambient_sky elsewhere."""
    return xm.where(in_view, xm.minimum(rho, 1.0) * ambient_level, ambient_sky)


def shot_noise_count(mean: float, z: float) -> float:
    """Photons with shot noise as N(mean, mean) from a standard normal draw z, rounded, within 0..65535."""
    return xm.rint(xm.clip(mean + xm.sqrt(mean) * z, 0.0, PHOTONS_MAX))


_diffuse_percent_compiled = inlined(diffuse_percent)
_signal_count_compiled = inlined(signal_count)


@kernel
def _ouster_signal_kernel(rho, ranges, signal_scale, factor, out):
    """out = signal_count(ρ, fmax(r, MIN_SIGNAL_RANGE), K, O(r) or 1) as uint16, per return. Its float32 operations
    are numpy's; numba compares the float32 value with PHOTONS_MAX in float64 (exact) and rounds that, the same
    integer (test_lidar_perf_loops checks the bits)."""
    floor, one = np.float32(MIN_SIGNAL_RANGE), np.float32(1.0)
    for i in range(out.shape[0]):
        r = ranges[i] if ranges[i] >= floor else floor  # np.fmax: NaN -> the floor
        out[i] = np.uint16(_signal_count_compiled(rho[i], r, signal_scale, factor[i] if factor.shape[0] else one))


@kernel
def _flat_ambient_kernel(ranges, rho, level, sky, z, out):
    """out = shot_noise_count(flat_ambient_mean(...), z) as uint16, written out here: numba has no np.clip of
    scalars, and its np.where of scalars allocates an array per call; the same float32 operations in the same
    order (test_lidar_perf_loops checks the bits)."""
    zero, one, ceiling = np.float32(0.0), np.float32(1.0), np.float32(PHOTONS_MAX)
    for i in range(out.shape[0]):
        in_view = np.isfinite(ranges[i]) and rho[i] > 0
        mean = min(rho[i], one) * level if in_view else sky
        count = mean + np.sqrt(mean) * z[i]
        out[i] = np.uint16(np.rint(min(max(count, zero), ceiling)))


@kernel
def _diffuse_percent(rho, value):
    """value = round(100·clip(ρ, 0, 1)) in float32; returns whether any ρ exceeds 1 (a retroreflector)."""
    retro = False
    for i in range(rho.shape[0]):
        value[i] = _diffuse_percent_compiled(rho[i])
        retro = retro or rho[i] > 1.0
    return retro
