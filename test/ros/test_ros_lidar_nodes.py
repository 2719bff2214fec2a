"""lidar_node and sensor_rig as real processes: driver layouts, LaserScan, stamps, rig topics."""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from support.ros_harness import NodeProcess, Probe, stamp_ns, write_params
from support.waits import wait_for

pytestmark = pytest.mark.ros

ROOM = Path(__file__).parent / "data" / "room.sdf"


def cloud_array(msg) -> np.ndarray:
    """Structured array of a PointCloud2 built from its own PointField list (independent of our dtypes)."""
    types = {7: "<f4", 8: "<f8", 2: "u1", 4: "<u2", 5: "<i4", 6: "<u4"}
    dtype = np.dtype({"names": [f.name for f in msg.fields], "formats": [types[f.datatype] for f in msg.fields],
                      "offsets": [f.offset for f in msg.fields], "itemsize": msg.point_step})
    return np.frombuffer(np.asarray(msg.data, np.uint8).tobytes(), dtype)


def test_vlp16_velodyne_layout(tmp_path):
    params = write_params(tmp_path / "lidar.yaml", "lidar_node", {
        "world": str(ROOM), "config": "VLP-16", "pose_source": "fixed", "fixed_pose": [0.0, 0.0, 1.0, 0.0, 0.0, 0.0],
        "frame_id": "velodyne", "sensor": {"noise": {"sigma": 0.0}}})
    with Probe() as probe, NodeProcess("radarays_ros.ros.lidar_node", params_file=params) as node:
        clouds = probe.subscribe("/points", "sensor_msgs/msg/PointCloud2")
        typed = probe.subscribe_typed("/points", "sensor_msgs/msg/PointCloud2")
        default_qos = probe.subscribe("/points", "sensor_msgs/msg/PointCloud2", qos=10)  # as velodyne_pointcloud
        msgs = clouds.wait(2, timeout=40)
        default_qos.wait(1, timeout=20)
        assert not probe.node.get_publishers_info_by_topic("/imu")  # velodyne_driver has no IMU

        def one_cloud_both_ways():
            """(typed, raw) of a cloud both subscriptions received; None while there is none."""
            raw_by_stamp = {stamp_ns(m.header): m for m in clouds.messages()}
            for cloud in list(typed):
                raw = raw_by_stamp.get(cloud.header.stamp.sec * 10**9 + cloud.header.stamp.nanosec)
                if raw is not None:
                    return cloud, raw
            return None

        # waited for, not matched against the first two raw clouds: the two best-effort subscriptions may start
        # at different clouds, or lose different ones, on a busy machine
        wait_for(lambda: one_cloud_both_ways() is not None, 30, 0.05)
        pair = one_cloud_both_ways()
        assert node.alive(), node.output()
    # rclpy's own deserialiser reads the same cloud (the node publishes rosbags' CDR bytes as is)
    assert pair is not None, f"no cloud received by both subscriptions ({len(typed)} typed)"
    typed_cloud, same = pair
    assert bytes(typed_cloud.data) == np.asarray(same.data, np.uint8).tobytes()
    assert [(f.name, f.offset, f.datatype) for f in typed_cloud.fields] == [(f.name, f.offset, f.datatype) for f in same.fields]
    assert (typed_cloud.height, typed_cloud.width, typed_cloud.point_step, typed_cloud.header.frame_id) == (
        same.height, same.width, same.point_step, "velodyne")
    msg = msgs[-1]
    assert msg.header.frame_id == "velodyne"
    assert [(f.name, f.offset, f.datatype) for f in msg.fields] == [
        ("x", 0, 7), ("y", 4, 7), ("z", 8, 7), ("intensity", 12, 7), ("ring", 16, 4), ("time", 18, 7)]
    assert msg.point_step == 22 and msg.width * msg.height * 22 == len(msg.data)
    pts = cloud_array(msg)
    ok = np.isfinite(pts["x"])
    xy = np.stack([pts["x"][ok], pts["y"][ok]], 1)
    # every return lies on a wall of the room (inner faces at 9.9 m) or on nothing else
    on_wall = np.isclose(np.abs(xy).max(axis=1), 9.9, atol=0.02)
    assert on_wall.mean() > 0.99
    assert set(np.unique(pts["ring"])) == set(range(16))
    # velodyne stamps the last firing: point times are <= 0 and span one 0.1 s revolution
    assert pts["time"][ok].max() <= 0 and pts["time"][ok].min() == pytest.approx(-0.1, abs=0.005)
    stamps = [stamp_ns(m.header) for m in msgs]
    assert np.diff(stamps)[0] % 100_000_000 == 0


