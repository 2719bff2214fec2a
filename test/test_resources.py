"""Shipped data through one lookup (radarays_ros.resources): package data, by name, with clear errors."""
from pathlib import Path

import pytest

from radarays_ros import resources
from radarays_ros.errors import ConfigError, WorldError
from radarays_ros.scenario.config import load_scenario
from radarays_ros.world.loader import load_world

PACKAGE = Path(resources.__file__).resolve().parent


def test_data_lives_inside_the_package():
    assert resources.data_root() == PACKAGE / "data"
    assert resources.data_path("materials", "default.yaml").is_file()
    assert resources.data_path("ros", "fastdds_large_messages.xml").is_file()


@pytest.mark.parametrize("kind, expected", [
    ("world", {"office", "street", "street_clutter", "hall", "gz_radarays_demo"}),
    ("scenario", {"office_demo", "hall_demo", "street_demo", "office_slalom"}),
    ("radar", {"radarays_default", "navtech_cir204", "mulran"}),
    ("lidar", {"VLP-16", "OS1-128", "URG-04LX"}),
])
def test_every_kind_lists_its_shipped_names(kind, expected):
    assert expected <= set(resources.shipped_names(kind))
    for name in expected:
        assert resources.shipped(kind, name.lower()).is_file()  # names match case-insensitively


def test_a_name_that_matches_nothing_lists_what_exists():
    with pytest.raises(ConfigError, match=r"'ofice': not a shipped world; shipped worlds: gz_radarays_demo, hall, office, street, street_clutter$"):
        resources.shipped("world", "ofice")
    with pytest.raises(ConfigError, match=r"nope.yaml: file not found: not a shipped scenario; shipped scenarios: hall_demo"):
        resources.file_or_shipped("scenario", "nope.yaml")
    with pytest.raises(ConfigError, match="unknown kind of shipped data 'maps'"):
        resources.shipped_names("maps")


def test_a_path_is_never_taken_for_a_name(tmp_path):
    assert resources.find_shipped("world", "../worlds/office") is None
    assert resources.find_shipped("world", str(tmp_path / "office.sdf")) is None


def test_worlds_and_scenarios_load_by_name_from_any_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    scene = load_world("office")
    assert scene.source == str(PACKAGE / "data" / "worlds" / "office.sdf") and len(scene) > 10
    scenario = load_scenario("office_demo")
    assert scenario.world == PACKAGE / "data" / "worlds" / "office.sdf"
    with pytest.raises(WorldError, match="world nowhere: file or directory not found: not a shipped world; shipped worlds: gz_radarays_demo"):
        load_world("nowhere")


def test_a_scenario_may_name_a_shipped_world(tmp_path):
    text = resources.shipped("scenario", "office_demo").read_text().replace("world: ../worlds/office.sdf", "world: office")
    (tmp_path / "s.yaml").write_text(text)
    assert load_scenario(tmp_path / "s.yaml").world == PACKAGE / "data" / "worlds" / "office.sdf"


def test_lidar_tables_may_come_from_another_folder(tmp_path, monkeypatch):
    (tmp_path / "presets").mkdir()
    (tmp_path / "presets" / "Mine.yaml").write_text("type: spherical\n")
    monkeypatch.setenv("RADARAYS_LIDAR_CONFIG", str(tmp_path))
    assert resources.shipped_names("lidar") == ["Mine"]


def test_world_options_are_one_checked_object():
    from radarays_ros.world.loader import WorldOptions

    options = WorldOptions(geometry="collision", ignore="desk*")
    assert options.ignore == ("desk*",) and options.kwargs()["geometry"] == "collision"
    with pytest.raises(ConfigError, match="geometry = 'visuals': not a choice, allowed one of visual, collision"):
        WorldOptions(geometry="visuals")
    with pytest.raises(ConfigError, match="collada_up_axis = 'z': not a choice"):
        load_world("office", collada_up_axis="z")
    everything = load_world("office", options=WorldOptions())
    assert len(load_world("office", options=WorldOptions(ignore=("desk*",)))) < len(everything)
    with pytest.raises(TypeError, match="unknown option"):
        load_world("office", geometri="visual")
