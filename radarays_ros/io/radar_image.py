"""Radar outputs: sensor_msgs/Image layouts, radar point clouds, pictures and Oxford/Boreas polar PNGs.

Arrays inside the package are [azimuth, range bin]. On the wire:
* layout "range_rows" (default): rows = range bins, columns = azimuths - RadaRays' radar/image and
  MulRan's /Navtech/Polar;
* layout "azimuth_rows": rows = azimuths - the Navtech ROS 2 driver and Oxford/Boreas.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import ConfigError
from . import messages

LAYOUTS = ("range_rows", "azimuth_rows")
ENCODINGS = ("mono8", "32FC1")
POINT_DTYPE = np.dtype([("x", "<f4"), ("y", "<f4"), ("z", "<f4"), ("intensity", "<f4")])
OXFORD_ENCODER_SIZE = 5600  # encoder ticks per revolution in the Oxford/Boreas polar PNGs


def image_array(img, layout: str = "range_rows", encoding: str = "mono8") -> np.ndarray:
    """The 2-D array of a RadarImage in a wire layout and encoding (uint8 or float32)."""
    if layout not in LAYOUTS:
        raise ConfigError(f"radar image layout {layout!r}: must be one of {', '.join(LAYOUTS)}")
    if encoding not in ENCODINGS:
        raise ConfigError(f"radar image encoding {encoding!r}: must be one of {', '.join(ENCODINGS)}")
    data = img.image if encoding == "mono8" else img.image_f32.astype(np.float32)
    return np.ascontiguousarray(data.T if layout == "range_rows" else data)


def radar_image_msg(img, t_ns: int, frame_id: str, layout: str = "range_rows", encoding: str = "mono8"):
    """rosbags sensor_msgs/Image of a RadarImage (mono8 or 32FC1, range_rows or azimuth_rows)."""
    return messages.image(image_array(img, layout, encoding), t_ns, frame_id)


# -- radar point cloud -----------------------------------------------------------------------------
def _cfar_noise(values: np.ndarray, guard: int, train: int) -> np.ndarray:
    """Cell-averaging CFAR noise estimate along range: mean of `train` cells each side beyond `guard`."""
    a, b = values.shape
    csum = np.concatenate([np.zeros((a, 1)), np.cumsum(values, axis=1)], axis=1)
    idx = np.arange(b)

    def window_sum(lo, hi):  # sum over [lo, hi) clipped to the image
        lo, hi = np.clip(lo, 0, b), np.clip(hi, 0, b)
        return csum[:, hi] - csum[:, lo], (hi - lo)

    s1, n1 = window_sum(idx - guard - train, idx - guard)
    s2, n2 = window_sum(idx + guard + 1, idx + guard + 1 + train)
    count = np.maximum(n1 + n2, 1)
    return (s1 + s2) / count


def radar_points(img, k: int = 5, threshold: float = 3.0, min_value: float = 1.0, guard: int | None = None,
                 train: int = 16, z: float = 0.0) -> np.ndarray:
    """Per azimuth the k strongest local range peaks above a CA-CFAR threshold, as x, y, z, intensity.

    A bin is a detection when its value exceeds `threshold` times the mean of `train` bins on each side
    (skipping `guard` bins, by default the range kernel's width so that a return's own spread is not
    taken for noise), exceeds `min_value`, and is a local maximum along range. Points are in the
    sensor frame at the bin centre (intensity = image_f32 value).
    """
    if k < 1:
        raise ConfigError(f"radar_points: k = {k}: must be >= 1")
    if guard is None:
        kernel = img.config.kernel
        guard = kernel.width if kernel.type != "none" else 2
    values = np.asarray(img.image_f32, np.float64)
    a, b = values.shape
    noise = _cfar_noise(values, guard, train)
    left = np.concatenate([np.full((a, 1), -np.inf), values[:, :-1]], axis=1)
    right = np.concatenate([values[:, 1:], np.full((a, 1), -np.inf)], axis=1)
    peak = (values > threshold * noise) & (values >= min_value) & (values >= left) & (values > right)
    score = np.where(peak, values, -np.inf)
    kk = min(k, b)
    top = np.argpartition(-score, kk - 1, axis=1)[:, :kk]
    rows = np.repeat(np.arange(a), kk)
    cols = top.reshape(-1)
    ok = np.isfinite(score[rows, cols])
    rows, cols = rows[ok], cols[ok]
    r = img.range_m[cols] + 0.5 * img.config.range.resolution
    theta = img.azimuth_rad[rows]
    pts = np.zeros(len(rows), POINT_DTYPE)
    pts["x"] = r * np.cos(theta)
    pts["y"] = r * np.sin(theta)
    pts["z"] = z
    pts["intensity"] = values[rows, cols]
    return pts


def radar_points_msg(img, t_ns: int, frame_id: str, **options):
    """rosbags sensor_msgs/PointCloud2 of radar_points(img, **options)."""
    return messages.pointcloud2(radar_points(img, **options), t_ns, frame_id)


# -- pictures ----------------------------------------------------------------------------------------
def polar_png(img, path: str | Path | None = None, layout: str = "range_rows") -> np.ndarray:
    """The uint8 polar image (rows = range bins by default); written as a grey PNG when path is given."""
    data = image_array(img, layout, "mono8")
    if path is not None:
        save_png(path, data)
    return data


def _nearest_azimuth(img, angle: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Column index nearest to each angle and the angular distance to it (radians)."""
    az = np.mod(img.azimuth_rad, 2 * np.pi)
    order = np.argsort(az)
    sorted_az = az[order]
    a = np.mod(angle, 2 * np.pi)
    pos = np.searchsorted(sorted_az, a)
    lo = (pos - 1) % len(sorted_az)
    hi = pos % len(sorted_az)
    d_lo = np.abs((a - sorted_az[lo] + np.pi) % (2 * np.pi) - np.pi)
    d_hi = np.abs((a - sorted_az[hi] + np.pi) % (2 * np.pi) - np.pi)
    use_hi = d_hi < d_lo
    return order[np.where(use_hi, hi, lo)], np.where(use_hi, d_hi, d_lo)


