"""Bad input in files and arguments (issue 11), one case per class: numbers Python cannot hold, sizes
that look valid, broken structure, bombs. Each gives our typed error on one line (exit status 2 from
the command line), never a traceback, an abort or an allocation of what the file claims."""
from __future__ import annotations

import io
import zipfile

import numpy as np
import pytest
from PIL import Image

from radarays_ros.cli import main
from radarays_ros.errors import RadaraysError
from radarays_ros.resources import data_path

OFFICE = str(data_path("worlds", "office.sdf"))
BOMB = ("a: &a [1,1,1,1,1,1,1,1,1]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
        "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
        "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\n")


def cli_error(capsys, *argv) -> str:
    """Run `radarays argv`; assert exit status 2 and one error line; return it."""
    assert main(list(argv)) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("radarays: error:"), err
    assert len(err) < 600, err  # values shortened
    return err


def sdf(body: str) -> str:
    return f'<sdf version="1.9"><world name="w"><model name="m"><static>1</static>{body}</model></world></sdf>'


def visual(geometry: str, pose: str = "0 0 0 0 0 0") -> str:
    return sdf(f'<pose>{pose}</pose><link name="l"><visual name="v"><geometry>{geometry}</geometry></visual></link>')


def npz_with_header(shape, body: bytes = b"") -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for key in ("origins", "directions"):
            header = io.BytesIO()
            np.lib.format.write_array_header_1_0(header, {"descr": "<f8", "fortran_order": False, "shape": shape})
            z.writestr(key + ".npy", header.getvalue() + body)
    return buf.getvalue()


@pytest.mark.parametrize("argv, expect", [
    (["radar", OFFICE, "--out", "o.npz", "--t-ns", "1" + "0" * 30], "--t-ns = 1000"),
    (["radar", OFFICE, "--out", "o.npz", "--set", "azimuth.count=.inf"], "azimuth.count = inf"),
    (["radar", OFFICE, "--out", "o.npz", "--set", "azimuth.count=" + "9" * 400], "integer of 400 digits"),
    (["radar", OFFICE, "--out", "o.npz", "--set", "range.bins=100000000"], "range.bins"),
    (["radar", OFFICE, "--out", "o.npz", "--set", "range.bins=1000000"], "exceeds 16000000 cells"),  # each key
    (["radar", OFFICE, "--out", "o.npz", "--set", "beam.samples=1000000"], "rays per frame"),  # valid alone
    (["lidar", OFFICE, "--out", "o.npz", "--sensor", "UTM-30LX", "--set", "angles.step_deg=0.0000000000001"],
     "angles = 2700000000000001: too many angles"),
    (["lidar", OFFICE, "--out", "o.npz", "--sensor", "VLP-16", "--t0", "nan"], "--t0 = nan"),
    (["lidar", OFFICE, "--out", "o.npz", "--sensor", "VLP-16", "--t0", "1e300"], "--t0 = 1e+300"),
    (["lidar", OFFICE, "--out", "o.npz", "--sensor", "VLP-16", "--seed", "-1"], "--seed = -1"),
    (["lidar", OFFICE, "--out", "o.npz", "--sensor", "VLP-16", "--scans", "100000000"], "--scans"),
    (["world", "panorama", OFFICE, "--out", "p.png", "--width", "20000"], "--width 20000"),
])
def test_numbers_and_sizes_on_the_command_line(capsys, tmp_path, monkeypatch, argv, expect):
    monkeypatch.chdir(tmp_path)
    assert expect in cli_error(capsys, *argv)


@pytest.mark.parametrize("name, text, expect", [
    ("deep.yaml", "[" * 10000 + "]" * 10000, "nested too deeply"),
    ("bomb.yaml", BOMB + "azimuth: {count: *g}\n", "more than 200000 values"),
    ("big.yaml", "seed: " + "9" * 5000 + "\n", "cannot be read"),
    ("binary.yaml", b"\xff\xfe\x00garbage", "cannot be read"),
])
def test_radar_config_structure_and_bombs(capsys, tmp_path, name, text, expect):
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    assert expect in cli_error(capsys, "radar", OFFICE, "--out", str(tmp_path / "o.npz"), "--config", str(path))


