"""Fog, rain and snow: extinction of the beam on its way out and back, and particle backscatter near the sensor.

Extinction coefficient α (1/m), the sum of
* fog, from the meteorological visibility V (Koschmieder: contrast 2 % at V, so α₅₅₀ = 3.912/V) carried
  to the laser wavelength λ with Kim et al. (2001, Proc. SPIE 4214) α(λ) = 3.912/V · (λ/550 nm)^(−q),
  q = 1.6 (V > 50 km), 1.3 (6–50 km), 0.16·V + 0.34 (1–6 km), V − 0.5 (0.5–1 km), 0 (< 0.5 km);
* rain of rate R mm/h: α = π·N₀/Λ³ ≈ 0.365·R^0.63 km⁻¹ (geometric extinction of Marshall–Palmer drops, rain.py);
* snow, from its rate or the visibility in it (snow.py, Kaushal & Kaddoum 2017).

A return from range r keeps exp(−2αr) of its power (two-way Beer–Lambert; Rasshofer et al.
2011): the reflectivity a sensor infers falls by that factor, so far and dark surfaces drop out.

Backscatter (Rasshofer et al. 2011; Hahner et al. 2021 model fog returns the same way): the droplets in a
slice of depth Δ (the receiver's echo separation) at range r return like a Lambertian target of
reflectivity ρ_b = π·β·Δ·exp(−2αr) with β = α/S, S the lidar ratio (≈ 18 sr for fog and rain droplets).
Drawn per beam at a range uniform over the first `reach` metres (the slices whose return is not yet
lost to 1/r²), with an exponential fluctuation of mean ρ_b (a random sum of droplet returns). The
detection model then decides whether it is seen: near the sensor in thick fog it is, far out it is not.
"""
from __future__ import annotations

import numpy as np

from .rain import rain_extinction_per_m
from .snow import snow_extinction_per_m, snow_visibility_extinction_per_m

KOSCHMIEDER = 3.912  # −ln(0.02)
LIDAR_RATIO_SR = 18.0
BACKSCATTER_REACH_M = 10.0


def fog_exponent(visibility_km: float) -> float:
    """Kim et al. 2001 wavelength exponent q of the fog extinction for visibility V (km)."""
    v = float(visibility_km)
    if v > 50:
        return 1.6
    if v > 6:
        return 1.3
    if v > 1:
        return 0.16 * v + 0.34
    if v > 0.5:
        return v - 0.5
    return 0.0


def extinction_per_m(fog_visibility_km: float, rain_rate_mm_h: float, wavelength_nm: float = 905.0) -> float:
    """α (1/m) of fog (0 = none) plus rain (0 = none)."""
    alpha = 0.0
    if fog_visibility_km > 0:
        alpha += KOSCHMIEDER / (fog_visibility_km * 1000.0) * (wavelength_nm / 550.0) ** (-fog_exponent(fog_visibility_km))
    if rain_rate_mm_h > 0:
        alpha += rain_extinction_per_m(rain_rate_mm_h)
    return alpha


def weather_extinction_per_m(weather) -> float:
    """α (1/m) of a WeatherConfig: fog + rain + snow."""
    return (extinction_per_m(weather.fog_visibility_km, weather.rain_rate_mm_h, weather.wavelength_nm)
            + snow_extinction_per_m(weather.snow_rate_mm_h, weather.snow_type, weather.wavelength_nm)
            + snow_visibility_extinction_per_m(weather.snow_visibility_km))


def two_way_transmission(ranges: np.ndarray, alpha: float) -> np.ndarray:
    """exp(−2αr) (float32); inf/NaN ranges give 0/NaN, which only ever multiply a miss's 0."""
    t = np.asarray(ranges, np.float32) * np.float32(-2.0 * alpha)
    return np.exp(t, out=t)


def backscatter_returns(n: int, alpha: float, separation_m: float, range_min: float,
                        rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(range, reflectivity) float32 of the particle echo of each of n beams (ρ 0 where there is none)."""
    if alpha <= 0 or n == 0:
        return np.full(n, np.inf, np.float32), np.zeros(n, np.float32)
    start = max(range_min, 0.1)
    r = rng.random(n, dtype=np.float32)
    r *= np.float32(BACKSCATTER_REACH_M)
    r += np.float32(start)
    rho = rng.standard_exponential(n, dtype=np.float32)  # mean-1 fluctuation of the droplets' sum
    rho *= np.exp(r * np.float32(-2.0 * alpha))
    rho *= np.float32(np.pi * (alpha / LIDAR_RATIO_SR) * max(separation_m, 0.05))
    return r, rho
