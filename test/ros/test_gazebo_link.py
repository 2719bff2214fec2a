"""How SDF-declared sensors become node sensors (no ROS needed): topics, names, overrides, errors."""
from __future__ import annotations

import numpy as np
import pytest

from radarays_ros.errors import ConfigError
from radarays_ros.gazebo.sensors import find_sensors
from radarays_ros.ros.gazebo_link import sdf_sensor_plan, sdf_topic, unique_name
from radarays_ros.radar.config import resolve_radar_config
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


# -- GazeboLink: what a node asks of a followed Gazebo, against a stand-in mirror (no transport) --------
class _Mirror:
    """The parts of GazeboMirror a GazeboLink reads: alive, world, sim time, link poses now."""

    def __init__(self, links: dict):
        self.alive, self.world, self.sim_time_ns, self.links = True, "w", 7_000_000_000, links

    def frame_pose(self, name):
        return self.links.get(name)


class _Log:
    def __init__(self):
        self.lines = []

    def info(self, text):
        self.lines.append(text)

    warning = error = info


def _link(mirror=None, **params):
    from radarays_ros.ros.gazebo_link import GazeboLink

    values = {"gazebo.clock": "ros", "gazebo.urdf_model": "", **params}
    errors = []
    link = GazeboLink(values.get, _Log(), errors.append)
    link.mirror = mirror
    return link, errors


def test_sensor_pose_follows_the_recorded_link_across_the_sweep_then_falls_back_to_now():
    from radarays_ros.ros.gazebo_link import GAZEBO_FRAME
    from radarays_ros.world.trajectory import Trajectory

    mount = pose_to_matrix(0.5, 0.0, 0.2, 0.0, 0.0, 0.0)
    link, _ = _link(_Mirror({"bot::base": pose_to_matrix(9.0, 0.0, 0.0, 0.0, 0.0, 0.0)}))
    for t_ns, x in ((0, 0.0), (100_000_000, 1.0)):  # the link moves 1 m in 0.1 s
        link.poses.set_transform(GAZEBO_FRAME, "bot::base", t_ns, (x, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0))
    sweep = link.sensor_pose("bot::base", mount, 0, 100_000_000, 0, 200.0, "gazebo_parent")
    assert isinstance(sweep, Trajectory)
    xs = sweep.poses[:, 0, 3]
    assert xs[0] == pytest.approx(0.5) and xs[-1] == pytest.approx(1.5)  # link x + the mount's 0.5 m
    assert np.all(np.diff(xs) > 0)  # each sample at its own time: motion distorts the sweep
    # a sweep the samples do not cover: the link's pose now (the mirror's) times the mount
    later = link.sensor_pose("bot::base", mount, 5_000_000_000, 100_000_000, 0, 200.0, "gazebo_parent")
    np.testing.assert_allclose(later, pose_to_matrix(9.5, 0.0, 0.2, 0.0, 0.0, 0.0))


def test_sensor_pose_errors_name_what_to_set():
    from radarays_ros.sensors.tf_buffer import TransformLookupError

    link, _ = _link(_Mirror({}))
    with pytest.raises(TransformLookupError, match="set front.gazebo_parent to the Gazebo link"):
        link.sensor_pose("", np.eye(4), 0, 1, 0, 200.0, "front.gazebo_parent")
    with pytest.raises(TransformLookupError, match="no link 'chassis' .URDF sensors need gazebo.urdf_model"):
        link.sensor_pose("chassis", np.eye(4), 0, 1, 0, 200.0, "gazebo_parent")
    with pytest.raises(TransformLookupError, match="needs gazebo.enable"):
        _link(None)[0].sensor_pose("a::b", np.eye(4), 0, 1, 0, 200.0, "gazebo_parent")


