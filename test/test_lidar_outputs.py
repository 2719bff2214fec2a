"""Lidar outputs read back by independent readers: PointCloud2 in an .mcap decoded with rosbags and
viewed through a numpy dtype built here from the decoded PointFields; LaserScan; PCD and PLY parsed
by the small readers below. Offsets are compared with the drivers' (velodyne_pointcloud XYZIRT,
ouster-ros ouster_ros::Point, Gazebo gpu_lidar / cpu_lidar through ros_gz_bridge)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import trimesh
from rosbags.highlevel import AnyReader
from rosbags.typesys import Stores, get_typestore

from lidar_ros import LidarSimulator, load_sensor
from radarays_ros.io.bag import BagWriter
from radarays_ros.io.lidar_clouds import laserscan_msg, pointcloud_array, pointcloud_msg
from radarays_ros.io.lidar_files import write_pcd, write_ply
from radarays_ros.tracing import make_backend
from radarays_ros.world.mesh import TriMesh
from radarays_ros.world.scene import Scene
from radarays_ros.world.transforms import pose_to_matrix

QUIET = {"noise": {}, "surface": {}}
T0 = 1_500_000_000
# field -> (offset, PointField datatype) of the real drivers, and their point_step
DRIVER_FIELDS = {
    "velodyne": ({"x": (0, 7), "y": (4, 7), "z": (8, 7), "intensity": (12, 7), "ring": (16, 4), "time": (18, 7)}, 22),
    "ouster": ({"x": (0, 7), "y": (4, 7), "z": (8, 7), "intensity": (16, 7), "t": (20, 6), "reflectivity": (24, 4),
                "ring": (26, 4), "ambient": (28, 4), "range": (32, 6)}, 48),
    # gz-sensors GpuLidarSensor: InitPointCloudPacked(..., memoryAligned=true, {xyz, intensity, ring})
    "gazebo": ({"x": (0, 7), "y": (4, 7), "z": (8, 7), "intensity": (16, 7), "ring": (24, 4)}, 32),
    "gazebo_cpu": ({"x": (0, 7), "y": (4, 7), "z": (8, 7), "intensity": (12, 7), "ring": (16, 4)}, 18),
    # livox_ros_driver2 xfer_format 0: packed LivoxPointXyzrtlt
    "livox": ({"x": (0, 7), "y": (4, 7), "z": (8, 7), "intensity": (12, 7), "tag": (16, 2), "line": (17, 2),
               "timestamp": (18, 8)}, 26),
    "xyzi": ({"x": (0, 7), "y": (4, 7), "z": (8, 7), "intensity": (12, 7)}, 16),
}
NUMPY_OF_POINTFIELD = {1: "i1", 2: "u1", 3: "<i2", 4: "<u2", 5: "<i4", 6: "<u4", 7: "<f4", 8: "<f8"}


@pytest.fixture(scope="module")
def room():
    """A 6 m x 6 m room with 2 m walls (z -1..1) and no ceiling: rays above the walls miss."""
    scene = Scene()
    for name, size, xyz in (("front", [0.2, 6, 2], [3.1, 0, 0]), ("back", [0.2, 6, 2], [-3.1, 0, 0]),
                            ("left", [6, 0.2, 2], [0, 3.1, 0]), ("right", [6, 0.2, 2], [0, -3.1, 0]),
                            ("floor", [6, 6, 0.2], [0, 0, -1.1])):
        box = trimesh.creation.box(size)
        scene.add_entity(name, TriMesh(box.vertices, box.faces), pose_to_matrix(*xyz), material="concrete")
    return scene, make_backend("embree", scene, threads=2)


def scan_of(room, name, overrides=None):
    scene, backend = room
    return LidarSimulator(load_sensor(name, {**QUIET, **(overrides or {})}), scene, backend).simulate(np.eye(4), T0)


def read_bag(path: Path) -> dict:
    out: dict = {}
    with AnyReader([path], default_typestore=get_typestore(Stores.ROS2_JAZZY)) as reader:
        for conn, t, raw in reader.messages():
            out.setdefault(conn.topic, []).append((conn.msgtype, reader.deserialize(raw, conn.msgtype), t))
    return out


def points_of(msg) -> np.ndarray:
    """The cloud's bytes viewed through a dtype built from its decoded PointFields, (height, width)."""
    dtype = np.dtype({"names": [f.name for f in msg.fields],
                      "formats": [NUMPY_OF_POINTFIELD[f.datatype] for f in msg.fields],
                      "offsets": [f.offset for f in msg.fields], "itemsize": msg.point_step})
    assert not msg.is_bigendian and msg.row_step == msg.point_step * msg.width
    return np.frombuffer(bytes(msg.data), dtype).reshape(msg.height, msg.width)


