"""Ambient (near-infrared background) photons of each pixel from the sun, the sky and surface albedo.

What a lidar's ambient/near_ir channel counts is sunlight reflected into the pixel (Ouster firmware
manual: NEAR_IR is the ambient photons at the laser band). For a Lambertian surface of albedo A with
normal n under sun direction s, the irradiance is direct E_sun·max(0, n·s) plus diffuse skylight
E_sky (here a fixed fraction DIFFUSE of the direct beam at normal incidence: clear-sky diffuse
irradiance is roughly 10-20 % of the direct), so the counts are

    surface:  level · A · (max(0, n·s) + DIFFUSE)      (by day; at night level · A · NIGHT)
    sky:      sky                                       (by day; at night sky · NIGHT)

so that by day the open sky is brighter than shadowed surfaces (level·A·DIFFUSE) and darker than sunlit
white ones — as in real daytime frames. The sky's count follows from the same diffuse light: an isotropic
sky of radiance L gives a horizontal surface the irradiance πL, which it returns as A·L, so the sky itself
reads level·DIFFUSE (SKY_OF_LEVEL; white paper in shade reads as bright as the sky). At the laser band the
clear sky is dark: Rayleigh scattering ∝ λ⁻⁴ is 14x weaker at 865 nm than at 450 nm, and the diffuse share
of the solar irradiance is ~10 % (ASTM G173: global tilt ≈ 0.95, direct ≈ 0.86 W m⁻² nm⁻¹ at 865 nm), so a
sunlit 30 % wall outshines the sky (0.3·(cos θ + 0.2) > 0.2 for θ < 62°). Each row (beam)
has its own detector gain, log-normal with mean 1, g_r = exp(σ_row·z_r − σ_row²/2), z_r ~ N(0, 1), fixed for
the run (the per-row banding of real frames; σ_row is the spread of ln g that lidar_ros/compare/stats.py
row_gain_spread reads off a frame: 0.07-0.38 on the shared Ouster frames). Counts are Poisson with that mean. Shadows cast by other objects are not traced: a surface
is lit when it faces the sun.
"""
from __future__ import annotations

import numpy as np

DIFFUSE = 0.2
NIGHT = 0.01
SKY_OF_LEVEL = DIFFUSE  # the open sky's counts over ambient_level (the docstring)


def sun_direction(elevation_deg: float, azimuth_deg: float) -> np.ndarray:
    """(3,) world unit vector towards the sun (azimuth counter-clockwise from +x, elevation above xy)."""
    el, az = np.radians(elevation_deg), np.radians(azimuth_deg)
    return np.array([np.cos(el) * np.cos(az), np.cos(el) * np.sin(az), np.sin(el)])


def row_gains(sigma: float, rows: int, seed: int) -> np.ndarray:
    """(rows,) float32 per-row gain, fixed for the run (1 where sigma is 0)."""
    if sigma <= 0:
        return np.ones(rows, np.float32)
    z = np.random.default_rng([seed, 0xA3B1]).standard_normal(rows)
    return np.exp(sigma * z - 0.5 * sigma * sigma).astype(np.float32)


def ambient_mean(albedo: np.ndarray, normal_world: np.ndarray, returned: np.ndarray, level: float, sky: float,
                 sun: np.ndarray, day: bool) -> np.ndarray:
    """(N,) float64 mean ambient counts of each pixel (before the row gain)."""
    albedo = np.clip(np.asarray(albedo, np.float64), 0.0, 1.0)
    if day:
        lit = np.maximum(np.asarray(normal_world, np.float64) @ sun, 0.0) + DIFFUSE
        return np.where(returned, level * albedo * lit, sky)
    return np.where(returned, level * albedo * NIGHT, sky * NIGHT)


def ambient_photons(mean: np.ndarray, gain: np.ndarray | None, rng: np.random.Generator) -> np.ndarray:
    """(N,) uint16 Poisson counts of mean·gain."""
    lam = mean if gain is None else mean * gain
    return np.minimum(rng.poisson(np.maximum(lam, 0.0)), 65535).astype(np.uint16)
