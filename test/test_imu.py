"""The lidar IMU (sensors/imu.py) against analytic motion, its datasheet noise, and in a scenario's bag."""
from __future__ import annotations

import math

import numpy as np
import pytest

from radarays_ros.sensors.imu import G0, IMU_SPECS, imu_for_layout, imu_mount, imu_samples
from radarays_ros.world.transforms import pose_to_matrix

OUSTER, LIVOX = IMU_SPECS["ouster"], IMU_SPECS["livox"]


def circle(radius: float, speed: float, z: float = 1.0):
    """Poses (N, 4, 4) of a vehicle driving a counter-clockwise circle, heading along the path."""
    def poses_at(t_ns):
        phi = speed / radius * np.asarray(t_ns, np.float64) * 1e-9
        return np.stack([pose_to_matrix(radius * math.sin(p), radius * (1 - math.cos(p)), z, 0.0, 0.0, p) for p in phi])
    return poses_at


def test_circle_gives_yaw_rate_and_centripetal_force_plus_gravity():
    times = np.arange(0, 2_000_000_000, OUSTER.period_ns)
    gyro, accel = imu_samples(circle(5.0, 2.0), times, OUSTER)
    np.testing.assert_allclose(gyro, np.tile([0.0, 0.0, 0.4], (len(times), 1)), atol=1e-9)
    # v^2 / r = 0.8 m/s^2 towards the centre (body +y, the left), the ground pushing up with g
    np.testing.assert_allclose(accel, np.tile([0.0, 0.8, G0], (len(times), 1)), atol=1e-5)


def test_tilted_at_rest_reads_gravity_in_its_frame_and_livox_in_g():
    roll, pitch = 0.3, -0.2
    pose = pose_to_matrix(1.0, 2.0, 3.0, roll, pitch, 0.7)
    times = np.arange(0, 100_000_000, LIVOX.period_ns)
    gyro, accel = imu_samples(lambda t: np.repeat(pose[None], len(np.atleast_1d(t)), 0), times, LIVOX)
    expect = pose[:3, :3].T @ np.array([0.0, 0.0, 1.0])  # in g: livox_ros_driver2's unit
    np.testing.assert_allclose(accel, np.tile(expect, (len(times), 1)), atol=1e-12)
    assert np.all(gyro == 0.0) and np.linalg.norm(accel[0]) == pytest.approx(1.0)


def test_noise_is_the_datasheet_density_seeded():
    times = np.arange(0, 200 * 1_000_000_000, OUSTER.period_ns)  # 20 000 samples
    still = lambda t: np.repeat(np.eye(4)[None], len(np.atleast_1d(t)), 0)  # noqa: E731
    gyro, accel = imu_samples(still, times, OUSTER, np.random.default_rng(3))
    again, _ = imu_samples(still, times, OUSTER, np.random.default_rng(3))
    assert np.array_equal(gyro, again)
    # ICM-20948: 0.015 deg/s/sqrt(Hz) and 230 ug/sqrt(Hz) at 100 Hz -> 0.15 deg/s and 2.3 mg per sample
    assert gyro.std(axis=0) == pytest.approx([math.radians(0.15)] * 3, rel=0.03)
    assert (accel - [0, 0, G0]).std(axis=0) == pytest.approx([230e-6 * G0 * 10] * 3, rel=0.03)
    assert imu_for_layout("velodyne") is None and imu_for_layout("livox") is LIVOX


# OS1-16 metadata (raw_1_14_beta_...legacy.json): os_sensor <- os_lidar = yaw pi, z 36.18 mm; os_sensor <- os_imu =
# (6.253, -11.775, 7.645) mm. The cloud is in os_lidar, so os_lidar <- os_imu = yaw pi, (-6.253, 11.775, 7.645 - 36.18) mm.
OS1_16_IMU_IN_LIDAR = pose_to_matrix(-6.253e-3, 11.775e-3, (7.645 - 36.18) * 1e-3, 0.0, 0.0, math.pi)


def test_ouster_imu_sits_in_os_imu_where_the_metadata_puts_it():
    from lidar_ros.config import load_sensor

    mount, frame = imu_mount(load_sensor("OS1-16"))
    assert frame == "os_imu"
    np.testing.assert_allclose(mount, OS1_16_IMU_IN_LIDAR, atol=1e-12)
    livox, livox_frame = imu_mount(load_sensor("Mid-360"))
    assert livox_frame is None and np.array_equal(livox, np.eye(4))  # livox_ros_driver2: the lidar's own frame


def test_ouster_imu_reads_the_circle_at_its_own_place_and_axes():
    """The circle of the test above (0.4 rad/s, 0.8 m/s^2 to the left) read by the OS1-16's IMU: its axes are the
    lidar's turned by pi (x, y flip) and it sits r = (-6.253, 11.775) mm off the lidar's axis, which adds the
    centripetal -w^2 r of a point of a turning body (in the lidar's axes, before the turn into the IMU's)."""
    from lidar_ros.config import load_sensor

    mount, _ = imu_mount(load_sensor("OS1-16"))
    times = np.arange(0, 1_000_000_000, OUSTER.period_ns)
    gyro, accel = imu_samples(lambda t: circle(5.0, 2.0)(t) @ mount, times, OUSTER)
    w2, r = 0.4 ** 2, np.array([-6.253e-3, 11.775e-3])
    in_lidar = np.array([0.0, 0.8]) - w2 * r  # the point's acceleration in the lidar's axes
    np.testing.assert_allclose(gyro, np.tile([0.0, 0.0, 0.4], (len(times), 1)), atol=1e-9)
    np.testing.assert_allclose(accel, np.tile([-in_lidar[0], -in_lidar[1], G0], (len(times), 1)), atol=1e-5)


