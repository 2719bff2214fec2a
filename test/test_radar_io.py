"""Radar outputs decoded by independent readers (rosbags AnyReader, Pillow) and the `radarays radar` command."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import trimesh
from PIL import Image as PILImage
from rosbags.highlevel import AnyReader
from rosbags.typesys import Stores, get_typestore

from radarays_ros.cli import main
from radarays_ros.io import radar_image as rio
from radarays_ros.io.bag import BagWriter
from radarays_ros.radar import RadarSimulator
from support.cli import run_main
from support.radar_scenes import config, scene_with, wall_x

ROOT = Path(__file__).resolve().parents[1]
EYE = np.eye(4)


@pytest.fixture(scope="module")
def wall_image():
    cfg = config(azimuth={"count": 16, "step_deg": -22.5}, kernel={"type": "triangular", "width": 10, "mode": 0.3})
    return RadarSimulator(cfg, scene_with(wall_x(4.02, span=1.0))).simulate(EYE, t0_ns=1_000_000_000)


def read_bag(path: Path) -> dict:
    out = {}
    with AnyReader([path], default_typestore=get_typestore(Stores.ROS2_JAZZY)) as reader:
        for conn, t, raw in reader.messages():
            out[conn.topic] = (conn.msgtype, reader.deserialize(raw, conn.msgtype), t)
    return out


def image_from_msg(msg) -> np.ndarray:
    dtype = {"mono8": np.uint8, "32FC1": np.float32}[msg.encoding]
    assert msg.step == msg.width * np.dtype(dtype).itemsize and not msg.is_bigendian
    return np.frombuffer(bytes(msg.data), dtype).reshape(msg.height, msg.width)


@pytest.mark.parametrize("layout", ["range_rows", "azimuth_rows"])
@pytest.mark.parametrize("encoding", ["mono8", "32FC1"])
def test_image_message_layouts_decoded_from_a_bag(tmp_path, wall_image, layout, encoding):
    path = tmp_path / "img.mcap"
    with BagWriter(path) as bag:
        bag.write("/radar/image", rio.radar_image_msg(wall_image, 5, "radar", layout, encoding), 5)
    msgtype, msg, _ = read_bag(path)["/radar/image"]
    assert msgtype == "sensor_msgs/msg/Image" and msg.encoding == encoding and msg.header.frame_id == "radar"
    data = image_from_msg(msg)
    expected = wall_image.image if encoding == "mono8" else wall_image.image_f32
    np.testing.assert_array_equal(data, expected.T if layout == "range_rows" else expected)
    if layout == "range_rows":
        assert (msg.height, msg.width) == (200, 16) and int(np.argmax(data[:, 0])) == 80  # row = range bin


def test_radar_points_find_the_wall(wall_image):
    pts = rio.radar_points(wall_image, k=3)
    assert len(pts) >= 1 and pts.dtype.names == ("x", "y", "z", "intensity")
    best = pts[np.argmax(pts["intensity"])]
    assert best["x"] == pytest.approx(4.025, abs=0.001) and abs(best["y"]) < 1e-6
    assert np.all(np.hypot(pts["x"], pts["y"]) > 3.9)  # nothing else in the scene
    msg = rio.radar_points_msg(wall_image, 0, "radar", k=3)
    assert msg.width == len(pts) and [f.name for f in msg.fields] == ["x", "y", "z", "intensity"]


def test_oxford_polar_png_decodes_like_the_robotcar_sdk(tmp_path, wall_image):
    path = rio.oxford_polar_png(wall_image, tmp_path / "1000000.png")
    raw = np.array(PILImage.open(path))
    assert raw.dtype == np.uint8 and raw.shape == (16, 11 + 200)
    stamps = raw[:, :8].copy().view(np.int64).ravel()
    angles = raw[:, 8:10].copy().view(np.uint16).ravel() / 5600.0 * 2 * np.pi
    np.testing.assert_array_equal(stamps, wall_image.azimuth_time_ns // 1000)
    assert stamps[0] == 1_000_000 and np.all(raw[:, 10] == 255)
    np.testing.assert_allclose(angles, np.arange(16) * 2 * np.pi / 16, atol=2 * np.pi / 5600)  # clockwise sweep
    np.testing.assert_array_equal(raw[:, 11:], wall_image.image)


def test_cartesian_and_polar_pictures(tmp_path, wall_image):
    rgb = rio.cartesian_image(wall_image, m_per_px=0.05, max_range=10.0, rings_m=0)
    assert rgb.dtype == np.uint8 and rgb.shape == (401, 401, 3)
    centre = 200
    wall_px = rgb[centre - int(4.03 / 0.05), centre]  # x = 4.03 m straight ahead (up)
    empty_px = rgb[centre + int(4.03 / 0.05), centre]  # behind: nothing
    assert wall_px.tolist() != empty_px.tolist() and wall_px.sum() > empty_px.sum()
    ringed = rio.cartesian_image(wall_image, m_per_px=0.05, max_range=10.0, rings_m=5.0)
    assert ringed[centre - 100, centre].tolist() == [255, 255, 255]  # ring at 5 m
    polar = rio.polar_png(wall_image, tmp_path / "p.png")
    assert polar.shape == (200, 16) and np.array_equal(np.array(PILImage.open(tmp_path / "p.png")), polar)


@pytest.fixture(scope="module")
def room_obj(tmp_path_factory):
    """An OBJ with objects `room` (10 x 8 x 3 m, seen from inside) and `pillar` (0.4 m box at x = 2)."""
    room = trimesh.creation.box([10, 8, 3])
    room.invert()
    pillar = trimesh.creation.box([0.4, 0.4, 3])
    pillar.apply_translation([2, 0, 0])
    lines, offset = [], 1
    for name, mesh in (("room", room), ("pillar", pillar)):
        lines.append(f"o {name}")
        lines += [f"v {x:.6f} {y:.6f} {z:.6f}" for x, y, z in mesh.vertices]
        lines += [f"f {a + offset} {b + offset} {c + offset}" for a, b, c in mesh.faces]
        offset += len(mesh.vertices)
    path = tmp_path_factory.mktemp("world") / "room.obj"
    path.write_text("\n".join(lines) + "\n")
    return path


def run_cli(room_obj, out, *extra):
    return main(["radar", str(room_obj), "--pose", "0 0 0 0 0 0",
                 "--materials", str(ROOT / "radarays_ros/data/examples/materials_room.yaml"),
                 "--config", str(ROOT / "radarays_ros/data/examples/radarays_compat.yaml"), "--out", str(out), *extra])


def test_cli_npz_with_the_compat_example(tmp_path, room_obj):
    out = tmp_path / "scan.npz"
    assert run_cli(room_obj, out, "--set", "beam.samples=20") == 0
    d = np.load(out)
    assert d["image_f32"].dtype == np.float32 and d["image_f32"].shape == (400, 400)
    assert d["image"].dtype == np.uint8 and d["image"].shape == (400, 400)
    assert d["azimuth_rad"].shape == (400,) and d["range_m"].shape == (400,)
    assert {"image_f32", "image", "azimuth_rad", "range_m"} <= set(d.files)
    np.testing.assert_array_equal(d["image"], np.clip(np.rint(d["image_f32"]), 0, 255).astype(np.uint8))
    np.testing.assert_allclose(np.diff(d["azimuth_rad"]), -math.radians(0.9))  # clockwise, 400 x 0.9 deg
    np.testing.assert_allclose(d["azimuth_rad"][:3], [0.0, -math.radians(0.9), -math.radians(1.8)])
    np.testing.assert_allclose(d["range_m"][:3], [0.0, 0.05, 0.1])
    assert int(np.argmax(d["image_f32"][0])) == 36  # metal pillar face at 1.8 m
    assert int(np.argmax(d["image_f32"][100])) == 80  # -90 deg: the stone wall at y = -4
    assert d["image_f32"][0].max() == pytest.approx(60.0)  # energy_max * signal_max
    again = tmp_path / "again.npz"
    run_cli(room_obj, again, "--set", "beam.samples=20", "--set", "returns.keep=true")
    e = np.load(again)
    np.testing.assert_array_equal(e["image_f32"], d["image_f32"])  # seeded
    # materials by OBJ object: the pillar is metal (R = 1, BRDF 1 + cos^2000), the room wall_stone
    # (R = ((0.001 - 0.3) / 0.301)^2, BRDF 0.6 + 0.3 cos^30)
    first = e["returns"][e["returns"]["bounce"] == 0]
    pillar = first[(first["azimuth"] == 0)]
    wall = first[(first["azimuth"] == 100)]
    assert np.all(np.abs(pillar["range"] - 1.8) < 0.01) and np.all((pillar["energy"] >= 1.0) & (pillar["energy"] <= 2.0))
    r_stone = ((0.001 - 0.3) / 0.301) ** 2
    assert np.all(np.abs(wall["range"] - 4.0) < 0.05)
    assert np.all((wall["energy"] >= 0.6 * r_stone) & (wall["energy"] <= 0.9 * r_stone + 1e-6))
    seeded = tmp_path / "seed3.npz"
    run_cli(room_obj, seeded, "--set", "beam.samples=20", "--seed", "3")
    assert not np.array_equal(np.load(seeded)["image_f32"], d["image_f32"])


def test_cli_view_reach_zooms_the_cartesian_pictures(tmp_path, room_obj):
    """The stone wall 4 m to the right (y = -4): 80 px right of the centre in the default 800 px picture of the
    20 m range (0.05 m/px), 320 px with --view-reach 5 (0.0125 m/px); the figure is zoomed alike."""
    def wall_column(path):
        rgb = np.asarray(PILImage.open(path), float)
        centre = rgb.shape[0] // 2
        row = rgb[centre, centre + 20:]  # right of the sensor, past the near clutter
        row = np.where((row == 255).all(axis=1), 0.0, row.sum(axis=1))  # not the white range rings
        return centre, centre + 20 + int(np.argmax(row))

    assert run_cli(room_obj, tmp_path / "whole.png", "--set", "beam.samples=5") == 0
    assert run_cli(room_obj, tmp_path / "zoom.png", "--set", "beam.samples=5", "--view-reach", "5") == 0
    centre, column = wall_column(tmp_path / "whole_cartesian.png")
    assert abs((column - centre) - 80) <= 2
    centre, column = wall_column(tmp_path / "zoom_cartesian.png")
    assert abs((column - centre) - 320) <= 4
    whole, zoom = (np.asarray(PILImage.open(tmp_path / f"{n}_figure.png")) for n in ("whole", "zoom"))
    assert whole.shape != zoom.shape or not np.array_equal(whole, zoom)  # its axes span 5 m, not 20 m
    for bad, match in (("0", "--view-reach = 0"), ("nan", "--view-reach")):
        done = run_main(main, ["radar", room_obj, "--view-reach", bad, "--out", tmp_path / "x.png"])
        assert done.returncode == 2 and match in done.stderr, done.stderr
    done = run_main(main, ["radar", room_obj, "--view-reach", "5", "--out", tmp_path / "x.npz"])
    assert done.returncode == 2 and "only for a .png output" in done.stderr


def test_cli_png_and_mcap(tmp_path, room_obj):
    assert run_cli(room_obj, tmp_path / "scan.png", "--set", "beam.samples=5") == 0
    polar = np.array(PILImage.open(tmp_path / "scan.png"))
    assert polar.shape == (400, 400) and polar.dtype == np.uint8
    assert np.array(PILImage.open(tmp_path / "scan_cartesian.png")).shape[2] == 3
    out = tmp_path / "scan.mcap"
    assert run_cli(room_obj, out, "--set", "beam.samples=5", "--encoding", "32FC1", "--t-ns", "7") == 0
    bag = read_bag(out)
    assert set(bag) == {"/radar/image", "/radar/points", "/tf_static"}
    _, img, t = bag["/radar/image"]
    data = image_from_msg(img)
    assert img.encoding == "32FC1" and data.shape == (400, 400) and t == 7
    assert int(np.argmax(data[:, 0])) == 36  # rows = range bins, column 0 = azimuth 0
    assert bag["/radar/points"][1].width > 0
    tf = bag["/tf_static"][1].transforms[0]
    assert (tf.header.frame_id, tf.child_frame_id) == ("map", "radar")


def test_cli_errors_are_one_line(tmp_path, room_obj, capsys):
    assert run_cli(room_obj, tmp_path / "scan.npz", "--set", "beam.width_deg=-3") == 2
    err = capsys.readouterr().err
    assert err.startswith("radarays: error:") and "beam.width_deg" in err and "(0.0, 180.0]" in err
    assert run_cli(room_obj, tmp_path / "scan.txt") == 2
    assert ".npz, .png, .mcap" in capsys.readouterr().err


def _bad_inputs(tmp_path: Path, room_obj: Path) -> dict:
    """name -> (radar argv, what the one-line message must contain)."""
    bad_yaml = tmp_path / "bad_radar.yaml"
    bad_yaml.write_text("beam: [1, 2\n")
    bad_key = tmp_path / "bad_key.yaml"
    bad_key.write_text("materials:\n  wall_stone:\n    radar: {velocity: 0.001, brdf: radarays, A: 0.6, B: 0.3, C: 30, D: 1}\n"
                       "assign:\n  - {object: room, material: wall_stone}\n")
    bad_lib_yaml = tmp_path / "bad_lib.yaml"
    bad_lib_yaml.write_text("materials: [1\n")
    empty = tmp_path / "empty.obj"
    empty.write_text("# nothing\n")
    out = str(tmp_path / "scan.npz")
    world = str(room_obj)
    return {
        "missing world": (["radar", str(tmp_path / "nope.obj"), "--out", out], "nope.obj"),
        "empty world": (["radar", str(empty), "--out", out], "no triangles"),
        "bad pose": (["radar", world, "--pose", "1 2 three", "--out", out], "pose '1 2 three'"),
        "short pose": (["radar", world, "--pose", "1 2 3", "--out", out], "six numbers"),
        "unknown --set key": (["radar", world, "--set", "beam.widht_deg=3", "--out", out], "beam.widht_deg"),
        "--set without =": (["radar", world, "--set", "beam", "--out", out], "KEY=VALUE"),
        "out of range": (["radar", world, "--set", "tracing.passes=99", "--out", out], "tracing.passes = 99"),
        "malformed config": (["radar", world, "--config", str(bad_yaml), "--out", out], "not valid YAML"),
        "missing config": (["radar", world, "--config", str(tmp_path / "none.yaml"), "--out", out], "file not found"),
        "unknown preset": (["radar", world, "--config", "navtech", "--out", out],
                           "unknown radar config 'navtech': not a file and not a preset; presets: mulran, navtech_cir204"),
        "unknown material key": (["radar", world, "--materials", str(bad_key), "--out", out], "unknown key(s) ['D']"),
        "malformed materials": (["radar", world, "--materials", str(bad_lib_yaml), "--out", out], "not valid YAML"),
        "unwritable out": (["radar", world, "--out", "/proc/no/such/dir/scan.npz"], "cannot be written"),
        "png style of npz": (["radar", world, "--png-style", "oxford", "--out", out], "--png-style oxford"),
    }


@pytest.mark.parametrize("case", ["missing world", "empty world", "bad pose", "short pose", "unknown --set key",
                                  "--set without =", "out of range", "malformed config", "missing config", "unknown preset",
                                  "unknown material key", "malformed materials", "unwritable out", "png style of npz"])
def test_cli_bad_input_is_one_line_and_exit_2(tmp_path, room_obj, capsys, case):
    argv, needle = _bad_inputs(tmp_path, room_obj)[case]
    assert main(argv) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("radarays: error: "), captured.err
    assert needle in lines[0]
    assert not (tmp_path / "scan.npz").exists()


def test_cli_config_by_preset_name(tmp_path, room_obj):
    """--config takes a preset name as the nodes and scenarios do: navtech_cir204 = 3360 bins of 0.0595 m."""
    out = tmp_path / "navtech.npz"
    assert main(["radar", str(room_obj), "--config", "navtech_cir204", "--set", "beam.samples=2",
                 "--set", "noise.ambient=none", "--out", str(out)]) == 0
    d = np.load(out)
    assert d["image"].shape == (400, 3360)
    np.testing.assert_allclose(d["range_m"][:2], [0.0, 0.0595])


def test_cli_pose_in_degrees(tmp_path, room_obj):
    """--degrees: yaw 90 turns azimuth 0 to +y, where the room's wall is 4 m away (bin 80 of 0.05 m)."""
    out = tmp_path / "turned.npz"
    assert main(["radar", str(room_obj), "--pose", "0 0 0 0 0 90", "--degrees", "--set", "beam.samples=5",
                 "--materials", str(ROOT / "radarays_ros/data/examples/materials_room.yaml"),
                 "--config", str(ROOT / "radarays_ros/data/examples/radarays_compat.yaml"), "--out", str(out)]) == 0
    assert int(np.argmax(np.load(out)["image_f32"][0])) == 80


