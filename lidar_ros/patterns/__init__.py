"""Ray patterns: every sensor type becomes a `Pattern`, a per-pixel lookup table of rays and times.

A pattern is computed once, when the sensor config is loaded (the ouster-sdk idea: the geometry that
never changes is a table, so a frame is one multiply-add). Pixels are laid out [rows, cols] with
rows = beams in the driver's ring order. Only the Risley (Livox) pattern changes from frame to
frame; its module recomputes the table for each frame's start time.

Each sensor type has its own module with `build(spec, base_dir) -> Pattern`:
velodyne (ros-drivers calibration YAML), ouster (sensor metadata JSON), grid (generic FOV +
resolution or angle arrays), rays (explicit azimuth/elevation pairs), planar (2D scanners),
risley (Livox prisms), sweep (Livox HAP, Mid-360), mirror (Ibeo LUX rotating mirror).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np


@dataclass
class Pattern:
    """Rays and firing times of one frame, per pixel (sensor frame, REP-103 axes)."""

    directions: np.ndarray  # (R, C, 3) unit ray directions
    origins: np.ndarray  # (R, C, 3) where each ray leaves the sensor (beam origin offsets), metres
    ring: np.ndarray  # (R,) ring number of each row as the driver numbers it
    laser_index: np.ndarray  # (R,) physical laser/channel of each row (per-laser bias is keyed on it)
    column_times: np.ndarray  # (M,) firing time of each measurement column, s from scan start
    pixel_column: np.ndarray  # (R, C) which measurement column each pixel was fired in
    beam_time_offset: np.ndarray  # (R,) extra delay of each row's laser inside its column, s
    period: float  # scan duration, s
    range_offset: np.ndarray | None = None  # (R,) added to the traced distance (Ouster beam-origin convention)
    pixel_shift: np.ndarray | None = None  # (R,) Ouster staggering: destaggered col = measured col + shift
    planar: dict = field(default_factory=dict)  # 2D scanners: angle_min, angle_increment, time_increment
    retime: Callable[[float], np.ndarray] | None = None  # time-varying patterns: t0 (s) -> (R, C, 3) directions
    # the frame points are reported in, as a 4x4 transform point frame <- ray frame (None: the ray frame),
    # and its frame id (Ouster: rays in os_sensor, points in os_lidar as ouster-ros publishes them)
    point_transform: np.ndarray | None = None
    point_frame_id: str | None = None
    ray_frame_id: str | None = None
    # where the driver places each pixel's point when that differs from its traced ray (velodyne driver-exact:
    # the block azimuth), (R, C, 3) unit directions and origins; None: along the traced ray
    point_directions: np.ndarray | None = None
    point_origins: np.ndarray | None = None
    driver: object | None = None  # a driver's own reporting conventions (velodyne.DriverTable) or None
    driver_metadata: str | None = None  # what the driver publishes about the sensor (ouster-ros /ouster/metadata)
    # the IMU inside the sensor: 4x4 ray frame <- IMU frame and the IMU's frame id (Ouster: os_sensor <- os_imu
    # from the metadata's imu_to_sensor_transform); None: the IMU reports in the points' frame at their origin
    imu_transform: np.ndarray | None = None
    imu_frame_id: str | None = None

    def __post_init__(self):
        rows, cols = self.directions.shape[:2]
        if self.range_offset is None:
            self.range_offset = np.zeros(rows)
        if self.pixel_shift is None:
            self.pixel_shift = np.zeros(rows, np.int64)

    @property
    def shape(self) -> tuple[int, int]:
        return self.directions.shape[:2]

    def pixel_times(self) -> np.ndarray:
        """(R, C) firing time of every pixel, seconds from scan start."""
        return self.column_times[self.pixel_column] + self.beam_time_offset[:, None]


def unit_vectors(azimuth: np.ndarray, elevation: np.ndarray) -> np.ndarray:
    """Directions from azimuth (counter-clockwise from +x) and elevation (up from the xy plane), radians."""
    ce = np.cos(elevation)
    return np.stack([ce * np.cos(azimuth), ce * np.sin(azimuth), np.sin(elevation) * np.ones_like(azimuth)], axis=-1)


def angles_of(directions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(azimuth, elevation) in radians of unit direction vectors (..., 3)."""
    d = np.asarray(directions, dtype=np.float64)
    return np.arctan2(d[..., 1], d[..., 0]), np.arcsin(np.clip(d[..., 2], -1.0, 1.0))


def ring_rank(elevation: np.ndarray, top_first: bool = False) -> np.ndarray:
    """Ring of each beam: its rank by elevation (0 = lowest, or 0 = highest with top_first); ties keep order."""
    key = -np.asarray(elevation) if top_first else np.asarray(elevation)
    order = np.argsort(key, kind="stable")
    rank = np.empty(len(order), np.int64)
    rank[order] = np.arange(len(order))
    return rank


def column_sequence(cols: int, period: float) -> np.ndarray:
    """Firing times of `cols` columns spread evenly over one period."""
    return np.arange(cols) * (period / cols)


def origin_pattern(directions: np.ndarray, period: float, column_times: np.ndarray | None = None,
                   beam_time_offset: np.ndarray | None = None, one_laser: bool = False, **extra) -> Pattern:
    """A Pattern whose rays all leave the sensor origin, rows numbered in order (ring = row).

    column_times: firing time of each column (None: every ray fires at once, one measurement column);
    beam_time_offset: each row's delay inside its column (default 0); one_laser: every row is the same
    emitter (a camera, a cone ranger: one per-laser bias), else row r is laser r."""
    rows, cols = directions.shape[:2]
    if column_times is None:
        column_times, pixel_column = np.zeros(1), np.zeros((rows, cols), np.int64)
    else:
        pixel_column = np.broadcast_to(np.arange(cols), (rows, cols)).copy()
    return Pattern(
        directions=directions,
        origins=np.zeros((rows, cols, 3)),
        ring=np.arange(rows),
        laser_index=np.zeros(rows, np.int64) if one_laser else np.arange(rows),
        column_times=column_times,
        pixel_column=pixel_column,
        beam_time_offset=np.zeros(rows) if beam_time_offset is None else beam_time_offset,
        period=period,
        **extra,
    )
