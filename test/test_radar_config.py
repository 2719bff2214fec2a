"""Radar configuration: shipped presets, overrides, and errors that name the file, key and allowed values."""
from __future__ import annotations

from pathlib import Path

import pytest

from radarays_ros.errors import ConfigError
from radarays_ros.radar import RadarConfig
from radarays_ros.world.materials import MaterialLibrary
from radarays_ros.radar import RadarMaterials

ROOT = Path(__file__).resolve().parents[1]


def test_compat_example_expresses_the_radarays_setting():
    c = RadarConfig.from_yaml(ROOT / "radarays_ros/data/examples/radarays_compat.yaml")
    assert (c.azimuth.count, c.azimuth.start_deg, c.azimuth.step_deg) == (400, 0.0, -0.9)
    assert (c.range.resolution, c.n_bins) == (0.05, 400)
    assert (c.beam.width_deg, c.beam.samples, c.beam.distribution, c.beam.p_in_cone) == (8.0, 50, "D3", 0.8)
    assert c.beam.width_h_deg is None and not c.beam.gain_weighting and c.beam.redraw == "cached"
    assert c.tracing.passes == 4 and c.returns.multi_reflection and not c.returns.multipath
    assert (c.kernel.type, c.kernel.width, c.kernel.mode) == ("triangular", 50, 0.35)
    assert c.noise.ambient == "none"
    assert (c.output.normalisation, c.output.energy_max, c.output.signal_max) == ("radarays", 0.5, 120.0)
    assert c.seed == 42


def test_compat_materials_example():
    lib = MaterialLibrary.load(ROOT / "radarays_ros/data/examples/materials_room.yaml")
    mats = RadarMaterials.from_library(lib)
    wall, metal = mats.names.index("wall_stone"), mats.names.index("metal")
    assert mats.velocity[wall] == 0.001 and mats.brdf[wall] == "radarays" and mats.params[wall] == {"A": 0.6, "B": 0.3, "C": 30.0}
    assert mats.velocity[metal] == 0.0 and mats.params[metal] == {"A": 1.0, "B": 1.0, "C": 2000.0}
    rules = {(r.kind, r.pattern): r.material for r in lib.rules}
    assert rules == {("object", "room"): "wall_stone", ("object", "pillar"): "metal"}


@pytest.mark.parametrize("name", ["radarays_default", "mulran", "navtech_cir204"])
def test_presets_load(name):
    c = RadarConfig.from_yaml(ROOT / f"radarays_ros/data/radar/{name}.yaml")
    assert c.azimuth.count == 400
    if name == "navtech_cir204":
        assert (c.range.resolution, c.n_bins, c.beam.width_h_deg, c.beam.width_v_deg) == (0.0595, 3360, 1.8, 25.0)
    if name == "mulran":
        assert (c.beam.width_deg, c.output.energy_max, c.output.signal_max, c.kernel.width) == (10.0, 0.72, 110.0, 35)


def test_defaults_are_the_radarays_cfg_defaults_and_round_trip():
    c = RadarConfig()
    assert RadarConfig.from_yaml(ROOT / "radarays_ros/data/radar/radarays_default.yaml") == c
    assert RadarConfig.from_dict(c.to_dict()) == c
    assert (c.range.resolution, c.n_bins, c.beam.samples, c.noise.ambient) == (0.0438, 3424, 10, "perlin")


def test_overrides_parse_yaml_scalars_and_reject_unknown_keys():
    c = RadarConfig().with_overrides({"beam.width_deg": "10", "returns.multipath": "true", "range.max_range": "20",
                                      "seed": "5", "beam.distribution": 1})
    assert c.beam.width_deg == 10.0 and c.returns.multipath is True and c.n_bins == 457 and c.seed == 5
    assert c.beam.distribution == "D2"  # RadaRays' beam_sample_dist number
    with pytest.raises(ConfigError, match=r"override 'beam.widht_deg': unknown key; beam has \[.*width_deg"):
        RadarConfig().with_overrides({"beam.widht_deg": "10"})
    with pytest.raises(ConfigError, match=r"override 'nosuch.x'"):
        RadarConfig().with_overrides({"nosuch.x": 1})


@pytest.mark.parametrize("key, value, message", [
    ("beam.width_deg", "-1", r"beam.width_deg = -1.0: out of range, allowed number in \(0.0, 180.0\]"),
    ("beam.p_in_cone", "1", r"beam.p_in_cone = 1.0: out of range, allowed number in \(0.0, 1.0\)"),
    ("tracing.passes", "0", r"tracing.passes = 0: out of range, allowed integer in \[1, 32\]"),
    ("tracing.passes", "2.5", r"tracing.passes = 2.5: must be an integer"),
    ("azimuth.count", "many", r"azimuth.count = 'many': must be a number"),
    ("kernel.type", "box", r"kernel.type = 'box': must be one of none, triangular, gaussian, maxwell_boltzmann"),
    ("output.normalisation", "log", r"must be one of radarays, gazebo, global, db"),
    ("range.resolution", ".nan", r"range.resolution = nan: must be a finite number"),
    ("returns.multipath", "2", r"returns.multipath = 2: must be true or false"),
    ("noise.energy_min", "0.9", r"noise.energy_min \(0.9\) must be <= noise.energy_max"),
])
def test_bad_values_name_the_key_and_the_allowed_range(key, value, message):
    with pytest.raises(ConfigError, match=message):
        RadarConfig().with_overrides({key: value})


def test_file_errors_name_the_file(tmp_path):
    bad = tmp_path / "radar.yaml"
    bad.write_text("beam:\n  width_deg: 400\n")
    with pytest.raises(ConfigError, match=rf"{bad}: beam.width_deg = 400.0: out of range"):
        RadarConfig.from_yaml(bad)
    bad.write_text("beam:\n  samples: 10\n  cone: 3\n")
    with pytest.raises(ConfigError, match=rf"{bad}: unknown key\(s\) \['beam.cone'\]"):
        RadarConfig.from_yaml(bad)
    bad.write_text("radar: {}\n")
    with pytest.raises(ConfigError, match=r"unknown key\(s\) \['radar'\]"):
        RadarConfig.from_yaml(bad)
    bad.write_text("beam: [1, 2\n")
    with pytest.raises(ConfigError, match="not valid YAML") as raised:
        RadarConfig.from_yaml(bad)
    assert "\n" not in str(raised.value) and "line 2" in str(raised.value)  # one line, with where
    with pytest.raises(ConfigError, match="file not found"):
        RadarConfig.from_yaml(tmp_path / "missing.yaml")


def test_shipped_material_library_has_valid_radar_parts():
    mats = RadarMaterials.from_library(MaterialLibrary.load())
    assert mats.velocity[mats.names.index("air")] == 0.3 and mats.velocity[mats.names.index("metal")] == 0.0
    assert len(mats.velocity) == len(mats.names) + 1  # + the air medium
