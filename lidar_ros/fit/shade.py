"""The forward model of a sensor-stage fit: a held-fixed scene shaded by the simulator's own physics.

The hit geometry (range, ρ per pixel) stays fixed; `SurfaceModel.apply` (lidar_ros/physics/model.py) adds
what the sensor does to it — detection limit and dropouts, range noise, signal photons, ambient, calibrated
reflectivity — exactly as a simulated frame gets it, so a fitted value means in the output YAML what it
meant in the fit. Same seed, same frame: the fit compares frames drawn with common random numbers.
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from ..compare.frame import LidarFrame
from ..physics import NoiseConfig, SurfaceConfig
from ..physics.effects_config import EffectsConfig
from ..physics.interaction import LidarHits
from ..physics.model import SurfaceModel
from .scene import HeldScene


def physics_of(spec: Mapping[str, Any], where: str = "sensor") -> tuple[SurfaceConfig, NoiseConfig, EffectsConfig]:
    """The validated physics sections of a sensor mapping (the ray table is not rebuilt)."""
    surface = SurfaceConfig.from_dict(spec.get("surface"), where=f"{where}: surface")
    noise = NoiseConfig.from_dict(spec.get("noise"), where=f"{where}: noise")
    effects = EffectsConfig.from_spec({k: spec.get(k) for k in EffectsConfig.SECTIONS}, where)
    return surface, noise, effects


def shade(scene: HeldScene, spec: Mapping[str, Any], seed: int = 0, name: str = "sim") -> LidarFrame:
    """The frame the sensor of `spec` reports from the held scene."""
    surface, noise, effects = physics_of(spec)
    h, w = scene.shape
    n = h * w
    r = np.where(scene.returned, scene.range_m, np.inf).astype(np.float32).reshape(-1)
    rho = scene.rho.astype(np.float32).reshape(-1)
    zeros_i = np.zeros(n, np.int32)
    hits = LidarHits(r, zeros_i, zeros_i, lambda: np.zeros((n, 3), np.float32), np.ones(n, np.float32), rho,
                     lambda: np.zeros(n, np.int16), lambda: np.zeros(n, np.int16), zeros_i, zeros_i, r)
    laser = np.repeat(np.arange(h), w)
    model = SurfaceModel(surface, noise, n_lasers=h, seed=seed, effects=effects)
    ret = model.apply(hits, laser, np.random.default_rng(seed))
    rng_m = np.where(ret.hit, ret.range, np.nan).astype(np.float64).reshape(h, w)
    xyz = np.nan_to_num(scene.directions) * np.nan_to_num(rng_m)[..., None]
    return LidarFrame(name=name, sensor=scene.sensor, range_m=rng_m, xyz_m=xyz,
                      reflectivity=ret.ouster_reflectivity.astype(np.float64).reshape(h, w),
                      signal=ret.ouster_signal.astype(np.float64).reshape(h, w),
                      near_ir=ret.ouster_ambient.astype(np.float64).reshape(h, w))
