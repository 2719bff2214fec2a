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

Driver-exact mode (`driver: {model: 32E, exact: true}`): the frame as velodyne_pointcloud builds it from
the packets of velodyne_driver (ros-drivers/velodyne, rawdata.cpp `unpack` and `buildTimings`,
driver.cpp packet rates):
* a scan is ceil(packet_rate / rate) whole packets of `firings_per_packet` firings (it overlaps the
  next scan a little, as the driver's scans do); firings follow each other at 1 / firing_rate_hz;
* every laser of a block is reported along the block's one encoder azimuth (integer hundredths of a
  degree, read at the block's first firing), although it fired later in the block: the driver does not
  interpolate inside a block for HDL-32E, VLP-32C and HDL-64E (only VLP-16/VLS-128 do);
* time = timing_offsets[block][j] + (packet stamp - scan stamp), timing_offsets = block · full cycle +
  (j // 2) · single firing for 32E/32C (46.080/1.152 us, 55.296/2.304 us); the HDL-64E models have no
  timing table, so their time is 0; the scan stamp is the last packet's (its first block);
* HDL-64E: the upper (lasers 0-31) and lower (32-63) banks come in blocks of their own; the organized
  cloud has one row per block, 64 wide, the other bank's 32 slots left as zero bytes.
The traced rays are the physical ones either way; only what is reported follows the driver.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from radarays_ros.errors import ConfigError

from radarays_ros.validate import Rule

from ..physics._validate import fail
from ..spec import SpecReader, check_number, read_yaml
from . import Pattern, column_sequence, ring_rank

RATE_LIMITS_HZ = (5.0, 20.0)  # 300-1200 rpm, all Velodyne spinning models


@dataclass(frozen=True)
class DriverModel:
    """velodyne_driver's packet rate and velodyne_pointcloud's timing table of one `model` parameter."""

    packet_rate_hz: float  # velodyne_driver driver.cpp: packets per second of the model
    firings_per_packet: int  # 12 blocks per packet: 12 firings, or 6 of two banks (HDL-64E)
    block_cycle_us: float | None  # rawdata.cpp buildTimings full_firing_cycle (None: no timing table)
    single_firing_us: float | None  # rawdata.cpp buildTimings single_firing

    @property
    def banks(self) -> int:
        return 12 // self.firings_per_packet


# models whose blocks the driver reports at one azimuth (VLP16 and VLS128 interpolate: not this mode)
DRIVER_MODELS = {
    "32E": DriverModel(1808.0, 12, 46.080, 1.152),
    "32C": DriverModel(1507.0, 12, 55.296, 2.304),
    "64E": DriverModel(2600.0, 6, None, None),
    "64E_S2": DriverModel(3472.17, 6, None, None),
    "64E_S2.1": DriverModel(3472.17, 6, None, None),
    "64E_S3": DriverModel(5787.03, 6, None, None),
}
DRIVER_MODEL_NAMES = ("32E", "32C", "64E", "64E_S2", "64E_S2.1", "64E_S3", "VLP16", "VLS128")


@dataclass(frozen=True, eq=False)
class DriverTable:
    """What velodyne_pointcloud reports of a driver-exact frame besides the points (see the module doc)."""

    model: str
    stamp_s: float  # header stamp, s from the scan start: the last packet's first firing
    time: np.ndarray | None  # (R, C) s from the scan start as the timing table gives it; None: every `time` is 0
    bank_of_row: np.ndarray | None  # (R,) 0 upper / 1 lower bank of each row (HDL-64E), None: one bank


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
    driver = spec.sub("driver")
    model_name = driver.choice("model", DRIVER_MODEL_NAMES, None)
    exact = driver.boolean("exact", False)
    driver.finish()
    model = None
    if exact:
        if model_name not in DRIVER_MODELS:  # velodyne_pointcloud reports one azimuth per block only for these
            Rule(str, choices=tuple(DRIVER_MODELS)).fail(spec.where("driver.model"), model_name,
                                                         "no driver-exact mode with driver.exact true")
        model = DRIVER_MODELS[model_name]
        if model.banks == 2 and n != 64:
            fail(spec.where("driver.model"), model_name, f"describes 64 lasers, the calibration {calib_path} has {n}",
                 "a model of the calibration's laser count")
        if model.banks == 1 and n != 32:
            fail(spec.where("driver.model"), model_name, f"describes 32 lasers, the calibration {calib_path} has {n}",
                 "a model of the calibration's laser count")
        packets = math.ceil(model.packet_rate_hz / rate_hz)  # velodyne_driver: npackets per scan
        cols = packets * model.firings_per_packet
    period = 1.0 / rate_hz
    ring = ring_rank(cal["vert_correction"])
    laser_of_row = np.argsort(ring)  # row r holds the laser whose ring is r
    laser_ids = np.arange(n)
    offset = ((laser_ids // simultaneous) % sequence) * interval
    if offset.max() >= period / cols:
        fail(f"{spec.where('firing')} sequence (us)", round(float(offset.max()) * 1e6, 1), "longer than one column",
             f"at most {period / cols * 1e6:.1f} ({rate_hz:g} Hz x {cols} columns)")
    col_times = column_sequence(cols, period) if model is None else np.arange(cols) / firing_rate
    vert = cal["vert_correction"][laser_of_row][:, None]
    rot = cal["rot_correction"][laser_of_row][:, None]
    vo = cal["vert_offset_correction"][laser_of_row][:, None]
    ho = cal["horiz_offset_correction"][laser_of_row][:, None]
    beam_delay = offset[laser_of_row]
    # Velodyne azimuth (clockwise) of each pixel at its own firing instant, minus the laser's rot_correction
    theta = start + 2 * np.pi * (col_times[None, :] + beam_delay[:, None]) * rate_hz - rot
    directions, origins = _rays(theta, vert, vo, ho)
    pattern = Pattern(
        directions=directions,
        origins=origins,
        ring=np.arange(n),
        laser_index=laser_of_row,
        column_times=col_times,
        pixel_column=np.broadcast_to(np.arange(cols), (n, cols)).copy(),
        beam_time_offset=beam_delay,
        period=period,
    )
    if model is not None:
        _driver_exact(pattern, model_name, model, start, rate_hz, vert, rot, vo, ho)
    return pattern


def _rays(theta, vert, vo, ho) -> tuple[np.ndarray, np.ndarray]:
    """(directions, origins) (R, C, 3) of lasers at Velodyne azimuth theta (clockwise, rot_correction
    already subtracted), elevation vert and offsets vo, ho (the geometry of rawdata.cpp)."""
    cv, sv, ct, st = np.cos(vert), np.sin(vert), np.cos(theta), np.sin(theta)
    directions = np.stack(np.broadcast_arrays(cv * ct, -cv * st, sv), axis=-1)
    origins = np.stack(np.broadcast_arrays(-vo * sv * ct + ho * st, vo * sv * st + ho * ct, vo * cv), axis=-1)
    return directions, origins


def block_azimuth_units(start: float, rate_hz: float, column_times: np.ndarray) -> np.ndarray:
    """The encoder azimuth of each block as a packet carries it: integer hundredths of a degree in [0, 36000)."""
    degrees = np.degrees(start + 2 * np.pi * rate_hz * column_times)
    return np.mod(np.rint(degrees * 100.0).astype(np.int64), 36000)


def _driver_exact(pattern: Pattern, name: str, model: DriverModel, start: float, rate_hz: float,
                  vert, rot, vo, ho) -> None:
    """Turn a pattern into what velodyne_pointcloud reports: points along the block azimuth, the driver's
    timing table, its stamp and (HDL-64E) its bank rows."""
    units = block_azimuth_units(start, rate_hz, pattern.column_times)
    theta = np.radians(units * 0.01)[None, :] - rot
    pattern.point_directions, pattern.point_origins = _rays(theta, vert, vo, ho)
    laser, times = pattern.laser_index, pattern.column_times
    per_packet = model.firings_per_packet
    packet_start = times[np.arange(times.size) // per_packet * per_packet]  # a packet's stamp: its first firing
    time = None
    if model.block_cycle_us is not None:  # packet stamp + timing_offsets[block][j], j = the laser's slot
        block = np.arange(times.size) % per_packet
        time = (packet_start + block * model.block_cycle_us * 1e-6)[None, :] + \
            (laser % 32 // 2 * model.single_firing_us * 1e-6)[:, None]
    pattern.driver = DriverTable(model=name, stamp_s=float(packet_start[-1]), time=time,
                                 bank_of_row=(laser // 32).astype(np.int64) if model.banks == 2 else None)
