"""lidar_node with the lidar toolbox's other sensors as a real process: an ultrasonic ranger publishes
sensor_msgs/Range, a ToF depth camera a depth Image with its CameraInfo."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from support.ros_harness import NodeProcess, Probe, write_params

pytestmark = [pytest.mark.ros, pytest.mark.slow]

ROOM = Path(__file__).parent / "data" / "room.sdf"


def test_ultrasonic_ranger_publishes_range(tmp_path):
    params = write_params(tmp_path / "sonar.yaml", "lidar_node", {
        "world": str(ROOM), "config": "HC-SR04", "pose_source": "fixed", "fixed_pose": [6.0, 0.0, 1.0, 0.0, 0.0, 0.0],
        "reliable": True})
    with Probe() as probe, NodeProcess("radarays_ros.ros.lidar_node", params_file=params) as node:
        ranges = probe.subscribe("/range", "sensor_msgs/msg/Range", qos="reliable")
        msg = ranges.wait(1, timeout=40)[-1]
        assert node.alive(), node.output()
    assert msg.header.frame_id == "ultrasound" and msg.radiation_type == 0
    assert msg.range == pytest.approx(3.9, abs=0.01)  # the +x wall (inner face 9.9 m) from x = 6 m
    assert msg.field_of_view == pytest.approx(np.radians(15)) and msg.max_range == pytest.approx(4.0)


def test_depth_camera_publishes_depth_and_camera_info(tmp_path):
    params = write_params(tmp_path / "tof.yaml", "lidar_node", {
        "world": str(ROOM), "config": "ToF-camera-320x240", "pose_source": "fixed",
        # the pose of frame_id, the optical frame (z forward): rpy (-90°, 0, -90°) looks along world +x
        "fixed_pose": [6.0, 0.0, 1.0, -np.pi / 2, 0.0, -np.pi / 2], "reliable": True, "sensor": {"noise": {"sigma": 0.0}}})
    with Probe() as probe, NodeProcess("radarays_ros.ros.lidar_node", params_file=params) as node:
        images = probe.subscribe("/depth/image", "sensor_msgs/msg/Image", qos="reliable")
        infos = probe.subscribe("/depth/camera_info", "sensor_msgs/msg/CameraInfo", qos="reliable")
        image = images.wait(1, timeout=40)[-1]
        info = infos.wait(1, timeout=20)[-1]
        assert node.alive(), node.output()
    assert (image.encoding, image.height, image.width) == ("32FC1", 240, 320)
    depth = np.frombuffer(np.asarray(image.data, np.uint8).tobytes(), "<f4").reshape(240, 320)
    assert depth[120, 160] == pytest.approx(3.9, abs=0.01)
    assert (info.width, info.height) == (320, 240) and info.k[2] == pytest.approx(159.5)