def test_material_library_assign_not_a_list_and_bomb(capsys, tmp_path):
    (tmp_path / "m.yaml").write_text("assign: 5\n")
    assert "'assign' must be a list" in cli_error(capsys, "radar", OFFICE, "--out", str(tmp_path / "o.npz"),
                                                  "--materials", str(tmp_path / "m.yaml"))
    (tmp_path / "b.yaml").write_text(BOMB + "materials: *g\n")
    assert "more than 200000" in cli_error(capsys, "radar", OFFICE, "--out", str(tmp_path / "o.npz"),
                                           "--materials", str(tmp_path / "b.yaml"))


@pytest.mark.parametrize("speed, duration, expect", [
    ("null", "1.0", "speed = null"), ("1.0", "9" * 400, "integer of 400 digits"),
    ("1.0", "1.0e300", "at most 1e+06"), ("1.0e-300", "1.0", "take"),
])
def test_scenario_numbers(capsys, tmp_path, speed, duration, expect):
    path = tmp_path / "s.yaml"
    path.write_text(f"world: {OFFICE}\nduration: {duration}\ntrajectory:\n  waypoints: [[0, 0], [1, 0]]\n"
                    f"  speed: {speed}\nsensors:\n  l: {{type: lidar, config: VLP-16}}\n")
    assert expect in cli_error(capsys, "run", str(path), "--out", str(tmp_path / "o.mcap"))


@pytest.mark.parametrize("text, expect", [
    ("0,0,0,0,0,0,0\n1e300,0,0,0,0,0,0\n", "times beyond"),
    (b"\xff\xfe", "cannot be read as text"),
])
def test_trajectory_files(capsys, tmp_path, text, expect):
    path = tmp_path / "t.csv"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    assert expect in cli_error(capsys, "lidar", OFFICE, "--out", str(tmp_path / "o.npz"), "--sensor", "VLP-16",
                               "--trajectory", str(path))


def test_rays_files(capsys, tmp_path):
    np.save(tmp_path / "r.npy", np.zeros((3, 3)))
    cases = {
        "renamed.npz": (tmp_path / "r.npy").read_bytes(),
        "empty.npz": b"",
        "claims.npz": npz_with_header((10**12, 3), bytes(48)),  # 10^12 rows claimed, 48 bytes held
        "short.npz": npz_with_header((1000, 3), bytes(48)),
    }
    buf = io.BytesIO()
    np.savez(buf, origins=np.array([None, 1], dtype=object), directions=np.zeros((2, 3)))
    cases["object.npz"] = buf.getvalue()
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        err = cli_error(capsys, "cast", OFFICE, "--rays", str(tmp_path / name), "--out", str(tmp_path / "o.npz"))
        assert name in err


def test_zip_bomb_rays_file_is_refused_before_it_is_read(capsys, tmp_path):
    buf = io.BytesIO()  # 200 M rows (4.8 GB) of zeros deflate to ~5 MB
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        header = io.BytesIO()
        np.lib.format.write_array_header_1_0(header, {"descr": "<f8", "fortran_order": False, "shape": (200_000_000, 3)})
        with z.open("origins.npy", "w", force_zip64=True) as member:
            member.write(header.getvalue())
            for _ in range(20):
                member.write(bytes(1 << 24))
        z.writestr("directions.npy", header.getvalue())
    (tmp_path / "bomb.npz").write_bytes(buf.getvalue())
    assert "claims 200000000 rays" in cli_error(capsys, "cast", OFFICE, "--rays", str(tmp_path / "bomb.npz"),
                                                "--out", str(tmp_path / "o.npz"))


