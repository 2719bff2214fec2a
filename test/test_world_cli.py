"""`radarays world info` and `radarays world panorama` through the real command entry point."""
import json
from pathlib import Path

import numpy as np
import pytest
from matplotlib import colormaps
from PIL import Image

from radarays_ros.cli import main

WORLD = """<?xml version="1.0"?>
<sdf version="1.9"><world name="w">
  <model name="wall"><static>true</static><pose>5 0 0 0 0 0</pose><link name="l">
    <visual name="v"><geometry><box><size>0.2 20 20</size></box></geometry><radarays><material>concrete</material></radarays></visual>
  </link></model>
  <model name="cart"><pose>0 3 0 0 0 0</pose><link name="l">
    <visual name="v"><geometry><sphere><radius>0.5</radius></sphere></geometry></visual>
  </link></model>
  <include><uri>model://missing_model</uri></include>
</world></sdf>
"""


@pytest.fixture
def world(tmp_path):
    path = tmp_path / "w.sdf"
    path.write_text(WORLD)
    return path


def test_world_info_table_lists_entities_and_unresolved(world, capsys):
    assert main(["world", "info", str(world)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    row = next(l for l in lines if l.startswith("wall::l::v"))
    assert row.split()[:3] == ["wall::l::v", "yes", "12"] and "concrete:12" in row
    row = next(l for l in lines if l.startswith("cart::l::v"))
    assert row.split()[:3] == ["cart::l::v", "no", "1280"] and "default:1280" in row
    assert "2 entities, 1292 triangles" in out
    assert "unresolved URIs: model://missing_model" in out


def test_world_info_json(world, capsys):
    assert main(["world", "info", str(world), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [e["name"] for e in data["entities"]] == ["wall::l::v", "cart::l::v"]
    assert data["entities"][0]["materials"] == {"concrete": 12} and data["triangles"] == 1292
    assert data["unresolved"] == ["model://missing_model"] and data["warnings"]


def test_world_panorama_pixel_shows_the_wall_distance(world, tmp_path, capsys):
    out = tmp_path / "pano.png"
    ranges_out = tmp_path / "ranges.npy"
    code = main(["world", "panorama", str(world), "--pose", "0 0 0 0 0 0", "--out", str(out), "--width", "360",
                 "--max-range", "10", "--ranges-out", str(ranges_out), "--lenient"])
    assert code == 0
    img = np.asarray(Image.open(out).convert("RGB"))
    assert img.shape == (180 + 24, 360, 3)  # the panorama, then the colour bar with its labels in metres
    forward = img[90, 180].astype(int)  # centre pixel: azimuth ~0, elevation ~0
    lut = (colormaps["turbo"](np.linspace(0, 1, 256))[:, :3] * 255).round().astype(int)
    level = int(np.argmin(np.abs(lut - forward).sum(axis=1)))
    assert level / 255 * 10 == pytest.approx(4.9, abs=10 / 255)  # the wall face at x = 4.9
    assert img[90, 0].sum() == 0  # backwards: a miss, black
    lut_of = lambda px: int(np.argmin(np.abs(lut - px.astype(int)).sum(axis=1)))  # noqa: E731
    bar = img[180 + 5]  # the gradient row: 0 m at the left, --max-range at the right
    assert lut_of(bar[0]) == 0 and lut_of(bar[-1]) == 255 and lut_of(bar[179]) == pytest.approx(127, abs=2)
    assert img[180 + 10:].max() >= 200  # white label text under the bar
    ranges = np.load(ranges_out)
    assert ranges[90, 180] == pytest.approx(4.9, abs=1e-3)
    left = ranges[90, 90]  # a quarter turn left (+y): the sphere at y = 3
    assert left == pytest.approx(2.5, abs=0.02)


def test_world_panorama_strict_by_default_and_bad_arguments(world, tmp_path, capsys):
    assert main(["world", "panorama", str(world), "--out", str(tmp_path / "p.png"), "--width", "64"]) == 2
    assert "model://missing_model" in capsys.readouterr().err
    assert main(["world", "panorama", str(world), "--out", str(tmp_path / "p.png"), "--pose", "1 2 3"]) == 2
    assert "expected six numbers" in capsys.readouterr().err
    assert main(["world", "info", str(tmp_path / "nothing.sdf")]) == 2
    assert "not found" in capsys.readouterr().err
