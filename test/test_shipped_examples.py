"""The README's shipped examples by name, from any folder (an install has no radarays_ros/data/... path)."""
from __future__ import annotations

import pytest

from lidar_ros.config import load_sensor
from radarays_ros.errors import ConfigError
from radarays_ros.radar.config import resolve_radar_config
from radarays_ros.world.materials import MaterialLibrary


def test_examples_by_name_from_another_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    lidar = load_sensor("spherical_16x1800")
    assert (lidar.rows, lidar.cols) == (16, 1800)
    assert resolve_radar_config("radarays_compat.yaml").range.bins == resolve_radar_config("radarays_compat").range.bins
    assert len(MaterialLibrary.load_user("materials_room").names) > len(MaterialLibrary.load().names)
    assert resolve_radar_config("navtech_cir204").azimuth.count > 0  # presets still win over examples


def test_a_local_file_of_that_name_wins_and_unknown_names_still_fail(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "spherical_16x1800.yaml").write_text("not: a sensor\n")
    with pytest.raises(ConfigError):
        load_sensor("spherical_16x1800.yaml")  # the local (broken) file, not the shipped one
    with pytest.raises(ConfigError, match="unknown lidar sensor 'nope'"):
        load_sensor("nope")
