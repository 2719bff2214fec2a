"""A lidar node on the warp backend (Warp's CPU device) as a real process: parameters backend/device."""
from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pytest

from support.ros_harness import NodeProcess, Probe, write_params

pytestmark = pytest.mark.ros

ROOM = Path(__file__).parent / "data" / "room.sdf"


def _warp_or_skip():
    try:
        import warp  # noqa: F401
    except ImportError:
        if os.environ.get("CI", "").lower() == "true":
            raise AssertionError("CI=true but warp-lang is not importable; it is in the test extra") from None
        pytest.skip("warp-lang is not installed")


def test_lidar_node_on_the_warp_backend(tmp_path):
    _warp_or_skip()
    params = write_params(tmp_path / "lidar.yaml", "lidar_node", {
        "world": str(ROOM), "config": "VLP-16", "pose_source": "fixed", "fixed_pose": [0.0, 0.0, 1.0, 0.0, 0.0, 0.0],
        "backend": "warp", "device": "cpu", "sensor": {"noise": {"sigma": 0.0}}})
    with Probe() as probe, NodeProcess("radarays_ros.ros.lidar_node", params_file=params) as node:
        clouds = probe.subscribe("/points", "sensor_msgs/msg/PointCloud2")
        msgs = clouds.wait(2, timeout=60)
        assert node.alive(), node.output()
    msg = msgs[-1]
    names = [f.name for f in msg.fields]
    step = msg.point_step
    raw = np.frombuffer(np.asarray(msg.data, np.uint8).tobytes(), np.uint8).reshape(-1, step)
    offset = {f.name: f.offset for f in msg.fields}
    x = raw[:, offset["x"]:offset["x"] + 4].copy().view("<f4").ravel()
    y = raw[:, offset["y"]:offset["y"] + 4].copy().view("<f4").ravel()
    ok = np.isfinite(x)
    assert "ring" in names and ok.mean() > 0.3
    # every return lies on a wall of the room (inner faces at 9.9 m), as on the embree backend
    assert np.isclose(np.maximum(np.abs(x[ok]), np.abs(y[ok])), 9.9, atol=0.02).mean() > 0.99


def test_radar_node_with_device_frames_sees_the_room(tmp_path):
    """`frames: device` runs whole radar frames in Warp kernels (CPU device here): the walls where they are."""
    _warp_or_skip()
    from support.ros_radar import SMALL_RADAR, assert_sees_room, radar_params

    # Perlin ambient noise has no device kernel (the node would refuse the sensor and say so)
    sensor = {**SMALL_RADAR, "noise": {"ambient": "uniform"}}
    params = radar_params(tmp_path, backend="warp", device="cpu", frames="device", sensor=sensor)
    with Probe() as probe, NodeProcess("radarays_ros.ros.radar_node", params_file=params) as node:
        images = probe.subscribe("/radar/image", "sensor_msgs/msg/Image")
        msgs = images.wait(2, timeout=90)
        assert node.alive(), node.output()
    assert_sees_room(msgs[-1])


def test_device_frames_need_the_warp_backend(tmp_path):
    """frames: device on embree: the sensor is not started and the node says why (one line), alive."""
    from support.ros_radar import radar_params

    params = radar_params(tmp_path, frames="device")
    with Probe() as probe, NodeProcess("radarays_ros.ros.radar_node", params_file=params) as node:
        images = probe.subscribe("/radar/image", "sensor_msgs/msg/Image")
        deadline = time.monotonic() + 90
        while "not started" not in node.output() and time.monotonic() < deadline and node.alive():
            time.sleep(0.2)
        time.sleep(1.0)  # a timer period or more after the refusal: still no image, still alive
        assert node.alive(), node.output()
        assert not images.messages()
        assert "frames 'device' needs the warp backend" in node.output()
