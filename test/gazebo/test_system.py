"""The radarays Gazebo system's logic without Gazebo (gazebo/system.py): the sim-time schedule, lockstep,
frame ids as Gazebo names them, poses taken at the step, the gz message conversion and the
generate_world_sdf request. The system inside a real gz sim: test_gz_system.py."""
from __future__ import annotations

import numpy as np
import pytest

from radarays_ros.errors import ConfigError
from radarays_ros.gazebo.sensors import find_sensors, plan_config
from radarays_ros.gazebo.system import (PLUGIN_LINE, RateSchedule, SensorRuntime, SystemOptions, gazebo_frame_id,
                                        moving_entities, world_sdf_request)

MS = 1_000_000

WORLD = """<?xml version="1.0"?>
<sdf version="1.11"><world name="w">
  <model name="wall"><static>true</static><pose>6 0 1 0 0 0</pose><link name="link">
    <visual name="visual"><geometry><box><size>0.4 8 2</size></box></geometry></visual></link></model>
  <model name="mover"><pose>3 0 1 0 0 0</pose><link name="link">
    <visual name="visual"><geometry><box><size>1 1 1</size></box></geometry></visual></link></model>
  <model name="rig"><static>true</static><pose>0 0 1 0 0 0</pose><link name="base">
    <sensor name="lidar" type="custom" gz:type="radarays_lidar">
      <update_rate>10</update_rate><topic>rig/lidar</topic>
      <radarays_lidar><preset>VLP-16</preset></radarays_lidar>
    </sensor>
    <sensor name="named" type="custom" gz:type="radarays_lidar">
      <update_rate>4</update_rate><topic>rig/named</topic><gz_frame_id>lidar_link</gz_frame_id>
    </sensor></link></model>
</world></sdf>"""


# -- schedule ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("step_ms, rate_hz, duration_ms, expected", [
    (1, 10.0, 1000, [0, 100, 200, 300, 400, 500, 600, 700, 800, 900]),
    (30, 10.0, 330, [0, 120, 210, 300]),  # a step past an update time: the frame at that step, then k / r again
    (4, 4.0, 1000, [0, 252, 500, 752]),  # the first step at or after each update time
])
def test_schedule_fires_at_update_times_in_sim_time(step_ms, rate_hz, duration_ms, expected):
    s = RateSchedule(int(round(1e9 / rate_hz)))
    fired = [t for t in range(0, duration_ms, step_ms) if s.due(t * MS)]
    assert fired == expected


def test_schedule_starts_at_the_first_step_it_sees():
    s = RateSchedule(100 * MS)
    assert s.due(5_000 * MS) and not s.due(5_050 * MS) and s.due(5_100 * MS)


def test_a_step_longer_than_the_period_gives_one_frame_not_a_burst():
    s = RateSchedule(100 * MS)
    assert [t for t in (0, 250, 260, 300, 350) if s.due(t * MS)] == [0, 250, 350]


def test_schedule_rejects_a_zero_period():
    with pytest.raises(ConfigError, match="period"):
        RateSchedule(0)


# -- options, names, requests -----------------------------------------------------------------------
def test_plugin_options():
    assert SystemOptions.from_xml(PLUGIN_LINE) == SystemOptions(lockstep=True, backend="embree")
    off = PLUGIN_LINE.replace("</plugin>", "<lockstep>false</lockstep></plugin>")
    assert SystemOptions.from_xml(off).lockstep is False
    with pytest.raises(ConfigError, match="lockstep"):
        SystemOptions.from_xml(PLUGIN_LINE.replace("</plugin>", "<lockstep>maybe</lockstep></plugin>"))
    assert "gz-sim-python-system-loader-system" in PLUGIN_LINE and "<module_name>radarays_ros.gazebo.system<" in PLUGIN_LINE


def test_frame_ids_as_gazebo_names_them():
    specs = {s.name: s for s in find_sensors(WORLD)}
    assert gazebo_frame_id(specs["lidar"]) == "rig::base::lidar"  # gz-sensors: the scoped sensor name
    assert gazebo_frame_id(specs["named"]) == "lidar_link"  # <gz_frame_id>


def test_update_rate_sets_the_sensor_rate():
    specs = {s.name: s for s in find_sensors(WORLD)}
    config, overrides = plan_config(specs["lidar"])
    assert config == "VLP-16" and overrides == {"rate_hz": 10.0}


