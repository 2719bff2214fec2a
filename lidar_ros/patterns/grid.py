"""Generic spinning sensor: a grid of vertical x horizontal angles (Rmagine/Gazebo style).

    type: spherical
    vertical:   {min_deg: -15, max_deg: 15, step_deg: 2}    # rows (any axis form, see axis.py)
    horizontal: {min_deg: -180, step_deg: 0.2, count: 1800} # columns, counter-clockwise from +x
    azimuth_offsets_deg: [...]     # optional, one per vertical angle (staggered beams)
    origin_offsets_m: [[x,y,z], ...]  # optional, one per vertical angle
    beam_time_offsets_us: [...]    # optional, one per vertical angle: the beam's firing delay inside its column
    ring_order: bottom_first       # row 0 = lowest beam (velodyne/gazebo); top_first (ouster); as_given

Pixel (r, c) looks along azimuth horizontal[c] + azimuth_offset[r], elevation vertical[r]; columns fire
one after the other, evenly over the scan period, in the order the horizontal axis lists them.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from radarays_ros.errors import ConfigError

from ..physics._validate import fail
from ..spec import SpecReader
from . import Pattern, column_sequence, ring_rank, unit_vectors
from .axis import read_axis

RING_ORDERS = ("bottom_first", "top_first", "as_given")
MAX_PIXELS = 4_000_000  # an OS1-128 x 2048 is 262 144; 4 M rays take ~0.5 GB of per-pixel arrays


def read_beam_offsets(spec: SpecReader, rows: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-beam azimuth offsets (rad) and origin offsets (m), zeros when not given."""
    az = np.zeros(rows)
    if spec.has("azimuth_offsets_deg"):
        az = np.radians(spec.numbers("azimuth_offsets_deg", length=rows, lo=-180, hi=180))
    else:
        spec.raw("azimuth_offsets_deg", None)
    origins = np.zeros((rows, 3))
    value = spec.raw("origin_offsets_m", None)
    if value is not None:
        if not isinstance(value, list) or len(value) != rows:
            raise ConfigError(f"{spec.where('origin_offsets_m')}: expected {rows} entries [x, y, z] (one per beam)")
        for i, entry in enumerate(value):
            sub = SpecReader({"v": entry}, spec.origin, f"{spec.prefix}origin_offsets_m[{i}].")
            origins[i] = sub.numbers("v", length=3, lo=-10.0, hi=10.0)
    return az, origins


def row_order(elevation: np.ndarray, ring_order: str) -> np.ndarray:
    """Which given beam goes to each row."""
    if ring_order == "as_given":
        return np.arange(len(elevation))
    return np.argsort(ring_rank(elevation, top_first=ring_order == "top_first"))


def build(spec: SpecReader, base_dir: Path, rate_hz: float) -> Pattern:
    vertical = read_axis(spec.sub("vertical", required=True), max_count=1024)
    if np.any(np.abs(vertical) > np.pi / 2 + 1e-12):
        fail(f"{spec.origin}: vertical", np.degrees(vertical).round(6).tolist(), "an elevation beyond ±90 degrees",
             "angles in [-90, 90] degrees")
    horizontal = read_axis(spec.sub("horizontal", required=True))
    rows, cols = len(vertical), len(horizontal)
    if rows * cols > MAX_PIXELS:  # before the per-pixel arrays (directions, origins... ~100 B a pixel)
        fail(f"{spec.origin}: rays per scan", rows * cols, f"too many rays ({rows} x {cols})", f"at most {MAX_PIXELS}")
    az_off, origin_off = read_beam_offsets(spec, rows)
    delay = np.zeros(rows)
    if spec.has("beam_time_offsets_us"):  # within one column period: a later beam fires in the next column
        delay = np.array(spec.numbers("beam_time_offsets_us", length=rows, lo=0.0, hi=1e6 / (rate_hz * cols))) * 1e-6
    else:
        spec.raw("beam_time_offsets_us", None)
    order = row_order(vertical, spec.choice("ring_order", RING_ORDERS, "bottom_first"))
    el = vertical[order][:, None]
    az = horizontal[None, :] + az_off[order][:, None]
    directions = unit_vectors(az, np.broadcast_to(el, az.shape))
    period = 1.0 / rate_hz
    return Pattern(
        directions=directions,
        origins=np.broadcast_to(origin_off[order][:, None, :], (rows, cols, 3)).copy(),
        ring=np.arange(rows),
        laser_index=order,
        column_times=column_sequence(cols, period),
        pixel_column=np.broadcast_to(np.arange(cols), (rows, cols)).copy(),
        beam_time_offset=delay[order],
        period=period,
    )
