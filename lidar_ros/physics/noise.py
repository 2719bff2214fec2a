"""Lidar range noise; every term optional and seeded. Noise moves a point along its own ray: only the
range changes, the caller computes xyz = origin + range·direction. A miss stays a miss.

Per returned ray, in this order:

1. dust (Rmagine's uniform dust): with probability p the ray returns early from a particle, at a
   range drawn uniformly in [min(dust_min_range, r), r];
2. r += ε_bias[laser] + ε_ray + ε_rel (BlenSor §3.2 eq. dist_noisy = dist + ε_bias,i + ε_ray):
   ε_bias[laser] drawn once per laser for the whole run, N(0, σ_bias) or Laplace with the same standard
   deviation (scale σ_bias/√2); ε_ray ~ N(0, σ) per ray (BlenSor 0.01 m), or N(0, σ(SNR)) with the
   return's own σ where noise.snr_sigma is set (range_precision.py); ε_rel ~ N(0, σ_rel·r^k) per
   ray (Rmagine's relative Gaussian);
3. quantisation to the sensor's range resolution: r = round(r / res)·res;
4. r = max(r, 0): noise never puts a point behind the sensor.

Angular jitter changes the ray itself, so it is applied to directions before tracing
(`jitter_directions`).

Every per-ray draw is a counter-based draw of the ray's index (radarays_ros/counter_random.py), one word per
term (the *_WORD numbers below), made by the same formulas on the host (numba loops) and in the device kernel
(lidar_ros/warp_frame_kernels.py): host and device frames draw the same numbers for the same ray, whatever the
thread count or piece split, and a term's draws do not change when another term is switched on or off.
"""
from __future__ import annotations

import numpy as np
import numpy as xm  # the formulas' vocabulary (radarays_ros/twin.py)

from radarays_ros.compiled import inlined, kernel
from radarays_ros.counter_random import (gaussians, random_bits_inlined as _random_bits, ray_draws,
                                         second_uniform_inlined as _second_uniform, uniform_inlined as _uniform)
from radarays_ros.errors import ConfigError

from .config import NoiseConfig


def draw_laser_biases(config: NoiseConfig, n_lasers: int, seed: int | None) -> np.ndarray:
    """(n_lasers,) float32 range bias per laser, fixed for the run (BlenSor §3.2). Same seed, same biases."""
    if n_lasers < 0:
        raise ConfigError(f"n_lasers: {n_lasers}; allowed: an integer >= 0")
    if config.bias_sigma == 0.0:
        return np.zeros(n_lasers, np.float32)
    rng = np.random.default_rng(seed)
    if config.bias_distribution == "laplace":
        return rng.laplace(0.0, config.bias_sigma / np.sqrt(2.0), n_lasers).astype(np.float32)
    return rng.normal(0.0, config.bias_sigma, n_lasers).astype(np.float32)


# the counter words of a lidar ray's draws (radarays_ros/counter_random.py: WORDS_PER_RAY of them)
JITTER_WORDS = (0, 1, 2)  # the tilt's three Gaussian components
DROPOUT_WORD = 3  # detection_probability.dropouts
DUST_WORD = 4  # whether a dust particle answers (top bits), and where (low bits)
RANGE_WORD = 5  # epsilon_ray
RELATIVE_WORD = 6  # epsilon_rel
AMBIENT_WORD = 7  # the device's ambient shot noise


def noisy_ranges(ranges: np.ndarray, ray_bias: np.ndarray | None, config: NoiseConfig,
                 rng: np.random.Generator, ray_sigma: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Noisy ranges (new float32 array) of rays with clean `ranges` ((N,), NaN = no return), and the dust mask.

    Misses stay NaN. ray_bias: (N,) per-ray laser bias (SurfaceModel.ray_bias), needed when bias_sigma > 0.
    ray_sigma: (N,) sigma of each ray's epsilon_ray instead of config.sigma (SNR-dependent precision). rng: the
    rays' counter draws (a RayDraws: its key and first ray; a plain Generator: one key drawn from it), so a ray's
    noise depends on its index only, not on which other rays returned.
    """
    r = np.array(ranges, np.float32)  # a copy: the caller keeps the clean ranges
    n = len(r)
    dust = np.zeros(n, bool)
    if config.bias_sigma > 0 and n and ray_bias is None:
        raise ConfigError("noise.bias_sigma > 0 needs the laser index of every ray")
    if not n:
        return r, dust
    key, first = ray_draws(rng)
    bias = np.asarray(ray_bias, np.float32) if config.bias_sigma > 0 else _NONE
    sigmas = np.asarray(ray_sigma, np.float32) if ray_sigma is not None else _NONE
    # the draws first, each in a loop of its own (without branches it vectorises)
    if config.dust_probability > 0:  # early returns from particles
        _dust_draws(r, dust, key, first, np.float32(config.dust_probability))
        picked = np.flatnonzero(dust)
        _dust_ranges(r, picked, key, first, np.float32(config.dust_min_range))
    step = gaussians(key, first, RANGE_WORD, n) if config.sigma > 0 or ray_sigma is not None else _NONE
    relative = gaussians(key, first, RELATIVE_WORD, n) if config.relative_sigma > 0 else _NONE
    _add_noise(r, np.asarray(ranges, np.float32), bias, step, np.float32(config.sigma), sigmas, relative,
               np.float32(config.relative_sigma), np.float32(config.relative_exponent), np.float32(config.resolution))
    return r, dust


_NONE = np.empty(0, np.float32)  # a term that is off


@kernel
def _dust_draws(r, dust, key, first, probability):
    """dust[i]: a particle answers ray i (a return, r[i] not NaN): the top bits of its DUST_WORD below `probability`."""
    for i in range(r.shape[0]):
        u = _uniform(_random_bits(key, first + np.uint64(i), np.uint64(DUST_WORD)))
        dust[i] = (u < probability) & (r[i] == r[i])


@kernel
def _dust_ranges(r, picked, key, first, min_range):
    """r[i] = dust_range(r[i], min_range, u) of the picked rays, u the low bits of their DUST_WORD."""
    for i in picked:
        bits = _random_bits(key, first + np.uint64(i), np.uint64(DUST_WORD))
        r[i] = _dust_range_compiled(r[i], min_range, _second_uniform(bits))


@kernel
def _add_noise(r, clean, bias, step, sigma, sigmas, relative, relative_sigma, relative_exponent, resolution):
    """Per ray, in float32 and in this order, as the device kernel (after dust): + bias, + sigma z (sigma = sigmas[i]
    where given), + relative_sigma clean^k z', quantised to `resolution` (> 0), kept >= 0 (z = step[i],
    z' = relative[i]: the ray's RANGE_WORD and RELATIVE_WORD Gaussians; each term where given). NaN (no return)
    stays NaN."""
    for i in range(r.shape[0]):
        value = r[i]
        if bias.shape[0]:
            value += bias[i]
        if step.shape[0]:
            value += (sigmas[i] if sigmas.shape[0] else sigma) * step[i]
        if relative.shape[0]:
            value += relative_sigma * clean[i] ** relative_exponent * relative[i]
        if resolution > 0:
            value = _quantised_compiled(value, resolution)
        r[i] = max(value, np.float32(0.0)) if not np.isnan(value) else value


# Written once: numpy (and numba, in _add_noise) run these on the host, Warp compiles their source for device
# frames (radarays_ros/twin.py; lidar_ros/warp_frame_kernels.py). ASCII only in their lines.
def dust_range(far: float, min_range: float, u: float) -> float:
    """The range of a dust return: uniform in [min(min_range, far), far] for a uniform draw u in [0, 1)."""
    near = xm.minimum(min_range, far)
    return near + u * (far - near)


def quantised(value: float, resolution: float) -> float:
    """A range rounded to the sensor's range resolution (> 0): round(r / res) res."""
    return xm.rint(value / resolution) * resolution