def test_world_sdf_request_expands_includes():
    from support import gz_harmonic

    if not gz_harmonic.stage_complete("transport"):
        pytest.skip(gz_harmonic.missing("transport"))
    gz_harmonic.import_bindings()
    from gz.msgs10.sdf_generator_config_pb2 import SdfGeneratorConfig

    msg = SdfGeneratorConfig()
    msg.ParseFromString(world_sdf_request())
    assert msg.global_entity_gen_config.expand_include_tags.data is True
    assert world_sdf_request(False) == b""


# -- the runtime on a real scene ---------------------------------------------------------------------
def _runtime(lockstep=True, link_pose=None, world=WORLD, names=("lidar",)):
    from radarays_ros.tracing.backend import make_backend
    from radarays_ros.world.entities import add_entities
    from radarays_ros.world.materials import MaterialLibrary
    from radarays_ros.world.scene import Scene
    from radarays_ros.world.sdf import parse_sdf_string

    scene = Scene(MaterialLibrary.load_user(None))
    from radarays_ros.gazebo.scene_sdf import declare_prefixes

    parsed = parse_sdf_string(declare_prefixes(world), ".", scene.materials, source="test", strict=False)
    add_entities(scene, parsed.entities)
    specs = [s for s in find_sensors(world) if s.name in names]
    published = []
    poses = {"rig::base": np.eye(4), "mover::link": np.eye(4)}
    poses["rig::base"][2, 3] = 1.0
    poses["mover::link"][:3, 3] = (3.0, 0.0, 1.0)
    rt = SensorRuntime(scene, specs, make_backend("embree", scene), link_pose or poses.get,
                       lambda kind, topic, msg: published.append((kind, topic, msg)), lockstep=lockstep,
                       moving=moving_entities(parsed.entities))
    return rt, published, poses


def _forward_range(msg) -> float:
    """Median x of the points within 2 degrees of +x at sensor height (the cloud's x, y, z fields)."""
    names = [f.name for f in msg.fields]
    offsets = {f.name: f.offset for f in msg.fields}
    raw = np.asarray(msg.data, np.uint8).reshape(-1, msg.point_step)
    xyz = np.stack([raw[:, offsets[n]:offsets[n] + 4].copy().view("<f4")[:, 0] for n in ("x", "y", "z")], axis=1)
    assert {"x", "y", "z"} <= set(names)
    ok = np.isfinite(xyz).all(axis=1) & (np.abs(np.arctan2(xyz[:, 1], xyz[:, 0])) < np.radians(2)) & \
        (np.abs(xyz[:, 2]) < 0.1) & (np.linalg.norm(xyz, axis=1) > 0.1)
    return float(np.median(xyz[ok, 0]))


def test_lockstep_publishes_every_due_frame_in_the_step_with_sim_time_stamps():
    rt, published, _ = _runtime()
    started = [rt.step(t * MS) for t in range(0, 500, 1)]
    assert sum(started) == 5 and len(published) == 5  # 10 Hz over 0.5 s of 1 ms steps, all inside their steps
    stamps = [m.header.stamp.sec * 1_000_000_000 + m.header.stamp.nanosec for _, _, m in published]
    # sweeps start at 0, 100, ... ms of sim time; each is stamped as its driver stamps a sweep (VLP-16: the
    # last firing, within the sweep), so the stamps keep the update period exactly
    assert np.diff(stamps).tolist() == [100 * MS] * 4 and 0 <= stamps[0] < 100 * MS
    assert {(k, t, m.header.frame_id) for k, t, m in published} == {("lidar", "/rig/lidar", "rig::base::lidar")}


def test_poses_are_those_of_the_step():
    """The mover (a box in front of the sensor) is where link_pose says at each frame: 3 m, then 4.5 m."""
    rt, published, poses = _runtime()
    rt.step(0)
    poses["mover::link"][0, 3] = 4.5
    rt.step(100 * MS)
    near, far = (_forward_range(m) for _, _, m in published)
    assert near == pytest.approx(2.5, abs=0.05)  # box face at 3 - 0.5
    assert far == pytest.approx(4.0, abs=0.05)


