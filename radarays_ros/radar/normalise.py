"""Normalisation of the drawn energies to the output scale (relative signal strength per image, Mock et al., RadaRays, RA-L 2025; RadaRays' RadarCPU and Gazebo plugin).

* radarays: RadaRays CPU. Per column with M = column max: out = signal_max/M (energy_max S + N(M)).
            The strongest return of a column maps to energy_max * signal_max. Empty columns are 0
            (the original divides by zero there).
* gazebo:   the Gazebo Embree plugin: no energy_max factor and, with ambient noise on,
            M = max(noise.energy_max, M) (a floor that also keeps empty columns finite).
* global:   as radarays with one M for the whole frame (relative strengths across azimuths kept).
* db:       the paper's L = 10 log10(E / E0), mapped linearly from [-db_range, 0] dB to [0, 255].
Values are floats before the 8-bit conversion (round half to even, saturate), as cv::convertTo.
"""
from __future__ import annotations

import numpy as np
import numpy as xm  # the formulas' vocabulary (radarays_ros/twin.py)

from .noise import ambient_noise


def _scale(values: np.ndarray, m: np.ndarray, signal_max: float) -> np.ndarray:
    """values * signal_max / m per column (0 where m = 0), in place: values is a fresh float64 array."""
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = np.where(m > 0, column_scale(signal_max, np.where(m > 0, m, 1.0)), 0.0)
    values *= factor
    return values


def normalise(slices: np.ndarray, out_cfg, noise_cfg, resolution: float, rng: np.random.Generator) -> np.ndarray:
    """Float output image (A, B) from the drawn energies (A, B); never NaN or inf."""
    mode = out_cfg.normalisation
    if mode in ("radarays", "global"):
        m = slices.max(axis=1) if mode == "radarays" else np.full(len(slices), slices.max(initial=0.0))
        signal = out_cfg.energy_max * slices
        noise = ambient_noise(noise_cfg, signal, m, resolution, rng)
        signal += noise  # (large arrays: in place saves a fresh 8-byte-per-pixel allocation per step)
        return _scale(signal, m[:, None], out_cfg.signal_max)
    if mode == "gazebo":
        m = slices.max(axis=1)
        if noise_cfg.ambient != "none":
            m = np.maximum(noise_cfg.energy_max, m)
        total = slices + ambient_noise(noise_cfg, slices, m, resolution, rng)
        return _scale(total, m[:, None], out_cfg.signal_max)
    if mode == "db":
        m = np.full(len(slices), slices.max(initial=0.0))
        energy = slices + ambient_noise(noise_cfg, slices, m, resolution, rng)
        return db_grey(np.where(energy > 0, energy, 1e-300), out_cfg.db_reference, out_cfg.db_range)
    raise ValueError(f"unknown normalisation {mode!r}")


def column_scale(signal_max: float, column_max: float) -> float:
    """signal_max / M: what an output value is per unit of energy in a column (or frame) whose maximum is M > 0.
    Written once: numpy runs it on the host, Warp compiles it for device frames (radarays_ros/twin.py)."""
    return signal_max / column_max


def db_grey(energy: float, reference: float, db_range: float) -> float:
    """L = 10 log10(E / E0) mapped from [-db_range, 0] dB to [0, 255] (above 0 dB past 255, saturated later), for
    E > 0 (callers floor E at their dtype's tiny). Written once: numpy runs it on the host, Warp compiles it
    for device frames (radarays_ros/twin.py). ASCII only in these lines."""
    level = 10.0 * xm.log10(energy / reference)
    return xm.maximum(255.0 * (level + db_range) / db_range, 0.0)


def to_uint8(image: np.ndarray) -> np.ndarray:
    """Round (half to even) and saturate to 0..255, like OpenCV's convertTo(CV_8U)."""
    rounded = np.rint(image)
    np.clip(rounded, 0, 255, out=rounded)
    return rounded.astype(np.uint8)
