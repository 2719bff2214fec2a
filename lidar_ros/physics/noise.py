"""Lidar range noise; every term optional and seeded. Noise moves a point along its own ray: only the
range changes, the caller computes xyz = origin + range·direction. A miss stays a miss.

Per returned ray, in this order:

1. dust (Rmagine's uniform dust): with probability p the ray returns early from a particle, at a
   range drawn uniformly in [min(dust_min_range, r), r];
2. r += ε_bias[laser] + ε_ray + ε_rel (BlenSor §3.2 eq. dist_noisy = dist + ε_bias,i + ε_ray):
   ε_bias[laser] drawn once per laser for the whole run, N(0, σ_bias) or Laplace with the same standard
   deviation (scale σ_bias/√2); ε_ray ~ N(0, σ) per ray (BlenSor 0.01 m); ε_rel ~ N(0, σ_rel·r^k) per
   ray (Rmagine's relative Gaussian);
3. quantisation to the sensor's range resolution: r = round(r / res)·res;
4. r = max(r, 0): noise never puts a point behind the sensor.

Angular jitter changes the ray itself, so it is applied to directions before tracing
(`jitter_directions`).
"""
from __future__ import annotations

import numpy as np

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


def noisy_ranges(ranges: np.ndarray, laser_index: np.ndarray | None, biases: np.ndarray, config: NoiseConfig,
                 rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Noisy ranges (float32) of returned rays with clean `ranges` (finite, (K,)), and the dust mask.

    laser_index: (K,) laser of each ray, needed when bias_sigma > 0.
    """
    r = np.asarray(ranges, np.float32).copy()
    k = len(r)
    dust = np.zeros(k, bool)
    if config.dust_probability > 0 and k:
        dust = rng.random(k) < config.dust_probability
        near = np.minimum(np.float32(config.dust_min_range), r[dust])
        r[dust] = near + rng.random(len(near)).astype(np.float32) * (r[dust] - near)
    if config.bias_sigma > 0 and k:
        if laser_index is None:
            raise ConfigError("noise.bias_sigma > 0 needs the laser index of every ray")
        r += biases[np.asarray(laser_index)]
    if config.sigma > 0 and k:
        r += np.float32(config.sigma) * rng.standard_normal(k, dtype=np.float32)
    if config.relative_sigma > 0 and k:
        scale = np.float32(config.relative_sigma) * np.power(np.asarray(ranges, np.float32),
                                                             np.float32(config.relative_exponent))
        r += scale * rng.standard_normal(k, dtype=np.float32)
    if config.resolution > 0:
        r = (np.round(r / np.float32(config.resolution)) * np.float32(config.resolution)).astype(np.float32)
    return np.maximum(r, np.float32(0.0)), dust


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
