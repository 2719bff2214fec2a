"""Pictures of lidar frames: a bird's-eye view of the returns (radar pictures come from io.radar_image)."""
from __future__ import annotations

import numpy as np


def lidar_birds_eye(scan, size_px: int = 800, max_range: float | None = None, colormap: str = "viridis") -> np.ndarray:
    """(H, W, 3) uint8 top view of a LidarScan: sensor at the centre, +x (forward) up, +y (left) to the left.

    Each pixel shows the highest return above it, coloured by height (blue low, yellow high) over
    the frame's height range; pixels without a return stay black, the sensor is a red dot.
    """
    from matplotlib import colormaps

    xyz = np.asarray(scan.xyz, np.float64).reshape(-1, 3)
    xyz = xyz[np.all(np.isfinite(xyz), axis=1)]
    reach = float(max_range or scan.config.range_max)
    if len(xyz):
        reach = min(reach, float(np.abs(xyz[:, :2]).max()) * 1.05 + 1e-6)
    half = size_px // 2
    m_per_px = max(reach, 1e-3) / half
    rows = np.round(half - xyz[:, 0] / m_per_px).astype(np.int64)
    cols = np.round(half - xyz[:, 1] / m_per_px).astype(np.int64)
    inside = (rows >= 0) & (rows < size_px) & (cols >= 0) & (cols < size_px)
    rows, cols, z = rows[inside], cols[inside], xyz[inside, 2]
    top = np.full((size_px, size_px), -np.inf)
    np.maximum.at(top, (rows, cols), z)
    seen = np.isfinite(top)
    rgb = np.zeros((size_px, size_px, 3), np.uint8)
    if seen.any():
        lo, hi = np.percentile(top[seen], [2, 98])
        shade = np.clip((top[seen] - lo) / max(hi - lo, 1e-6), 0.0, 1.0)
        rgb[seen] = (colormaps[colormap](shade)[:, :3] * 255).astype(np.uint8)
    rgb[max(half - 2, 0):half + 3, max(half - 2, 0):half + 3] = (255, 0, 0)
    return rgb


def safe_file_name(name: str) -> str:
    """A sensor name as a file name inside the pictures folder: never a path (`../../x` -> `x`)."""
    import re

    cleaned = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._") or "sensor"
    return cleaned[:100]