def test_without_lockstep_a_busy_sensor_drops_the_frame():
    import threading

    gate = threading.Event()
    rt, published, poses = _runtime(lockstep=False)
    real = rt._frames

    def slow(*args):
        gate.wait(10)
        real(*args)

    rt._frames = slow
    assert rt.step(0) == 1  # runs in the worker
    assert rt.step(100 * MS) == 0  # still busy: dropped, the step goes on
    gate.set()
    rt.wait()
    assert len(published) == 1 and rt.sensors[0].dropped == 1


def test_gz_messages_carry_the_ros_layout():
    from support import gz_harmonic

    if not gz_harmonic.stage_complete("transport"):
        pytest.skip(gz_harmonic.missing("transport"))
    gz_harmonic.import_bindings()
    from gz.msgs10.pointcloud_packed_pb2 import PointCloudPacked

    from radarays_ros.gazebo.system import cloud_to_gz

    rt, published, _ = _runtime()
    rt.step(0)
    ros = published[0][2]
    gz = cloud_to_gz(ros, PointCloudPacked)
    assert gz.header.data[0].key == "frame_id" and list(gz.header.data[0].value) == ["rig::base::lidar"]
    assert (gz.width, gz.height, gz.point_step, gz.row_step) == (ros.width, ros.height, ros.point_step, ros.row_step)
    assert [(f.name, f.offset, f.datatype + 1) for f in gz.field] == [(f.name, f.offset, f.datatype) for f in ros.fields]
    assert gz.field[0].datatype == PointCloudPacked.Field.FLOAT32  # x: ROS FLOAT32 = 7, gz FLOAT32 = 6
    assert gz.data == np.asarray(ros.data, np.uint8).tobytes()


def test_a_gpu_lidar_block_gives_gz_sensors_rays_and_cloud():
    """A plain <sensor type="gpu_lidar"> (64 x 8 rays, -0.5...0.5 rad by -0.3...0.35 rad) in front of the wall
    whose face is 5.8 m ahead: the cloud gz-sensors' GpuLidarSensor sends (FillPointCloudMsg): on <topic>/points,
    x,y,z,intensity,ring at 0/4/8/16/24 of 32 bytes, height = vertical samples, ring = row (row 0 lowest),
    each point along min + k (max - min) / (samples - 1) in both angles, misses at +-inf along their ray."""
    block = """<sensor name="g" type="gpu_lidar"><update_rate>10</update_rate><topic>rig/g</topic>
      <lidar><scan><horizontal><samples>64</samples><min_angle>-0.5</min_angle><max_angle>0.5</max_angle></horizontal>
      <vertical><samples>8</samples><min_angle>-0.3</min_angle><max_angle>0.35</max_angle></vertical></scan>
      <range><min>0.1</min><max>30</max></range></lidar></sensor></link></model>"""
    world = WORLD.replace("</sensor></link></model>", "</sensor>" + block, 1)
    assert world != WORLD
    rt, published, poses = _runtime(world=world, names=("g",))
    poses["mover::link"][:3, 3] = (3.0, 3.0, 1.0)  # out of the field of view
    rt.step(0)
    ((kind, topic, msg),) = published
    assert (kind, topic, msg.header.frame_id) == ("lidar", "/rig/g/points", "rig::base::g")
    F32, U16 = 7, 4  # sensor_msgs/PointField datatypes
    assert [(f.name, f.offset, f.datatype, f.count) for f in msg.fields] == [
        ("x", 0, F32, 1), ("y", 4, F32, 1), ("z", 8, F32, 1), ("intensity", 16, F32, 1), ("ring", 24, U16, 1)]
    assert (msg.height, msg.width, msg.point_step, msg.row_step) == (8, 64, 32, 64 * 32)
    cloud = np.frombuffer(np.asarray(msg.data, np.uint8).tobytes(), np.dtype(
        {"names": ["x", "y", "z", "intensity", "ring"], "formats": ["<f4"] * 4 + ["<u2"],
         "offsets": [0, 4, 8, 16, 24], "itemsize": 32})).reshape(8, 64)
    assert (cloud["ring"] == np.arange(8)[:, None]).all()
    xyz = np.stack([cloud["x"], cloud["y"], cloud["z"]], axis=-1).astype(float)
    inclination = -0.3 + np.arange(8) * 0.65 / 7
    azimuth = -0.5 + np.arange(64) * 1.0 / 63
    hit = np.isfinite(xyz).all(axis=-1)
    # ray (row j, column i) meets the wall's plane x = 5.8 at height t sin(inclination), t = 5.8 / (cos inc cos az);
    # the wall spans z 0...2 around the sensor at 1 m: a return iff that height is within +-1 m
    el, az = np.meshgrid(inclination, azimuth, indexing="ij")
    height = 5.8 * np.tan(el) / np.cos(az)
    clear = np.abs(np.abs(height) - 1.0) > 0.01  # rays grazing the wall's top or bottom edge: either way
    assert (hit == (np.abs(height) < 1.0))[clear].all() and hit.sum() > 100 and (~hit).sum() > 100
    assert np.allclose(xyz[hit][:, 0], 5.8, atol=1e-3)
    rng = np.linalg.norm(np.where(hit[..., None], xyz, 0.0), axis=-1)
    rows, cols = np.nonzero(hit)
    np.testing.assert_allclose(np.arctan2(xyz[hit][:, 1], xyz[hit][:, 0]), azimuth[cols], atol=1e-5)
    np.testing.assert_allclose(np.arcsin(xyz[hit][:, 2] / rng[hit]), inclination[rows], atol=1e-5)
    missed = ~hit
    assert (np.isinf(xyz[missed][:, 0]) & (xyz[missed][:, 0] > 0)).all()  # +inf range times the ray
    assert (np.sign(xyz[missed][:, 2]) == np.sign(inclination[np.nonzero(missed)[0]])).all()


