"""radar_node as a real process: layouts, encodings, frames, sim-time stamps, QoS, parameters, TF, bad input.

Each test starts the node with a params file, listens with an independent rclpy probe (raw CDR,
decoded by rosbags) and compares what arrives with what the room world must give: walls whose inner
faces are 9.9 m from the centre.
"""
from __future__ import annotations

import math
import threading
import time

import numpy as np
import pytest

from support.ros_harness import ClockPublisher, NodeProcess, Probe, diagnostics_values, stamp_ns, transform_msg
from support.ros_radar import (AZIMUTHS, BINS, RATE, RESOLUTION, ROOM, SMALL_RADAR, assert_sees_room, polar, radar_params,
                               wall_ranges)
from support.waits import wait_for

pytestmark = pytest.mark.ros


def test_static_radar_under_sim_time(tmp_path):
    """Layout, encoding, frame id, stamps from /clock, the room's walls, points and the sensor rate."""
    params = radar_params(tmp_path, use_sim_time=True, lazy=True)
    with Probe() as probe, NodeProcess("radarays_ros.ros.radar_node", params_file=params) as node:
        images = probe.subscribe("/radar/image", "sensor_msgs/msg/Image")
        points = probe.subscribe("/radar/points", "sensor_msgs/msg/PointCloud2")
        clock = ClockPublisher(probe, start_s=100.0, speed=0.3)  # slow sim time: headroom on a busy machine
        period = int(1e9 / RATE)

        def back_to_back() -> int:
            stamps = [stamp_ns(m.header) for m in images.messages()]
            return int(np.count_nonzero(np.diff(stamps) == period))

        try:
            images.wait(6, timeout=40)
            # sweeps one period apart, three times (waited for, not read from the first six: a busy machine may
            # skip a slot now and then, and best effort may lose an image; a node that skips every other never
            # gives one)
            wait_for(lambda: back_to_back() >= 3, 60, 0.1)
            msgs = images.messages()
            cloud = points.wait(1)[-1]
        finally:
            clock.stop()
        assert node.alive(), node.output()
    msg = msgs[-1]
    assert (msg.encoding, msg.height, msg.width, msg.step) == ("mono8", BINS, AZIMUTHS, AZIMUTHS)
    assert msg.header.frame_id == "radar"
    stamps = [stamp_ns(m.header) for m in msgs]
    # stamped at the sweep start, on the grid of whole periods of sim time, one sweep after another
    assert all(100e9 - period <= s <= clock.now_ns and s % period == 0 for s in stamps)
    gaps = np.diff(stamps)  # best effort may lose one now and then, never reorder or repeat
    assert np.all(gaps > 0) and np.all(gaps % period == 0) and np.count_nonzero(gaps == period) >= 3, gaps
    assert_sees_room(msg)
    assert cloud.header.frame_id == "radar" and cloud.width > 0
    fields = {f.name: (f.offset, f.datatype) for f in cloud.fields}
    assert fields == {"x": (0, 7), "y": (4, 7), "z": (8, 7), "intensity": (12, 7)}
    xyz = np.frombuffer(np.asarray(cloud.data, np.uint8).tobytes(), np.float32).reshape(-1, 4)
    radius = np.hypot(xyz[:, 0], xyz[:, 1])
    assert np.percentile(radius, 50) > 8.0  # the strongest peaks lie on the walls


def test_layout_encoding_and_qos_by_parameter(tmp_path):
    params = radar_params(tmp_path, reliable=True, lazy=False,
                          output={"image_layout": "azimuth_rows", "image_encoding": "32FC1"})
    with Probe() as probe, NodeProcess("radarays_ros.ros.radar_node", params_file=params) as node:
        images = probe.subscribe("/radar/image", "sensor_msgs/msg/Image", qos="reliable")
        msg = images.wait(2, timeout=40)[-1]
        info = probe.node.get_publishers_info_by_topic("/radar/image")
        cartesian = probe.subscribe("/radar/image_cartesian", "sensor_msgs/msg/Image", qos="reliable")
        picture = cartesian.wait(1, timeout=20)[-1]  # built on demand, now that somebody listens
        assert node.alive(), node.output()
    from rclpy.qos import ReliabilityPolicy

    assert info and info[0].qos_profile.reliability == ReliabilityPolicy.RELIABLE
    assert (msg.encoding, msg.height, msg.width, msg.step) == ("32FC1", AZIMUTHS, BINS, 4 * BINS)
    assert_sees_room(msg)
    assert picture.encoding == "rgb8" and picture.height == picture.width and picture.step == 3 * picture.width
    assert picture.header.frame_id == "radar"