def test_planar_scanner_publishes_laserscan(tmp_path):
    params = write_params(tmp_path / "laser.yaml", "lidar_node", {
        "world": str(ROOM), "config": "URG-04LX", "pose_source": "fixed", "fixed_pose": [6.0, 0.0, 1.0, 0.0, 0.0, 0.0],
        "reliable": True, "sensor": {"noise": {"sigma": 0.0}}})
    with Probe() as probe, NodeProcess("radarays_ros.ros.lidar_node", params_file=params) as node:
        scans = probe.subscribe("/scan", "sensor_msgs/msg/LaserScan", qos="reliable")
        msg = scans.wait(1, timeout=40)[-1]
        assert node.alive(), node.output()
    assert msg.header.frame_id == "laser" and msg.range_max == pytest.approx(5.6)
    angles = msg.angle_min + msg.angle_increment * np.arange(len(msg.ranges))
    ranges = np.asarray(msg.ranges)
    ahead = np.argmin(np.abs(angles))
    assert ranges[ahead] == pytest.approx(3.9, abs=0.01)  # the +x wall from x = 6 m
    behind = np.abs(np.abs(angles) - np.pi / 2) < 0.05  # side walls 9.9 m away: beyond 5.6 m, no return
    assert np.all(np.isinf(ranges[behind]))


def test_rig_runs_radar_and_two_lidars_on_one_world(tmp_path):
    params = write_params(tmp_path / "rig.yaml", "sensor_rig", {
        "world": str(ROOM), "pose_source": "fixed", "lazy": False,
        "sensors": ["front_radar", "top_lidar", "rear_lidar"],
        "front_radar": {"type": "radar", "config": "radarays_default", "fixed_pose": [0.0, 0.0, 1.0, 0.0, 0.0, 0.0],
                        "sensor": {"azimuth": {"count": 40, "step_deg": -9.0, "rate_hz": 10.0},
                                   "range": {"bins": 300, "resolution": 0.05}, "beam": {"samples": 4},
                                   "tracing": {"passes": 1}}},
        "top_lidar": {"type": "lidar", "config": "VLP-16", "frame_id": "top_lidar",
                      "fixed_pose": [0.0, 0.0, 1.5, 0.0, 0.0, 0.0]},
        "rear_lidar": {"type": "lidar", "config": "OS1-16", "frame_id": "rear_lidar",
                       "fixed_pose": [-1.0, 0.0, 1.0, 0.0, 0.0, 3.14159], "sensor": {"columns": 512}},
    })
    with Probe() as probe, NodeProcess("radarays_ros.ros.sensor_rig", params_file=params) as node:
        radar = probe.subscribe("/front_radar/radar/image", "sensor_msgs/msg/Image")
        top = probe.subscribe("/top_lidar/points", "sensor_msgs/msg/PointCloud2")
        rear = probe.subscribe("/rear_lidar/points", "sensor_msgs/msg/PointCloud2")
        r, t, b = radar.wait(1, timeout=40)[-1], top.wait(1, timeout=40)[-1], rear.wait(1, timeout=40)[-1]
        names = probe.node.get_node_names()
        assert node.alive(), node.output()
    assert names.count("sensor_rig") == 1
    assert (r.header.frame_id, t.header.frame_id, b.header.frame_id) == ("radar", "top_lidar", "rear_lidar")
    assert (r.height, r.width) == (300, 40)
    assert {f.name for f in b.fields} >= {"t", "reflectivity", "ring", "ambient", "range"}  # ouster layout
    assert (b.height, b.width) == (16, 512)
    pts = cloud_array(t)
    ok = np.isfinite(pts["x"])
    assert np.isclose(np.abs(np.stack([pts["x"][ok], pts["y"][ok]], 1)).max(axis=1), 9.9, atol=0.1).mean() > 0.95


def test_livox_lidar_node_publishes_its_imu_as_livox_ros_driver2(tmp_path):
    """Mid-360 (ICM-40609-D): /imu at 200 Hz of node time, in the lidar's frame, the acceleration in g; a
    sensor at rest tilted by roll reads gravity in its own frame, no rate, within the datasheet noise."""
    roll = 0.2
    params = write_params(tmp_path / "livox.yaml", "lidar_node", {
        "world": str(ROOM), "config": "Mid-360", "pose_source": "fixed", "fixed_pose": [0.0, 0.0, 1.0, roll, 0.0, 0.0]})
    with Probe() as probe, NodeProcess("radarays_ros.ros.lidar_node", params_file=params) as node:
        imu = probe.subscribe("/imu", "sensor_msgs/msg/Imu", qos=10)  # rclpy's default QoS
        msgs = imu.wait(40, timeout=40)
        assert node.alive(), node.output()
    msg = msgs[-1]
    assert msg.header.frame_id == "lidar" and msg.orientation_covariance[0] == -1  # the cloud's frame, as the driver
    stamps = np.array([stamp_ns(m.header) for m in msgs])
    assert np.all(stamps % 5_000_000 == 0) and np.all(np.diff(stamps) > 0)  # on the 200 Hz grid, in order
    accel = np.array([[m.linear_acceleration.x, m.linear_acceleration.y, m.linear_acceleration.z] for m in msgs])
    gyro = np.array([[m.angular_velocity.x, m.angular_velocity.y, m.angular_velocity.z] for m in msgs])
    # R^T (0, 0, 1 g) for a roll about x: (0, sin(roll), cos(roll)); per-sample noise 100 ug x sqrt(200) = 1.4 mg
    np.testing.assert_allclose(accel, np.tile([0.0, np.sin(roll), np.cos(roll)], (len(msgs), 1)), atol=0.01)
    assert np.abs(gyro).max() < 0.01 and gyro.std() > 0  # 4.5 mdeg/s/sqrt(Hz): noisy, never exact


