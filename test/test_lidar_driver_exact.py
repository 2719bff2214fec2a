"""Velodyne driver-exact mode against velodyne_pointcloud's own definitions, decoded independently.

The clouds go through a bag and back (rosbags) and are viewed through a numpy dtype built here from the
decoded PointFields. Expected values come from the driver's formulas written out below (rawdata.cpp
`unpack`/`buildTimings`, driver.cpp packet rates, organized_cloudXYZIRT.cpp) and from the calibration
YAML parsed here, never from the code under test.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import trimesh
import yaml

from lidar_ros import LidarSimulator, load_sensor
from radarays_ros.errors import ConfigError
from radarays_ros.io.bag import BagWriter
from radarays_ros.io.lidar_clouds import pointcloud_msg
from radarays_ros.tracing import make_backend
from radarays_ros.world.mesh import TriMesh
from radarays_ros.world.scene import Scene

from support.frames_paths import frames, lidar_on  # noqa: F401  (frames: the host/device fixture)
from support.lidar_bags import points_of, read_bag

VELODYNE = Path(__file__).resolve().parents[1] / "radarays_ros" / "data" / "lidar" / "velodyne"
T0 = 1_700_000_000_000_000_000
RADIUS = 10.0
EXACT = {"noise": {}, "surface": {}, "driver.exact": True}


@pytest.fixture(scope="module")
def sphere():
    """The inside of a sphere of radius 10 m around the sensor: every ray returns at 10 m (facets: < 2 mm)."""
    scene = Scene()
    ball = trimesh.creation.icosphere(subdivisions=5, radius=RADIUS)
    scene.add_entity("sphere", TriMesh(ball.vertices, ball.faces), np.eye(4), material="concrete")
    return scene, make_backend("embree", scene, threads=2)


def decoded_cloud(tmp_path, scan):
    path = tmp_path / f"cloud_{len(list(tmp_path.glob('cloud_*.mcap')))}.mcap"  # a bag refuses an existing file
    with BagWriter(path) as bag:
        bag.write("/points", pointcloud_msg(scan), T0)
    (_, msg, _), = read_bag(path)["/points"]
    return msg, points_of(msg)


def calibration(name: str) -> dict:
    """Per laser id: vert, rot, vert/horiz offsets, and the ring (rank by elevation, calibration.cpp)."""
    lasers = sorted(yaml.safe_load((VELODYNE / name).read_text())["lasers"], key=lambda l: l["laser_id"])
    out = {k: np.array([l.get(k, 0.0) for l in lasers]) for k in
           ("vert_correction", "rot_correction", "vert_offset_correction", "horiz_offset_correction")}
    out["ring"] = np.argsort(np.argsort(out["vert_correction"], kind="stable"), kind="stable")
    return out


def block_units(c: np.ndarray, firing_rate: float, rate: float = 10.0) -> np.ndarray:
    """The encoder azimuth of block c in hundredths of a degree (start azimuth 0)."""
    return np.mod(np.rint(36000.0 * rate * c / firing_rate), 36000).astype(np.int64)


def driver_azimuth(pts, ho: np.ndarray) -> np.ndarray:
    """Velodyne azimuth θ (clockwise, rad) that rawdata.cpp used for each point, inverted from its x, y:
    x = xy·cos θ + ho·sin θ, y = −xy·sin θ + ho·cos θ, so the point's angle is atan2(ho, xy) − θ."""
    x, y = pts["x"].astype(np.float64), pts["y"].astype(np.float64)
    xy = np.sqrt(np.maximum(x * x + y * y - ho * ho, 0.0))
    return np.arctan2(ho, xy) - np.arctan2(y, x)


def wrapped(a: np.ndarray) -> np.ndarray:
    return (a + np.pi) % (2 * np.pi) - np.pi


