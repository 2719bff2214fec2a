"""Plumbing of the ROS tests beside Gazebo: a gz partition of their own, clouds read through their fields, waiting for a message."""
from __future__ import annotations

import time
import uuid

import numpy as np
import pytest

from support import gz_netns
from support.netns_common import refuse
from support.ros_harness import decode


def refuse_gz_test(reason: str):
    refuse("Gazebo node test", reason)


@pytest.fixture
def gz_partition(monkeypatch) -> str:
    """Multicast on lo and a partition of our own, in the environment the node processes inherit."""
    try:
        gz_netns.ensure_isolated()  # the ROS namespace already holds only lo: this turns multicast on
    except OSError as exc:
        refuse_gz_test(f"no multicast on lo in the private network namespace: {exc}")
    partition = f"radarays_ros_{uuid.uuid4().hex[:8]}"
    for key in ("GZ_PARTITION", "IGN_PARTITION"):
        monkeypatch.setenv(key, partition)
    for key in ("GZ_IP", "IGN_IP"):
        monkeypatch.setenv(key, "127.0.0.1")
    return partition


def cloud_xyz(msg) -> np.ndarray:
    """(N, 3) finite points of a PointCloud2, read through its own PointField list."""
    offsets = {f.name: f.offset for f in msg.fields}
    raw = np.asarray(msg.data, np.uint8).tobytes()
    dtype = np.dtype({"names": ["x", "y", "z"], "formats": ["<f4"] * 3,
                      "offsets": [offsets["x"], offsets["y"], offsets["z"]], "itemsize": msg.point_step})
    pts = np.frombuffer(raw, dtype)
    xyz = np.stack([pts["x"], pts["y"], pts["z"]], 1).astype(float)
    return xyz[np.isfinite(xyz).all(axis=1)]


def wait_message(inbox, predicate, timeout: float = 15.0, after_ns: int = 0):
    """The first message (received after `after_ns`, monotonic) for which predicate(msg) holds."""
    deadline = time.monotonic() + timeout
    seen = 0
    while time.monotonic() < deadline:
        items = inbox.raw()
        for raw, received in items[seen:]:
            msg = gz_harness_decode(inbox, raw)
            if received > after_ns and predicate(msg):
                return msg, received
        seen = len(items)
        time.sleep(0.02)
    raise AssertionError(f"no {inbox.type_name} message matching within {timeout} s ({seen} received)")


def gz_harness_decode(inbox, raw):
    return decode(raw, inbox.type_name)
