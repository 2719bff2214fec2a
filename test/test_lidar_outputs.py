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
from radarays_ros.cli import main as main_cli
from radarays_ros.io.bag import BagWriter
from radarays_ros.io.lidar_clouds import laserscan_msg, pointcloud_array
from radarays_ros.io.lidar_files import write_pcd, write_ply
from radarays_ros.tracing import make_backend
from radarays_ros.world.mesh import TriMesh
from radarays_ros.world.scene import Scene
from radarays_ros.world.transforms import pose_to_matrix
from support.lidar_bags import T0, bag_cloud, points_of, read_bag, room  # noqa: F401 (room is a fixture)

from support.frames_paths import frames, lidar_on  # noqa: F401  (frames: the host/device fixture)

QUIET = {"noise": {}, "surface": {}}
# field -> (offset, PointField datatype) of the real drivers, and their point_step
DRIVER_FIELDS = {
    "velodyne": ({"x": (0, 7), "y": (4, 7), "z": (8, 7), "intensity": (12, 7), "ring": (16, 4), "time": (18, 7)}, 22),
    "ouster": ({"x": (0, 7), "y": (4, 7), "z": (8, 7), "intensity": (16, 7), "t": (20, 6), "reflectivity": (24, 4),
                "ring": (26, 4), "ambient": (28, 4), "range": (32, 6)}, 48),
    # ouster-ros point_type native / xyz / xyzi / xyzir (sensor_point_types.h, common_point_types.h)
    "ouster_native": ({"x": (0, 7), "y": (4, 7), "z": (8, 7), "t": (16, 6), "ring": (20, 4), "range": (24, 6),
                       "signal": (28, 4), "reflectivity": (30, 4), "near_ir": (32, 4)}, 48),
    "ouster_xyz": ({"x": (0, 7), "y": (4, 7), "z": (8, 7)}, 16),
    "ouster_xyzi": ({"x": (0, 7), "y": (4, 7), "z": (8, 7), "intensity": (12, 7)}, 16),
    "ouster_xyzir": ({"x": (0, 7), "y": (4, 7), "z": (8, 7), "intensity": (16, 7), "ring": (20, 4)}, 32),
    # gz-sensors GpuLidarSensor: InitPointCloudPacked(..., memoryAligned=true, {xyz, intensity, ring})
    "gazebo": ({"x": (0, 7), "y": (4, 7), "z": (8, 7), "intensity": (16, 7), "ring": (24, 4)}, 32),
    "gazebo_cpu": ({"x": (0, 7), "y": (4, 7), "z": (8, 7), "intensity": (12, 7), "ring": (16, 4)}, 18),
    # livox_ros_driver2 xfer_format 0: packed LivoxPointXyzrtlt
    "livox": ({"x": (0, 7), "y": (4, 7), "z": (8, 7), "intensity": (12, 7), "tag": (16, 2), "line": (17, 2),
               "timestamp": (18, 8)}, 26),
    # livox_ros_driver (ROS 1) / livox_ros2_driver xfer_format 0: packed LivoxPointXyzrtl, no time
    "livox_xyzrtl": ({"x": (0, 7), "y": (4, 7), "z": (8, 7), "intensity": (12, 7), "tag": (16, 2), "line": (17, 2)}, 18),
    "xyzi": ({"x": (0, 7), "y": (4, 7), "z": (8, 7), "intensity": (12, 7)}, 16),
}


def scan_of(frames, room, name, overrides=None):
    """A frame of `name` in the room on a frame path (frames_paths.py: host, or device on Warp's CPU device)."""
    scene, backend = room
    return lidar_on(frames, load_sensor(name, {**QUIET, **(overrides or {})}), scene, backend).simulate(np.eye(4), T0)


@pytest.mark.parametrize("layout", list(DRIVER_FIELDS))
def test_field_offsets_equal_the_drivers(tmp_path, room, layout, frames):
    msg = bag_cloud(tmp_path, scan_of(frames, room, "VLP-16"), layout=layout)
    fields, step = DRIVER_FIELDS[layout]
    assert {f.name: (f.offset, f.datatype) for f in msg.fields} == fields
    assert msg.point_step == step and all(f.count == 1 for f in msg.fields)


def test_velodyne_cloud_read_back_field_by_field(tmp_path, room, frames):
    scan = scan_of(frames, room, "VLP-16")
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