def test_clock_links_carrying_sensors_and_plans_of_new_sdf_sensors():
    from types import SimpleNamespace

    link, errors = _link(_Mirror({}), **{"gazebo.clock": "gazebo"})
    assert link.now_ns(lambda: 1) == 7_000_000_000 and link.steady_ticks
    assert _link(_Mirror({}))[0].now_ns(lambda: 1) == 1
    sdf_sensor = SimpleNamespace(name="front", gazebo_parent="bot::mast", sdf=SimpleNamespace(key="bot::mast::front"))
    param_sensor = SimpleNamespace(name="rear", gazebo_parent="bot::base", sdf=None)
    assert link.carrying_links([sdf_sensor, param_sensor], "tf") == {"bot::mast"}
    assert link.carrying_links([sdf_sensor, param_sensor], "gazebo") == {"bot::mast", "bot::base"}
    specs = find_sensors("""<sdf version="1.9"><model name="bot"><link name="mast">
      <sensor name="front" type="custom" gz:type="radarays_lidar"><topic>front/points</topic></sensor>
      <sensor name="rear" type="custom" gz:type="radarays_lidar"><topic>rear/points</topic></sensor>
      </link></model></sdf>""")
    (plan,) = link.plan(specs, [sdf_sensor, param_sensor])  # front runs already; rear is a new one
    assert plan.key == "bot::mast::rear" and plan.name == "bot_rear"  # 'rear' is taken by a parameter sensor
    assert errors == []


# -- LogRelay: each Gazebo-layer record reaches the ROS log once per process -----------------------------
def test_gazebo_layer_records_reach_the_ros_log_once_however_many_nodes_relay_them():
    import logging
    import threading

    from radarays_ros.ros.gazebo_link import LogRelay

    gazebo = logging.getLogger("radarays_ros.gazebo")
    before = list(gazebo.handlers)

    def warn_from_a_thread(text):  # as the mirror / transport threads do: outside any node's scope
        worker = threading.Thread(target=logging.getLogger("radarays_ros.gazebo.mirror").warning, args=(text,))
        worker.start()
        worker.join()

    first, second = LogRelay(_Log()).attach(), LogRelay(_Log()).attach()  # two nodes of one process
    try:
        warn_from_a_thread("world 'w' stopped publishing poses")
        assert first.ros_logger.lines + second.ros_logger.lines == ["world 'w' stopped publishing poses"]
        with second.scope():  # logged in the second node's scope: that node says it, once
            logging.getLogger("radarays_ros.gazebo.transport").warning("second's own")
        assert second.ros_logger.lines == ["second's own"] and "second's own" not in first.ros_logger.lines
        first.detach()  # the first node is destroyed: the process-wide role passes to the second
        warn_from_a_thread("world 'w' is publishing poses")
        assert second.ros_logger.lines == ["second's own", "world 'w' is publishing poses"]
        assert first.ros_logger.lines == ["world 'w' stopped publishing poses"]
    finally:
        first.detach()
        second.detach()
    assert gazebo.handlers == before  # detached all: no relay left on the logger
    warn_from_a_thread("nobody listens")
    assert "nobody listens" not in first.ros_logger.lines + second.ros_logger.lines


def test_scoped_relay_says_only_what_its_scope_logs():
    import logging

    from radarays_ros.ros.gazebo_link import LogRelay

    mine = LogRelay(_Log(), "radarays_ros.radar", scoped=True).attach()
    try:
        logging.getLogger("radarays_ros.radar.x").warning("another node's frame")
        with mine.scope():
            logging.getLogger("radarays_ros.radar.x").warning("my frame")
    finally:
        mine.detach()
    assert mine.ros_logger.lines == ["my frame"]


class _TwoWorlds:
    """A gz-transport client that sees two worlds: a mirror not told which one warns from its thread."""

    def __init__(self, worlds):
        self.worlds = worlds

    def topics(self):
        return [f"/world/{w}/pose/info" for w in self.worlds]

    def alive(self, topic):
        return False

    def close(self):
        pass


def test_each_link_relays_the_lines_of_its_own_mirror_thread(monkeypatch):
    import time

    from radarays_ros.gazebo.mirror import GazeboMirror, MirrorConfig
    from radarays_ros.ros import gazebo_link

    clients = iter([_TwoWorlds(("a1", "a2")), _TwoWorlds(("b1", "b2"))])
    monkeypatch.setattr(gazebo_link, "start_mirror",
                        lambda **_: GazeboMirror(MirrorConfig(), client=next(clients)).start())
    links = [_link()[0], _link()[0]]
    try:
        for link in links:
            assert link.start() == ""
        end = time.monotonic() + 10.0
        while time.monotonic() < end and not all(any("several worlds" in t for t in link.log.lines) for link in links):
            time.sleep(0.05)
    finally:
        for link in links:
            link.close()
    first, second = ([t for t in link.log.lines if "several worlds" in t] for link in links)
    assert first and all("(a1, a2)" in t for t in first)  # the first node: its own mirror's lines only
    assert second and all("(b1, b2)" in t for t in second)  # not handed to the process-wide (first) relay