def test_driver_names_give_the_livox_driver2_topics_and_frame(tmp_path):
    """driver_names: true -> /livox/lidar and /livox/imu in livox_frame, as livox_ros_driver2 names them,
    received by default-QoS subscribers; nothing on the radarays names."""
    params = write_params(tmp_path / "livox.yaml", "lidar_node", {
        "world": str(ROOM), "config": "Mid-360", "pose_source": "fixed", "fixed_pose": [0.0, 0.0, 1.0, 0.0, 0.0, 0.0],
        "driver_names": True, "lazy": False})
    with Probe() as probe, NodeProcess("radarays_ros.ros.lidar_node", params_file=params) as node:
        clouds = probe.subscribe("/livox/lidar", "sensor_msgs/msg/PointCloud2", qos=10)
        imu = probe.subscribe("/livox/imu", "sensor_msgs/msg/Imu", qos=10)
        cloud = clouds.wait(1, timeout=40)[-1]
        sample = imu.wait(1, timeout=20)[-1]
        assert not probe.node.get_publishers_info_by_topic("/points")
        assert node.alive(), node.output()
    assert cloud.header.frame_id == sample.header.frame_id == "livox_frame" and cloud.height == 1


def test_ouster_node_latches_its_metadata_and_publishes_its_imu(tmp_path):
    """As ouster-ros: /ouster/metadata latched (a subscriber that comes late still gets it), /ouster/imu at
    100 Hz in m/s^2 in os_imu (latched on /tf_static below os_lidar where the metadata puts the IMU),
    /ouster/points in os_lidar (driver_names)."""
    import json

    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

    params = write_params(tmp_path / "ouster.yaml", "lidar_node", {
        "world": str(ROOM), "config": "OS1-16", "pose_source": "fixed", "fixed_pose": [0.0, 0.0, 1.0, 0.0, 0.0, 0.0],
        "driver_names": True})
    with Probe() as probe, NodeProcess("radarays_ros.ros.lidar_node", params_file=params) as node:
        probe.wait_for_publisher("/ouster/imu")
        imu = probe.subscribe("/ouster/imu", "sensor_msgs/msg/Imu", qos=10)
        samples = imu.wait(5, timeout=40)
        latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        metadata = probe.subscribe("/ouster/metadata", "std_msgs/msg/String", qos=latched)  # late, after startup
        text = metadata.wait(1, timeout=20)[-1].data
        # depth 10: both latched publishers (world -> os_lidar, the IMU's) deliver; depth 1 may keep only one
        statics = probe.subscribe("/tf_static", "tf2_msgs/msg/TFMessage",
                                  qos=QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE,
                                                 durability=DurabilityPolicy.TRANSIENT_LOCAL))
        deadline, placed = time.monotonic() + 60, []
        while not placed and time.monotonic() < deadline:  # two latched publishers: world -> os_lidar, the IMU's
            placed = [t for m in statics.messages() for t in m.transforms if t.child_frame_id == "os_imu"]
            time.sleep(0.05)
        assert node.alive(), node.output()
    meta = json.loads(text)
    assert "1024x10" in text and meta  # the sensor's JSON, made to say what is simulated
    assert samples[-1].header.frame_id == "os_imu"
    (imu_frame,) = placed
    tr = imu_frame.transform.translation
    assert imu_frame.header.frame_id == "os_lidar"  # OS1-16 metadata: os_lidar <- os_imu, mm
    np.testing.assert_allclose([tr.x, tr.y, tr.z], [-6.253e-3, 11.775e-3, (7.645 - 36.18) * 1e-3], atol=1e-9)
    assert samples[-1].linear_acceleration.z == pytest.approx(9.80665, abs=0.05)  # m/s^2, as ouster-ros