def test_ouster_cloud_read_back_field_by_field(tmp_path, room, frames):
    scan = scan_of(frames, room, "OS1-64", {"columns": 512})
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


def test_gazebo_and_ground_truth_fields(tmp_path, room, frames):
    scan = scan_of(frames, room, str(Path(__file__).resolve().parents[1] / "radarays_ros" / "data" / "examples" / "spherical_16x1800.yaml"))
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


def test_unorganized_clouds_hold_only_returns(tmp_path, room, frames):
    scan = scan_of(frames, room, "VLP-16")
    msg = bag_cloud(tmp_path, scan, organized=False)
    pts = points_of(msg)
    assert msg.height == 1 and msg.width == scan.hit.sum() and msg.is_dense
    assert np.isfinite(pts["x"]).all()


def test_laserscan_from_a_2d_scanner(tmp_path, room, frames):
    scan = scan_of(frames, room, "URG-04LX")
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
def test_pcd_and_ply_read_back(tmp_path, room, layout, frames):
    scan = scan_of(frames, room, "OS1-32" if layout == "ouster" else "VLP-16")
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


def test_livox_cloud_read_back(tmp_path, room, frames):
    scan = scan_of(frames, room, "Avia")
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
def test_padding_and_unset_bytes_are_zero(tmp_path, room, layout, padding, frames):
    """Byte for byte: bytes that no driver field covers (and the Livox tag) are 0 in the message data."""
    scan = scan_of(frames, room, "OS1-32" if layout == "ouster" else "Avia" if layout == "livox" else "VLP-16")
    msg = bag_cloud(tmp_path, scan, layout=layout)
    raw = np.frombuffer(bytes(msg.data), np.uint8).reshape(-1, msg.point_step)
    assert len(raw) == msg.width * msg.height > 100
    for lo, hi in padding:
        assert not raw[:, lo:hi].any(), (layout, lo, hi)


def test_velodyne_organized_misses_have_nan_intensity_and_the_cloud_is_not_dense(tmp_path, room):
    """velodyne_pointcloud's organized cloud: a miss is x, y, z, intensity NaN (ring and time kept), and
    the cloud says is_dense false — also when every point returned."""
    from radarays_ros.io.lidar_clouds import FrameCloud

    scene, backend = room
    for sink in (None, FrameCloud.of):  # built afterwards, and written with the frame
        scan = LidarSimulator(load_sensor("VLP-16", QUIET), scene, backend, sink=sink).simulate(np.eye(4), T0)
        pts = points_of(bag_cloud(tmp_path, scan)).T  # (lasers, firings) like the scan
        miss = ~scan.hit
        assert miss.any() and np.isnan(pts["intensity"][miss]).all() and np.isnan(pts["x"][miss]).all()
        np.testing.assert_array_equal(pts["intensity"][~miss], scan.intensity[~miss])
        assert (scan.intensity[miss] == 0).all()  # the scan keeps its own convention (0 = no return)
        np.testing.assert_array_equal(pts["ring"][miss], np.nonzero(miss)[0])
    closed = Scene()  # a closed box: every ray returns
    shell = trimesh.creation.box([8, 8, 6])
    closed.add_entity("shell", TriMesh(shell.vertices, shell.faces[:, ::-1]), np.eye(4), material="concrete")
    full = LidarSimulator(load_sensor("VLP-16", QUIET), closed, make_backend("embree", closed)).simulate(np.eye(4), T0)
    assert full.hit.all()
    assert not bag_cloud(tmp_path, full).is_dense
    assert bag_cloud(tmp_path, full, organized=False).is_dense


def test_gazebo_misses_are_infinite_points_along_the_ray(tmp_path, room, frames):
    """gz-sensors writes a miss as range +inf times the ray's direction cosines: ±inf per axis."""
    scan = scan_of(frames, room, str(Path(__file__).resolve().parents[1] / "radarays_ros" / "data" / "examples" / "spherical_16x1800.yaml"))
    for layout in ("gazebo", "gazebo_cpu"):
        pts = points_of(bag_cloud(tmp_path, scan, layout=layout))
        miss = ~scan.hit
        assert miss.any()
        x = pts["x"][miss]
        ray_x = np.cos(scan.elevation_rad[miss]) * np.cos(scan.azimuth_rad[miss])
        assert np.all(np.isinf(x[np.abs(ray_x) > 1e-6]))
        np.testing.assert_array_equal(np.sign(x[np.abs(ray_x) > 1e-6]), np.sign(ray_x[np.abs(ray_x) > 1e-6]))
        assert np.all(np.isposinf(pts["z"][miss & (scan.elevation_rad > 0)]))
        np.testing.assert_array_equal(pts["x"][scan.hit], scan.xyz[..., 0][scan.hit])


