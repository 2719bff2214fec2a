"""`radarays lidar`: the command writes what the issue specifies, read back independently."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import trimesh
from rosbags.highlevel import AnyReader
from rosbags.typesys import Stores, get_typestore

from radarays_ros.cli import main

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "radarays_ros" / "data" / "examples" / "spherical_16x1800.yaml"


@pytest.fixture()
def wall_world(tmp_path) -> Path:
    """A mesh world: a 300 m wide wall whose near face is the plane x = 8."""
    box = trimesh.creation.box([0.2, 300, 300])
    box.apply_translation([8.1, 0, 0])
    path = tmp_path / "wall.stl"
    box.export(path)
    return path


def test_npz_of_the_example_sensor(tmp_path, wall_world):
    out = tmp_path / "scan.npz"
    assert main(["lidar", str(wall_world), "--sensor", str(EXAMPLE), "--pose", "0 0 1 0 0 0", "--out", str(out)]) == 0
    data = np.load(out)
    assert set(data.files) == {"range", "hit", "xyz", "intensity", "elevation_rad", "azimuth_rad", "time", "ring"}
    assert data["range"].shape == (16, 1800) and data["range"].dtype == np.float32
    assert data["xyz"].shape == (16, 1800, 3) and data["ring"].shape == (16,) and data["hit"].dtype == bool
    el, az = np.meshgrid(np.radians(np.arange(-15, 16, 2)), np.radians(-180 + 0.2 * np.arange(1800)), indexing="ij")
    np.testing.assert_allclose(data["elevation_rad"], el, atol=1e-6)
    np.testing.assert_allclose(np.angle(np.exp(1j * (data["azimuth_rad"] - az))), 0, atol=1e-5)
    cos = np.cos(el) * np.cos(az)
    expect = cos > 8.0 / 100.0
    np.testing.assert_array_equal(data["hit"], expect)
    np.testing.assert_allclose(data["range"][expect], 8.0 / cos[expect], rtol=2e-6)
    assert np.isnan(data["range"][~expect]).all()
    np.testing.assert_allclose(data["time"][:, 1] - data["time"][:, 0], 0.1 / 1800)
    np.testing.assert_array_equal(data["ring"], np.arange(16))


def test_set_seed_and_ground_truth(tmp_path, wall_world):
    a, b = tmp_path / "a.npz", tmp_path / "b.npz"
    args = ["lidar", str(wall_world), "--sensor", "VLP-16", "--set", "noise.sigma=0.05", "--seed", "4", "--ground-truth"]
    assert main(args + ["--out", str(a)]) == 0 and main(args + ["--out", str(b)]) == 0
    da, db = np.load(a), np.load(b)
    np.testing.assert_array_equal(da["range"], db["range"])  # same seed, same scan
    hit = da["hit"]
    noise = (da["range"] - da["clean_range"])[hit]
    assert 0.03 < noise.std() < 0.07 and {"entity", "material", "normal", "incidence_rad"} <= set(da.files)


def test_mcap_has_points_and_tf_static(tmp_path, wall_world):
    out = tmp_path / "run.mcap"
    assert main(["lidar", str(wall_world), "--sensor", "OS1-16", "--set", "columns=512", "--pose", "1 2 0.5 0 0 0.3",
                 "--out", str(out)]) == 0
    topics = {}
    with AnyReader([out], default_typestore=get_typestore(Stores.ROS2_JAZZY)) as reader:
        for conn, t, raw in reader.messages():
            topics[conn.topic] = (conn.msgtype, reader.deserialize(raw, conn.msgtype))
    assert topics["/points"][0] == "sensor_msgs/msg/PointCloud2" and topics["/tf_static"][0] == "tf2_msgs/msg/TFMessage"
    cloud = topics["/points"][1]
    assert (cloud.height, cloud.width, cloud.point_step) == (16, 512, 48)
    tf, inner = topics["/tf_static"][1].transforms  # ouster-ros: map -> os_sensor (the pose) -> os_lidar
    assert (tf.header.frame_id, tf.child_frame_id) == ("map", "os_sensor") and cloud.header.frame_id == "os_lidar"
    assert (tf.transform.translation.x, tf.transform.translation.y) == (1.0, 2.0)
    assert (inner.header.frame_id, inner.child_frame_id) == ("os_sensor", "os_lidar")
    assert inner.transform.translation.z == pytest.approx(0.03618)  # lidar_to_sensor_transform of the OS1 metadata
    assert abs(inner.transform.rotation.z) == pytest.approx(1.0)  # turned 180° about z


def test_2d_sensor_mcap_has_a_laserscan(tmp_path, wall_world):
    out = tmp_path / "scan.mcap"
    assert main(["lidar", str(wall_world), "--sensor", "URG-04LX", "--pose", "5 0 0 0 0 0", "--out", str(out)]) == 0
    with AnyReader([out], default_typestore=get_typestore(Stores.ROS2_JAZZY)) as reader:
        topics = {c.topic: c.msgtype for c in reader.connections}
        scan = next(reader.deserialize(raw, c.msgtype) for c, _, raw in reader.messages() if c.topic == "/scan")
    assert topics["/scan"] == "sensor_msgs/msg/LaserScan" and "/points" in topics
    ranges = np.asarray(scan.ranges)
    angles = scan.angle_min + scan.angle_increment * np.arange(len(ranges))
    front = np.abs(angles) < 0.5
    np.testing.assert_allclose(ranges[front], 3.0 / np.cos(angles[front]), atol=0.05)  # noise on: 1 cm class
    assert np.isposinf(ranges[np.abs(angles) > 1.7]).all()


@pytest.mark.parametrize("suffix", [".pcd", ".ply"])
def test_point_files(tmp_path, wall_world, suffix):
    out = tmp_path / f"cloud{suffix}"
    assert main(["lidar", str(wall_world), "--sensor", "VLP-16", "--out", str(out)]) == 0
    head = out.read_bytes()[:400]
    assert (b"FIELDS x y z intensity ring time" in head) if suffix == ".pcd" else head.startswith(b"ply\nformat binary_little_endian")


@pytest.mark.parametrize("args,message", [
    (["--sensor", "VLP-99"], "unknown lidar sensor 'VLP-99'"),
    (["--sensor", "VLP-16", "--set", "rate_hz=30"], "rate_hz = 30.0: out of range, allowed [5.0, 20.0]"),
    (["--sensor", "VLP-16", "--set", "rate_hz"], "expected KEY=VALUE"),
    (["--sensor", "VLP-16", "--pose", "1 2 3"], "expected six numbers"),
    (["--sensor", "OS1-64", "--set", "columns=333"], "columns = 333: not a choice, allowed one of 512, 1024, 2048"),
])
def test_errors_are_one_line_and_exit_2(tmp_path, wall_world, capsys, args, message):
    assert main(["lidar", str(wall_world), *args, "--out", str(tmp_path / "x.npz")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("radarays: error:") and message in err and err.count("\n") == 1


@pytest.mark.parametrize("case,message", [
    ("missing file", "sensor file {tmp}/absent.yaml not found"),
    ("malformed yaml", "sensor.yaml: not valid YAML (expected ',' or '}}', but got '<stream end>' at line 3, column 1)"),
    ("unknown key", "bogus_key = 3: unknown key, allowed one of "),
    ("out of range", "vertical.step_deg"),
    ("nan pose", "--pose 'nan 0 1 0 0 0' has a non-finite value"),
    ("nan value", "noise.sigma = nan: not a finite number, allowed [0, 10]"),
])
def test_bad_sensor_files_and_values_from_the_command_line(tmp_path, wall_world, capsys, case, message):
    """Each error is one line on stderr naming the file/key (and the allowed values), exit status 2."""
    spec = EXAMPLE.read_text()
    sensor = tmp_path / "sensor.yaml"
    extra = []
    if case == "missing file":
        sensor = tmp_path / "absent.yaml"
    elif case == "malformed yaml":
        sensor.write_text("type: spherical\nvertical: {min_deg: -15, max_deg: 15\n")
    elif case == "unknown key":
        sensor.write_text(spec + "bogus_key: 3\n")
    elif case == "out of range":
        sensor.write_text(spec.replace("step_deg: 2}", "step_deg: -2}"))
    elif case == "nan pose":
        sensor.write_text(spec)
        extra = ["--pose", "nan 0 1 0 0 0"]
    else:
        sensor.write_text(spec)
        extra = ["--set", "noise.sigma=.nan"]
    code = main(["lidar", str(wall_world), "--sensor", str(sensor), *extra, "--out", str(tmp_path / "x.npz")])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("radarays: error:") and err.count("\n") == 1, err
    assert message.format(tmp=tmp_path) in err, err
    assert not (tmp_path / "x.npz").exists()


def test_unknown_output_type(tmp_path, wall_world, capsys):
    assert main(["lidar", str(wall_world), "--sensor", "VLP-16", "--out", str(tmp_path / "x.las")]) == 2
    assert "allowed: .npz, .pcd, .ply, .png, .mcap" in capsys.readouterr().err


def test_trajectory_csv_gives_motion_distortion(tmp_path, wall_world):
    """Driving toward the wall at 10 m/s: each column measures from the pose at its firing time."""
    traj = tmp_path / "traj.csv"
    traj.write_text("t,x,y,z,roll,pitch,yaw\n0,0,0,0,0,0,0\n1,10,0,0,0,0,0\n")
    out = tmp_path / "moving.npz"
    assert main(["lidar", str(wall_world), "--sensor", str(EXAMPLE), "--trajectory", str(traj), "--scans", "2",
                 "--out", str(out)]) == 0
    data = np.load(out)
    assert data["range"].shape == (2, 16, 1800) and data["ring"].shape == (16,)
    t = data["time"] + np.array([0.0, 0.1])[:, None, None]  # second scan starts one period later
    cos = np.cos(data["elevation_rad"]) * np.cos(data["azimuth_rad"])
    hit = data["hit"]
    np.testing.assert_allclose(data["range"][hit], ((8.0 - 10.0 * t) / cos)[hit], rtol=1e-5)


def test_materials_file_sets_the_wall_reflectivity(tmp_path, wall_world):
    """--materials: a user library merged over the shipped one; its rule gives the wall ρ = 0.9, so the
    Velodyne intensity of each return is round(100·0.9·cos θ) (Lambert), and an absorbent wall returns nothing."""
    lib = tmp_path / "mats.yaml"
    lib.write_text("materials:\n  white_board: {lidar: {class: general, reflectivity: 0.9}}\n"
                   "assign:\n  - {entity: '*', material: white_board}\n")
    out = tmp_path / "white.npz"
    assert main(["lidar", str(wall_world), "--sensor", "VLP-16", "--set", "noise={}", "--set", "surface={}",
                 "--materials", str(lib), "--ground-truth", "--out", str(out)]) == 0
    data = np.load(out)
    hit = data["hit"]
    assert hit.sum() > 1000
    cos = np.cos(data["elevation_rad"]) * np.cos(data["azimuth_rad"])
    np.testing.assert_allclose(data["intensity"][hit], np.round(90.0 * cos[hit]), atol=1.0)
    absorbent = tmp_path / "water.yaml"
    absorbent.write_text("assign:\n  - {entity: '*', material: water}\n")
    assert main(["lidar", str(wall_world), "--sensor", "VLP-16", "--materials", str(absorbent),
                 "--out", str(tmp_path / "water.npz")]) == 0
    assert not np.load(tmp_path / "water.npz")["hit"].any()


def test_png_top_view_on_a_fixed_scale(tmp_path, wall_world):
    """The wall (x = 8 m, ahead) shows in the upper part of the picture only: +x is up. With a fixed reach
    the same wall lands on the same pixels whatever else the frame holds."""
    from PIL import Image

    from radarays_ros.io.lidar_files import nice_grid_step

    outs = []
    for name, pose in (("a.png", "0 0 1 0 0 0"), ("b.png", "0 0 2 0 0 0")):
        out = tmp_path / name
        assert main(["lidar", str(wall_world), "--sensor", str(EXAMPLE), "--pose", pose, "--scans", "2",
                     "--view-reach", "10", "--out", str(out)]) == 0
        outs.append(np.asarray(Image.open(out).convert("RGB")).astype(int))
    img = outs[0]
    assert img.shape[0] == 800
    coloured = (np.abs(img - img[..., :1]).sum(axis=2) > 60)  # viridis dots and the red sensor mark, not grey/black
    rows = np.flatnonzero(coloured.any(axis=1))
    assert rows.min() < 0.3 * img.shape[0]  # the wall: near the top
    centre_rows = np.flatnonzero(coloured[:, :img.shape[1] * 3 // 4].any(axis=1))
    assert centre_rows.max() < 0.6 * img.shape[0]  # nothing behind the sensor
    wall_rows = lambda im: set(np.flatnonzero((np.abs(im - im[..., :1]).sum(axis=2) > 60)[: img.shape[0] // 3].any(axis=1)))
    assert wall_rows(outs[0]) == wall_rows(outs[1])  # same scale: the wall on the same rows
    assert [nice_grid_step(r) for r in (10, 47, 120, 3)] == [2.0, 10.0, 20.0, 0.5]


def test_mid360_bag_is_the_livox_driver2_layout_unless_told(tmp_path, wall_world):
    """livox_ros_driver2 publishes only the returns (height 1, packed LivoxPointXyzrtlt): the command's bag
    follows the preset's driver; --organized asks for the grid of the pattern anyway."""
    clouds = {}
    for flag in ((), ("--organized",)):
        out = tmp_path / f"mid360{len(flag)}.mcap"
        assert main(["lidar", str(wall_world), "--sensor", "Mid-360", "--pose", "0 0 1 0 0 0", "--set", "noise.sigma=0",
                     "--out", str(out), *flag]) == 0
        with AnyReader([out]) as reader:
            (conn,) = [c for c in reader.connections if c.topic == "/points"]
            clouds[flag] = [reader.deserialize(raw, conn.msgtype) for _, _, raw in reader.messages(connections=[conn])][-1]
    cloud = clouds[()]
    assert cloud.height == 1 and cloud.is_dense and cloud.point_step == 26
    assert [(f.name, f.offset) for f in cloud.fields] == [("x", 0), ("y", 4), ("z", 8), ("intensity", 12), ("tag", 16),
                                                          ("line", 17), ("timestamp", 18)]
    x = np.frombuffer(bytes(cloud.data), np.dtype({"names": ["x"], "formats": ["<f4"], "offsets": [0], "itemsize": 26}))["x"]
    assert np.all(np.isfinite(x)) and np.allclose(x, 8.0, atol=0.02)  # every point is a return on the wall
    organized = clouds[("--organized",)]
    assert organized.height > 1 and not organized.is_dense and organized.width * organized.height > cloud.width


def test_planar_scanner_top_view_is_visible(tmp_path, wall_world):
    """A 2-D scanner's returns all lie at one height: they must still show (not the colour map's darkest end
    on the black background)."""
    from PIL import Image

    out = tmp_path / "scan.png"
    assert main(["lidar", str(wall_world), "--sensor", "UTM-30LX", "--pose", "0 0 1 0 0 0", "--set", "noise.sigma=0",
                 "--view-reach", "10", "--out", str(out)]) == 0
    img = np.asarray(Image.open(out).convert("RGB")).astype(int)
    plot = img[40:-40, 40:img.shape[1] * 3 // 4]  # the axes, without the colour bar
    # viridis above its darkest end has green > 80 (the red sensor mark has none), and is not grey
    shown = (plot[..., 1] > 80) & (np.abs(plot - plot[..., :1]).sum(axis=2) > 60)
    assert shown.sum() > 20  # the wall's returns
