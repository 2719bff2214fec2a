"""How SDF-declared sensors become node sensors (no ROS needed): topics, names, overrides, errors."""
from __future__ import annotations

import numpy as np
import pytest

from radarays_ros.errors import ConfigError
from radarays_ros.gazebo.sensors import find_sensors
from radarays_ros.ros.gazebo_link import sdf_sensor_plan, sdf_topic, unique_name
from radarays_ros.sensors.units import resolve_radar_config
from radarays_ros.world.transforms import pose_to_matrix


@pytest.mark.parametrize("sdf, kind, relative, expected", [
    ("radar/image", "radar", "radar/image", "radar/image"),
    ("radar/image", "radar", "radar/points", "radar/points"),
    ("front/points", "lidar", "points", "front/points"),
    ("front/points", "lidar", "scan", "front/scan"),
    ("front", "lidar", "points", "front/points"),
    ("front/scan", "lidar", "scan", "front/scan"),
    ("front/scan", "lidar", "points", "front/points"),
    ("radar/points", "radar", "radar/image", "radar/image"),
    ("/abs/radar", "radar", "radar/image", "/abs/radar/radar/image"),
])
def test_sdf_topics(sdf, kind, relative, expected):
    assert sdf_topic(sdf, kind, relative) == expected


def test_unique_parameter_safe_names():
    taken = {"radar"}
    assert unique_name("radar", "robot::chassis", taken) == "robot_radar"
    assert unique_name("radar", "robot::chassis", taken) == "radar_2"
    assert unique_name("3d-lidar", "m::l", taken) == "s_3d_lidar"
    assert taken == {"radar", "robot_radar", "radar_2", "s_3d_lidar"}


def test_plan_takes_preset_nested_params_overrides_and_rate():
    (spec,) = find_sensors("""<robot name="bot"><link name="mount"/><gazebo reference="mount">
      <sensor name="r" type="custom" gz:type="radarays_radar">
        <pose>0.1 0 0.2 0 0 0</pose><update_rate>3</update_rate>
        <radarays_radar><preset>mulran</preset><range><bins>200</bins></range>
          <overrides><beam.samples>5</beam.samples></overrides></radarays_radar>
      </sensor></gazebo></robot>""")
    plan = sdf_sensor_plan(spec, set(), urdf_model="bot")
    assert (plan.name, plan.kind, plan.config, plan.parent, plan.frame) == ("r", "radar", "mulran", "bot::mount", "mount")
    assert plan.overrides == {"range.bins": 200, "beam.samples": 5, "azimuth.rate_hz": 3.0}
    np.testing.assert_allclose(plan.mount, pose_to_matrix(0.1, 0, 0.2))
    config = resolve_radar_config(plan.config, plan.overrides)
    assert (config.range.bins, config.beam.samples, config.azimuth.rate_hz) == (200, 5, 3.0)


def test_plan_rejects_an_overrides_scalar_naming_the_block():
    (spec,) = find_sensors('<sdf version="1.11"><model name="m"><link name="l">'
                           '<sensor name="x" type="custom" gz:type="radarays_lidar">'
                           '<radarays_lidar><overrides>80</overrides></radarays_lidar></sensor></link></model></sdf>')
    with pytest.raises(ConfigError, match=r"<string>:1 <sensor name='x'>.*<overrides>"):
        sdf_sensor_plan(spec, set())