@pytest.fixture(scope="module")
def plate_room():
    """A plate at 3 m in front of the room's front wall (3 m): a depth step for two echoes."""
    scene = Scene()
    for name, size, xyz in (("front", [0.2, 40, 40], [6.1, 0, 0]), ("plate", [0.02, 1.0, 0.6], [3.01, 0, 0])):
        box = trimesh.creation.box(size)
        scene.add_entity(name, TriMesh(box.vertices, box.faces), pose_to_matrix(*xyz), material="concrete")
    return scene, make_backend("embree", scene, threads=2)


DUAL = {**QUIET, "beam": {"divergence_mrad": 20.0, "sub_rays": 8, "return_mode": "dual"}}


def test_velodyne_dual_return_doubles_the_firings(tmp_path, plate_room):
    scene, backend = plate_room
    scan = LidarSimulator(load_sensor("VLP-16", DUAL), scene, backend).simulate(np.eye(4), T0)
    assert scan.second is not None and scan.second.hit.sum() > 10
    msg = bag_cloud(tmp_path, scan)
    pts = points_of(msg)
    assert (msg.height, msg.width) == (2 * scan.config.cols, 16) and not msg.is_dense
    even, odd = pts[0::2].T, pts[1::2].T  # (lasers, firings): firing k's even block, then its odd block
    two = scan.second.hit
    farther = two & (scan.second.range > scan.range)  # the second echo is the last: the even block's
    assert farther.any()
    one = scan.hit & ~two
    np.testing.assert_array_equal(even["x"][one], scan.xyz[..., 0][one])  # a single echo: the even block, the odd NaN
    assert np.all(np.isnan(odd["x"][one]))
    np.testing.assert_array_equal(even["x"][farther], scan.second.xyz[..., 0][farther])  # last return first
    np.testing.assert_array_equal(odd["x"][farther], scan.xyz[..., 0][farther])  # then the strongest
    near = two & ~farther  # the last is the strongest: the odd block holds the second strongest
    np.testing.assert_array_equal(even["x"][near], scan.xyz[..., 0][near])
    np.testing.assert_array_equal(odd["x"][near], scan.second.xyz[..., 0][near])
    np.testing.assert_array_equal(np.isfinite(odd["x"]), two)
    np.testing.assert_array_equal(odd["time"], even["time"])  # the same firing
    flat = points_of(bag_cloud(tmp_path, scan, organized=False))[0]
    assert len(flat) == scan.hit.sum() + two.sum()
    from radarays_ros.io.lidar_clouds import FrameCloud

    in_place = LidarSimulator(load_sensor("VLP-16", DUAL), scene, backend, sink=FrameCloud.of).simulate(np.eye(4), T0)
    assert in_place.cloud is not None  # the first return's cloud written with the frame, the same bytes
    assert pointcloud_array(in_place).tobytes() == pointcloud_array(scan).tobytes()


def test_ouster_dual_outputs_npz_channels_and_second_cloud(tmp_path):
    from radarays_ros.cli import main

    world = tmp_path / "plate.stl"
    _export(world)
    sets = ["--set", "beam.divergence_mrad=20", "--set", "beam.sub_rays=8", "--set", "beam.return_mode=dual",
            "--set", "columns=512"]
    npz, bag = tmp_path / "os.npz", tmp_path / "os.mcap"
    for out in (npz, bag):
        assert main(["lidar", str(world), "--sensor", "OS1-32", *sets, "--out", str(out)]) == 0
    data = np.load(npz)
    for name, dtype in (("reflectivity", np.uint8), ("signal", np.uint16), ("near_ir", np.uint16),
                        ("reflectivity2", np.uint8), ("signal2", np.uint16), ("range2", np.float32)):
        assert data[name].dtype == dtype and data[name].shape == (32, 512), name
    two = data["hit2"]
    assert two.sum() > 5 and (data["range2"][two] > data["range"][two] - 3.5).all()
    assert (data["signal2"][~two] == 0).all() and (data["reflectivity2"][two] > 0).all()
    clouds = read_bag(bag)
    (_, second, _), = clouds["/points2"]
    pts = points_of(second)
    np.testing.assert_array_equal(pts["range"][two], np.round(data["range2"][two] * 1000).astype(np.uint32))
    np.testing.assert_array_equal(pts["reflectivity"], data["reflectivity2"])