def test_cli_oxford_png(tmp_path, room_obj):
    out = tmp_path / "1000.png"
    assert run_cli(room_obj, out, "--set", "beam.samples=5", "--png-style", "oxford", "--t-ns", "2000000") == 0
    raw = np.array(PILImage.open(out))
    assert raw.shape == (400, 11 + 400) and raw.dtype == np.uint8
    assert raw[0, :8].copy().view(np.int64)[0] == 2000  # microseconds
    assert np.all(raw[:, 10] == 255) and int(np.argmax(raw[0, 11:])) == 36  # the metal pillar at 1.8 m
    assert not (tmp_path / "1000_cartesian.png").exists()


def test_radar_points_keep_the_k_strongest_cfar_peaks_per_azimuth():
    from radarays_ros.radar.image import RadarImage
    from support.radar_scenes import config as small_config

    cfg = small_config(azimuth={"count": 2, "step_deg": -90.0}, range={"resolution": 0.1, "bins": 100})
    values = np.full((2, 100), 2.0, np.float32)  # a flat noise floor of 2
    values[0, [20, 50, 80]] = [30.0, 50.0, 40.0]  # three isolated peaks: the two strongest are kept with k = 2
    values[1, 30] = 5.0  # 2.5 x the floor: below a CFAR factor of 3
    values[1, 60] = 7.0  # 3.5 x the floor: a detection
    img = RadarImage(values, np.rint(values).astype(np.uint8), np.radians([0.0, -90.0]), np.arange(100) * 0.1,
                     np.zeros(2, np.int64), 0, cfg)
    pts = rio.radar_points(img, k=2, threshold=3.0, guard=2, train=8)
    by_column = sorted((round(float(p["x"]), 3), round(float(p["y"]), 3), float(p["intensity"])) for p in pts)
    assert by_column == [(0.0, -6.05, 7.0), (5.05, 0.0, 50.0), (8.05, 0.0, 40.0)]  # bin centres; -90 deg is -y
