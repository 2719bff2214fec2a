"""From noise-free hits to what a lidar reports: detection limit, range noise, intensity fields.

`SurfaceModel` holds what is fixed for a run (the detection-limit fit and the per-laser range biases,
drawn once from `seed`); `apply` turns one scan's `LidarHits` into `Returns` with a per-scan Generator.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from radarays_ros.errors import ConfigError

from .config import NoiseConfig, SurfaceConfig
from .detection import DetectionLimit
from .intensity import calibrated_reflectivity, ouster_ambient, ouster_signal
from .interaction import LidarHits
from .noise import draw_laser_biases, noisy_ranges


@dataclass
class Returns:
    """What the sensor reports for N rays. Where `hit` is False: range/clean_range NaN, reflectivity,
    intensity, velodyne_intensity, ouster_reflectivity and ouster_signal 0, entity/material -1.

    range (N,) f32              noisy range along the ray (m)
    hit (N,) bool               a return survived the detection limit
    clean_range (N,) f32        noise-free range of the same return
    reflectivity (N,) f32       ρ(θ), fraction of a white Lambertian target (LiMOX)
    intensity (N,) f32          = reflectivity (LiMOX's intensity output)
    velodyne_intensity (N,) f32 calibrated reflectivity 0..255 (intensity.py)
    ouster_reflectivity (N,) u16 the same calibrated scale
    ouster_signal (N,) u16      photons ∝ ρ(θ)/r², saturating
    ouster_ambient (N,) u16     ambient photons (every ray, also without a return)
    dust (N,) bool              the return is an early dust return
    entity, material (N,) i32; normal (N, 3) f32; cos_incidence (N,) f32: the returning surface
    first_entity (N,) i32       the first surface met (glass, mirror…), also without a return
    """

    range: np.ndarray
    hit: np.ndarray
    clean_range: np.ndarray
    reflectivity: np.ndarray
    intensity: np.ndarray
    velodyne_intensity: np.ndarray
    ouster_reflectivity: np.ndarray
    ouster_signal: np.ndarray
    ouster_ambient: np.ndarray
    dust: np.ndarray
    entity: np.ndarray
    material: np.ndarray
    normal: np.ndarray
    cos_incidence: np.ndarray
    first_entity: np.ndarray

    def __len__(self) -> int:
        return len(self.range)


class SurfaceModel:
    """Detection limit + noise + intensity of one sensor for a whole run.

    n_lasers: number of laser channels (biases are indexed by laser_index in `apply`).
    seed: seeds the per-laser bias draw only; per-scan randomness comes from `apply`'s rng.
    """

    def __init__(self, surface: SurfaceConfig | None = None, noise: NoiseConfig | None = None,
                 n_lasers: int = 1, seed: int | None = 0):
        self.surface = surface or SurfaceConfig()
        self.noise = noise or NoiseConfig()
        if isinstance(n_lasers, bool) or not isinstance(n_lasers, (int, np.integer)) or n_lasers < 0:
            raise ConfigError(f"n_lasers: {n_lasers!r}; allowed: an integer >= 0")
        self.n_lasers = int(n_lasers)
        self.limit = DetectionLimit(self.surface)
        self.biases = draw_laser_biases(self.noise, self.n_lasers, seed)

    def apply(self, hits: LidarHits, laser_index: np.ndarray | None, rng: np.random.Generator) -> Returns:
        """Detection limit per ray, then noise along the ray, then intensity fields."""
        n = len(hits)
        if laser_index is not None:
            laser_index = np.asarray(laser_index)
            if laser_index.shape != (n,):
                raise ConfigError(f"laser_index must have shape ({n},), got {laser_index.shape}")
            if n and self.noise.bias_sigma > 0 and (laser_index.min() < 0 or laser_index.max() >= self.n_lasers):
                raise ConfigError(f"laser_index out of range; allowed: 0..{self.n_lasers - 1}")
        keep = hits.hit & self.limit.keep(hits.range, hits.reflectivity)
        idx = np.flatnonzero(keep)

        clean = np.full(n, np.nan, np.float32)
        clean[idx] = hits.range[idx]
        noisy = clean.copy()
        dust = np.zeros(n, bool)
        if self.noise.enabled and len(idx):
            lasers = laser_index[idx] if laser_index is not None else None
            noisy[idx], dust[idx] = noisy_ranges(hits.range[idx], lasers, self.biases, self.noise, rng)

        rho = np.where(keep, hits.reflectivity, np.float32(0.0)).astype(np.float32)
        cal = calibrated_reflectivity(rho, self.surface.retro_full_scale)
        return Returns(
            range=noisy,
            hit=keep,
            clean_range=clean,
            reflectivity=rho,
            intensity=rho,
            velodyne_intensity=cal,
            ouster_reflectivity=cal.astype(np.uint16),
            ouster_signal=ouster_signal(rho, np.where(keep, hits.range, np.inf), self.surface.signal_scale),
            ouster_ambient=ouster_ambient(rho, keep, self.surface.ambient_level, self.surface.ambient_sky, rng),
            dust=dust,
            entity=np.where(keep, hits.entity, -1).astype(np.int32),
            material=np.where(keep, hits.material, -1).astype(np.int32),
            normal=np.where(keep[:, None], hits.normal, np.float32(0.0)).astype(np.float32),
            cos_incidence=np.where(keep, hits.cos_incidence, np.float32(0.0)).astype(np.float32),
            first_entity=hits.first_entity,
        )