def _export(path):
    """plate_room as one mesh file (a world the command line loads)."""
    meshes = []
    for size, x in (([0.2, 40, 40], 6.1), ([0.02, 1.0, 0.6], 3.01)):
        box = trimesh.creation.box(size)
        box.apply_translation([x, 0, 0])
        meshes.append(box)
    trimesh.util.concatenate(meshes).export(path)


def test_ouster_point_types_read_back(tmp_path, room, frames):
    scan = scan_of(frames, room, "OS1-32", {"columns": 512})
    hit = scan.hit
    native = points_of(bag_cloud(tmp_path, scan, layout="ouster_native"))
    assert native.shape == (32, 512)
    np.testing.assert_array_equal(native["signal"], scan.fields["ouster_signal"])
    np.testing.assert_array_equal(native["near_ir"], scan.fields["ouster_ambient"])
    np.testing.assert_array_equal(native["reflectivity"], scan.fields["ouster_reflectivity"])
    np.testing.assert_array_equal(native["range"][hit], np.round(scan.range[hit] * 1000).astype(np.uint32))
    np.testing.assert_array_equal(native["ring"], np.repeat(np.arange(32)[:, None], 512, 1))
    for layout in ("ouster_xyzi", "ouster_xyzir"):
        pts = points_of(bag_cloud(tmp_path, scan, layout=layout))
        np.testing.assert_array_equal(pts["intensity"], scan.fields["ouster_signal"].astype(np.float32))
        np.testing.assert_array_equal(pts["x"][hit], scan.xyz[..., 0][hit])
    raw = np.frombuffer(bytes(bag_cloud(tmp_path, scan, layout="ouster_native").data), np.uint8).reshape(-1, 48)
    for lo, hi in ((12, 16), (22, 24), (34, 48)):
        assert not raw[:, lo:hi].any()


@pytest.mark.parametrize("package", ["livox_ros_driver", "livox_ros_driver2"])
def test_livox_custom_msg_read_back_with_the_drivers_definitions(tmp_path, package):
    """livox_ros_driver/CustomMsg decoded by rosbags from the driver's own .msg text (registered here, apart
    from the writer's): one point per return in firing order, offset_time from the first point."""
    from rosbags.typesys import get_types_from_msg

    world = tmp_path / "plate.stl"
    _export(world)
    out = tmp_path / "livox.mcap"
    assert main_cli(["lidar", str(world), "--sensor", "Avia", "--livox-custom", package, "--out", str(out)]) == 0
    store = get_typestore(Stores.ROS2_JAZZY)
    store.register({**get_types_from_msg("uint32 offset_time\nfloat32 x\nfloat32 y\nfloat32 z\nuint8 reflectivity\n"
                                         "uint8 tag\nuint8 line\n", f"{package}/msg/CustomPoint"),
                    **get_types_from_msg("std_msgs/Header header\nuint64 timebase\nuint32 point_num\nuint8 lidar_id\n"
                                         f"uint8[3] rsvd\n{package}/CustomPoint[] points\n",
                                         f"{package}/msg/CustomMsg")})
    with AnyReader([out], default_typestore=store) as reader:
        got = {c.topic: reader.deserialize(raw, c.msgtype) for c, _, raw in reader.messages()}
        assert {c.msgtype for c in reader.connections if c.topic == "/livox/lidar"} == {f"{package}/msg/CustomMsg"}
    custom, cloud = got["/livox/lidar"], points_of(got["/points"]).reshape(-1)
    cloud = cloud[np.isfinite(cloud["x"])]
    assert custom.point_num == len(custom.points) == cloud.shape[0] > 100
    offsets = np.array([p.offset_time for p in custom.points], np.int64)
    assert offsets[0] == 0 and np.all(np.diff(offsets) >= 0)
    stamp = custom.header.stamp.sec * 10**9 + custom.header.stamp.nanosec
    assert stamp == custom.timebase
    np.testing.assert_allclose(np.sort(custom.timebase + offsets), np.sort(cloud["timestamp"]), atol=1.0)
    xs = np.sort([p.x for p in custom.points])
    np.testing.assert_array_equal(xs, np.sort(cloud["x"]))
    assert set(p.line for p in custom.points) <= set(range(6))