def bag_cloud(tmp_path, scan, **kw):
    path = tmp_path / "cloud.mcap"
    msg = pointcloud_msg(scan, **kw)
    with BagWriter(path) as bag:
        bag.write("/points", msg, T0)
    (msgtype, decoded, _), = read_bag(path)["/points"]
    assert msgtype == "sensor_msgs/msg/PointCloud2"
    return decoded


@pytest.mark.parametrize("layout", list(DRIVER_FIELDS))
def test_field_offsets_equal_the_drivers(tmp_path, room, layout):
    msg = bag_cloud(tmp_path, scan_of(room, "VLP-16"), layout=layout)
    fields, step = DRIVER_FIELDS[layout]
    assert {f.name: (f.offset, f.datatype) for f in msg.fields} == fields
    assert msg.point_step == step and all(f.count == 1 for f in msg.fields)


def test_velodyne_cloud_read_back_field_by_field(tmp_path, room):
    scan = scan_of(room, "VLP-16")
    msg = bag_cloud(tmp_path, scan)
    pts = points_of(msg)
    assert (msg.height, msg.width) == (scan.config.cols, 16)  # organized like the driver: firings x lasers
    stamp = msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec
    assert stamp == T0 + round(scan.time.max() * 1e9)  # stamped at the last firing
    for r in range(16):
        col = pts[:, r]
        hit = scan.hit[r]
        np.testing.assert_array_equal(col["ring"], r)
        np.testing.assert_array_equal(np.isnan(col["x"]), ~hit)  # organized: NaN for misses
        for i, axis in enumerate("xyz"):
            np.testing.assert_array_equal(col[axis][hit], scan.xyz[r, hit, i])
        np.testing.assert_array_equal(col["intensity"][hit], scan.intensity[r, hit])
        np.testing.assert_allclose(col["time"], scan.time[r] - scan.time.max(), atol=1e-7)
    assert pts["time"].max() == pytest.approx(0.0, abs=1e-7) and (pts["time"] <= 1e-7).all()
    # ring 0 is the lowest laser: elevation of the returns grows with ring
    el = np.degrees(np.arctan2(pts["z"], np.hypot(pts["x"], pts["y"])))
    assert np.all(np.diff(np.nanmedian(el, axis=0)) > 0)
    first = pointcloud_array(scan, time_reference="first")
    assert first["time"].min() == pytest.approx(0.0, abs=1e-7) and first["time"].max() > 0.099


def test_ouster_cloud_read_back_field_by_field(tmp_path, room):
    scan = scan_of(room, "OS1-64", {"columns": 512})
    msg = bag_cloud(tmp_path, scan)
    pts = points_of(msg)
    assert (msg.height, msg.width) == (64, 512) and not msg.is_dense and not scan.hit.all()
    assert msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec == T0  # ouster stamps the scan start
    np.testing.assert_array_equal(pts["ring"], np.repeat(np.arange(64)[:, None], 512, 1))
    np.testing.assert_array_equal(pts["t"], np.round(scan.time * 1e9).astype(np.uint32))
    hit = scan.hit
    np.testing.assert_array_equal(np.isnan(pts["x"]), ~hit)
    np.testing.assert_array_equal(pts["range"][hit], np.round(scan.range[hit] * 1000).astype(np.uint32))
    assert (pts["range"][~hit] == 0).all()
    np.testing.assert_array_equal(pts["reflectivity"], scan.fields["ouster_reflectivity"])
    np.testing.assert_array_equal(pts["ambient"], scan.fields["ouster_ambient"])
    np.testing.assert_array_equal(pts["intensity"][hit], scan.fields["ouster_signal"][hit].astype(np.float32))
    # ring 0 is the top beam; the range field (mm from the lidar origin) matches the points
    el = np.degrees(np.arctan2(pts["z"] - 0.03618, np.hypot(pts["x"], pts["y"])))
    assert np.all(np.diff(np.nanmedian(el, axis=1)) < 0)
    # time: a destaggered column holds pixels of several measurement columns, all within the scan
    assert pts["t"].max() < 100_000_000


