"""The statistics a sensor-stage fit matches, taken from lidar_ros/compare/stats.py (one definition each).

Each ingredient is a positive statistic compared as log(sim / real): a relative mismatch, so photon counts,
metres and fractions weigh alike. Statistics that are NaN on either frame (a channel the sensor does not
output, too few samples in a band) drop out; a parameter no remaining statistic responds to is then
reported as unidentifiable (optimise.py), not returned as fitted.

    signal_r2_rho_<band>   signal·r²/ρ per range band        -> surface.signal_scale (near bands: overlap)
    near_ir_p50            median ambient over every pixel   -> surface.ambient_level (and _sky)
    near_ir_return_to_miss ambient of returns / of misses    -> surface.ambient_sky
(near_ir_row_banding, the spread of the row medians, would be signal.row_gain_sigma's; it is left out: the
row gains act on the sun ambient model only, and the statistic also follows the scene's rows, which the
held-fixed scene does not keep exactly: in tests it pulled the ambient gains 30 % off.)
    isolated_fraction      single missing pixels              -> detection.dropout_probability
    range_noise_near_m     σ of range under 5 m               -> noise.sigma
    range_noise_mid_m      σ of range over 5-20 m             -> noise.sigma + relative_sigma·r
    range_noise_dim_m      σ of range where ρ/r² < DIM        -> noise.snr_sigma (weak returns: low SNR)
    range_noise_bright_m   σ of range where ρ/r² ≥ BRIGHT     -> noise.sigma (strong returns: the floor)
(ρ/r² is the scene's share of the SNR, S = K·ρ·O(r)/r²: at one range, a dim and a bright surface differ in
SNR only, which tells the SNR law (range_precision.py) from the range law σ_rel·r.)
"""
from __future__ import annotations

import math

import numpy as np

from ..compare.frame import LidarFrame
from ..compare.stats import SIGNAL_BANDS_M, holes, range_noise, signal_vs_range

SIGNAL_KEYS = tuple(f"signal_r2_rho_{a:g}_{b:g}m" for a, b in zip(SIGNAL_BANDS_M[:-1], SIGNAL_BANDS_M[1:]))
INGREDIENTS = (*SIGNAL_KEYS, "near_ir_p50", "near_ir_return_to_miss", "isolated_fraction", "range_noise_near_m",
               "range_noise_mid_m", "range_noise_dim_m", "range_noise_bright_m")
DIM, BRIGHT = 2e-3, 2e-2  # ρ/r² (1/m²): ρ 0.2 at 10 m and at 3.2 m
FLOOR = {"isolated_fraction": 1e-5, "near_ir_row_banding": 1e-3}  # below this a statistic reads as its floor


def ingredients(frame: LidarFrame) -> dict[str, float]:
    """The statistics of INGREDIENTS, as lidar_ros.compare.stats.frame_stats defines them (only these)."""
    out = dict.fromkeys(INGREDIENTS, math.nan)
    sig = signal_vs_range(frame)
    out.update({k: sig[k] for k in SIGNAL_KEYS})
    if frame.near_ir is not None:
        nir = np.asarray(frame.near_ir, np.float64)
        level = float(np.median(nir))
        out["near_ir_p50"] = level
        ret, miss = nir[frame.valid], nir[~frame.valid]
        if ret.size and miss.size and np.median(miss):
            out["near_ir_return_to_miss"] = float(np.median(ret) / np.median(miss))
    _, isolated = holes(frame)
    out["isolated_fraction"] = float(isolated.mean())
    out["range_noise_near_m"] = range_noise(frame, (0.0, 5.0))
    out["range_noise_mid_m"] = range_noise(frame, (5.0, 20.0))
    if frame.reflectivity is not None:
        with np.errstate(invalid="ignore", divide="ignore"):
            q = np.asarray(frame.reflectivity, np.float64) / 100.0 / np.asarray(frame.range_m, np.float64) ** 2
        out["range_noise_dim_m"] = range_noise(frame, where=q < DIM)
        out["range_noise_bright_m"] = range_noise(frame, where=q >= BRIGHT)
    return out


def residuals(sim: dict[str, float], real: dict[str, float], keys=INGREDIENTS) -> np.ndarray:
    """log(sim / real) per key; 0 where either is NaN or not positive (the statistic is not there)."""
    out = np.zeros(len(keys))
    for i, key in enumerate(keys):
        a, b = sim.get(key, math.nan), real.get(key, math.nan)
        floor = FLOOR.get(key, 0.0)
        if floor:
            a, b = max(a, floor), max(b, floor)
        if np.isfinite(a) and np.isfinite(b) and a > 0 and b > 0:
            out[i] = math.log(a / b)
    return out


def usable(real: dict[str, float], keys=INGREDIENTS) -> list[str]:
    """The ingredients the real frame has."""
    return [k for k in keys if np.isfinite(real.get(k, math.nan)) and (real[k] > 0 or k in FLOOR)]