def cartesian_image(img, m_per_px: float | None = None, max_range: float | None = None, colormap: str = "viridis",
                    rings_m: float | None = None, size_px: int | None = None, scale: str = "max") -> np.ndarray:
    """Bird's-eye RGB uint8 picture: sensor at the centre, +x (forward) up, +y (left) to the left.

    m_per_px defaults to fit max_range (default: the last bin) into size_px (default 800) pixels.
    rings_m draws range rings every that many metres (default: about 5 rings); 0 disables them.
    scale "max" maps the image maximum to the top of the colour map, "full" maps 255 there.
    """
    if scale not in ("max", "full"):
        raise ConfigError(f"cartesian_image: scale {scale!r}: must be max or full")
    from matplotlib import colormaps

    max_range = float(max_range or (img.range_m[-1] + img.config.range.resolution))
    size_px = int(size_px or 800)
    m_per_px = float(m_per_px or 2.0 * max_range / size_px)
    if m_per_px <= 0:
        raise ConfigError(f"cartesian_image: m_per_px = {m_per_px}: must be > 0")
    half = int(np.ceil(max_range / m_per_px))
    n = 2 * half + 1
    rows, cols = np.mgrid[0:n, 0:n]
    x = (half - rows) * m_per_px
    y = (half - cols) * m_per_px
    r = np.hypot(x, y)
    col, dist = _nearest_azimuth(img, np.arctan2(y, x))
    step = 2 * np.pi / max(img.n_azimuths, 1)
    if img.n_azimuths == 1:
        step = img.config.beam.widths_rad[0]
    res = img.config.range.resolution
    bin_idx = np.floor((r - img.range_m[0]) / res).astype(np.int64)
    inside = (bin_idx >= 0) & (bin_idx < img.n_bins) & (dist <= step / 2 + 1e-9) & (r <= max_range)
    values = np.zeros((n, n), np.float64)
    top = max(float(img.image.max()), 1.0) if scale == "max" else 255.0
    values[inside] = img.image[col[inside], bin_idx[inside]] / top
    rgb = (colormaps[colormap](values)[..., :3] * 255).astype(np.uint8)
    rgb[~inside] = 0
    if rings_m is None:
        rings_m = float(max(1.0, np.round(max_range / 5.0)))
    if rings_m > 0:
        ring = (np.abs(r - np.round(r / rings_m) * rings_m) < 0.5 * m_per_px) & (r > 0.5 * rings_m) & (r <= max_range)
        rgb[ring] = (255, 255, 255)
    rgb[half, half] = (255, 0, 0)
    return rgb


def save_png(path: str | Path, array: np.ndarray) -> Path:
    """Write an (H, W) uint8 grey or (H, W, 3) uint8 RGB array as PNG."""
    from PIL import Image as PILImage

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    a = np.ascontiguousarray(array)
    if a.dtype != np.uint8 or a.ndim not in (2, 3):
        raise ConfigError(f"save_png {path}: expected uint8 (H, W) or (H, W, 3), got {a.dtype} {a.shape}")
    PILImage.fromarray(a).save(path)
    return path


def oxford_polar_array(img) -> np.ndarray:
    """Oxford Radar RobotCar / Boreas polar layout (rows = azimuths, uint8).

    Columns 0-7: int64 little-endian timestamp in microseconds; 8-9: uint16 encoder value
    (angle = enc / 5600 * 2 pi, measured clockwise from forward as the sensor spins); 10: valid flag
    (255); then one column per range bin.
    """
    a = img.n_azimuths
    header = np.zeros((a, 11), np.uint8)
    micro = (np.asarray(img.azimuth_time_ns, np.int64) // 1000).astype("<i8")
    header[:, 0:8] = micro.view(np.uint8).reshape(a, 8)
    clockwise = np.mod(-np.asarray(img.azimuth_rad), 2 * np.pi)
    encoder = (np.round(clockwise / (2 * np.pi) * OXFORD_ENCODER_SIZE).astype(np.int64) % OXFORD_ENCODER_SIZE).astype("<u2")
    header[:, 8:10] = encoder.view(np.uint8).reshape(a, 2)
    header[:, 10] = 255
    return np.concatenate([header, img.image], axis=1)


def oxford_polar_png(img, path: str | Path) -> Path:
    """Write the Oxford/Boreas polar PNG (see oxford_polar_array) that radar odometry tools read."""
    return save_png(path, oxford_polar_array(img))