# -- the system's hooks with a stand-in for gz.sim8 (the real one: test_gz_system.py) -----------------
class _Vec:
    def __init__(self, *v):
        self.v = v

    def x(self):
        return self.v[0]

    def y(self):
        return self.v[1]

    def z(self):
        return self.v[2]

    def w(self):
        return self.v[3]


class _Pose:
    def __init__(self, xyz, xyzw=(0.0, 0.0, 0.0, 1.0)):
        self._p, self._q = _Vec(*xyz), _Vec(*xyzw)

    def pos(self):
        return self._p

    def rot(self):
        return self._q


def _fake_gz_sim(monkeypatch, tree: dict, poses: dict, velocities: dict | None = None, enabled: list | None = None,
                 static: frozenset = frozenset()):
    """gz.sim8 with World / Model / Link over `tree` {entity: (name, kind, parent)} and link `poses`; a link's
    velocities {entity: (linear _Vec, angular _Vec)} reported once `enable_velocity_checks` was called on it (as
    gz-sim's physics fills the components only then; `enabled` records the calls); `static`: static models."""
    velocities = {} if velocities is None else velocities
    enabled = [] if enabled is None else enabled
    import sys
    import types

    def children(entity, kind):
        return [e for e, (_, k, parent) in tree.items() if parent == entity and k == kind]

    class World:
        def __init__(self, e):
            self.e = e

        def models(self, ecm):
            return children(self.e, "model")

        def name(self, ecm):
            return tree[self.e][0]

        def model_by_name(self, ecm, name):
            return next((e for e in children(self.e, "model") if tree[e][0] == name), 0)

    class Model:
        def __init__(self, e):
            self.e = e

        def name(self, ecm):
            return tree[self.e][0]

        def models(self, ecm):
            return children(self.e, "model")

        def link_by_name(self, ecm, name):
            return next((e for e in children(self.e, "link") if tree[e][0] == name), 0)

        def links(self, ecm):
            return children(self.e, "link")

        def static(self, ecm):
            return self.e in static

    class Link:
        def __init__(self, e):
            self.e = e

        def world_pose(self, ecm):
            return poses.get(self.e)

        def enable_velocity_checks(self, ecm, enable=True):
            enabled.append((self.e, enable))

        def _velocity(self, k):
            return velocities[self.e][k] if self.e in velocities and (self.e, True) in enabled else None

        def world_linear_velocity(self, ecm):
            return self._velocity(0)

        def world_angular_velocity(self, ecm):
            return self._velocity(1)

    gz = types.ModuleType("gz")
    sim8 = types.ModuleType("gz.sim8")
    sim8.World, sim8.Model, sim8.Link = World, Model, Link
    gz.sim8 = sim8
    monkeypatch.setitem(sys.modules, "gz.sim8", sim8)
    monkeypatch.setitem(sys.modules, "gz.math7", types.ModuleType("gz.math7"))
    if "gz" not in sys.modules:
        monkeypatch.setitem(sys.modules, "gz", gz)