@pytest.mark.parametrize("name, calib, firing_rate, packet_rate, cycle_us, single_us", [
    ("HDL-32E", "32db.yaml", 21700.0, 1808.0, 46.080, 1.152),
    ("VLP-32C", "VeloView-VLP-32C.yaml", 18000.0, 1507.0, 55.296, 2.304),
])
def test_32_laser_units_report_one_azimuth_per_block_and_the_drivers_timing_table(
        tmp_path, sphere, name, calib, firing_rate, packet_rate, cycle_us, single_us, frames):
    scan = lidar_on(frames, load_sensor(name, EXACT), *sphere).simulate(np.eye(4), T0)
    msg, pts = decoded_cloud(tmp_path, scan)
    packets = math.ceil(packet_rate / 10.0)  # velodyne_driver: npackets = ceil(packet_rate / frequency)
    assert (msg.height, msg.width) == (packets * 12, 32) and not msg.is_dense
    cal = calibration(calib)
    laser_of_slot = np.argsort(cal["ring"])  # organized: a block's points sit at their ring
    np.testing.assert_array_equal(pts["ring"], np.broadcast_to(np.arange(32), pts.shape))
    assert np.isfinite(pts["x"]).all()
    # every point of block c lies along the block's encoder azimuth minus its laser's rot_correction
    blocks = np.arange(msg.height)
    theta = np.radians(block_units(blocks, firing_rate) * 0.01)[:, None] - cal["rot_correction"][laser_of_slot]
    seen = driver_azimuth(pts, cal["horiz_offset_correction"][laser_of_slot])
    assert np.abs(wrapped(seen - theta)).max() < 2e-5
    # ... at the range of the physical ray, which fired later in the block
    xyz = np.stack([pts[a].astype(np.float64) for a in "xyz"], -1)
    if not cal["vert_offset_correction"].any():
        np.testing.assert_allclose(np.linalg.norm(xyz, axis=-1), RADIUS, atol=3e-3)
    # time: packet stamp + timing_offsets[block][j], relative to the last packet's stamp
    stamp = msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec
    packet_start = blocks // 12 * 12 / firing_rate
    assert stamp == T0 + round(packet_start[-1] * 1e9)
    expected = (packet_start + blocks % 12 * cycle_us * 1e-6)[:, None] + (laser_of_slot // 2 * single_us * 1e-6)[None, :]
    np.testing.assert_allclose(pts["time"], expected - packet_start[-1], atol=2e-7)
    # the default mode interpolates inside a block: its points are not on one azimuth per row
    default = lidar_on(frames, load_sensor(name, {"noise": {}, "surface": {}}), *sphere).simulate(np.eye(4), T0)
    _, pts2 = decoded_cloud(tmp_path, default)
    spread = driver_azimuth(pts2, cal["horiz_offset_correction"][laser_of_slot]) + cal["rot_correction"][laser_of_slot]
    assert np.abs(wrapped(spread - spread[:, :1])).max() > np.radians(0.05)


def test_hdl64e_rows_are_banks_with_zero_bytes_time_zero_and_block_azimuths(tmp_path, sphere, frames):
    scan = lidar_on(frames, load_sensor("HDL-64E-S2", EXACT), *sphere).simulate(np.eye(4), T0)
    msg, pts = decoded_cloud(tmp_path, scan)
    packets = math.ceil(3472.17 / 10.0)
    firings = packets * 6  # 12 blocks per packet: an upper and a lower block per firing
    assert (msg.height, msg.width) == (2 * firings, 64)
    cal = calibration("64e_s2.1-sztaki.yaml")
    laser_of_slot = np.argsort(cal["ring"])
    upper = laser_of_slot < 32
    raw = np.frombuffer(bytes(msg.data), np.uint8).reshape(msg.height, msg.width, msg.point_step)
    for bank, own in ((0, upper), (1, ~upper)):
        rows = slice(bank, None, 2)
        assert not raw[rows][:, ~own].any()  # the other bank's slots: the zero bytes the driver clears with
        np.testing.assert_array_equal(pts["ring"][rows][:, own], np.broadcast_to(np.flatnonzero(own), (firings, 32)))
        assert np.isfinite(pts["x"][rows][:, own]).all()
    assert not pts["time"].any()  # no timing table for 64E models: time = 0
    stamp = msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec
    assert stamp == T0 + round((packets - 1) * 6 / 20833.0 * 1e9)  # the last packet's stamp
    # both blocks of a firing carry its encoder azimuth; points follow rawdata.cpp's offsets geometry
    theta = np.radians(block_units(np.arange(2 * firings) // 2, 20833.0) * 0.01)[:, None] - \
        cal["rot_correction"][laser_of_slot]
    ho = cal["horiz_offset_correction"][laser_of_slot]
    own = np.where(np.arange(2 * firings)[:, None] % 2 == 0, upper[None, :], ~upper[None, :])
    seen = driver_azimuth(pts, ho)
    assert np.abs(wrapped(seen - theta))[own].max() < 5e-5


def test_exact_mode_is_refused_where_the_driver_interpolates_or_returns_are_dual():
    with pytest.raises(ConfigError, match="driver.exact.*32E"):
        load_sensor("VLP-16", {"driver.exact": True})
    with pytest.raises(ConfigError, match="dual"):
        load_sensor("HDL-32E", {"driver.exact": True, "beam.return_mode": "dual"})
    with pytest.raises(ConfigError, match="driver.model"):
        load_sensor("HDL-32E", {"driver.model": "HDL32"})