def test_default_qos_reaches_a_default_qos_subscriber(tmp_path):
    """RELIABLE depth 10 as velodyne_pointcloud and livox_ros_driver2 publish: a subscriber with rclpy's default
    QoS (an int depth: RELIABLE, KEEP_LAST) and a sensor-data (BEST_EFFORT) one both receive every topic."""
    from rclpy.qos import ReliabilityPolicy

    params = radar_params(tmp_path, lazy=False)
    with Probe() as probe, NodeProcess("radarays_ros.ros.radar_node", params_file=params) as node:
        default = probe.subscribe("/radar/image", "sensor_msgs/msg/Image", qos=10)
        points = probe.subscribe("/radar/points", "sensor_msgs/msg/PointCloud2", qos=10)
        best_effort = probe.subscribe("/radar/image", "sensor_msgs/msg/Image", qos="sensor")
        default.wait(2, timeout=40)
        points.wait(1, timeout=20)
        best_effort.wait(1, timeout=20)
        info = probe.node.get_publishers_info_by_topic("/radar/image")
        # discovery does not carry the history depth: the node's own qos_overrides parameters state it
        qos = probe.get_parameters("radar_node", [f"qos_overrides./radar/image.publisher.{k}"
                                                  for k in ("reliability", "history", "depth")])
        assert node.alive(), node.output()
    assert info[0].qos_profile.reliability == ReliabilityPolicy.RELIABLE
    assert qos == ["reliable", "keep_last", 10]
    # the type hash rmw announces is the one our bags write as topic_type_hash (io/bag.py, via rosbags)
    from radarays_ros.io.messages import TYPESTORE

    assert str(info[0].topic_type_hash) == TYPESTORE.hash_rihs01("sensor_msgs/msg/Image")


def test_qos_by_parameter_and_standard_qos_overrides(tmp_path):
    """`reliable: false` gives BEST_EFFORT (a default-QoS subscriber then gets nothing); rclpy's standard
    qos_overrides.<topic>.publisher.* parameters change one topic and leave the others."""
    from rclpy.qos import ReliabilityPolicy

    overrides = {"/radar/points": {"publisher": {"reliability": "best_effort", "depth": 3}}}
    params = radar_params(tmp_path, lazy=False, qos_overrides=overrides)
    with Probe() as probe, NodeProcess("radarays_ros.ros.radar_node", params_file=params) as node:
        images = probe.subscribe("/radar/image", "sensor_msgs/msg/Image", qos=10)
        images.wait(1, timeout=40)
        probe.wait_for_publisher("/radar/points")  # nobody listens to it: discovered on its own, maybe after the image
        points = probe.node.get_publishers_info_by_topic("/radar/points")
        image = probe.node.get_publishers_info_by_topic("/radar/image")
        depth = probe.get_parameters("radar_node", ["qos_overrides./radar/points.publisher.depth"])
        assert node.alive(), node.output()
        assert "unknown parameter" not in node.output()
    assert points[0].qos_profile.reliability == ReliabilityPolicy.BEST_EFFORT and depth == [3]
    assert image[0].qos_profile.reliability == ReliabilityPolicy.RELIABLE
    params = radar_params(tmp_path, lazy=False, reliable=False)
    with Probe() as probe, NodeProcess("radarays_ros.ros.radar_node", params_file=params) as node:
        best_effort = probe.subscribe("/radar/image", "sensor_msgs/msg/Image", qos="sensor")
        default = probe.subscribe("/radar/image", "sensor_msgs/msg/Image", qos=10)
        best_effort.wait(3, timeout=40)
        info = probe.node.get_publishers_info_by_topic("/radar/image")
        assert node.alive(), node.output()
    assert info[0].qos_profile.reliability == ReliabilityPolicy.BEST_EFFORT
    assert len(default) == 0  # incompatible QoS: a RELIABLE subscriber is not served by a BEST_EFFORT publisher


