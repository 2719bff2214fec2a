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
from .params import CW_STAGE


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
    rho = np.where(tile % 2 == 0, room.dark, room.bright)
    cos = np.abs(d[np.arange(len(d)), axis])
    return r, rho * cos


def scan(room: Room, azimuth: np.ndarray, bias, sigma: float, seed: int, periods: int = 15,
         frequencies_hz=HOKUYO_FREQUENCIES_HZ) -> np.ndarray:
    """One measured scan (m) of the room: phase ranging with `bias`, plus N(0, σ²) range noise."""
    r, rho = room_hits(room, azimuth)
    measured = cw_ranges(r[:, None], np.ones((len(r), 1)), frequencies_hz, periods, tuple(bias), rho / r**2)
    return measured + np.random.default_rng(seed).normal(0.0, sigma, len(r))


def fit_cw_room(measured: np.ndarray, room: Room, azimuth: np.ndarray, periods: int = 15,
                frequencies_hz=HOKUYO_FREQUENCIES_HZ, start=(0.0, 0.0, 0.0, 0.01), progress=None) -> FitResult:
    """Fit tof.bias (a, b, c) and noise.sigma of the CW scanner to one scan of the known room."""
    r, rho = room_hits(room, azimuth)
    lum = rho / r**2
    scale = -(sum(SPEED_OF_LIGHT / (2 * f) for f in frequencies_hz)) / (4 * np.pi)
    params = CW_STAGE[:3]

    def residual_of(v):
        model = cw_ranges(r[:, None], np.ones((len(r), 1)), frequencies_hz, periods, tuple(v), lum)
        return model - measured

    def jac_of(v):
        return scale * np.stack([lum**2, lum, np.ones_like(lum)], axis=1)

    result = fit(residual_of, params, np.asarray(start[:3], float), jac_of=jac_of, progress=progress)
    sigma = float(np.std(residual_of(result.values)))
    return FitResult(CW_STAGE, np.asarray(start, float), np.append(result.values, sigma), result.identifiable + [True],
                     result.verdicts + ["fitted (closed form)"], result.cost_start, result.cost, result.history,
                     result.evaluations, result.message, np.append(result.raw, sigma))
