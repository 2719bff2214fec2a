"""Sensors declared in SDF / URDF: found, posed, parameterised; gpu_lidar -> the rays gz-sensors casts."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from radarays_ros.errors import WorldError
from radarays_ros.gazebo.sensors import find_sensors, plan_config
from radarays_ros.world.transforms import pose_to_matrix

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "radarays_ros" / "data" / "worlds" / "gz_radarays_demo.sdf"


def test_demo_world_sensors():
    specs = {s.name: s for s in find_sensors(DEMO)}
    assert set(specs) == {"radar", "lidar", "gpu_lidar"}
    radar = specs["radar"]
    assert (radar.kind, radar.parent, radar.topic, radar.frame) == ("radar", "robot::chassis", "radar/image", "radar_link")
    assert radar.update_rate == 4.0
    assert radar.params == {"preset": "navtech_cir204", "seed": 7, "overrides": {"beam.samples": 20}}
    np.testing.assert_allclose(radar.pose, pose_to_matrix(0.3, 0, 0.4))
    lidar = specs["lidar"]
    assert lidar.kind == "lidar" and lidar.params == {"preset": "OS1-64", "overrides": {"range.max": 80}}
    gpu = specs["gpu_lidar"]
    assert (gpu.kind, gpu.gz_type, gpu.parent, gpu.frame) == ("lidar", "gpu_lidar", "robot::mast", "mast")
    assert gpu.params["preset"] == "gazebo_gpu_lidar"
    overrides = gpu.params["overrides"]
    assert (overrides["horizontal.samples"], overrides["vertical.samples"]) == (1800, 16)
    assert (overrides["range.min"], overrides["range.max"]) == (0.4, 100.0)
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


GPU_BLOCK = """<sdf version="1.11"><model name="m"><link name="l">
  <sensor name="g" type="gpu_lidar"><update_rate>15</update_rate><topic>g</topic>
    <lidar><scan>
      <horizontal><samples>640</samples><resolution>2</resolution><min_angle>-3.1</min_angle><max_angle>2.9</max_angle></horizontal>
      <vertical><samples>32</samples><min_angle>-0.5235987756</min_angle><max_angle>0.1745329252</max_angle></vertical>
    </scan><range><min>0.5</min><max>40</max></range>
    <noise><type>gaussian</type><mean>0</mean><stddev>0.01</stddev></noise></lidar>
  </sensor></link></model></sdf>"""


def test_gpu_lidar_block_keeps_its_declared_rays_range_rate_and_noise():
    """640 x 32 rays at -30...+10 deg: the rays gz-sensors' GpuLidarSensor casts (samples spread from min to
    max angle, both ends included; <resolution> does not change its cloud), not the nearest preset."""
    from lidar_ros.config import load_sensor

    (spec,) = find_sensors(GPU_BLOCK)
    cfg = load_sensor(*plan_config(spec))
    assert (cfg.kind, cfg.layout, cfg.organized, cfg.rows, cfg.cols) == ("spherical", "gazebo", True, 32, 640)
    assert (cfg.range_min, cfg.range_max, cfg.rate_hz, cfg.noise.sigma) == (0.5, 40.0, 15.0, 0.01)
    j, i = np.arange(32), np.arange(640)
    inclination = -0.5235987756 + j * (0.1745329252 + 0.5235987756) / 31  # FillPointCloudMsg's angles
    azimuth = -3.1 + i * 6.0 / 639
    np.testing.assert_allclose(np.asarray(cfg.elevation, float)[:, 0], inclination, atol=1e-12)  # row 0 lowest
    np.testing.assert_allclose(np.asarray(cfg.azimuth, float)[0], azimuth, atol=1e-12)
    np.testing.assert_allclose(np.asarray(cfg.azimuth, float)[31], azimuth, atol=1e-12)  # no per-beam stagger


def test_a_one_row_gpu_lidar_in_the_plane_is_a_2d_scanner():
    text = GPU_BLOCK.replace("<samples>32</samples><min_angle>-0.5235987756</min_angle><max_angle>0.1745329252</max_angle>",
                             "<samples>1</samples>")
    from lidar_ros.config import load_sensor

    (spec,) = find_sensors(text)
    config, overrides = plan_config(spec)
    cfg = load_sensor(config, overrides)
    assert (config, cfg.kind, cfg.layout, cfg.planar, cfg.rows, cfg.cols) == \
        ("gazebo_gpu_lidar_2d", "planar", "gazebo", True, 1, 640)
    assert cfg.planar_info["angle_min"] == pytest.approx(-3.1) and cfg.planar_info["angle_increment"] == pytest.approx(6.0 / 639)
    tilted = GPU_BLOCK.replace("<samples>32</samples><min_angle>-0.5235987756</min_angle>", "<samples>1</samples><min_angle>-0.1</min_angle>")
    cone = load_sensor(*plan_config(find_sensors(tilted)[0]))  # one row, not level: stays spherical
    assert cone.kind == "spherical" and np.allclose(np.asarray(cone.elevation, float), -0.1)


@pytest.mark.parametrize("replace, by, match", [
    ("<mean>0</mean>", "<mean>0.2</mean>", "mean 0.2"),
    ("<samples>32</samples><min_angle>-0.5235987756</min_angle>", "<samples>32</samples><min_angle>0.1745329252</min_angle>",
     "max_angle > min_angle"),
    ("<samples>640</samples>", "<samples>64.5</samples>", "whole number"),
    ("<max_angle>0.1745329252</max_angle>", "<max_angle>1.7</max_angle>", "pi/2"),
])
def test_bad_gpu_lidar_blocks_name_the_block(replace, by, match):
    assert replace in GPU_BLOCK
    with pytest.raises(WorldError, match=match) as err:
        find_sensors(GPU_BLOCK.replace(replace, by))
    assert "<sensor name='g'>" in str(err.value)


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
    gpu = load_sensor(*plan_config(specs["gpu_lidar"]))
    assert (gpu.rows, gpu.cols, gpu.range_min, gpu.range_max, gpu.layout) == (16, 1800, 0.4, 100.0, "gazebo")
    ours = load_sensor(specs["lidar"].params["preset"], specs["lidar"].params["overrides"])
    assert (ours.rows, ours.range_max) == (64, 80.0)