def test_parameter_changes_accepted_and_rejected(tmp_path):
    params = radar_params(tmp_path, lazy=False)
    with Probe() as probe, NodeProcess("radarays_ros.ros.radar_node", params_file=params) as node:
        images = probe.subscribe("/radar/image", "sensor_msgs/msg/Image")
        images.wait(1, timeout=40)
        ok = probe.set_parameters("radar_node", {"sensor.range.bins": 200, "output.image_encoding": "32FC1"})
        assert [r.successful for r in ok] == [True, True]
        bad_choice = probe.set_parameters("radar_node", {"sensor.beam.distribution": "D9"})[0]
        bad_range = probe.set_parameters("radar_node", {"sensor.azimuth.count": -5})[0]
        bad_pose = probe.set_parameters("radar_node", {"fixed_pose": [0.0, 0.0, math.nan, 0.0, 0.0, 0.0]})[0]
        read_only = probe.set_parameters("radar_node", {"config": "mulran"})[0]
        bad_source = probe.set_parameters("radar_node", {"pose_source": "gps"})[0]
        kept = probe.get_parameters("radar_node", ["sensor.beam.distribution", "sensor.azimuth.count", "sensor.range.bins"])
        samples, reliable = probe.describe_parameters("radar_node", ["sensor.beam.samples", "reliable"])
        images.clear()
        msg = images.wait(2, timeout=20)[-1]
        assert node.alive(), node.output()
    assert not bad_choice.successful and "D1" in bad_choice.reason and "beam.distribution" in bad_choice.reason
    assert not bad_range.successful and "azimuth.count" in bad_range.reason
    assert not bad_pose.successful and "finite" in bad_pose.reason
    assert not read_only.successful
    assert not bad_source.successful and "tf, fixed" in bad_source.reason
    assert kept == ["D3", AZIMUTHS, 200]
    # descriptors: what a key means and what it may be
    assert "rays per azimuth" in samples.description and samples.integer_range[0].from_value == 1
    assert reliable.read_only and "RELIABLE" in reliable.description and "qos_overrides" in reliable.description
    # the accepted change is live, the rejected ones changed nothing
    assert (msg.encoding, msg.height, msg.width) == ("32FC1", 200, AZIMUTHS)


def test_values_that_once_killed_the_node_are_refused_and_the_last_good_state_kept(tmp_path):
    """.inf for an integer key raised OverflowError out of the callback (radar_node died); a pose of 1e39
    or a NaN in a list is refused; a /tf translation of 1e39 is ignored. The node keeps publishing."""
    params = radar_params(tmp_path, lazy=False)
    with Probe() as probe, NodeProcess("radarays_ros.ros.radar_node", params_file=params) as node:
        images = probe.subscribe("/radar/image", "sensor_msgs/msg/Image")
        images.wait(1, timeout=40)
        refused = {
            "inf count": probe.set_parameters("radar_node", {"sensor.azimuth.count": math.inf})[0],
            "inf width": probe.set_parameters("radar_node", {"sensor.beam.width_deg": -math.inf})[0],
            "far pose": probe.set_parameters("radar_node", {"fixed_pose": [1e39, 0.0, 1.0, 0.0, 0.0, 0.0]})[0],
            "huge angle": probe.set_parameters("radar_node", {"fixed_pose": [0.0, 0.0, 1.0, 0.0, 0.0, 1e39]})[0],
            "nan tolerance": probe.set_parameters("radar_node", {"tf_tolerance": math.nan})[0],
        }
        from tf2_msgs.msg import TFMessage

        tf = probe.publisher("/tf", "tf2_msgs/msg/TFMessage")
        probe.wait_for_subscribers(tf)
        tf.publish(TFMessage(transforms=[transform_msg("map", "radar", 1, xyz=(1e39, 0.0, 0.0))]))
        kept = probe.get_parameters("radar_node", ["sensor.azimuth.count", "fixed_pose"])
        images.clear()
        msg = images.wait(2, timeout=30)[-1]
        assert node.alive(), node.output()
        log = node.output()
    assert not any(r.successful for r in refused.values())
    assert "azimuth.count = inf: not a finite number" in refused["inf count"].reason
    assert "fixed_pose.x = 1e+39: out of range, allowed [-1000000.0, 1000000.0]" in refused["far pose"].reason
    assert "fixed_pose.yaw = 1e+39: out of range" in refused["huge angle"].reason
    assert "tf_tolerance" in refused["nan tolerance"].reason  # rclpy's own range check answers first
    assert kept == [AZIMUTHS, [0.0, 0.0, 1.0, 0.0, 0.0, 0.0]]
    assert "beyond 1e+06 m" in log and "Traceback" not in log
    assert_sees_room(msg)  # the last good configuration, still running


