"""Nodes from outside the process: what any participant of the ROS domain can send (a /tf message, a parameter
change of any value and type) must neither end a node nor leave it in a state other than the last good one.

Each case once ended radar_node or lidar_node with exit 1 or left every later frame failing (issue 27)."""
from __future__ import annotations

import math
import time
from pathlib import Path

import pytest

from support.ros_harness import NodeProcess, Probe, transform_msg, write_params
from support.waits import wait_for

pytestmark = pytest.mark.ros

ROOM = Path(__file__).parent / "data" / "room.sdf"
SMALL_RADAR = {"azimuth": {"count": 40, "step_deg": -9.0, "rate_hz": 10.0}, "range": {"bins": 300, "resolution": 0.05},
               "beam": {"samples": 4}, "tracing": {"passes": 1}, "kernel": {"width": 5}}


def test_every_helper_of_the_throttled_log_at_every_severity_on_rclpys_logger():
    """rclpy ties a call site to the severity of its first call (ValueError after): the one throttled log
    sends each severity from its own line, and swallows what a logger raises."""
    from rclpy.logging import LoggingSeverity, get_logger

    from radarays_ros.throttled_log import ThrottledLog

    with Probe():  # rclpy initialised (rcutils logging)
        logger = get_logger("radarays_test_throttled")
        logger.set_level(LoggingSeverity.DEBUG)  # every severity reaches rclpy's call-site check
        log = ThrottledLog(logger, period_s=0.0)
        for _ in range(2):
            for helper in ("debug", "info", "warning", "error", "fatal"):
                getattr(log, helper)(f"{helper}: one key at every severity", key="same")
                getattr(log, helper)("keyed by text \x1b[31m\nsecond line")
            for level in (10, 20, 30, 40, 50, 35, 5):
                log.report("same", "by level", level)
        assert log.failures == 0


def test_a_zero_quaternion_on_tf_after_an_error_line_leaves_the_node_running(tmp_path):
    """The world is missing (an ERROR line), then /tf brings a zero quaternion (a WARNING line from the same
    throttled log): rclpy raised `Logger severity cannot be changed between calls` and radar_node exited 1."""
    from tf2_msgs.msg import TFMessage

    params = write_params(tmp_path / "radar.yaml", "radar_node", {
        "world": str(tmp_path / "missing.sdf"), "config": "radarays_default", "pose_source": "tf", "lazy": False,
        "sensor": SMALL_RADAR})
    with Probe() as probe, NodeProcess("radarays_ros.ros.radar_node", params_file=params) as node:
        tf = probe.publisher("/tf", "tf2_msgs/msg/TFMessage")
        probe.wait_for_subscribers(tf)
        for i in range(5):
            bad = transform_msg("map", "radar", 1_000_000_000 + i)
            bad.transform.rotation.z = bad.transform.rotation.w = 0.0  # a zero quaternion
            tf.publish(TFMessage(transforms=[bad]))
            time.sleep(0.1)
        wait_for(lambda: "ignored a /tf transform" in node.output(), 20, 0.2)
        time.sleep(1.0)
        assert node.alive(), node.output()
        log = node.output()
    assert "ignored a /tf transform" in log and "Traceback" not in log and "cannot be changed" not in log


def _radar_node(tmp_path):
    params = write_params(tmp_path / "radar.yaml", "radar_node", {
        "world": str(ROOM), "config": "radarays_default", "pose_source": "fixed", "lazy": False,
        "fixed_pose": [0.0, 0.0, 1.0, 0.0, 0.0, 0.0], "sensor": SMALL_RADAR})
    return NodeProcess("radarays_ros.ros.radar_node", params_file=params)


HOSTILE = [  # (key, value): each is refused and changes nothing
    ("sensor.azimuth.rate_hz", 5e-324),  # subnormal: 1e9 / rate is infinite
    ("sensor.azimuth.rate_hz", 1e-300),  # in the config's range, but no timer can keep its period
    ("sensor.azimuth.rate_hz", math.nan),
    ("sensor.azimuth.rate_hz", math.inf),
    ("sensor.azimuth.rate_hz", -1.0),
    ("sensor.azimuth.rate_hz", "fast"),
    ("sensor.azimuth.rate_hz", [1.0, 2.0]),
    ("sensor.beam.p_in_cone", 5e-324),  # accepted once: every later frame failed (an infinite cone)
    ("sensor.beam.p_in_cone", 1e-310),
    ("sensor.azimuth.count", 2**63 - 1),
    ("sensor.azimuth.count", -math.inf),
    ("sensor.range.bins", True),
    ("sensor.beam.samples", 1e308),
]


