"""A lidar node on the warp backend (Warp's CPU device) as a real process: parameters backend/device."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from ros_harness import NodeProcess, Probe, write_params

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
