"""A cheap radar node in the ROS tests' room (test/ros/data/room.sdf) and the check that its image sees the walls."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from support.ros_harness import write_params


ROOM = Path(__file__).resolve().parents[1] / "ros" / "data" / "room.sdf"
AZIMUTHS, BINS, RESOLUTION, RATE = 40, 300, 0.05, 10.0
SMALL_RADAR = {  # a cheap radar: 40 azimuths all around, 15 m of range, 4 rays per azimuth, one pass
    "azimuth": {"count": AZIMUTHS, "step_deg": -9.0, "rate_hz": RATE},
    "range": {"bins": BINS, "resolution": RESOLUTION},
    "beam": {"samples": 4},
    "tracing": {"passes": 1},
    "kernel": {"width": 5},
}


def radar_params(tmp_path, **extra):
    params = {"world": str(ROOM), "config": "radarays_default", "pose_source": "fixed",
              "fixed_pose": [0.0, 0.0, 1.0, 0.0, 0.0, 0.0], "sensor": SMALL_RADAR}
    params.update(extra)
    return write_params(tmp_path / "radar.yaml", "radar_node", params)


def polar(msg) -> np.ndarray:
    """[azimuth, bin] array of a radar/image message (either layout, either encoding)."""
    dtype = np.uint8 if msg.encoding == "mono8" else np.float32
    a = np.frombuffer(np.asarray(msg.data, np.uint8).tobytes(), dtype).reshape(msg.height, msg.width)
    return a.T if msg.height == BINS else a


def wall_ranges(yaw: float = 0.0, x: float = 0.0) -> np.ndarray:
    """Distance to the room's walls along each azimuth of SMALL_RADAR from (x, 0) heading yaw."""
    theta = yaw + np.radians(-9.0 * np.arange(AZIMUTHS))
    c, s = np.cos(theta), np.sin(theta)
    with np.errstate(divide="ignore"):
        tx = np.where(c > 0, (9.9 - x) / c, np.where(c < 0, (-9.9 - x) / c, np.inf))
        ty = np.where(s != 0, 9.9 / np.abs(s), np.inf)
    return np.minimum(tx, ty)


def assert_sees_room(msg, yaw=0.0, x=0.0):
    peaks = (polar(msg).argmax(axis=1) + 0.5) * RESOLUTION
    expected = wall_ranges(yaw, x)
    visible = expected < BINS * RESOLUTION - 1.0
    assert visible.sum() >= 20
    np.testing.assert_allclose(peaks[visible], expected[visible], atol=0.5)