def _unset(probe, node_name: str, key: str):
    """set_parameters with a PARAMETER_NOT_SET value (what `ros2 param delete` sends): its result."""
    from rcl_interfaces.msg import Parameter as ParameterMsg
    from rcl_interfaces.msg import ParameterType
    from rcl_interfaces.srv import SetParameters

    client = probe.node.create_client(SetParameters, f"/{node_name}/set_parameters")
    try:
        assert client.wait_for_service(timeout_sec=20)
        request = SetParameters.Request(parameters=[ParameterMsg(name=key)])
        assert request.parameters[0].value.type == ParameterType.PARAMETER_NOT_SET
        future = client.call_async(request)
        wait_for(future.done, 20)
        (result,) = future.result().results
        return result
    finally:
        probe.node.destroy_client(client)


def test_hostile_run_time_parameters_are_refused_and_the_last_good_state_kept(tmp_path):
    keys = sorted({k for k, _ in HOSTILE} | {"sensor.beam.distribution"})
    with Probe() as probe, _radar_node(tmp_path) as node:
        images = probe.subscribe("/radar/image", "sensor_msgs/msg/Image")
        images.wait(1, timeout=40)
        before = probe.get_parameters("radar_node", keys)
        answers = {(k, repr(v)): probe.set_parameters("radar_node", {k: v})[0] for k, v in HOSTILE}
        unset = _unset(probe, "radar_node", "sensor.azimuth.rate_hz")  # rclpy undeclared it for good
        after = probe.get_parameters("radar_node", keys)
        still_settable = probe.set_parameters("radar_node", {"sensor.azimuth.rate_hz": 10.0})[0]
        images.clear()
        later = images.wait(3, timeout=30)
        assert node.alive(), node.output()
        log = node.output()
    refused = {k: a.reason for k, a in answers.items() if not a.successful}
    assert set(refused) == set(answers), {k: a.reason for k, a in answers.items() if a.successful}
    assert all("\n" not in reason for reason in refused.values())
    for tiny in ("5e-324", "1e-300"):  # below the declared range [1e-6 Hz, ...] (radar/config.py MIN_RATE_HZ)
        reason = refused[("sensor.azimuth.rate_hz", tiny)]
        assert "rate_hz" in reason and ("out of range" in reason or "below 1e-100" in reason), reason
    assert "below 1e-100" in refused[("sensor.beam.p_in_cone", "5e-324")]  # validate.py: no setting is that small
    assert not unset.successful and "cannot be unset" in unset.reason
    assert after == before and still_settable.successful
    assert len(later) >= 3 and "Traceback" not in log


@pytest.mark.parametrize("node_name", ["lidar_node", "sensor_rig"])
def test_lidar_rate_and_unset_keys_are_refused_on_lidar_nodes_and_the_rig(tmp_path, node_name):
    lidar = {"config": "VLP-16", "fixed_pose": [0.0, 0.0, 1.0, 0.0, 0.0, 0.0], "frame_id": "velodyne"}
    if node_name == "lidar_node":
        values, prefix, topic = {**lidar}, "", "/points"
    else:
        values, prefix, topic = {"sensors": ["top"], "top": {"type": "lidar", **lidar}}, "top.", "/top/points"
    params = write_params(tmp_path / "node.yaml", node_name, {"world": str(ROOM), "pose_source": "fixed",
                                                                "lazy": False, **values})
    key = prefix + "sensor.rate_hz"
    with Probe() as probe, NodeProcess(f"radarays_ros.ros.{node_name}", params_file=params) as node:
        clouds = probe.subscribe(topic, "sensor_msgs/msg/PointCloud2")
        clouds.wait(1, timeout=40)
        before = probe.get_parameters(node_name, [key, prefix + "sensor.range.max"])
        answers = [probe.set_parameters(node_name, {key: v})[0] for v in (5e-324, 2.2e-308, math.nan, -math.inf,
                                                                           1e308, "fast", 2**62)]
        answers.append(probe.set_parameters(node_name, {prefix + "sensor.range.max": 5e-324})[0])
        unset = _unset(probe, node_name, key)
        after = probe.get_parameters(node_name, [key, prefix + "sensor.range.max"])
        clouds.clear()
        later = clouds.wait(2, timeout=30)
        assert node.alive(), node.output()
        log = node.output()
    assert [a.successful for a in answers] == [False] * len(answers), [a.reason for a in answers]
    assert "rate_hz" in answers[0].reason and ("below 1e-100" in answers[0].reason or "out of range" in answers[0].reason)
    assert not unset.successful and "cannot be unset" in unset.reason
    # >= 2, not == 2: wait(2) returns the whole inbox; a third may come between its check and its read
    assert after == before and len(later) >= 2 and "Traceback" not in log


