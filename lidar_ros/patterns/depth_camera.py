"""Time-of-flight depth camera: a pinhole camera whose every pixel is a ray (sensor_msgs/Image depth).

    type: depth_camera
    width: 320
    height: 240
    hfov_deg: 70                # horizontal field of view (fx = width / (2 tan(hfov/2))), or:
    fx: 262.6                   # focal lengths and principal point in pixels (override hfov)
    fy: 262.6
    cx: 159.5
    cy: 119.5
    encoding: 32FC1             # depth image: 32FC1 (m, +inf = no return, REP-118) | 16UC1 (mm, 0 = none)

Pixel (row v, column u) looks along the optical ray ((u − cx)/fx, (v − cy)/fy, 1) of the camera's optical
frame (z forward, x right, y down, REP-103 `_optical`), turned into the sensor frame (x forward, y left,
z up): d = (1, −(u − cx)/fx, −(v − cy)/fy) normalised. Row 0 is the image's top row; every pixel exposes at
once. The depth a ToF camera reports is the z of the optical frame, depth = range · d_x. Flying pixels at
depth edges come from the beam footprint (beam.sub_rays > 1, return_mode mixed: every pixel integrates its
footprint, as a ToF pixel integrates its solid angle).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..spec import SpecReader
from . import Pattern, origin_pattern

ENCODINGS = ("32FC1", "16UC1")


def intrinsics(spec: SpecReader) -> tuple[int, int, float, float, float, float]:
    width = spec.number("width", 320, 1, 8192, integer=True)
    height = spec.number("height", 240, 1, 8192, integer=True)
    hfov = np.radians(spec.number("hfov_deg", 70.0, 1.0, 170.0))
    f = width / (2 * np.tan(hfov / 2))
    fx = spec.number("fx", f, 1e-3, 1e6)
    fy = spec.number("fy", fx, 1e-3, 1e6)
    cx = spec.number("cx", (width - 1) / 2, -1e5, 1e5)
    cy = spec.number("cy", (height - 1) / 2, -1e5, 1e5)
    spec.choice("encoding", ENCODINGS, "32FC1")
    return int(width), int(height), float(fx), float(fy), float(cx), float(cy)


def pixel_directions(width: int, height: int, fx: float, fy: float, cx: float, cy: float) -> np.ndarray:
    """(height, width, 3) unit rays in the sensor frame."""
    u = np.arange(width)[None, :]
    v = np.arange(height)[:, None]
    d = np.stack(np.broadcast_arrays(np.ones((height, width)), -(u - cx) / fx, -(v - cy) / fy), axis=-1)
    return d / np.linalg.norm(d, axis=-1, keepdims=True)


def build(spec: SpecReader, base_dir: Path, rate_hz: float) -> Pattern:
    width, height, fx, fy, cx, cy = intrinsics(spec)
    return origin_pattern(
        pixel_directions(width, height, fx, fy, cx, cy), 1.0 / rate_hz, one_laser=True,
        planar={"fx": fx, "fy": fy, "cx": cx, "cy": cy},
        point_transform=OPTICAL_FROM_SENSOR,  # points and depth in the optical frame (REP-103 `_optical`)
        point_frame_id="camera_depth_optical_frame",
        ray_frame_id="camera_link",
    )


# optical (x right, y down, z forward) <- sensor (x forward, y left, z up)
OPTICAL_FROM_SENSOR = np.array([[0.0, -1.0, 0.0, 0.0], [0.0, 0.0, -1.0, 0.0], [1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0]])
