"""Heiden et al.'s case (ICRA 2020): a 2-D CW phase-ranging scanner (Hokuyo URG-04LX) in a known room; its
phase-bias coefficients and range noise fitted from one scan, with the hit geometry held fixed.

The room is a rectangle whose walls carry a checkerboard of dark and bright tiles (Heiden's target). For
each ray the true range r and the surface's ρ(θ) = ρ·cos θ (Lambert) are exact; the scanner measures
cw_phase.cw_ranges (two-frequency phase ranging, radiance L = ρ(θ)/r²) plus Gaussian range noise σ.
The measured range is linear in the phase bias β(L) = a·L² + b·L + c: each frequency's range moves by
−u_i·β/2π (u_i = c/2f_i), their mean by −(u_1 + u_2)·β/4π, so the Jacobian of the range residual with
respect to (a, b, c) is analytic: −(u_1 + u_2)/4π · (L², L, 1). σ is the residuals' spread (its
maximum-likelihood value given the bias), so the fit is Gauss-Newton on (a, b, c) and σ in closed form.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..physics.backfolding import SPEED_OF_LIGHT
from ..physics.cw_phase import HOKUYO_FREQUENCIES_HZ, cw_ranges
from .optimise import FitResult, fit
from ..physics.materials import MAX_REFLECTIVITY
from .params import CW_STAGE, Param
from radarays_ros.validate import Rule

MATERIAL_REFLECTIVITY = Rule(float, 0.0, MAX_REFLECTIVITY["general"])  # a material's lidar.reflectivity


@dataclass(frozen=True)
class Room:
    width_m: float = 4.0          # x extent, the scanner at the origin inside
    depth_m: float = 3.0
    centre: tuple = (0.6, -0.3)   # room centre relative to the scanner
    tile_m: float = 0.25          # checkerboard tile along each wall
    dark: float = 0.08
    bright: float = 0.85


def room_hits(room: Room, azimuth: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(range m, ρ(θ)) of rays at `azimuth` (rad, from +x) from the origin to the room's walls."""
    r, dark, cos = _room_geometry(room, azimuth)
    return r, np.where(dark, room.dark, room.bright) * cos


def _room_geometry(room: Room, azimuth: np.ndarray):
    """(range, on a dark tile, cos θ) per ray."""
    d = np.stack([np.cos(azimuth), np.sin(azimuth)], axis=-1)
    cx, cy = room.centre
    lo, hi = np.array([cx - room.width_m / 2, cy - room.depth_m / 2]), np.array([cx + room.width_m / 2, cy + room.depth_m / 2])
    with np.errstate(divide="ignore"):
        t = np.where(d > 0, hi / d, np.where(d < 0, lo / d, np.inf))  # distance to the x and y walls
    axis = np.argmin(t, axis=1)
    r = t[np.arange(len(d)), axis]
    point = d * r[:, None]
    along = np.where(axis == 0, point[:, 1], point[:, 0])     # the coordinate along the wall hit
    tile = np.floor(along / room.tile_m).astype(int) + axis
    return r, tile % 2 == 0, np.abs(d[np.arange(len(d)), axis])


def scan(room: Room, azimuth: np.ndarray, bias, sigma: float, seed: int, periods: int = 15,
         frequencies_hz=HOKUYO_FREQUENCIES_HZ) -> np.ndarray:
    """One measured scan (m) of the room: phase ranging with `bias`, plus N(0, σ²) range noise."""
    r, rho = room_hits(room, azimuth)
    measured = cw_ranges(r[:, None], np.ones((len(r), 1)), frequencies_hz, periods, tuple(bias), rho / r**2)
    return measured + np.random.default_rng(seed).normal(0.0, sigma, len(r))


SURFACE = (Param("dark tile reflectivity", "room.dark", MATERIAL_REFLECTIVITY, (0.01, 1.0)),
           Param("bright tile reflectivity", "room.bright", MATERIAL_REFLECTIVITY, (0.01, 1.0)))


def fit_cw_room(measured: np.ndarray, room: Room, azimuth: np.ndarray, periods: int = 15,
                frequencies_hz=HOKUYO_FREQUENCIES_HZ, start=(0.0, 0.0, 0.0, 0.01), surface: tuple[str, ...] = (),
                progress=None) -> FitResult:
    """Fit tof.bias (a, b, c) and noise.sigma of the CW scanner to one scan of the known room; `surface`
    ('dark', 'bright') adds the tiles' reflectivities (started at the room's values). With both tiles the
    fit is degenerate — scaling both ρ by s is undone by a·s⁻², b·s⁻¹ — and the verdicts say so; with one
    tile as the known reference the other is identifiable."""
    r, dark, cos = _room_geometry(room, azimuth)
    scale = -(sum(SPEED_OF_LIGHT / (2 * f) for f in frequencies_hz)) / (4 * np.pi)
    extra = [p for p in SURFACE if p.key.split(".")[1] in surface]
    params = CW_STAGE[:3] + tuple(extra)

    def tiles(v):
        rho = {"dark": room.dark, "bright": room.bright}
        rho.update({p.key.split(".")[1]: x for p, x in zip(extra, v[3:])})
        return rho

    def lum_of(v):
        rho = tiles(v)
        return np.where(dark, rho["dark"], rho["bright"]) * cos / r**2

    def residual_of(v):
        model = cw_ranges(r[:, None], np.ones((len(r), 1)), frequencies_hz, periods, tuple(v[:3]), lum_of(v))
        return model - measured

    def jac_of(v):  # analytic: range = true + scale·β(L), β = a·L² + b·L + c, L = ρ·cos θ / r²
        lum = lum_of(v)
        cols = [lum**2, lum, np.ones_like(lum)]
        for p in extra:
            on = dark if p.key == "room.dark" else ~dark
            cols.append(np.where(on, (2 * v[0] * lum + v[1]) * cos / r**2, 0.0))
        return scale * np.stack(cols, axis=1)

    x0 = np.concatenate([np.asarray(start[:3], float), [getattr(room, p.key.split(".")[1]) for p in extra]])
    result = fit(residual_of, params, x0, jac_of=jac_of, progress=progress)
    sigma = float(np.std(residual_of(result.raw)))
    noise = CW_STAGE[3]
    return FitResult(params + (noise,), np.append(x0, start[3]), np.append(result.values, sigma),
                     result.identifiable + [True], result.verdicts + ["fitted (closed form)"], result.cost_start,
                     result.cost, result.history, result.evaluations, result.message, np.append(result.raw, sigma))