def test_pose_from_tf_and_survives_missing_tf(tmp_path):
    """The radar rides on base_link (map -> base_link on /tf, base_link -> radar on /tf_static)."""
    params = radar_params(tmp_path, pose_source="tf", world_frame="map", use_sim_time=True, lazy=False,
                          tf_tolerance=0.2)
    from tf2_msgs.msg import TFMessage

    yaw = math.radians(90)
    driving = threading.Event()  # /tf flows only once set

    with Probe() as probe, NodeProcess("radarays_ros.ros.radar_node", params_file=params) as node:
        images = probe.subscribe("/radar/image", "sensor_msgs/msg/Image")
        diagnostics = probe.subscribe("/diagnostics", "diagnostic_msgs/msg/DiagnosticArray", qos="reliable")
        tf = probe.publisher("/tf", "tf2_msgs/msg/TFMessage")
        static = probe.publisher("/tf_static", "tf2_msgs/msg/TFMessage")

        def on_tick(t_ns):
            if driving.is_set():
                tf.publish(TFMessage(transforms=[transform_msg("map", "base_link", t_ns, (5.0, 0.0, 0.0), yaw)]))

        clock = ClockPublisher(probe, start_s=50.0, speed=0.5, on_tick=on_tick)
        try:
            # no tf yet: frames fail, the node reports why and lives on
            wait_for(lambda: int(diagnostics_values(diagnostics, "radar").get("failed_frames", 0)) >= 2, 30, 0.1)
            failing = diagnostics_values(diagnostics, "radar")
            assert len(images) == 0 and node.alive(), node.output()
            tf.publish(TFMessage(transforms=[transform_msg("map", "base_link", clock.now_ns, (math.nan, 0.0, 0.0))]))
            static.publish(TFMessage(transforms=[transform_msg("base_link", "radar", 0, (0.0, 0.0, 1.0))]))
            driving.set()
            msgs = images.wait(3, timeout=40)
        finally:
            clock.stop()
        assert node.alive(), node.output()
        log = node.output()
    assert "not connected" in failing["last_error"]
    assert int(failing["failed_frames"]) >= 2
    assert "non-finite" in log  # the NaN transform was refused (and logged), not used
    # at x = 5 m facing +y: 9.9 m ahead (left wall), 4.9 m to the right of the start heading (+x wall)
    peaks = (polar(msgs[-1]).argmax(axis=1) + 0.5) * RESOLUTION
    theta = yaw + np.radians(-9.0 * np.arange(AZIMUTHS))
    expected = wall_ranges(yaw, 5.0)
    visible = expected < BINS * RESOLUTION - 1.0
    np.testing.assert_allclose(peaks[visible], expected[visible], atol=0.5)
    assert peaks[np.argmin(np.abs(np.cos(theta - 0.0) - 1))] == pytest.approx(4.9, abs=0.5)