@pytest.mark.parametrize("body, expect", [
    (visual("<box><size>1e39 1 1</size></box>"), "beyond"),
    (visual("<sphere><radius>1e39</radius></sphere>"), "beyond"),
    (visual("<box><size>1 1 1</size></box>", pose="1e39 0 0 0 0 0"), "beyond"),
    (visual("<mesh><uri>MESH</uri><scale>1e39 1 1</scale></mesh>"), "beyond"),
    (visual(f"<mesh><uri>model://{'a' * 5000}/m.obj</uri></mesh>"), "characters long"),
    (visual(f"<mesh><uri>{'a' * 3000}.obj</uri></mesh>"), "cannot resolve"),
])
def test_world_sizes_and_uris(tmp_path, body, expect):
    from radarays_ros.world.loader import load_world

    (tmp_path / "tri.obj").write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n")
    path = tmp_path / "w.sdf"
    path.write_text(body.replace("MESH", str(tmp_path / "tri.obj")))
    with pytest.raises(RadaraysError, match=expect) as info:
        load_world(path)
    assert "\n" not in str(info.value)


def test_heightmap_decompression_bomb(tmp_path):
    from radarays_ros.world.loader import load_world

    Image.new("L", (20000, 20000)).save(tmp_path / "bomb.png")  # 400 M pixels in ~400 kB
    (tmp_path / "w.sdf").write_text(visual(f"<heightmap><uri>{tmp_path / 'bomb.png'}</uri><size>10 10 1</size></heightmap>"))
    with pytest.raises(RadaraysError, match="pixels"):
        load_world(tmp_path / "w.sdf")


def test_include_fan_out_is_bounded(tmp_path):
    from radarays_ros.world.loader import load_world

    child = None
    for level in range(5):  # 8^5 = 32 768 includes from a few kB of files
        folder = tmp_path / f"m{level}"
        folder.mkdir()
        inner = ('<link name="l"><visual name="v"><geometry><box><size>1 1 1</size></box></geometry></visual></link>'
                 if child is None else "".join(f"<include><uri>{child}</uri><name>n{i}</name></include>" for i in range(8)))
        (folder / "model.sdf").write_text(f'<sdf version="1.9"><model name="m{level}">{inner}</model></sdf>')
        (folder / "model.config").write_text(f"<model><name>m{level}</name><sdf>model.sdf</sdf></model>")
        child = folder
    (tmp_path / "w.sdf").write_text('<sdf version="1.9"><world name="w">'
                                    + "".join(f"<include><uri>{child}</uri><name>t{i}</name></include>" for i in range(8))
                                    + "</world></sdf>")
    with pytest.raises(RadaraysError, match="more than 2000 <include>s"):
        load_world(tmp_path / "w.sdf")


def test_urdf_link_without_name(tmp_path):
    from radarays_ros.world.loader import load_world

    (tmp_path / "r.urdf").write_text('<robot name="r"><link><visual><geometry><box size="1 1 1"/></geometry>'
                                     '</visual></link></robot>')
    with pytest.raises(RadaraysError, match="<link> needs a name"):
        load_world(tmp_path / "r.urdf")


def test_deep_ouster_json(capsys, tmp_path):
    (tmp_path / "s.json").write_text('{"a":' * 10000 + "1" + "}" * 10000)
    assert "nested too deeply" in cli_error(capsys, "lidar", OFFICE, "--out", str(tmp_path / "o.npz"),
                                            "--sensor", str(tmp_path / "s.json"))


def test_lidar_grid_of_valid_axes_too_large_for_memory(capsys, tmp_path):
    (tmp_path / "s.yaml").write_text("type: spherical\nname: g\nrate_hz: 10\nrange: {min: 0.1, max: 100}\n"
                                     "horizontal: {min_deg: -180, step_deg: 0.0036, count: 100000}\n"
                                     "vertical: {min_deg: -10, step_deg: 0.01, count: 1024}\n")
    assert "rays per scan" in cli_error(capsys, "lidar", OFFICE, "--out", str(tmp_path / "o.npz"),
                                        "--sensor", str(tmp_path / "s.yaml"))