def test_gazebo_and_ground_truth_fields(tmp_path, room):
    scan = scan_of(room, str(Path(__file__).resolve().parents[1] / "radarays_ros" / "data" / "examples" / "spherical_16x1800.yaml"))
    msg = bag_cloud(tmp_path, scan, ground_truth=("clean_range", "entity", "material", "normal", "incidence_rad"))
    pts = points_of(msg)
    assert (msg.height, msg.width) == (16, 1800)
    names = [f.name for f in msg.fields]
    assert names[:5] == ["x", "y", "z", "intensity", "ring"]
    assert names[5:] == ["clean_range", "entity_id", "material_id", "normal_x", "normal_y", "normal_z", "incidence_angle"]
    hit = scan.hit
    np.testing.assert_array_equal(pts["clean_range"][hit], scan.range[hit])  # noise off
    front = room[0].find("front")
    forward = hit & (np.abs(scan.azimuth_rad) < 0.3) & (np.abs(scan.elevation_rad) < 0.3)
    assert (pts["entity_id"][forward] == front).all()
    np.testing.assert_allclose(pts["normal_x"][forward], -1.0, atol=1e-6)  # the front wall faces the sensor
    expected = np.arccos(np.cos(scan.azimuth_rad) * np.cos(scan.elevation_rad))
    np.testing.assert_allclose(pts["incidence_angle"][forward], expected[forward], atol=1e-4)
    assert (pts["entity_id"][~hit] == -1).all()


def test_unorganized_clouds_hold_only_returns(tmp_path, room):
    scan = scan_of(room, "VLP-16")
    msg = bag_cloud(tmp_path, scan, organized=False)
    pts = points_of(msg)
    assert msg.height == 1 and msg.width == scan.hit.sum() and msg.is_dense
    assert np.isfinite(pts["x"]).all()


def test_laserscan_from_a_2d_scanner(tmp_path, room):
    scan = scan_of(room, "URG-04LX")
    path = tmp_path / "scan.mcap"
    with BagWriter(path) as bag:
        bag.write("/scan", laserscan_msg(scan), T0)
    (msgtype, msg, _), = read_bag(path)["/scan"]
    assert msgtype == "sensor_msgs/msg/LaserScan"
    ranges = np.asarray(msg.ranges)
    assert len(ranges) == 682 and msg.angle_min == pytest.approx(-2.086213872) and msg.angle_increment == pytest.approx(2 * np.pi / 1024)
    assert msg.time_increment == pytest.approx(0.1 / 1024) and msg.range_max == pytest.approx(5.6)
    # a 6 m room seen from its centre: the walls at 3 m are within 5.6 m except far into the corners
    angles = msg.angle_min + msg.angle_increment * np.arange(682)
    expected = 3.0 / np.maximum(np.abs(np.cos(angles)), np.abs(np.sin(angles)))
    np.testing.assert_allclose(ranges[expected < 5.5], expected[expected < 5.5], rtol=1e-5)
    assert np.all(np.isposinf(ranges[expected > 5.7]))  # REP-117: no return = +inf, never max range


def test_laserscan_misses_are_positive_infinity(room):
    scene, backend = room
    scan = LidarSimulator(load_sensor("UTM-30LX", QUIET), scene, backend).simulate(pose_to_matrix(0, 0, 10))
    ranges = np.asarray(laserscan_msg(scan).ranges)
    assert np.isposinf(ranges).all()


