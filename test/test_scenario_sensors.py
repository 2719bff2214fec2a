"""Sensor units shared by the nodes and the scenario runner: configs, output options, messages."""
from __future__ import annotations

import numpy as np
import pytest

from radarays_ros.errors import ConfigError
from radarays_ros.radar.config import resolve_radar_config
from radarays_ros.sensors.params import ParamInfo, check_param, flatten
from radarays_ros.sensors.poses import poses_over
from radarays_ros.sensors.units import LidarUnit, RadarUnit, make_unit
from radarays_ros.tracing import make_backend
from radarays_ros.world.mesh import TriMesh
from radarays_ros.world.scene import Scene
from radarays_ros.world.transforms import pose_to_matrix


@pytest.fixture(scope="module")
def wall_scene():
    """One wall 5 m ahead of the origin (x = 5), 10 m wide and 4 m tall."""
    scene = Scene(source="wall")
    v = np.array([[5, -5, -2], [5, 5, -2], [5, 5, 2], [5, -5, 2]], float)
    scene.add_entity("wall::link::visual", TriMesh(v, np.array([[0, 1, 2], [0, 2, 3]])), material="concrete")
    return scene, make_backend("embree", scene)


def test_flatten_keeps_what_ros_parameters_can_hold():
    spec = {"range": {"min": 0.1, "max": 100}, "limits": [[0.1, 50.0]], "beams": [1, 2.5], "rings": [0, 1],
            "names": ["a"], "mixed": [1, "a"], "empty": [], "type": "velodyne"}
    assert flatten(spec) == {"range.min": 0.1, "range.max": 100, "beams": [1.0, 2.5], "rings": [0, 1],
                             "names": ["a"], "type": "velodyne"}


def test_check_param_names_the_key_and_the_allowed_values():
    assert check_param("k", 3, ParamInfo(1, lo=0, hi=5, kind=int)) == 3
    with pytest.raises(ConfigError, match=r"k = 9: out of range, allowed \[0, 5\]"):
        check_param("k", 9, ParamInfo(1, lo=0, hi=5, kind=int))
    with pytest.raises(ConfigError, match="k = .c.: not a choice, allowed one of a, b"):
        check_param("k", "c", ParamInfo("a", choices=("a", "b")))
    with pytest.raises(ConfigError, match="finite"):
        check_param("k", float("nan"), ParamInfo(1.0, lo=0, hi=5, kind=float))
    assert check_param("k", ["", "x"], ParamInfo([""], choices=("x",), kind=list)) == ["x"]


def test_unknown_radar_preset_lists_the_presets():
    with pytest.raises(ConfigError, match="unknown radar config 'nope'.*navtech_cir204"):
        resolve_radar_config("nope")


def test_radar_unit_sees_the_wall_and_builds_messages(wall_scene):
    scene, backend = wall_scene
    unit = make_unit("radar", "r", scene, backend, config="radarays_default",
                     overrides={"azimuth.count": 8, "azimuth.step_deg": -45.0, "range.bins": 200,
                                "range.resolution": 0.05, "beam.samples": 4, "tracing.passes": 1, "kernel.width": 3})
    assert isinstance(unit, RadarUnit) and unit.period_ns == 250_000_000 and unit.rays_per_frame == 32
    img = unit.simulate(np.eye(4), 0)
    assert (img.image_f32[0].argmax() + 0.5) * 0.05 == pytest.approx(5.0, abs=0.15)
    msgs = unit.messages(img, 7)
    assert set(msgs) == {"radar/image", "radar/points"}  # the Cartesian picture only on demand
    assert msgs["radar/image"].header.frame_id == "radar" and msgs["radar/image"].height == 200
    unit.set_output({"image_layout": "azimuth_rows", "image_encoding": "32FC1"})
    pic = unit.messages(img, 7, {"radar/image", "radar/image_cartesian"})
    assert pic["radar/image"].height == 8 and pic["radar/image"].encoding == "32FC1"
    assert pic["radar/image_cartesian"].encoding == "rgb8"
    with pytest.raises(ConfigError, match="image_layout"):
        unit.set_output({"image_layout": "sideways"})
    unit.reconfigure(unit.with_overrides({"azimuth.rate_hz": 8.0}))
    assert unit.period_ns == 125_000_000
    assert unit.params()["beam.samples"].value == 4 and unit.params()["beam.samples"].lo == 1


def test_lidar_unit_reconfigures_and_stamps_like_its_driver(wall_scene):
    scene, backend = wall_scene
    unit = make_unit("lidar", "l", scene, backend, config="VLP-16", frame_id="velodyne",
                     overrides={"noise.sigma": 0.0})
    assert isinstance(unit, LidarUnit) and set(unit.topics) == {"points"}
    scan = unit.simulate(pose_to_matrix(0, 0, 0), 1_000_000_000)
    msg = unit.messages(scan, 1_000_000_000)["points"]
    assert msg.header.frame_id == "velodyne"
    stamp = msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec
    # velodyne: the last firing, not the sweep start. 1800 columns over 0.1 s, the 16 lasers 2.304 us apart
    # (VLP-16 manual): the last one fires at 1799 x 0.1 / 1800 s + 15 x 2.304 us after the sweep start.
    last_firing_s = 1799 * 0.1 / 1800 + 15 * 2.304e-6
    assert (stamp - 1_000_000_000) * 1e-9 == pytest.approx(last_firing_s, abs=1e-7)
    times = np.frombuffer(bytes(msg.data), np.dtype({"names": ["time"], "formats": ["<f4"], "offsets": [18],
                                                     "itemsize": msg.point_step}))["time"]
    assert times.max() == pytest.approx(0.0, abs=1e-7) and times.min() == pytest.approx(-last_firing_s, abs=1e-6)
    unit.reconfigure(unit.with_overrides({"rate_hz": 20}))
    assert unit.period_ns == 50_000_000
    planar = make_unit("lidar", "p", scene, backend, config="URG-04LX")
    assert set(planar.topics) == {"points", "scan"}


def test_poses_over_samples_the_sweep():
    traj = poses_over(lambda t: np.stack([pose_to_matrix(x * 1e-9, 0, 0) for x in t]), 0, 100_000_000, 200.0)
    assert traj.t_ns[0] == 0 and traj.t_ns[-1] == 100_000_000 and len(traj.t_ns) == 21
    assert traj.at([50_000_000])[0][0, 3] == pytest.approx(0.05)


def test_names_moved_out_of_units_still_import_from_there_with_a_warning():
    import radarays_ros.sensors.units as units
    from radarays_ros.io.messages import header_stamp
    from radarays_ros.sensors.topics import sensor_topic

    with pytest.warns(DeprecationWarning, match="moved to radarays_ros.sensors.topics.sensor_topic"):
        assert units.sensor_topic is sensor_topic
    with pytest.warns(DeprecationWarning):
        assert units.header_stamp is header_stamp and units.resolve_radar_config is resolve_radar_config
    with pytest.raises(AttributeError):
        units.no_such_name  # noqa: B018
