"""A scenario lidar with `realistic: true` gets the effects profile of `radarays lidar --realistic`."""
from __future__ import annotations

import pytest

from lidar_ros import load_sensor
from radarays_ros.errors import ConfigError
from radarays_ros.scenario.config import load_scenario, scenario_from_data
from radarays_ros.resources import find_shipped


def _data(**sensor):
    return {"world": str(find_shipped("world", "street")), "trajectory": {"waypoints": [[0, 0], [1, 0]]},
            "sensors": {"lidar": {"type": "lidar", "config": "VLP-16", **sensor}}}


def test_street_slalom_runs_its_lidars_realistic():
    scenario = load_scenario("street_slalom")
    assert {s.name: s.realistic for s in scenario.sensors} == {"vlp16": True, "os1": True}


def test_a_realistic_lidar_unit_has_the_profile_and_a_plain_one_not():
    from radarays_ros.sensors.units import LidarUnit
    from radarays_ros.tracing import make_backend
    from radarays_ros.world.loader import load_world

    scene = load_world(find_shipped("world", "street"))
    backend = make_backend("embree", scene)
    plain = LidarUnit("a", scene, backend, config="VLP-16")
    real = LidarUnit("b", scene, backend, config="VLP-16", realistic=True, overrides={"beam.sub_rays": 2})
    expected = load_sensor("VLP-16", {"beam.sub_rays": 2}, realistic=True).effects
    assert real.config.effects == expected  # the profile, with the unit's override over it
    assert (real.config.effects.beam.sub_rays, real.config.effects.detection.model, real.config.effects.signal.poisson) \
        == (2, "snr", True)
    assert (plain.config.effects.detection.model, plain.config.effects.signal.poisson) == ("threshold", False)
    backend.close()


@pytest.mark.parametrize("value, kind", [("yes", "lidar"), (1, "lidar"), (True, "radar")])
def test_realistic_must_be_a_boolean_on_a_lidar(tmp_path, value, kind):
    data = _data(realistic=value)
    data["sensors"]["lidar"]["type"] = kind
    if kind == "radar":
        data["sensors"]["lidar"]["config"] = "radarays_default"
    with pytest.raises(ConfigError, match=r"sensors.lidar.realistic = .*allowed true or false"):
        scenario_from_data(data, tmp_path / "s.yaml")