class _Info:
    def __init__(self, ms, paused=False):
        import datetime

        self.sim_time, self.paused = datetime.timedelta(milliseconds=ms), paused


class _Sdf:
    def __init__(self, text):
        self.text = text

    def to_string(self, prefix):
        return self.text


def test_system_hooks_load_the_world_once_and_place_sensors_on_nested_links(monkeypatch):
    from radarays_ros.gazebo.system import RadaraysSystem, get_system

    world = WORLD.replace('<model name="rig"><static>true</static><pose>0 0 1 0 0 0</pose><link name="base">',
                          '<model name="robot"><static>true</static><model name="rig"><pose>0 0 1 0 0 0</pose>'
                          '<link name="base">').replace("</link></model>\n</world>", "</link></model></model>\n</world>")
    tree = {1: ("w", "world", None), 2: ("wall", "model", 1), 3: ("mover", "model", 1), 4: ("robot", "model", 1),
            5: ("rig", "model", 4), 6: ("base", "link", 5), 7: ("link", "link", 3)}
    poses = {6: _Pose((0.0, 0.0, 1.0)), 7: _Pose((3.0, 0.0, 1.0))}
    _fake_gz_sim(monkeypatch, tree, poses)
    system = get_system()
    assert isinstance(system, RadaraysSystem)
    system.configure(1, _Sdf(PLUGIN_LINE), None, None)
    asked, published = [], []
    monkeypatch.setattr(system, "_world_sdf", lambda: asked.append(system.world_name) or world)
    monkeypatch.setattr(system, "_publish", lambda kind, topic, msg: published.append((topic, msg.header.frame_id)))
    for ms in range(0, 301):
        system.post_update(_Info(ms), None)
    system.post_update(_Info(301, paused=True), None)
    assert asked == ["w"]  # once: the models did not change
    assert published.count(("/rig/lidar", "robot::rig::base::lidar")) == 4  # 0, 100, 200, 300 ms
    assert not any(topic == "/rig/named" for topic, _ in published)  # VLP-16 runs at 5-20 Hz: 4 is refused,
    assert len(system.runtime.rejected) == 1 and "rate_hz" in system.runtime.rejected[0]  # that sensor only
    assert "<sensor name='named'>" in system.runtime.rejected[0] or "named" in system.runtime.rejected[0]
    assert not system._failed

    tree[8] = ("visitor", "model", 1)  # a spawned model: the world is read again
    system.post_update(_Info(302), None)
    assert asked == ["w", "w"]


def test_moving_links_get_the_physics_velocities_from_the_first_frame_on(monkeypatch, caplog):
    """pre_update, before the physics runs the step, enables the velocity components of the links of the non-static
    models (the mover's and its nested arm's, not the static wall's or rig's), again only when the models change;
    the first frame (the step that loads the world) already hands the mover's velocities to the scene with its
    pose: its visual, 0.5 m above the link's origin, moves at v + w x r; a link the physics reports nothing for gets
    no twist (the radar then differences its poses)."""
    import logging

    from radarays_ros.gazebo.system import get_system

    world = WORLD.replace('<visual name="visual"><geometry><box><size>1 1 1</size>',
                          '<visual name="visual"><pose>0 0 0.5 0 0 0</pose><geometry><box><size>1 1 1</size>')
    tree = {1: ("w", "world", None), 2: ("wall", "model", 1), 3: ("mover", "model", 1), 4: ("rig", "model", 1),
            5: ("base", "link", 4), 6: ("link", "link", 2), 7: ("link", "link", 3),
            10: ("arm", "model", 3), 11: ("link", "link", 10)}  # a model nested in the mover: its link too
    poses = {5: _Pose((0.0, 0.0, 1.0)), 7: _Pose((3.0, 0.0, 1.0))}
    enabled = []
    velocities = {7: (_Vec(0.4, 0.0, 0.0), _Vec(0.0, 0.0, 2.0))}
    _fake_gz_sim(monkeypatch, tree, poses, velocities, enabled, static=frozenset({2, 4}))
    system = get_system()
    system.configure(1, _Sdf(PLUGIN_LINE), None, None)
    monkeypatch.setattr(system, "_world_sdf", lambda: world)
    monkeypatch.setattr(system, "_publish", lambda kind, topic, msg: None)
    caplog.set_level(logging.INFO, logger="radarays_ros.gazebo.system")
    for ms in range(0, 101):  # the loop of gz-sim: pre_update, the physics, post_update
        system.pre_update(_Info(ms), None)
        system.post_update(_Info(ms), None)
        if ms == 0:  # the step that loads the world: its frame has the velocities already
            mover = system.runtime.scene.entity("mover::link::visual")
            assert mover.twist is not None
    assert sorted(enabled) == [(7, True), (11, True)] and not system._failed  # once: the models did not change
    velocity, angular = mover.twist
    np.testing.assert_allclose(angular, [0.0, 0.0, 2.0], rtol=0, atol=0)
    np.testing.assert_allclose(velocity, [0.4, 0.0, 0.0] + np.cross([0.0, 0.0, 2.0], [0.0, 0.0, 0.5]), atol=1e-12)
    velocities.clear()  # the physics reports nothing now: no twist with the next frame's pose
    for ms in range(101, 201):
        system.post_update(_Info(ms), None)
    assert mover.twist is None
    tree[8], tree[9] = ("visitor", "model", 1), ("link", "link", 8)  # a spawned model: its link too
    system.pre_update(_Info(201), None)
    assert sorted(enabled[2:]) == [(7, True), (9, True), (11, True)]  # every non-static model's links
    lines = [r.getMessage() for r in caplog.records if "moving links from the physics" in r.getMessage()]
    assert lines == ["radarays system: velocities of 1 of 1 moving links from the physics (fastest: mover::link at 0.40 m/s)",
                     "radarays system: velocities of 0 of 1 moving links from the physics"]