def test_a_step_that_fails_while_applying_puts_the_sensor_back_exactly(tmp_path, monkeypatch):
    """In process, without DDS: the model change passes its checks, then `reconfigure` fails half-way
    (as RadarSimulator.reconfigure did before the period check): the unit, its simulator and the timer are
    as before, the answer is a refusal and the ERROR line does not raise."""
    import rclpy

    from radarays_ros.ros.node import SensorNode
    from radarays_ros.sensors.units import RadarUnit

    context = rclpy.Context()
    rclpy.init(context=context, args=["--ros-args", "-p", f"world:={ROOM}", "-p", "pose_source:=fixed"])
    try:
        node = SensorNode("radar_node", "radar", context=context)
        (sensor,) = node.sensors
        unit, simulator = sensor.unit, sensor.unit.simulator
        before = (dict(unit.__dict__), dict(simulator.__dict__), sensor.timer)

        def half_way(self, config):
            self.simulator.reconfigure(config)
            self.config = config
            raise OverflowError("cannot convert float infinity to integer")
        monkeypatch.setattr(RadarUnit, "reconfigure", half_way)
        from rclpy.parameter import Parameter

        result = node._on_set_parameters([Parameter("sensor.azimuth.rate_hz", value=2.0)])
        assert not result.successful and "infinity" in result.reason
        assert sensor.unit is unit and unit.__dict__ == before[0] and simulator.__dict__ == before[1]
        assert sensor.timer is before[2] and node.log.failures == 0
        node.destroy_node()
    finally:
        rclpy.shutdown(context=context)


LIDAR_HOSTILE = [  # (key under sensor., value) of a VLP-16: every declared kind of key, each refused
    ("firing_rate_hz", 1e308),  # columns = firing rate / rate: a product past the rays-per-scan bound
    ("firing_rate_hz", 5e-324),
    ("firing.interval_us", math.nan),
    ("firing.sequence", 2**62),
    ("range.min", 1e6),  # above range.max
    ("range.max", math.inf),
    ("layout", "\x1b[2Jvelodyne\r"),  # not a choice; echoed escaped
    ("driver.exact", "yes"),
    ("noise.sigma", -math.inf),
    ("noise.resolution", [0.1, 0.2]),
    ("beam.divergence_mrad", 5e-324),
]
RIG_RADAR_HOSTILE = [  # (key under front.sensor., value) of a radar in the rig
    ("azimuth.rate_hz", 5e-324),
    ("range.bins", 2**40),  # azimuths x bins past the image bound
    ("beam.p_in_cone", math.nan),
    ("azimuth.count", "many"),
]
_RAW_CONTROL = ("\x1b", "\r", "\n", "\x00")


@pytest.mark.parametrize("node_name", ["lidar_node", "sensor_rig"])
def test_every_kind_of_lidar_key_and_a_rigs_radar_keys_refuse_hostile_values(tmp_path, node_name):
    """Beyond the rate: products, choices, booleans, lists, nan/inf/denormals on each kind of key a VLP-16
    declares, and a radar beside it in a rig; one-line reasons without raw control characters, nothing changed,
    frames still published."""
    lidar = {"config": "VLP-16", "fixed_pose": [0.0, 0.0, 1.0, 0.0, 0.0, 0.0], "frame_id": "velodyne"}
    cases = [("sensor." + k, v) for k, v in LIDAR_HOSTILE]
    if node_name == "lidar_node":
        values, topic = {**lidar}, "/points"
    else:
        values = {"sensors": ["top", "front"], "top": {"type": "lidar", **lidar},
                  "front": {"type": "radar", "config": "radarays_default", "sensor": SMALL_RADAR,
                            "fixed_pose": [0.0, 0.0, 1.0, 0.0, 0.0, 0.0]}}
        cases = [("top." + k, v) for k, v in cases] + [("front.sensor." + k, v) for k, v in RIG_RADAR_HOSTILE]
        topic = "/top/points"
    params = write_params(tmp_path / "node.yaml", node_name, {"world": str(ROOM), "pose_source": "fixed",
                                                                "lazy": False, **values})
    keys = sorted({k for k, _ in cases})
    with Probe() as probe, NodeProcess(f"radarays_ros.ros.{node_name}", params_file=params) as node:
        clouds = probe.subscribe(topic, "sensor_msgs/msg/PointCloud2")
        clouds.wait(1, timeout=40)
        before = probe.get_parameters(node_name, keys)
        answers = {(k, repr(v)): probe.set_parameters(node_name, {k: v})[0] for k, v in cases}
        after = probe.get_parameters(node_name, keys)
        clouds.clear()
        later = clouds.wait(2, timeout=30)
        assert node.alive(), node.output()
        log = node.output()
    accepted = {k: a.reason for k, a in answers.items() if a.successful}
    assert accepted == {}, accepted
    for key, answer in answers.items():
        assert answer.reason and not any(c in answer.reason for c in _RAW_CONTROL), (key, answer.reason)
    # >= 2, not == 2: wait(2) returns the whole inbox; a third may come between its check and its read
    assert after == before and len(later) >= 2 and "Traceback" not in log
