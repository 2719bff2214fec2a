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
