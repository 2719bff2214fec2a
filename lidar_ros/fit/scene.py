"""A held-fixed scene from one lidar frame: the geometry and surfaces a sensor-stage fit shades again.

Without a mesh world the frame itself is the scene: each pixel's range is the distance to what it saw and
its calibrated reflectivity the surface's ρ (Ouster/Velodyne: 0-100 = Lambertian %, 101-255 retro, the
inverse of lidar_ros/physics/intensity.py). Two corrections make it a *clean* scene, so that the sensor
effects a fit adds are not counted twice:
- isolated misses (a miss whose 4 direct neighbours returned: a dropout, not open sky) are filled with
  the mean of those neighbours, so the dropout probability is the fit's to explain;
- ranges are smoothed along each row by the mean of 5 (else 3) neighbours on one surface (ranges within
  SAME_SURFACE), which keeps planes and removes most of the frame's own range noise (for independent noise
  the 5-mean leaves σ/√5, and its second difference ≈ 0.12 σ as the noise statistic reads it).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from radarays_ros.errors import ConfigError

from ..compare.frame import LidarFrame
from ..compare.stats import SAME_SURFACE, holes

DEFAULT_RHO = 0.2  # where a frame has no reflectivity channel (signal and ambient then cannot be fitted)


@dataclass(frozen=True)
class HeldScene:
    name: str
    sensor: str
    range_m: np.ndarray      # (H, W) clean range, NaN = nothing there
    rho: np.ndarray          # (H, W) reflectivity (fraction of white), 0 where nothing
    directions: np.ndarray   # (H, W, 3) unit ray directions (NaN where unknown)
    has_reflectivity: bool

    @property
    def shape(self) -> tuple[int, int]:
        return self.range_m.shape

    @property
    def returned(self) -> np.ndarray:
        return np.isfinite(self.range_m)


def rho_from_calibrated(value: np.ndarray, retro_full_scale: float = 100.0) -> np.ndarray:
    """ρ of a calibrated reflectivity 0..255 (the inverse of intensity.calibrated_reflectivity)."""
    v = np.asarray(value, np.float64)
    retro = np.exp((v - 101.0) * np.log(retro_full_scale) / 154.0)
    return np.where(v <= 100.0, np.clip(v, 0.0, None) / 100.0, retro)


def _fill_isolated(a: np.ndarray, isolated: np.ndarray) -> np.ndarray:
    up, down = np.vstack([a[:1], a[:-1]]), np.vstack([a[1:], a[-1:]])
    mean4 = (np.roll(a, 1, 1) + np.roll(a, -1, 1) + up + down) / 4.0
    return np.where(isolated, mean4, a)


def _smooth_rows(r: np.ndarray) -> np.ndarray:
    out = r.copy()
    for half in (1, 2):  # a 5-mean where the 5 lie on one surface overrides the 3-mean
        shifted = np.stack([np.roll(r, k, axis=1) for k in range(-half, half + 1)])
        with np.errstate(invalid="ignore"):
            same = np.all(np.abs(shifted - r) <= SAME_SURFACE * r, axis=0)
        out = np.where(same, shifted.mean(axis=0), out)
    return out


def scene_from_frame(frame: LidarFrame, retro_full_scale: float = 100.0) -> HeldScene:
    """The clean held-fixed scene of a frame (see the module docstring)."""
    r = np.asarray(frame.range_m, np.float64)
    valid = np.isfinite(r) & (r > 0)
    if valid.mean() < 0.01:
        raise ConfigError(f"lidar frame {frame.name}: {valid.sum()} returns of {valid.size} pixels, too few to fit")
    _, isolated = holes(frame)
    has_refl = frame.reflectivity is not None
    refl = np.asarray(frame.reflectivity, np.float64) if has_refl else np.full(r.shape, 100 * DEFAULT_RHO)
    r_in = np.where(valid, r, np.nan)
    rho = np.where(valid, rho_from_calibrated(refl, retro_full_scale), np.nan)
    with np.errstate(invalid="ignore"):
        xyz = np.asarray(frame.xyz_m, np.float64)
        dirs = np.where(valid[..., None], xyz / np.where(valid, r, 1.0)[..., None], np.nan)
    r_in = _fill_isolated(r_in, isolated)
    rho = _fill_isolated(rho, isolated)
    for k in range(3):
        dirs[..., k] = _fill_isolated(dirs[..., k], isolated)
    clean = _smooth_rows(r_in)
    return HeldScene(frame.name, frame.sensor, clean, np.where(np.isfinite(clean), np.nan_to_num(rho), 0.0),
                     dirs, has_refl)
