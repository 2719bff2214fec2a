"""Shared helpers of the lidar fit tests: a synthetic held-fixed scene and the sensor mapping fits start from."""
from __future__ import annotations

import numpy as np

from lidar_ros.fit import HeldScene


def synthetic_scene(rows=32, cols=256) -> HeldScene:
    """A smooth room-like scene: ranges 2-25 m (log-spread over rows) varying smoothly along rows, ρ 0.1-0.85 varying smoothly, 4 rows of sky."""
    c = np.arange(cols)[None, :]
    rr = np.arange(rows)[:, None]
    r = 1.5 * np.exp(rr / 12.0) * (1.0 + 0.2 * np.sin(2 * np.pi * c / cols) + 0.1 * np.cos(4 * np.pi * c / cols) ** 2)
    r = np.where(rr < 4, np.nan, r * np.ones((rows, cols)))
    rho = 0.35 + 0.25 * np.sin(2 * np.pi * c / 37.0) * np.cos(2 * np.pi * rr / 11.0) + 0.001 * c
    rho = np.where(np.isfinite(r), rho, 0.0)
    az = 2 * np.pi * c / cols * np.ones((rows, 1))
    el = np.radians(np.linspace(20, -20, rows))[:, None] * np.ones((1, cols))
    dirs = np.stack([np.cos(el) * np.cos(az), np.cos(el) * np.sin(az), np.sin(el)], axis=-1)
    return HeldScene("synthetic", "", r, rho, dirs, True)


START = {"type": "ouster", "surface": {"signal_scale": 2.0e4, "ambient_level": 300.0, "ambient_sky": 50.0},
         "noise": {"sigma": 0.03}, "detection": {"dropout_probability": 0.001}}
