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
row_gain_spread reads off a frame: 0.07-0.38 on the shared Ouster frames). Counts are Poisson with that mean (poisson_counts.py). Shadows cast by other objects are not traced: a surface
is lit when it faces the sun.
"""
from __future__ import annotations

import functools

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
        n = np.asarray(normal_world, np.float64)
        # n·s summed x, y, z in this order (a matrix product's order depends on the BLAS build and the CPU)
        lit = np.maximum(n[:, 0] * sun[0] + n[:, 1] * sun[1] + n[:, 2] * sun[2], 0.0) + DIFFUSE
        return np.where(returned, level * albedo * lit, sky)
    return np.where(returned, level * albedo * NIGHT, sky * NIGHT)


def pixel_means(ranges: np.ndarray, rho: np.ndarray, cos_incidence: np.ndarray, normal_world: np.ndarray,
                level: float, sky: float, sun: np.ndarray, day: bool, gain: np.ndarray | None) -> np.ndarray:
    """(N,) float64 Poisson mean of each pixel's ambient counts, gain included, never below 0.

    A pixel sees the surface in its view where its first surface's range is finite and ρ(θ) > 0 (whether or
    not the echo was detected: ambient light is passive); that surface's albedo is ρ(θ) without the lidar's
    own incidence, ρ / max(cos θ, 1e-3). One compiled pass, the same bits as `pixel_means_numpy` (its numpy
    passes and the float64 copies took ~3 ms per 65536 pixels)."""
    n = len(ranges)
    lam = np.empty(n, np.float64)
    _means_kernel()(np.asarray(ranges, np.float32), np.asarray(rho, np.float32), np.asarray(cos_incidence, np.float32),
                  np.asarray(normal_world, np.float32), float(level), float(sky), np.asarray(sun, np.float64), bool(day),
                  _NO_GAIN if gain is None else np.asarray(gain, np.float32), lam)
    return lam


def pixel_means_numpy(ranges, rho, cos_incidence, normal_world, level, sky, sun, day, gain) -> np.ndarray:
    """pixel_means in numpy passes: the reference of the compiled loop."""
    in_view = np.isfinite(ranges) & (rho > 0)
    rho = np.where(in_view, rho, np.float32(0.0))
    albedo = rho / np.maximum(np.where(in_view, cos_incidence, np.float32(1.0)), np.float32(1e-3))
    normal = np.where(in_view[:, None], normal_world, np.float32(0.0))
    mean = ambient_mean(albedo, normal, in_view, level, sky, sun, day)
    lam = mean if gain is None else mean * gain
    return np.maximum(lam, 0.0)


_NO_GAIN = np.empty(0, np.float32)


@functools.cache
def _means_kernel():
    """The compiled loop, compiled on first use: importing this module (lidar_ros.config does, for the sky's
    level) loads no numba, so `radarays --help` stays fast (test_cli_startup)."""
    from radarays_ros.compiled import kernel

    return kernel(_means_loop)


def _means_loop(ranges, rho, cos_incidence, normal, level, sky, sun, day, gain, lam):
    for i in range(lam.shape[0]):
        if np.isfinite(ranges[i]) and rho[i] > 0:
            c = cos_incidence[i]
            c = c if (c >= np.float32(1e-3) or c != c) else np.float32(1e-3)  # np.maximum: NaN stays NaN
            albedo = np.float64(rho[i] / c)  # float32 division, as numpy's
            if albedo == albedo:  # np.clip(albedo, 0, 1); NaN stays NaN
                albedo = min(max(albedo, 0.0), 1.0)
            if day:
                dot = (np.float64(normal[i, 0]) * sun[0] + np.float64(normal[i, 1]) * sun[1]
                       + np.float64(normal[i, 2]) * sun[2])
                lit = (dot if (dot >= 0.0 or dot != dot) else 0.0) + DIFFUSE
                mean = level * albedo * lit
            else:
                mean = level * albedo * NIGHT
        else:
            mean = sky if day else sky * NIGHT
        if gain.shape[0]:
            mean = mean * np.float64(gain[i])
        lam[i] = mean if (mean >= 0.0 or mean != mean) else 0.0  # np.maximum(x, 0.0)
