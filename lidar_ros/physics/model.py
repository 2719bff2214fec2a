"""From noise-free hits to what a lidar reports: detection limit, range noise, intensity fields.

`SurfaceModel` holds what is fixed for a run (the detection-limit fit and the per-laser range biases,
drawn once from `seed`); `apply` turns one scan's `LidarHits` into `Returns` with a per-scan Generator.
"""
from __future__ import annotations

from dataclasses import replace
from functools import cached_property

import numpy as np

from radarays_ros.counter_random import RayDraws
from radarays_ros.errors import ConfigError

from .ambient import pixel_means, row_gains, sun_direction
from .backfolding import fold
from .config import NoiseConfig, SurfaceConfig
from .cw_phase import cw_ranges
from .detection import DetectionLimit
from .detection_probability import detected_returns, median_limits
from .effects_config import EffectsConfig
from .intensity import calibrated_reflectivity, measured_calibrated_reflectivity, ouster_ambient, ouster_signal
from .overlap import MIN_SIGNAL_RANGE, overlap, range_overlap
from .photons import signal_means
from .poisson_counts import poisson_counts
from .range_precision import ray_sigma
from .interaction import LidarHits
from .noise import draw_laser_biases, noisy_ranges


class Returns:
    """What the sensor reports for N rays. Where `hit` is False: range/clean_range NaN, reflectivity,
    intensity, velodyne_intensity, ouster_reflectivity and ouster_signal 0, entity/material -1.

    range (N,) f32              noisy range along the ray (m)
    hit (N,) bool               a return survived the detection limit
    clean_range (N,) f32        noise-free range of the same return
    reflectivity (N,) f32       ρ(θ), fraction of a white Lambertian target (LiMOX)
    intensity (N,) f32          = reflectivity (LiMOX's intensity output)
    dust (N,) bool              the return is an early dust return

    Computed on first access (a sensor asks only for the fields its layout has):
    velodyne_intensity (N,) f32 calibrated reflectivity 0..255 (intensity.py)
    ouster_reflectivity (N,) u16 the same calibrated scale
    ouster_signal (N,) u16      photons ∝ ρ(θ)/r², saturating
    ouster_ambient (N,) u16     ambient photons (every ray, also without a return); its random draws
                                come from a seed taken from the scan's rng in `apply`, so the values
                                do not depend on which fields are read or in what order
    entity, material (N,) i32; normal (N, 3) f32; cos_incidence (N,) f32: the returning surface
    first_entity (N,) i32       the first surface met (glass, mirror…), also without a return
    """

    def __init__(self, hits: LidarHits, keep: np.ndarray, noisy: np.ndarray, clean: np.ndarray,
                 dust: np.ndarray, surface: SurfaceConfig, ambient_seed: int, effects: EffectsConfig | None = None,
                 reflectivity: np.ndarray | None = None):
        self.range = noisy
        self.hit = keep
        self.clean_range = clean
        if reflectivity is None:  # else the caller's hits.reflectivity where kept, 0 elsewhere (float32)
            reflectivity = np.where(keep, hits.reflectivity, np.float32(0.0)).astype(np.float32, copy=False)
        self.reflectivity = reflectivity
        self.intensity = self.reflectivity
        self.dust = dust
        self._hits = hits
        self._surface = surface
        self._ambient_seed = ambient_seed
        self.ray_draws: RayDraws | None = None  # the scan's counter draws (SurfaceModel.apply), read by the flat ambient
        self._effects = effects or EffectsConfig()
        self.ray_gain: np.ndarray | None = None  # per-ray ambient gain of its row (SurfaceModel.apply)
        # O(r) of clean_range when SurfaceModel.apply computed it (for the SNR range noise), else None
        self.overlap_factor: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.range)

    @property
    def first_entity(self) -> np.ndarray:
        return self._hits.first_entity  # looked up on first access (ground truth only)

    @cached_property
    def velodyne_intensity(self) -> np.ndarray:
        return calibrated_reflectivity(self.reflectivity, self._surface.retro_full_scale)

    @cached_property
    def ouster_reflectivity(self) -> np.ndarray:
        if not self._effects.signal.poisson:
            return self.velodyne_intensity.astype(np.uint16)
        # photon counts on: the sensor infers reflectivity from the counted signal (intensity.py
        # measured_reflectivity), so it carries the counts' shot noise and saturation
        return measured_calibrated_reflectivity(self.ouster_signal, self.clean_range, self.hit,
                                                self._surface.signal_scale, self._surface.retro_full_scale,
                                                self._surface.overlap_range_m, self._signal_overlap)

    @cached_property
    def ouster_signal(self) -> np.ndarray:
        # clean_range is NaN and reflectivity 0 where there is no return: the signal is 0 there
        signal = self._effects.signal
        if not signal.poisson and signal.noise_floor == 0 and signal.saturation >= 65535:
            return ouster_signal(self.reflectivity, self.clean_range, self._surface.signal_scale,
                                 self._surface.overlap_range_m)
        if signal.poisson:  # the receiver's near-range overlap (overlap.py) included
            lam = signal_means(self.clean_range, self.reflectivity, self.hit, self._surface.signal_scale,
                               self._surface.overlap_range_m, signal.noise_floor, self._signal_overlap)
            rng = np.random.default_rng([self._ambient_seed, 1])  # its own stream: fields read in any order
            return poisson_counts(lam, rng, int(signal.saturation))
        r = np.fmax(self.clean_range.astype(np.float64), MIN_SIGNAL_RANGE)
        mean = self._surface.signal_scale * self.reflectivity / (r * r)
        if self._surface.overlap_range_m > 0:  # the receiver's near-range overlap (overlap.py)
            mean = mean * overlap(r, self._surface.overlap_range_m)
        # the mean itself, with the floor and saturation
        mean = np.where(self.hit, mean, signal.noise_floor)
        return np.rint(np.minimum(np.nan_to_num(mean), signal.saturation)).astype(np.uint16)

    @cached_property
    def _signal_overlap(self) -> np.ndarray | None:
        """O(r) of the returns' clean ranges (overlap.py), read by the signal and the measured reflectivity."""
        if self._surface.overlap_range_m <= 0:
            return None
        if self.overlap_factor is not None:
            return self.overlap_factor
        return range_overlap(self.clean_range, self._surface.overlap_range_m)

    @cached_property
    def ouster_ambient(self) -> np.ndarray:
        rng = np.random.default_rng(self._ambient_seed)
        signal = self._effects.signal
        # ambient light is passive: a pixel sees the surface in its view whether or not the laser's echo
        # from it was detected (a dark or far wall beyond the detection limit still shows its sunlit face)
        hits = self._hits
        if signal.ambient_model == "flat":
            # by ray index, as the device draws it; a plain Generator's scan: one key from the ambient stream
            draws = self.ray_draws if self.ray_draws is not None else rng
            return ouster_ambient(hits.range, hits.reflectivity, self._surface.ambient_level, self._surface.ambient_sky,
                                  draws)
        # sun model: the surface's albedo (ρ(θ) without the lidar's own incidence), its world normal
        sun = sun_direction(signal.sun_elevation_deg, signal.sun_azimuth_deg)
        lam = pixel_means(hits.range, hits.reflectivity, hits.cos_incidence, hits.normal, self._surface.ambient_level,
                          self._surface.ambient_sky, sun, signal.sun_elevation_deg > 0, self.ray_gain)
        return poisson_counts(lam, rng)

    @cached_property
    def entity(self) -> np.ndarray:
        return np.where(self.hit, self._hits.entity, -1).astype(np.int32, copy=False)

    @cached_property
    def material(self) -> np.ndarray:
        return np.where(self.hit, self._hits.material, -1).astype(np.int32, copy=False)

    @cached_property
    def normal(self) -> np.ndarray:
        return np.where(self.hit[:, None], self._hits.normal, np.float32(0.0)).astype(np.float32, copy=False)

    @cached_property
    def cos_incidence(self) -> np.ndarray:
        return np.where(self.hit, self._hits.cos_incidence, np.float32(0.0)).astype(np.float32, copy=False)


