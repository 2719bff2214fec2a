"""The nodes' transform buffer against hand-computed poses (no ROS needed)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from radarays_ros.sensors.tf_buffer import TransformBuffer, TransformLookupError
from radarays_ros.world.transforms import pose_to_matrix

S = 1_000_000_000


def yaw_quat(yaw):
    return (0.0, 0.0, math.sin(yaw / 2), math.cos(yaw / 2))


def make_buffer():
    tf = TransformBuffer(tolerance_ns=0)
    # odom <- base_link drives +x at 1 m/s while turning 90 degrees over 1 s
    tf.set_transform("odom", "base_link", 0, (0, 0, 0), yaw_quat(0))
    tf.set_transform("odom", "base_link", S, (1, 0, 0), yaw_quat(math.pi / 2))
    tf.set_transform("map", "odom", 0, (10, 0, 0), yaw_quat(0), static=True)
    tf.set_transform("base_link", "radar", 0, (0.5, 0, 1.0), yaw_quat(0), static=True)
    return tf


def test_interpolates_and_composes_the_chain():
    tf = make_buffer()
    poses = tf.lookup("map", "radar", [0, S // 2, S])
    # at t = 0.5 s: base at x = 10.5, yaw 45 deg; the radar 0.5 m ahead of the base along its heading
    expected_mid = pose_to_matrix(10.5, 0, 0, 0, 0, math.pi / 4) @ pose_to_matrix(0.5, 0, 1.0)
    np.testing.assert_allclose(poses[1], expected_mid, atol=1e-9)
    np.testing.assert_allclose(poses[0][:3, 3], [10.5, 0, 1.0], atol=1e-9)
    np.testing.assert_allclose(poses[2][:3, 3], [11.0, 0.5, 1.0], atol=1e-9)


def test_inverse_direction_and_identity():
    tf = make_buffer()
    forward = tf.lookup("map", "radar", [S // 4])[0]
    backward = tf.lookup("radar", "map", [S // 4])[0]
    np.testing.assert_allclose(forward @ backward, np.eye(4), atol=1e-12)
    np.testing.assert_allclose(tf.lookup("radar", "radar", [5])[0], np.eye(4))


def test_zero_time_means_latest():
    tf = make_buffer()
    np.testing.assert_allclose(tf.lookup("map", "base_link", 0)[0][:3, 3], [11, 0, 0], atol=1e-12)


def test_refuses_extrapolation_beyond_tolerance():
    tf = make_buffer()
    with pytest.raises(TransformLookupError, match="requested"):
        tf.lookup("map", "radar", [2 * S])
    np.testing.assert_allclose(tf.lookup("map", "base_link", [2 * S], tolerance_ns=S)[0][:3, 3], [11, 0, 0], atol=1e-12)
    tolerant = make_buffer()
    tolerant.tolerance_ns = S
    np.testing.assert_allclose(tolerant.lookup("map", "base_link", [2 * S])[0][:3, 3], [11, 0, 0], atol=1e-12)


def test_unconnected_frames_name_the_known_ones():
    tf = make_buffer()
    with pytest.raises(TransformLookupError, match="not connected.*base_link"):
        tf.lookup("map", "lidar", [0])


@pytest.mark.parametrize("translation,rotation", [((math.nan, 0, 0), (0, 0, 0, 1)), ((0, 0, 0), (0, 0, 0, 0))])
def test_bad_samples_rejected_and_buffer_unchanged(translation, rotation):
    tf = make_buffer()
    with pytest.raises(TransformLookupError):
        tf.set_transform("odom", "base_link", S // 2, translation, rotation)
    np.testing.assert_allclose(tf.lookup("map", "base_link", [S // 2])[0][:3, 3], [10.5, 0, 0], atol=1e-9)


def test_loop_rejected():
    tf = make_buffer()
    with pytest.raises(TransformLookupError, match="loop"):
        tf.set_transform("radar", "map", 0, (0, 0, 0), (0, 0, 0, 1), static=True)


def test_old_samples_pruned():
    tf = TransformBuffer(cache_s=1.0)
    for k in range(30):
        tf.set_transform("map", "base_link", k * S // 10, (k, 0, 0), (0, 0, 0, 1))
    with pytest.raises(TransformLookupError):
        tf.lookup("map", "base_link", [S // 10])
    np.testing.assert_allclose(tf.lookup("map", "base_link", [29 * S // 10])[0][:3, 3], [29, 0, 0])