def read_pcd(path: Path) -> np.ndarray:
    """A tiny binary-PCD reader: header lines up to DATA, then packed records."""
    raw = path.read_bytes()
    header, _, body = raw.partition(b"DATA binary\n")
    meta = {}
    for line in header.decode().splitlines():
        if line and not line.startswith("#"):
            key, *values = line.split()
            meta[key] = values
    kinds = {"F": "f", "U": "u", "I": "i"}
    dtype = np.dtype([(n, f"<{kinds[t]}{s}") for n, t, s in zip(meta["FIELDS"], meta["TYPE"], meta["SIZE"])])
    width, height = int(meta["WIDTH"][0]), int(meta["HEIGHT"][0])
    assert int(meta["POINTS"][0]) == width * height and len(body) == width * height * dtype.itemsize
    return np.frombuffer(body, dtype).reshape(height, width)


def read_ply(path: Path) -> np.ndarray:
    raw = path.read_bytes()
    header, _, body = raw.partition(b"end_header\n")
    lines = header.decode().splitlines()
    assert lines[1] == "format binary_little_endian 1.0"
    count = int(next(l for l in lines if l.startswith("element vertex")).split()[-1])
    types = {"float": "<f4", "uint": "<u4", "ushort": "<u2", "int": "<i4", "double": "<f8", "uchar": "u1"}
    dtype = np.dtype([(l.split()[2], types[l.split()[1]]) for l in lines if l.startswith("property")])
    return np.frombuffer(body, dtype, count=count)


@pytest.mark.parametrize("layout", ["ouster", "velodyne"])
def test_pcd_and_ply_read_back(tmp_path, room, layout):
    scan = scan_of(room, "OS1-32" if layout == "ouster" else "VLP-16")
    cloud = pointcloud_array(scan, layout)
    pcd = read_pcd(write_pcd(tmp_path / "c.pcd", cloud))
    assert pcd.shape == cloud.shape
    for name in cloud.dtype.names:  # padding dropped, every named field kept
        np.testing.assert_array_equal(pcd[name], cloud[name])
    ply = read_ply(write_ply(tmp_path / "c.ply", cloud))
    assert len(ply) == scan.hit.sum()
    returns = cloud[np.isfinite(cloud["x"])]
    for name in cloud.dtype.names:
        np.testing.assert_array_equal(ply[name], returns[name])
    mesh = trimesh.load(tmp_path / "c.ply")  # an independent PLY reader agrees on the points
    np.testing.assert_allclose(np.asarray(mesh.vertices), np.stack([returns["x"], returns["y"], returns["z"]], 1), atol=1e-6)


def test_livox_cloud_read_back(tmp_path, room):
    scan = scan_of(room, "Avia")
    msg = bag_cloud(tmp_path, scan)  # the preset: livox layout, returns only
    pts = points_of(msg)[0]
    assert msg.height == 1 and msg.width == scan.hit.sum() and msg.point_step == 26 and msg.is_dense
    assert msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec == T0
    rows, cols = np.nonzero(scan.hit)
    np.testing.assert_array_equal(pts["line"], rows)  # emitter index
    np.testing.assert_allclose(pts["timestamp"], T0 + scan.time[rows, cols] * 1e9, rtol=0, atol=1.0)
    np.testing.assert_array_equal(pts["x"], scan.xyz[rows, cols, 0])
    assert set(np.unique(pts["line"])) == set(range(6))


@pytest.mark.parametrize("layout,padding", [
    ("ouster", [(12, 16), (30, 32), (36, 48)]),  # ouster_ros::Point: PCL_ADD_POINT4D + EIGEN_ALIGN16 padding
    ("gazebo", [(12, 16), (20, 24), (26, 32)]),  # gz-msgs memory-aligned field groups
    ("livox", [(16, 17)]),  # LivoxPointXyzrtlt.tag: 0 (no tag information simulated)
])
def test_padding_and_unset_bytes_are_zero(tmp_path, room, layout, padding):
    """Byte for byte: bytes that no driver field covers (and the Livox tag) are 0 in the message data."""
    scan = scan_of(room, "OS1-32" if layout == "ouster" else "Avia" if layout == "livox" else "VLP-16")
    msg = bag_cloud(tmp_path, scan, layout=layout)
    raw = np.frombuffer(bytes(msg.data), np.uint8).reshape(-1, msg.point_step)
    assert len(raw) == msg.width * msg.height > 100
    for lo, hi in padding:
        assert not raw[:, lo:hi].any(), (layout, lo, hi)