class SurfaceModel:
    """Detection limit + noise + intensity of one sensor for a whole run.

    n_lasers: number of laser channels (biases are indexed by laser_index in `apply`).
    seed: seeds the per-laser bias draw only; per-scan randomness comes from `apply`'s rng.
    """

    def __init__(self, surface: SurfaceConfig | None = None, noise: NoiseConfig | None = None,
                 n_lasers: int = 1, seed: int | None = 0, effects: EffectsConfig | None = None):
        self.surface = surface or SurfaceConfig()
        self.noise = noise or NoiseConfig()
        self.effects = effects or EffectsConfig()
        if isinstance(n_lasers, bool) or not isinstance(n_lasers, (int, np.integer)) or n_lasers < 0:
            raise ConfigError(f"n_lasers: {n_lasers!r}; allowed: an integer >= 0")
        self.n_lasers = int(n_lasers)
        detection = self.effects.detection
        pairs = median_limits(self.surface.limits, self.surface.limits_probability, detection.snr_at_limit)
        self.limit = DetectionLimit(self.surface if pairs is self.surface.limits else replace(self.surface, limits=pairs))
        self.biases = draw_laser_biases(self.noise, self.n_lasers, seed)
        self.gains = row_gains(self.effects.signal.row_gain_sigma, self.n_lasers, int(seed or 0))

    def ray_bias(self, laser_index: np.ndarray | None) -> np.ndarray | None:
        """(N,) float32 range bias of each ray's laser (None without bias noise). Fixed for the run: a
        simulator gathers it once per ray table and passes it to every `apply`."""
        if self.noise.bias_sigma <= 0:
            return None
        if laser_index is None:
            raise ConfigError("noise.bias_sigma > 0 needs the laser index of every ray")
        laser_index = np.asarray(laser_index)
        if len(laser_index) and (laser_index.min() < 0 or laser_index.max() >= self.n_lasers):
            raise ConfigError(f"laser_index out of range; allowed: 0..{self.n_lasers - 1}")
        return self.biases[laser_index]

    def ray_gain(self, laser_index: np.ndarray | None) -> np.ndarray | None:
        """(N,) float32 ambient gain of each ray's laser (signal.row_gain_sigma), None when off."""
        if self.effects.signal.row_gain_sigma <= 0 or laser_index is None:
            return None
        return self.gains[np.asarray(laser_index)]

    def _ray_sigma(self, rho: np.ndarray, clean: np.ndarray, factor: np.ndarray | None) -> np.ndarray | None:
        """Each return's range σ from its SNR (noise.snr_sigma, range_precision.py); None when not set."""
        if not self.noise.snr_sigma:
            return None
        return ray_sigma(rho, clean, self.surface.signal_scale, self.surface.overlap_range_m,
                         self.effects.signal.noise_floor, self.noise.snr_sigma, self.noise.sigma, self.noise.snr_floor,
                         factor)

    def _clean_overlap(self, clean: np.ndarray) -> np.ndarray | None:
        """O(r) of the clean ranges (photons.range_overlap) where the SNR range noise reads it, else None: then
        computed once for it and the photon fields (`Returns.overlap_factor`), which read the same ranges."""
        if not (self.noise.snr_sigma and self.surface.overlap_range_m > 0 and self.effects.signal.noise_floor > 0):
            return None
        return range_overlap(clean, self.surface.overlap_range_m)

    def apply(self, hits: LidarHits, laser_index: np.ndarray | None, rng: np.random.Generator,
              ray_bias: np.ndarray | None = None, ray_gain: np.ndarray | None = None) -> Returns:
        """Detection limit per ray, then noise along the ray, then intensity fields.

        ray_bias: this batch's `ray_bias(laser_index)` when the caller keeps it (then laser_index is not read).
        """
        n = len(hits)
        if ray_bias is None and self.noise.bias_sigma > 0:
            if laser_index is not None and np.shape(laser_index) != (n,):
                raise ConfigError(f"laser_index must have shape ({n},), got {np.shape(laser_index)}")
            ray_bias = self.ray_bias(laser_index)
        detection = self.effects.detection
        if detection.model == "snr" and self.surface.model != "none":  # a probability around the limit
            keep = None  # drawn by detected_returns
        else:
            keep = self.limit.keep(hits.range, hits.reflectivity)  # misses (range inf) are never kept
        keep, clean, kept_rho = detected_returns(hits.range, hits.reflectivity, keep, self.limit,
                                                 detection.snr_at_limit, detection.dropout_probability, rng)
        factor = self._clean_overlap(clean) if self.noise.enabled else None
        if self.noise.enabled:
            noisy, dust = noisy_ranges(clean, ray_bias, self.noise, rng, self._ray_sigma(hits.reflectivity, clean,
                                                                                         factor))
        else:  # its own array: a caller may edit range in place, clean_range stays
            noisy, dust = clean.copy(), np.zeros(n, bool)
        tof = self.effects.tof
        if tof.mode == "cw" and keep.any():  # phase ranging: wraps at c/(2|f1 − f2|), radiance bias
            at = np.flatnonzero(keep)
            radiance = hits.reflectivity[at] / np.maximum(clean[at], MIN_SIGNAL_RANGE) ** 2
            noisy[at] = cw_ranges(noisy[at, None], np.ones((len(at), 1)), tuple(f * 1e6 for f in tof.frequencies_mhz),
                                  tof.periods, tof.bias, radiance)
        if tof.unambiguous_range_m > 0:  # measured from the latest pulse (clean_range stays true)
            noisy = fold(noisy, tof.unambiguous_range_m)
        ambient_seed = int(rng.integers(2**63))  # one draw per scan, whatever fields are read later
        ret = Returns(hits, keep, noisy, clean, dust, self.surface, ambient_seed, self.effects, kept_rho)
        ret.ray_gain = ray_gain if ray_gain is not None else self.ray_gain(laser_index)
        ret.overlap_factor = factor
        if isinstance(rng, RayDraws):
            ret.ray_draws = rng
        return ret
