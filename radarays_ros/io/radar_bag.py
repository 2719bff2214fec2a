"""Radar frames from a rosbag2: sensor_msgs/Image (mono8) messages of one topic as [azimuth, bin] counts."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import ConfigError


def read_image_topic(path: Path, topic: str, layout: str, max_frames: int) -> list[np.ndarray]:
    """Up to max_frames uint8 (A, B) arrays; layout range_rows (rows = bins) or azimuth_rows."""
    from rosbags.highlevel import AnyReader

    from .messages import TYPESTORE

    frames = []
    try:
        with AnyReader([Path(path)], default_typestore=TYPESTORE) as reader:
            conns = [c for c in reader.connections if c.topic == topic]
            if not conns:
                raise ConfigError(f"rosbag2 {path}: no topic {topic}; topics: "
                                  f"{', '.join(sorted({c.topic for c in reader.connections}))}")
            if conns[0].msgtype != "sensor_msgs/msg/Image":
                raise ConfigError(f"rosbag2 {path}: {topic} carries {conns[0].msgtype}; expected sensor_msgs/msg/Image")
            for conn, _, raw in reader.messages(connections=conns):
                msg = reader.deserialize(raw, conn.msgtype)
                if msg.encoding != "mono8":
                    raise ConfigError(f"rosbag2 {path}: {topic} encoding {msg.encoding}; expected mono8 (counts)")
                data = np.frombuffer(bytes(msg.data), np.uint8).reshape(msg.height, msg.step)[:, :msg.width]
                frames.append(np.ascontiguousarray(data.T if layout == "range_rows" else data))
                if len(frames) >= max_frames:
                    break
    except ConfigError:
        raise
    except Exception as exc:  # rosbags' own errors: not a bag, unknown storage
        raise ConfigError(f"rosbag2 {path}: cannot read ({exc})") from None
    return frames