def jittered_direction(dx: float, dy: float, dz: float, zx: float, zy: float, zz: float, sigma: float):
    """A direction d tilted by the Gaussian step sigma z with its part along d removed, d' = (d + step)/|d + step|
    (d normalised first); each product and sum in this order, so host and device give the same bits."""
    length = xm.sqrt(dx * dx + dy * dy + dz * dz)
    ux = dx / length
    uy = dy / length
    uz = dz / length
    sx = sigma * zx
    sy = sigma * zy
    sz = sigma * zz
    along = sx * ux + sy * uy + sz * uz
    ox = ux + (sx - along * ux)
    oy = uy + (sy - along * uy)
    oz = uz + (sz - along * uz)
    size = xm.sqrt(ox * ox + oy * oy + oz * oz)
    return ox / size, oy / size, oz / size


_quantised_compiled = inlined(quantised)
_dust_range_compiled = inlined(dust_range)
_jittered_compiled = inlined(jittered_direction)


def standard_normal(rng: np.random.Generator, n: int) -> np.ndarray:
    """(n,) float32 draws of N(0, 1) by the Box–Muller transform of float32 uniforms.

    Exact Gaussian up to float32 resolution (|z| ≤ √(2·ln 2^24) ≈ 5.8: the smallest uniform step
    bounds the tails). Why not Generator.standard_normal: its float32 ziggurat costs ~8 ns per draw
    here, twice the uniforms + SIMD log/sqrt/sin/cos, and lidars draw one or two per ray and frame.
    """
    half = (n + 1) // 2
    u = rng.random(2 * half, dtype=np.float32)
    radius, angle = u[:half], u[half:]
    np.subtract(np.float32(1.0), radius, out=radius)  # (0, 1]: log stays finite
    np.log(radius, out=radius)
    radius *= np.float32(-2.0)
    np.sqrt(radius, out=radius)
    angle *= np.float32(2.0 * np.pi)
    out = np.empty(2 * half, np.float32)
    np.cos(angle, out=out[:half])
    np.sin(angle, out=out[half:])
    out[:half] *= radius
    out[half:] *= radius
    return out[:n]


def jitter_directions(directions: np.ndarray, sigma: float, rng: np.random.Generator) -> np.ndarray:
    """Unit directions tilted by a random angle: N(0, sigma^2) (rad) along each of two axes perpendicular to the ray.

    A 3D Gaussian step of sigma per axis with its component along the ray removed is an isotropic 2D
    Gaussian in the plane perpendicular to the ray; d' = (d + step)/|d + step| (jittered_direction). The tilt is
    atan(|step|) ~ |step|: Rayleigh distributed with scale sigma for small sigma (relative error < sigma^2/3).
    sigma = 0 returns the input unchanged (no draw). rng: the rays' counter draws (noisy_ranges), words JITTER_WORDS.
    """
    d = np.asarray(directions, np.float32)
    if sigma <= 0 or not len(d):
        return d
    key, first = ray_draws(rng)
    out = np.empty((len(d), 3), np.float32)
    zx, zy, zz = (gaussians(key, first, word, len(d)) for word in JITTER_WORDS)
    _jitter(np.ascontiguousarray(d), zx, zy, zz, np.float32(sigma), out)
    return out


@kernel
def _jitter(d, zx, zy, zz, sigma, out):
    for i in range(d.shape[0]):
        out[i, 0], out[i, 1], out[i, 2] = _jittered_compiled(d[i, 0], d[i, 1], d[i, 2], zx[i], zy[i], zz[i], sigma)
