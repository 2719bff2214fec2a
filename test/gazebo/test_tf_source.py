"""Poses from PosePublisher transforms (bridged /tf) move the right entities."""
from __future__ import annotations

import math

import numpy as np

from radarays_ros.gazebo.tf_source import TfPoseSource
from radarays_ros.world.entities import add_entities
from radarays_ros.world.scene import Scene
from radarays_ros.world.sdf import parse_sdf_string
from radarays_ros.world.transforms import pose_to_matrix

WORLD = """<sdf version="1.11"><world name="yard">
  <model name="ground"><static>true</static><link name="link"><visual name="v">
    <geometry><box><size>10 10 0.1</size></box></geometry></visual></link></model>
  <model name="crate"><pose>5 2 0.5 0 0 0</pose><link name="link">
    <visual name="visual"><pose>0 0 0.1 0 0 0</pose><geometry><box><size>1 1 1</size></box></geometry></visual>
  </link></model>
</world></sdf>"""


def test_pose_publisher_transforms_move_visuals():
    scene = Scene()
    add_entities(scene, parse_sdf_string(WORLD, ".").entities)
    source = TfPoseSource(scene)
    ground_before = scene.entity("ground::link::v").pose.copy()
    # as bridged: model in the world (frame = world name), link in the model ('::' became '/')
    moved = source.apply([("yard", "crate", pose_to_matrix(5, 2, 0.5)), ("crate", "crate/link", np.eye(4))])
    assert moved == 0  # the loaded pose already matches: the visual offset is learned, nothing moves
    moved = source.apply([("yard", "crate", pose_to_matrix(1, 1, 0.5, 0, 0, math.pi / 2))])
    assert moved == 1
    expected = pose_to_matrix(1, 1, 0.5, 0, 0, math.pi / 2) @ pose_to_matrix(0, 0, 0.1)
    np.testing.assert_allclose(scene.entity("crate::link::visual").pose, expected, atol=1e-12)
    assert source.apply([("yard", "crate", pose_to_matrix(1.0005, 1, 0.5, 0, 0, math.pi / 2))]) == 0  # < 1 mm
    assert source.apply([("crate", "crate::link", pose_to_matrix(0, 0, 0, 0.01, 0, 0))]) == 1  # '::' spelling too
    np.testing.assert_array_equal(scene.entity("ground::link::v").pose, ground_before)  # never in TF


def test_link_offsets_from_the_sdf_hold_for_models_moved_before_start():
    scene = Scene()
    parsed = parse_sdf_string(WORLD, ".")
    add_entities(scene, parsed.entities)
    offsets = TfPoseSource.link_offsets(parsed.entities)
    np.testing.assert_allclose(offsets["crate::link::visual"], pose_to_matrix(0, 0, 0.1), atol=1e-12)
    source = TfPoseSource(scene, link_offsets=offsets)
    # the crate was pushed before the first transform arrived: it is not where the SDF put it
    model = pose_to_matrix(1, 1, 0.5, 0, 0, math.pi / 2)
    assert source.apply([("yard", "crate", model), ("crate", "crate/link", np.eye(4))]) == 1
    np.testing.assert_allclose(scene.entity("crate::link::visual").pose, model @ pose_to_matrix(0, 0, 0.1), atol=1e-12)


def test_stamped_transforms_give_moving_models_their_velocity():
    """With the messages' stamps, an entity gets the twist of its last two poses received: the crate turning at
    0.5 rad/s while its model origin moves at (2, -1, 0) m/s, its visual 0.1 m above the link origin; a model
    whose message did not come keeps its twist; one that stops reads zero."""
    scene = Scene()
    add_entities(scene, parse_sdf_string(WORLD.replace("</world>", CART + "</world>"), ".").entities)
    parsed = parse_sdf_string(WORLD.replace("</world>", CART + "</world>"), ".")
    source = TfPoseSource(scene, link_offsets=TfPoseSource.link_offsets(parsed.entities))
    link = [("crate", "crate/link", np.eye(4))]
    source.apply([("yard", "crate", pose_to_matrix(5, 2, 0.5)), *link], stamp_ns=1_000_000_000)
    assert scene.entity("crate::link::visual").twist is None  # one pose: no velocity yet
    source.apply([("yard", "crate", pose_to_matrix(5.04, 1.98, 0.5, 0, 0, 0.01))], stamp_ns=1_020_000_000)
    v, w = scene.entity("crate::link::visual").twist
    np.testing.assert_allclose(w, [0, 0, 0.5], atol=1e-9)
    # the visual's origin is on the turning axis (0.1 m above the link origin): v of the model origin
    np.testing.assert_allclose(v, [2.0, -1.0, 0.0], atol=1e-9)
    source.apply([("yard", "cart", pose_to_matrix(-3, 0, 0.2))], stamp_ns=1_040_000_000)  # another model's message
    np.testing.assert_allclose(scene.entity("crate::link::visual").twist[0], [2.0, -1.0, 0.0], atol=1e-9)
    source.apply([("yard", "crate", pose_to_matrix(5.04, 1.98, 0.5, 0, 0, 0.01))], stamp_ns=1_060_000_000)
    assert not np.any(scene.entity("crate::link::visual").twist[0])  # it stopped
    assert source.apply([("yard", "crate", pose_to_matrix(5.04, 1.98, 0.5))], stamp_ns=1_000_000_000) == 1
    assert scene.entity("crate::link::visual").twist is None  # an older stamp moves it but says no velocity
    assert source.velocity_error is None


CART = """<model name="cart"><pose>-3 0 0.2 0 0 0</pose><link name="link">
    <visual name="visual"><geometry><box><size>1 1 0.4</size></box></geometry></visual></link></model>"""
