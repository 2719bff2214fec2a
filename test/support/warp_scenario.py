"""A small scenario on the office world for host and device frames, and its bag read back with rosbags."""
from __future__ import annotations

import numpy as np
import yaml
from rosbags.highlevel import AnyReader
from rosbags.typesys import Stores, get_typestore

from radarays_ros.resources import shipped


TYPESTORE = get_typestore(Stores.ROS2_JAZZY)


def scenario(tmp_path, frames: str, **sensor_changes) -> str:
    data = {
        "world": str(shipped("world", "office")),
        "duration": 0.5,
        "trajectory": {"waypoints": [[2.0, 0.0], [6.0, 0.0]], "speed": 2.0},
        "sensors": {
            "radar": {"type": "radar", "config": str(shipped("example", "radarays_compat")),
                      "set": {"azimuth.count": 60}, "mount": [0, 0, 1.0, 0, 0, 0.2], "frames": frames, "max_frames": 3},
            "lidar": {"type": "lidar", "config": "VLP-16", "set": {"noise.sigma": 0.0, "noise.resolution": 0.0},
                      "mount": [0, 0, 1.2, 0, 0, 0], "frames": frames, "max_frames": 3},
        },
    }
    for name, changes in sensor_changes.items():
        data["sensors"][name].update(changes)
    path = tmp_path / f"{frames}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return str(path)


def topic_messages(path, topic: str) -> list:
    """The bag's messages on `topic`, decoded by rosbags (not our writer's code)."""
    with AnyReader([path], default_typestore=TYPESTORE) as reader:
        conns = [c for c in reader.connections if c.topic == topic]
        return [reader.deserialize(raw, conn.msgtype) for conn, _, raw in reader.messages(connections=conns)]


def images(path) -> list[np.ndarray]:
    """The bag's radar images as arrays [azimuth, range] (range_rows layout: rows are range bins)."""
    return [np.frombuffer(bytes(m.data), np.uint8).reshape(m.height, m.width).T.astype(np.float64)
            for m in topic_messages(path, "/radar/image")]


def clouds(path) -> list[np.ndarray]:
    """The bag's lidar points (N, 3) float32, read through each cloud's own field offsets."""
    out = []
    for m in topic_messages(path, "/lidar/points"):
        offsets = {f.name: f.offset for f in m.fields}
        rows = np.frombuffer(bytes(m.data), np.uint8).reshape(-1, m.point_step)
        out.append(np.stack([rows[:, offsets[k]:offsets[k] + 4].copy().view(np.float32)[:, 0] for k in "xyz"], 1))
    return out