def test_motion_distorts_the_sweep(tmp_path):
    """Driving +x at 4 m/s, a 2 Hz sweep sees the front wall from where the sweep started and the rear
    wall from where the robot was a quarter second later: tf is looked up at every azimuth's time."""
    speed, start_s, x_start = 4.0, 50.0, -5.0
    slow = dict(SMALL_RADAR, azimuth={"count": AZIMUTHS, "step_deg": -9.0, "rate_hz": 2.0})
    params = radar_params(tmp_path, pose_source="tf", use_sim_time=True, lazy=False, sensor=slow)
    from tf2_msgs.msg import TFMessage

    def x_at(t_ns):
        return x_start + speed * (t_ns - start_s * 1e9) / 1e9

    with Probe() as probe, NodeProcess("radarays_ros.ros.radar_node", params_file=params) as node:
        images = probe.subscribe("/radar/image", "sensor_msgs/msg/Image")
        tf = probe.publisher("/tf", "tf2_msgs/msg/TFMessage")
        static = probe.publisher("/tf_static", "tf2_msgs/msg/TFMessage")
        static.publish(TFMessage(transforms=[transform_msg("base_link", "radar", 0, (0.0, 0.0, 1.0))]))
        probe.wait_for_publisher("/radar/image")  # the node is up: start driving
        clock = ClockPublisher(probe, start_s=start_s, speed=0.5, on_tick=lambda t: tf.publish(
            TFMessage(transforms=[transform_msg("map", "base_link", t, (x_at(t), 0.0, 0.0))])))
        try:
            msgs = images.wait(2, timeout=40)
        finally:
            clock.stop()
        assert node.alive(), node.output()
    inside = [m for m in msgs if -8.0 < x_at(stamp_ns(m.header)) and x_at(stamp_ns(m.header) + 500_000_000) < 8.0]
    assert inside, "no sweep while the robot was inside the room (machine too busy?)"
    msg = inside[0]
    t0 = stamp_ns(msg.header)
    peaks = (polar(msg).argmax(axis=1) + 0.5) * RESOLUTION
    front, rear = peaks[0], peaks[AZIMUTHS // 2]  # azimuth 0 fires at t0, azimuth 180 deg at t0 + 0.25 s
    assert front == pytest.approx(9.9 - x_at(t0), abs=0.3)
    assert rear == pytest.approx(9.9 + x_at(t0 + 250_000_000), abs=0.3)
    assert rear - (9.9 + x_at(t0)) == pytest.approx(1.0, abs=0.4)  # what a single pose per sweep would miss


def test_missing_world_then_fixed_at_run_time(tmp_path):
    params = radar_params(tmp_path, world=str(tmp_path / "nowhere.sdf"), lazy=False)
    with Probe() as probe, NodeProcess("radarays_ros.ros.radar_node", params_file=params) as node:
        images = probe.subscribe("/radar/image", "sensor_msgs/msg/Image")
        diagnostics = probe.subscribe("/diagnostics", "diagnostic_msgs/msg/DiagnosticArray", qos="reliable")
        diagnostics.wait(2, timeout=40)
        status = diagnostics_values(diagnostics, "radar")
        assert node.alive(), node.output()
        still_bad = probe.set_parameters("radar_node", {"world": str(tmp_path / "still_nowhere.sdf")})[0]
        fixed = probe.set_parameters("radar_node", {"world": str(ROOM)})[0]
        msg = images.wait(1, timeout=30)[-1]
        assert node.alive()
        log = node.output()
    assert status["_level"] == 2 and "nowhere.sdf" in status["_message"]
    assert "nowhere.sdf" in log
    assert not still_bad.successful and "still_nowhere.sdf" in still_bad.reason
    assert fixed.successful
    assert_sees_room(msg)


def test_lazy_node_skips_without_subscribers(tmp_path):
    params = radar_params(tmp_path, lazy=True, diagnostics_period=0.2)
    with Probe() as probe, NodeProcess("radarays_ros.ros.radar_node", params_file=params) as node:
        diagnostics = probe.subscribe("/diagnostics", "diagnostic_msgs/msg/DiagnosticArray", qos="reliable")
        wait_for(lambda: int(diagnostics_values(diagnostics, "radar").get("skipped_no_subscribers", 0)) >= 3, 30, 0.1)
        idle = diagnostics_values(diagnostics, "radar")
        images = probe.subscribe("/radar/image", "sensor_msgs/msg/Image")
        images.wait(2, timeout=30)
        # the diagnostics that count those frames (waited for, not read once 0.5 s later: on a busy machine the
        # next diagnostics message can come later than that)
        wait_for(lambda: int(diagnostics_values(diagnostics, "radar").get("frames", 0)) >= 2, 30, 0.1)
        busy = diagnostics_values(diagnostics, "radar")
        assert node.alive(), node.output()
    assert int(idle["frames"]) == 0 and int(idle["skipped_no_subscribers"]) >= 3
    assert int(busy["frames"]) >= 2 and float(busy["frame_time_ms"]) > 0 and float(busy["rays_per_second"]) > 0


def test_sync_topic_stamps_each_frame_with_the_trigger(tmp_path):
    params = radar_params(tmp_path, sync_topic="/Navtech/Polar", lazy=False)
    from sensor_msgs.msg import Image

    with Probe() as probe, NodeProcess("radarays_ros.ros.radar_node", params_file=params) as node:
        images = probe.subscribe("/radar/image", "sensor_msgs/msg/Image")
        trigger = probe.publisher("/Navtech/Polar", "sensor_msgs/msg/Image", qos="sensor")
        probe.wait_for_subscribers(trigger, timeout=40)
        sent = []
        # best effort: a trigger may be lost, a frame is never invented or restamped. Triggers go on until three
        # frames came (waited for, not six triggers and done: a trigger that comes while the frame before is
        # still running is dropped, and on a busy machine a frame can take longer than the 0.3 s between them)
        deadline = time.monotonic() + 60
        while len(images) < 3 and time.monotonic() < deadline:
            k = len(sent)
            real = Image(height=1, width=1, encoding="mono8", step=1, data=[0])
            real.header.stamp.sec, real.header.stamp.nanosec = 1_600_000_000 + k, 250_000_000
            trigger.publish(real)
            sent.append((1_600_000_000 + k) * 10**9 + 250_000_000)
            time.sleep(0.3)
        msgs = images.wait(3, timeout=20)
        assert node.alive(), node.output()
    received = [stamp_ns(m.header) for m in msgs]
    assert set(received) <= set(sent) and received == sorted(received)


def test_bad_preset_and_typos_reported_at_startup(tmp_path):
    params = radar_params(tmp_path, config="navtech_cts999", lazy=False, pose_sorce="fixed")
    with Probe() as probe, NodeProcess("radarays_ros.ros.radar_node", params_file=params) as node:
        diagnostics = probe.subscribe("/diagnostics", "diagnostic_msgs/msg/DiagnosticArray", qos="reliable")
        diagnostics.wait(1, timeout=40)
        status = diagnostics_values(diagnostics, "radar")
        alive = node.alive()
        log = node.output()
    assert alive, log
    assert "unknown radar config 'navtech_cts999'" in log and "navtech_cir204" in log  # the presets it could be
    assert "pose_sorce" in log and "unknown parameter" in log
    assert status["_level"] == 2 and "navtech_cts999" in status["_message"]


def test_radar_scan_without_radar_msgs_says_what_to_install_and_publishes_the_rest(tmp_path):
    """output.radar_scan needs radar_msgs (no PyPI wheel): without it the node names the apt package and goes on."""
    import importlib.util

    if importlib.util.find_spec("radar_msgs") is not None:
        pytest.skip("radar_msgs is installed here: the node publishes radar/scan")
    params = radar_params(tmp_path, lazy=False, output={"radar_scan": True})
    with Probe() as probe, NodeProcess("radarays_ros.ros.radar_node", params_file=params) as node:
        images = probe.subscribe("/radar/image", "sensor_msgs/msg/Image", qos=10)
        images.wait(2, timeout=40)
        assert node.alive(), node.output()
        assert "radar/scan not published" in node.output() and "ros-jazzy-radar-msgs" in node.output()


def test_an_interferer_whose_carrier_is_missing_is_logged_once_and_frames_go_on(tmp_path):
    """The physical radar with another radar on a model the world lacks (interference.entity): the node publishes
    on (the frames without it), says so on its ROS log, once in the throttling period, naming the model; an entity
    name that is no name (an escape sequence) is refused by parameter and the node keeps its state."""
    sensor = {**SMALL_RADAR, "sensor": {"model": "physical"},
              "interference": {"preset": "navtech_cts350x", "entity": "ghost_van"}}
    params = radar_params(tmp_path, lazy=False, sensor=sensor)
    started = time.monotonic()
    with Probe() as probe, NodeProcess("radarays_ros.ros.radar_node", params_file=params) as node:
        images = probe.subscribe("/radar/image", "sensor_msgs/msg/Image")
        images.wait(3, timeout=60)
        bad = probe.set_parameters("radar_node", {"sensor.interference.entity": "van\x1b[2J"})[0]
        kept = probe.get_parameters("radar_node", ["sensor.interference.entity"])
        images.clear()
        msg = images.wait(1, timeout=30)[-1]
        assert node.alive(), node.output()
        log = node.output()
    elapsed = time.monotonic() - started
    warnings = [line for line in log.splitlines() if "ghost_van" in line and "not in the scene" in line]
    assert 1 <= len(warnings) <= 1 + elapsed // 5.0, log[-3000:]  # one line per 5 s at most, ~10 frames a second
    assert all("WARN" in line and "radar_node" in line for line in warnings), warnings  # the node's ROS logger
    assert not bad.successful and "not an entity name" in bad.reason
    assert kept == ["ghost_van"]
    assert_sees_room(msg)


def test_radar_nodes_sharing_a_process_each_log_only_their_own_models_warnings():
    """Two radar nodes in one process (a composed container): the one whose interferer's carrier is missing says so
    on its ROS logger; the other, whose frames run before and after it, relays none of that line (each node relays
    the radar model's records of its own frames only)."""
    import rclpy
    from rclpy.parameter import Parameter

    from radarays_ros.ros.node import SensorNode

    def flat(prefix, tree):
        for key, value in tree.items():
            yield from flat(f"{prefix}{key}.", value) if isinstance(value, dict) else [(f"{prefix}{key}", value)]

    class Heard:
        def __init__(self):
            self.lines = []

        def __getattr__(self, level):  # info / warning / error
            return lambda text: self.lines.append((level, text))

    context = rclpy.Context()
    rclpy.init(context=context, args=["--ros-args", "-p", f"world:={ROOM}", "-p", "pose_source:=fixed", "-p", "lazy:=false"])
    nodes = []
    try:
        small = [Parameter(k, value=v) for k, v in flat("sensor.", {**SMALL_RADAR, "sensor": {"model": "physical"}})]
        carrier = [Parameter("sensor.interference.preset", value="navtech_cts350x"),
                   Parameter("sensor.interference.entity", value="ghost_van_composed")]
        nodes = [SensorNode("radar_a", "radar", context=context, parameter_overrides=small + carrier),
                 SensorNode("radar_b", "radar", context=context, parameter_overrides=small)]
        heard = {node.get_name(): Heard() for node in nodes}
        for node in nodes:
            node._model_log.ros_logger = heard[node.get_name()]
        for node in (nodes[1], nodes[0], nodes[1]):
            (sensor,) = node.sensors
            node._simulate_and_publish(sensor, 10**9, 10**9, sync=False)
        assert heard["radar_b"].lines == []
        assert [level for level, text in heard["radar_a"].lines if "ghost_van_composed" in text] == ["warning"]
    finally:
        for node in nodes:
            node.destroy_node()
        rclpy.shutdown(context=context)
