"""Sensors declared in SDF / URDF: found, posed, parameterised; gpu_lidar -> nearest preset."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from radarays_ros.errors import WorldError
from radarays_ros.gazebo.sensors import find_sensors, nearest_lidar_preset
from radarays_ros.world.transforms import pose_to_matrix

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "radarays_ros" / "data" / "worlds" / "gz_radarays_demo.sdf"


def test_demo_world_sensors():
    specs = {s.name: s for s in find_sensors(DEMO)}
    assert set(specs) == {"radar", "lidar", "gpu_lidar"}
    radar = specs["radar"]
    assert (radar.kind, radar.parent, radar.topic, radar.frame) == ("radar", "robot::chassis", "radar/image", "radar_link")
    assert radar.update_rate == 4.0
    assert radar.params == {"preset": "navtech_cir204", "seed": 7}
    np.testing.assert_allclose(radar.pose, pose_to_matrix(0.3, 0, 0.4))
    lidar = specs["lidar"]
    assert lidar.kind == "lidar" and lidar.params == {"preset": "OS1-64", "overrides": {"range.max": 80}}
    gpu = specs["gpu_lidar"]
    assert (gpu.kind, gpu.gz_type, gpu.parent, gpu.frame) == ("lidar", "gpu_lidar", "robot::mast", "mast")
    assert gpu.params["preset"] == "VLP-16"
    assert gpu.params["overrides"] == {"range.min": 0.4, "range.max": 100.0}
    assert "gz_radarays_demo.sdf:" in gpu.source


def test_undeclared_prefix_nested_models_defaults_and_degrees():
    text = """<sdf version="1.11"><world name="w">
      <model name="outer"><model name="inner"><link name="base">
        <sensor name="r1" type="custom" ignition:type="radarays_radar">
          <pose degrees="true">1 2 3 0 0 90</pose>
          <radarays_radar><beam><width>1.5</width></beam><tag>a</tag><tag>b</tag><on>true</on></radarays_radar>
        </sensor>
        <sensor name="cam" type="camera"/>
        <sensor name="other_plugin" type="custom" gz:type="rmagine_ouster"/>
      </link></model></model></world></sdf>"""
    (spec,) = find_sensors(text)
    assert spec.parent == "outer::inner::base"
    assert spec.topic == "r1" and spec.frame == "base" and spec.update_rate == 0.0
    assert spec.params == {"beam": {"width": 1.5}, "tag": ["a", "b"], "on": True}
    np.testing.assert_allclose(spec.pose, pose_to_matrix(1, 2, 3, 0, 0, math.pi / 2), atol=1e-12)


def test_urdf_gazebo_block(tmp_path):
    urdf = tmp_path / "robot.urdf"
    urdf.write_text("""<robot name="bot" xmlns:gz="http://gazebosim.org/schema">
      <link name="base_link"/><link name="lidar_mount"/>
      <gazebo reference="lidar_mount">
        <sensor name="front" type="custom" gz:type="radarays_lidar">
          <update_rate>20</update_rate><topic>front/points</topic>
          <radarays_lidar><preset>VLP-16</preset></radarays_lidar>
        </sensor>
      </gazebo>
      <gazebo><plugin name="x" filename="y"/></gazebo>
    </robot>""")
    (spec,) = find_sensors(urdf)
    assert (spec.kind, spec.parent, spec.frame, spec.update_rate, spec.topic) == \
        ("lidar", "lidar_mount", "lidar_mount", 20.0, "front/points")
    assert spec.params == {"preset": "VLP-16"}


@pytest.mark.parametrize(
    "v, h, v_fov_deg, h_fov_deg, expected",
    [
        (16, 1800, 30, 360, "VLP-16"),
        (64, 1024, 45, 360, "OS1-64"),
        (128, 1024, 90, 360, "OS0-128"),
        (1, 1081, 0, 270, "UTM-30LX"),
    ],
)
def test_nearest_lidar_preset(v, h, v_fov_deg, h_fov_deg, expected):
    assert nearest_lidar_preset(v, h, math.radians(v_fov_deg), math.radians(h_fov_deg)) == expected


@pytest.mark.parametrize(
    "sensor_xml, match",
    [
        ('<sensor name="s" type="custom" gz:type="radarays_radar"><update_rate>fast</update_rate></sensor>', "update_rate"),
        ('<sensor name="s" type="custom" gz:type="radarays_radar"><pose>1 2 3</pose></sensor>', "six finite numbers"),
        ('<sensor name="s" type="custom" gz:type="radarays_radar"><pose relative_to="world">0 0 0 0 0 0</pose></sensor>',
         "relative_to='world'"),
        ('<sensor name="s" type="gpu_lidar"/>', "needs a <lidar>"),
        ('<sensor type="custom" gz:type="radarays_lidar"/>', "needs a name"),
    ],
)
def test_bad_sensor_blocks(sensor_xml, match):
    text = f'<sdf version="1.11"><model name="m"><link name="l">{sensor_xml}</link></model></sdf>'
    with pytest.raises(WorldError, match=match):
        find_sensors(text)


def test_malformed_and_missing_files(tmp_path):
    with pytest.raises(WorldError, match="malformed XML"):
        find_sensors("<sdf><model></sdf>")
    with pytest.raises(WorldError, match="cannot be read"):
        find_sensors(tmp_path / "nope.sdf")


def test_sensors_in_included_models(tmp_path, monkeypatch, caplog):
    model_dir = tmp_path / "models" / "scout"
    model_dir.mkdir(parents=True)
    (model_dir / "model.config").write_text(
        '<?xml version="1.0"?><model><name>scout</name><sdf version="1.6">old.sdf</sdf>'
        '<sdf version="1.11">model.sdf</sdf></model>')
    (model_dir / "model.sdf").write_text("""<sdf version="1.11"><model name="scout"><link name="base">
        <sensor name="radar" type="custom" gz:type="radarays_radar"><update_rate>4</update_rate></sensor>
      </link></model></sdf>""")
    (tmp_path / "bot.urdf").write_text("""<robot name="bot"><link name="mount"/>
      <gazebo reference="mount"><sensor name="l" type="custom" gz:type="radarays_lidar"/></gazebo></robot>""")
    world = tmp_path / "world.sdf"
    world.write_text("""<sdf version="1.11"><world name="w">
      <include><uri>model://scout</uri><name>scout_1</name><pose>1 0 0 0 0 0</pose></include>
      <model name="carrier"><include><uri>model://scout</uri></include></model>
      <include><uri>bot.urdf</uri></include>
      <include><uri>model://missing</uri></include>
    </world></sdf>""")
    monkeypatch.setenv("GZ_SIM_RESOURCE_PATH", str(tmp_path / "models"))
    specs = find_sensors(world)
    assert [(s.name, s.parent) for s in specs] == [
        ("radar", "scout_1::base"), ("radar", "carrier::scout::base"), ("l", "bot::mount")]
    assert "model://missing" in caplog.text and "cannot be resolved" in caplog.text


def test_lidar_params_load_with_the_lidar_layer():
    from lidar_ros.config import load_sensor

    specs = {s.name: s for s in find_sensors(DEMO)}
    gpu = load_sensor(specs["gpu_lidar"].params["preset"], specs["gpu_lidar"].params["overrides"])
    assert (gpu.rows, gpu.range_min, gpu.range_max) == (16, 0.4, 100.0)
    ours = load_sensor(specs["lidar"].params["preset"], specs["lidar"].params["overrides"])
    assert (ours.rows, ours.range_max) == (64, 80.0)
