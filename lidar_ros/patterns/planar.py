"""2D scanners (Hokuyo, SICK): one row of beams in the sensor's xy plane.

    type: planar
    angles: {min_deg: -135, max_deg: 135, step_deg: 0.25}   # or steps_file: table.csv (angle_rad column)
    steps_per_revolution: 1440    # angular slots of a full mirror turn: time between beams = period / this

Beams fire in order of increasing angle (counter-clockwise), one every period / steps_per_revolution
(sensor_msgs/LaserScan time_increment); angle 0 is the sensor's +x.
"""
from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from radarays_ros.errors import ConfigError

from ..physics._validate import fail
from ..spec import SpecReader
from . import Pattern, unit_vectors
from .axis import read_axis


def read_steps_file(path: Path) -> np.ndarray:
    """Angles (rad) from a step table CSV with an 'angle_rad' column (comment lines start with #)."""
    try:
        lines = [ln for ln in path.read_text().splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    except FileNotFoundError:
        raise ConfigError(f"steps file {path} not found") from None
    reader = csv.DictReader(lines)
    if "angle_rad" not in (reader.fieldnames or []):
        raise ConfigError(f"steps file {path}: needs an 'angle_rad' column, has {reader.fieldnames}")
    try:
        angles = np.array([float(row["angle_rad"]) for row in reader])
    except (TypeError, ValueError):
        raise ConfigError(f"steps file {path}: angle_rad values must be numbers") from None
    if len(angles) < 2 or np.any(np.diff(angles) <= 0):
        raise ConfigError(f"steps file {path}: need at least 2 strictly increasing angles")
    return angles


def build(spec: SpecReader, base_dir: Path, rate_hz: float) -> Pattern:
    if spec.has("steps_file") == spec.has("angles"):
        raise ConfigError(f"{spec.origin}: give exactly one of angles (axis) or steps_file (CSV with angle_rad)")
    if spec.has("steps_file"):
        angles = read_steps_file(base_dir / spec.text("steps_file"))
        spec.raw("angles", None)
    else:
        angles = read_axis(spec.sub("angles"))
        spec.raw("steps_file", None)
    if len(angles) > 1 and np.any(np.diff(angles) <= 0):
        fail(spec.where("angles"), np.degrees(angles).round(6).tolist(), "not increasing",
             "strictly increasing angles (a counter-clockwise scan)")
    increment = float(np.mean(np.diff(angles))) if len(angles) > 1 else 0.0
    default_steps = int(round(2 * np.pi / increment)) if increment > 0 else len(angles)
    steps = spec.number("steps_per_revolution", default_steps, len(angles), 1_000_000, integer=True)
    period = 1.0 / rate_hz
    dt = period / steps
    n = len(angles)
    return Pattern(
        directions=unit_vectors(angles, np.zeros(n))[None],
        origins=np.zeros((1, n, 3)),
        ring=np.zeros(1, np.int64),
        laser_index=np.zeros(1, np.int64),
        column_times=np.arange(n) * dt,
        pixel_column=np.arange(n)[None],
        beam_time_offset=np.zeros(1),
        period=period,
        planar={"angle_min": float(angles[0]), "angle_increment": increment, "time_increment": dt, "scan_time": period},
    )