def test_an_entity_moves_with_its_link_as_a_rigid_body():
    from radarays_ros.gazebo.system import entity_twist
    from radarays_ros.world.transforms import pose_to_matrix

    link = pose_to_matrix(1.0, 2.0, 0.0, 0.0, 0.0, 0.7)
    entity = link @ pose_to_matrix(0.0, 1.5, 0.0)  # 1.5 m along the link's y: r = R (0, 1.5, 0)
    v, w = entity_twist((np.array([1.0, 0.0, 0.0]), np.array([0.0, 0.0, 0.4])), link, entity)
    r = link[:3, :3] @ np.array([0.0, 1.5, 0.0])
    np.testing.assert_allclose(v, [1.0 - 0.4 * r[1], 0.4 * r[0], 0.0], atol=1e-12)
    assert w.tolist() == [0.0, 0.0, 0.4] and entity_twist(None, link, entity) is None


def test_a_world_that_does_not_load_is_tried_again_each_sim_second(monkeypatch):
    from radarays_ros.gazebo.system import get_system

    _fake_gz_sim(monkeypatch, {1: ("w", "world", None)}, {})
    system = get_system()
    system.configure(1, _Sdf(PLUGIN_LINE), None, None)
    calls = []

    def fail():
        calls.append(1)
        raise RuntimeError("/world/w/generate_world_sdf gave no answer")

    monkeypatch.setattr(system, "_world_sdf", fail)
    for ms in range(0, 2500, 10):
        system.post_update(_Info(ms), None)
    assert len(calls) == 3 and not system._failed  # at 0, 1 and 2 s; the server keeps running


def test_pose_of_a_gz_math7_pose3d():
    """Link.world_pose's Pose3d (the official gz.math7 bindings, when the cache has them) as a 4x4."""
    from support import gz_harmonic

    why = gz_harmonic.python_systems_missing()
    p = gz_harmonic.prefix()
    if p is None or not any(p.glob("lib/python/gz/math7*.so")):
        pytest.skip(why or "no gz.math7 bindings in the cache")
    gz_harmonic.import_bindings()
    import gz.math7 as gm

    from radarays_ros.gazebo.system import _pose_matrix

    m = _pose_matrix(gm.Pose3d(1, 2, 3, 0.1, -0.2, 0.5))  # x y z roll pitch yaw
    cr, sr, cp, sp, cy, sy = np.cos(0.1), np.sin(0.1), np.cos(-0.2), np.sin(-0.2), np.cos(0.5), np.sin(0.5)
    rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    np.testing.assert_allclose(m[:3, :3], rz @ ry @ rx, atol=1e-12)  # SDF / gz-math: extrinsic roll, pitch, yaw
    np.testing.assert_allclose(m[:3, 3], [1, 2, 3])
