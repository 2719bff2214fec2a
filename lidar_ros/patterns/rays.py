"""Arbitrary ray patterns: explicit (azimuth, elevation) pairs, inline or from a CSV file.

    type: rays
    rays_deg: [[azimuth, elevation], ...]     # or
    rays_file: my_pattern.csv                 # columns azimuth_deg, elevation_deg[, time_s]

One row of N pixels in the given order. Without a time column the rays fire evenly over the period.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from radarays_ros.errors import ConfigError
from radarays_ros.world.number_table import read_number_table

from ..physics._validate import fail
from ..spec import SpecReader, check_number
from . import Pattern, column_sequence, unit_vectors

MAX_RAYS = 5_000_000


def read_rays_file(path: Path) -> np.ndarray:
    """(N, 2 or 3) array of azimuth_deg, elevation_deg[, time_s]; a header line is allowed."""
    return read_number_table(path, (2, 3), "azimuth_deg, elevation_deg[, time_s]", "rays file")


def build(spec: SpecReader, base_dir: Path, rate_hz: float) -> Pattern:
    if spec.has("rays_deg") == spec.has("rays_file"):
        raise ConfigError(f"{spec.origin}: give exactly one of rays_deg (list of [azimuth, elevation]) or rays_file (CSV)")
    if spec.has("rays_deg"):
        value = spec.raw("rays_deg")
        if not isinstance(value, list) or not value:
            fail(spec.where("rays_deg"), value, "not a non-empty list", "a list of [azimuth_deg, elevation_deg] pairs")
        pairs = []
        for i, pair in enumerate(value):
            where = f"{spec.where('rays_deg')}[{i}]"
            if not isinstance(pair, (list, tuple)) or len(pair) != 2:
                fail(where, pair, "not a pair", "[azimuth_deg, elevation_deg]")
            pairs.append([check_number(pair[0], where, -360, 360), check_number(pair[1], where, -90, 90)])
        table = np.array(pairs)
        spec.raw("rays_file", None)
    else:
        table = read_rays_file(base_dir / spec.text("rays_file"))
        spec.raw("rays_deg", None)
    if len(table) > MAX_RAYS:
        fail(f"{spec.origin}: rays", len(table), "too many rays", f"at most {MAX_RAYS}")
    az, el = np.radians(table[:, 0]), np.radians(table[:, 1])
    if np.any(np.abs(el) > np.pi / 2 + 1e-12):
        fail(f"{spec.origin}: rays", np.degrees(el[np.abs(el) > np.pi / 2]).tolist(), "elevations beyond ±90 degrees",
             "elevations in [-90, 90] degrees")
    n = len(table)
    period = 1.0 / rate_hz
    times = table[:, 2] if table.shape[1] == 3 else column_sequence(n, period)
    if np.any(times < 0) or np.any(times > period):
        fail(f"{spec.origin}: ray times", times[(times < 0) | (times > period)].tolist(), "outside one period",
             f"[0, {period:g}] s (one period at rate_hz)")
    return Pattern(
        directions=unit_vectors(az, el)[None],
        origins=np.zeros((1, n, 3)),
        ring=np.zeros(1, np.int64),
        laser_index=np.zeros(1, np.int64),
        column_times=np.asarray(times, float),
        pixel_column=np.arange(n)[None],
        beam_time_offset=np.zeros(1),
        period=period,
    )