def test_scenario_bag_has_the_ouster_imu_and_no_velodyne_one(tmp_path):
    from rosbags.highlevel import AnyReader

    from radarays_ros.scenario.runner import run_scenario
    from support.scenario import scenario_file

    sensors = {"ouster": {"type": "lidar", "config": "OS1-16", "max_frames": 1, "mount": [0, 0, 1.5, 0, 0, 0]},
               "velodyne": {"type": "lidar", "config": "VLP-16", "max_frames": 1}}
    run_scenario(scenario_file(tmp_path, sensors=sensors, duration=0.5), tmp_path / "run.mcap", quiet=True)
    with AnyReader([tmp_path / "run.mcap"]) as reader:
        topics = {c.topic: c.msgtype for c in reader.connections}
        (conn,) = [c for c in reader.connections if c.topic == "/ouster/imu"]
        msgs = [(t, reader.deserialize(raw, conn.msgtype)) for _, t, raw in reader.messages(connections=[conn])]
        (static,) = [c for c in reader.connections if c.topic == "/tf_static"]
        statics = reader.deserialize(next(reader.messages(connections=[static]))[2], static.msgtype)
    assert topics["/ouster/imu"] == "sensor_msgs/msg/Imu" and not any(t.startswith("/velodyne/imu") for t in topics)
    stamps = [m.header.stamp.sec * 10**9 + m.header.stamp.nanosec for _, m in msgs]
    assert stamps == [t for t, _ in msgs] and stamps == list(range(0, 500_000_001, 10_000_000))  # 100 Hz
    assert {m.header.frame_id for _, m in msgs} == {"os_imu"} and msgs[0][1].orientation_covariance[0] == -1
    (placed,) = [t for t in statics.transforms if t.child_frame_id == "os_imu"]  # ouster -> os_imu, latched
    tr, q = placed.transform.translation, placed.transform.rotation
    assert placed.header.frame_id == "ouster"
    np.testing.assert_allclose([tr.x, tr.y, tr.z], OS1_16_IMU_IN_LIDAR[:3, 3], atol=1e-9)
    np.testing.assert_allclose(abs(q.z), 1.0, atol=1e-9)  # yaw pi
    # a straight drive at constant speed: no rate, specific force = gravity, up to the ICM-20948 noise
    accel = np.array([[m.linear_acceleration.x, m.linear_acceleration.y, m.linear_acceleration.z] for _, m in msgs])
    gyro = np.array([[m.angular_velocity.x, m.angular_velocity.y, m.angular_velocity.z] for _, m in msgs])
    assert np.abs(accel - [0, 0, G0]).max() < 5 * 230e-6 * G0 * 10 and 0 < np.abs(gyro).max() < math.radians(0.15) * 5
    assert msgs[0][1].linear_acceleration_covariance[0] == pytest.approx((230e-6 * G0) ** 2 * 100)



def test_ouster_metadata_in_the_bag_is_the_sensor_as_simulated(tmp_path):
    """/<name>/metadata (std_msgs/String, latched) holds the JSON ouster-ros publishes on /ouster/metadata, made
    to say what the simulated unit is: OS0-64 is every second beam of a 128-beam table at 1024x10."""
    import json

    import yaml
    from mcap.reader import make_reader

    from lidar_ros.config import load_sensor
    from lidar_ros.patterns.ouster import read_metadata
    from radarays_ros.scenario.runner import run_scenario
    from support.scenario import scenario_file

    sensors = {"ouster": {"type": "lidar", "config": "OS0-64", "max_frames": 1}}
    run_scenario(scenario_file(tmp_path, sensors=sensors, duration=0.2), tmp_path / "run.mcap", quiet=True)
    from rosbags.highlevel import AnyReader

    with AnyReader([tmp_path / "run.mcap"]) as reader:
        (conn,) = [c for c in reader.connections if c.topic == "/ouster/metadata"]
        (text,) = [reader.deserialize(raw, conn.msgtype).data for _, _, raw in reader.messages(connections=[conn])]
    with (tmp_path / "run.mcap").open("rb") as f:
        channels = {c.topic: c for c in make_reader(f).get_summary().channels.values()}
    assert yaml.safe_load(channels["/ouster/metadata"].metadata["offered_qos_profiles"])[0]["durability"] == "transient_local"
    (tmp_path / "meta.json").write_text(text)
    meta = read_metadata(tmp_path / "meta.json")  # our own reader of the real units' files reads it back
    config = load_sensor("OS0-64")
    assert len(meta["altitude_deg"]) == config.rows == 64 and meta["columns_per_frame"] == config.cols == 1024
    np.testing.assert_allclose(np.radians(meta["altitude_deg"]), config.elevation[:, 0], atol=1e-3)
    assert '"1024x10"' in text and json.loads(text)
