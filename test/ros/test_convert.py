"""rosbags message objects -> rclpy messages: rclpy's own serialisation decodes (rosbags) to the original."""
from __future__ import annotations

import array

import numpy as np
import pytest

from radarays_ros.io import messages as M
from support.ros_harness import decode

pytestmark = pytest.mark.ros


def roundtrip(msg):
    from rclpy.serialization import serialize_message

    from radarays_ros.ros.convert import to_rclpy

    converted = to_rclpy(msg)
    return converted, decode(serialize_message(converted), msg.__msgtype__)


def test_organized_pointcloud2_bytes_identical():
    pts = np.zeros(64 * 32, dtype=[("x", "<f4"), ("y", "<f4"), ("z", "<f4"), ("intensity", "<f4"), ("ring", "<u2"), ("t", "<u4")])
    pts["x"] = np.arange(len(pts)) * 0.5
    pts["ring"] = np.repeat(np.arange(64), 32)
    pts["t"] = np.tile(np.arange(32) * 1000, 64)
    msg = M.pointcloud2(pts, 1_700_000_000_123_456_789, "os_sensor", height=64)
    converted, back = roundtrip(msg)
    assert isinstance(converted.data, array.array) and converted.data.typecode == "B"
    assert back.header.stamp.sec == 1_700_000_000 and back.header.stamp.nanosec == 123_456_789
    assert back.header.frame_id == "os_sensor"
    # packed little-endian fields (sensor_msgs/PointField: FLOAT32 = 7, UINT16 = 4, UINT32 = 6): 22 bytes a point
    assert (back.height, back.width, back.point_step, back.row_step) == (64, 32, 22, 22 * 32)
    assert [(f.name, f.offset, f.datatype, f.count) for f in back.fields] == [
        ("x", 0, 7, 1), ("y", 4, 7, 1), ("z", 8, 7, 1), ("intensity", 12, 7, 1), ("ring", 16, 4, 1), ("t", 18, 6, 1)]
    assert back.is_dense is True and back.is_bigendian is False
    assert bytes(np.asarray(back.data, np.uint8)) == pts.tobytes()  # the points themselves, byte for byte


def test_image_and_laserscan_values():
    img = np.arange(12, dtype=np.float32).reshape(3, 4) / 7
    _, back = roundtrip(M.image(img, 5, "radar"))
    assert (back.encoding, back.height, back.width, back.step) == ("32FC1", 3, 4, 16)
    np.testing.assert_array_equal(np.frombuffer(np.asarray(back.data, np.uint8).tobytes(), np.float32).reshape(3, 4), img)
    scan = M.laserscan([1.0, np.inf, 2.5], 7, "laser", angle_min=-0.1, angle_increment=0.1, range_min=0.2,
                       range_max=30.0, intensities=[10, 0, 20])
    converted, back = roundtrip(scan)
    assert converted.ranges.typecode == "f"
    np.testing.assert_array_equal(back.ranges, np.array([1.0, np.inf, 2.5], np.float32))
    np.testing.assert_array_equal(back.intensities, [10, 0, 20])
    assert back.angle_max == pytest.approx(0.1, abs=1e-7)


def test_tf_message_nested_sequences():
    from radarays_ros.world.transforms import pose_to_matrix

    tfs = [M.transform_stamped(pose_to_matrix(1, 2, 3, 0, 0, 0.5), 9, "map", "base_link"),
           M.transform_stamped(pose_to_matrix(0.2, 0, 1), 9, "base_link", "radar")]
    _, back = roundtrip(M.tf_message(tfs))
    assert [t.child_frame_id for t in back.transforms] == ["base_link", "radar"]
    assert back.transforms[0].transform.translation.y == 2.0
    assert back.transforms[0].transform.rotation.z == pytest.approx(np.sin(0.25))


def test_cdr_bytes_read_by_rclpy():
    """to_cdr (what the nodes publish) is read back by rclpy's own deserialiser, value for value."""
    from rclpy.serialization import deserialize_message
    from sensor_msgs.msg import PointCloud2

    from radarays_ros.ros.convert import to_cdr

    pts = np.zeros(16, dtype=[("x", "<f4"), ("y", "<f4"), ("z", "<f4"), ("ring", "<u2")])
    pts["x"] = np.arange(16)
    pts["ring"] = 7
    msg = M.pointcloud2(pts, 5_000_000_001, "lidar", height=4)
    back = deserialize_message(to_cdr(msg), PointCloud2)
    assert (back.header.stamp.sec, back.header.stamp.nanosec, back.header.frame_id) == (5, 1, "lidar")
    assert (back.height, back.width, back.point_step) == (4, 4, 14)
    assert [(f.name, f.offset) for f in back.fields] == [("x", 0), ("y", 4), ("z", 8), ("ring", 12)]
    assert bytes(back.data) == pts.tobytes()
