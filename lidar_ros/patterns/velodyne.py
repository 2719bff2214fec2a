"""Velodyne spinning lidars from a ros-drivers/velodyne calibration YAML.

Per laser the calibration gives vert_correction (elevation, rad), rot_correction (azimuth offset,
rad), vert_offset_correction and horiz_offset_correction (m, beam origin offsets). The geometry
below is the one velodyne_pointcloud's RawData::unpack applies (Velodyne azimuth runs clockwise
seen from above, 0 = +x of the ROS frame), written for ideal distances (no dist_correction: the
simulator measures true distances). Rings are ranks by elevation, ring 0 = lowest laser (the
driver's calibration.cpp rule). Rows of the pattern are rings.

Timing: columns (firing sequences) follow each other at 1 / (rate * columns); inside a sequence
laser l fires at ((l // simultaneous) % sequence) * interval (datasheet firing order), and the
azimuth keeps turning during that delay, as the driver interpolates it.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from radarays_ros.errors import ConfigError

from ..spec import SpecReader, check_number, read_yaml
from . import Pattern, column_sequence, ring_rank

RATE_LIMITS_HZ = (5.0, 20.0)  # 300-1200 rpm, all Velodyne spinning models


def read_calibration(path: str | Path) -> dict:
    """Lasers of a calibration file as arrays sorted by laser_id (names as in the file)."""
    path = Path(path)
    data = read_yaml(path, "velodyne calibration")
    if not isinstance(data, dict) or not isinstance(data.get("lasers"), list) or not data["lasers"]:
        raise ConfigError(f"velodyne calibration {path}: expected a 'lasers' list")
    lasers = data["lasers"]
    n = len(lasers)
    if "num_lasers" in data and data["num_lasers"] != n:
        raise ConfigError(f"velodyne calibration {path}: num_lasers = {data['num_lasers']} but {n} lasers are listed")
    out = {k: np.zeros(n) for k in ("vert_correction", "rot_correction", "vert_offset_correction", "horiz_offset_correction")}
    seen = set()
    for i, laser in enumerate(lasers):
        where = f"velodyne calibration {path}: lasers[{i}]"
        if not isinstance(laser, dict) or "laser_id" not in laser:
            raise ConfigError(f"{where}: expected a mapping with laser_id")
        lid = check_number(laser["laser_id"], f"{where}.laser_id", 0, n - 1, integer=True)
        if lid in seen:
            raise ConfigError(f"{where}.laser_id = {lid} appears twice")
        seen.add(lid)
        for key in out:
            lo, hi = (-np.pi / 2, np.pi / 2) if key == "vert_correction" else (-np.pi, np.pi) if key == "rot_correction" else (-1.0, 1.0)
            out[key][lid] = check_number(laser.get(key, 0.0), f"{where}.{key}", lo, hi)
    return out


def build(spec: SpecReader, base_dir: Path, rate_hz: float) -> Pattern:
    check_number(rate_hz, f"{spec.origin}: rate_hz", *RATE_LIMITS_HZ)
    calib_path = base_dir / spec.text("calibration")
    cal = read_calibration(calib_path)
    n = len(cal["vert_correction"])
    firing_rate = spec.number("firing_rate_hz", 18000.0, 1.0, 1e6)
    cols = spec.number("columns", int(round(firing_rate / rate_hz)), 1, 100000, integer=True)
    start = np.radians(spec.number("start_azimuth_deg", 0.0, -360.0, 360.0))
    firing = spec.sub("firing")
    interval = firing.number("interval_us", 0.0, 0.0, 1000.0) * 1e-6
    simultaneous = firing.number("simultaneous", 1, 1, n, integer=True)
    sequence = firing.number("sequence", n, 1, n, integer=True)
    firing.finish()

    period = 1.0 / rate_hz
    ring = ring_rank(cal["vert_correction"])
    laser_of_row = np.argsort(ring)  # row r holds the laser whose ring is r
    laser_ids = np.arange(n)
    offset = ((laser_ids // simultaneous) % sequence) * interval
    if offset.max() >= period / cols:
        raise ConfigError(f"{spec.where('firing')}: a firing sequence ({offset.max() * 1e6:.1f} us) is longer than one "
                          f"column ({period / cols * 1e6:.1f} us at {rate_hz} Hz x {cols} columns)")
    col_times = column_sequence(cols, period)
    vert = cal["vert_correction"][laser_of_row][:, None]
    rot = cal["rot_correction"][laser_of_row][:, None]
    vo = cal["vert_offset_correction"][laser_of_row][:, None]
    ho = cal["horiz_offset_correction"][laser_of_row][:, None]
    beam_delay = offset[laser_of_row]
    # Velodyne azimuth (clockwise) of each pixel at its own firing instant, minus the laser's rot_correction
    theta = start + 2 * np.pi * (col_times[None, :] + beam_delay[:, None]) * rate_hz - rot
    cv, sv, ct, st = np.cos(vert), np.sin(vert), np.cos(theta), np.sin(theta)
    directions = np.stack(np.broadcast_arrays(cv * ct, -cv * st, sv), axis=-1)
    origins = np.stack(np.broadcast_arrays(-vo * sv * ct + ho * st, vo * sv * st + ho * ct, vo * cv), axis=-1)
    return Pattern(
        directions=directions,
        origins=origins,
        ring=np.arange(n),
        laser_index=laser_of_row,
        column_times=col_times,
        pixel_column=np.broadcast_to(np.arange(cols), (n, cols)).copy(),
        beam_time_offset=beam_delay,
        period=period,
    )
