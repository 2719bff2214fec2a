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
"""
from __future__ import annotations

import numpy as np
import numpy as xm  # the formulas' vocabulary (radarays_ros/twin.py)

from radarays_ros.compiled import inlined, kernel
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


def noisy_ranges(ranges: np.ndarray, ray_bias: np.ndarray | None, config: NoiseConfig,
                 rng: np.random.Generator, ray_sigma: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Noisy ranges (new float32 array) of rays with clean `ranges` ((N,), NaN = no return), and the dust mask.

    Misses stay NaN through every step (NaN arithmetic), so the whole batch is processed without
    gathering the returns first. ray_bias: (N,) per-ray laser bias (SurfaceModel.ray_bias), needed
    when bias_sigma > 0. ray_sigma: (N,) σ of each ray's ε_ray instead of config.sigma (SNR-dependent
    precision). Random draws are made for every ray in a fixed order, so a ray's noise
    does not depend on which other rays returned.
    """
    r = np.array(ranges, np.float32)  # a copy: the caller keeps the clean ranges
    n = len(r)
    dust = np.zeros(n, bool)
    if config.dust_probability > 0 and n:
        # the dusty rays, drawn directly (a count, then which rays) instead of one uniform per ray
        picked = rng.choice(n, size=rng.binomial(n, config.dust_probability), replace=False)
        picked = np.sort(picked[np.isfinite(r[picked])])
        far = r[picked]
        r[picked] = dust_range(far, np.float32(config.dust_min_range), rng.random(len(picked), dtype=np.float32))
        dust[picked] = True
    if config.bias_sigma > 0 and n and ray_bias is None:
        raise ConfigError("noise.bias_sigma > 0 needs the laser index of every ray")
    bias = ray_bias if config.bias_sigma > 0 and n else _NONE
    per_ray = ray_sigma is not None and n
    step = standard_normal(rng, n) if (config.sigma > 0 or per_ray) and n else _NONE
    relative = _NONE
    if config.relative_sigma > 0 and n:
        relative = np.power(np.asarray(ranges, np.float32), np.float32(config.relative_exponent))
        relative *= np.float32(config.relative_sigma)
        relative *= standard_normal(rng, n)
    sigmas = np.asarray(ray_sigma, np.float32) if per_ray else _NONE
    _add_noise(r, np.asarray(bias, np.float32), step, np.float32(config.sigma), sigmas, relative,
               np.float32(config.resolution))
    return r, dust


_NONE = np.empty(0, np.float32)  # a term that is off


@kernel
def _add_noise(r, bias, step, sigma, sigmas, relative, resolution):
    """Per ray, in float32 and in this order: + bias, + σ·step (σ = sigmas[i] where given), + relative term
    (each where given), then
    quantised to `resolution` (> 0) and kept ≥ 0. NaN (no return) stays NaN."""
    for i in range(r.shape[0]):
        value = r[i]
        if bias.shape[0]:
            value += bias[i]
        if step.shape[0]:
            value += step[i] * (sigmas[i] if sigmas.shape[0] else sigma)
        if relative.shape[0]:
            value += relative[i]
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


_quantised_compiled = inlined(quantised)


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
    """Unit directions tilted by a random angle: N(0, σ²) (rad) along each of two axes perpendicular to the ray.

    A 3D Gaussian step of σ per axis with its component along the ray removed is an isotropic 2D
    Gaussian in the plane perpendicular to the ray; d' = (d + step)/|d + step|. The tilt is
    atan(|step|) ≈ |step|: Rayleigh distributed with scale σ for small σ (relative error < σ²/3).
    σ = 0 returns the input unchanged (no draw).
    """
    d = np.asarray(directions, np.float32)
    if sigma <= 0 or not len(d):
        return d
    d = d / np.sqrt(np.einsum("ij,ij->i", d, d))[:, None]
    step = np.float32(sigma) * rng.standard_normal(d.shape, dtype=np.float32)
    step -= np.einsum("ij,ij->i", step, d)[:, None] * d
    out = d + step
    out /= np.sqrt(np.einsum("ij,ij->i", out, out))[:, None]
    return out
