"""rosbag2 writer (MCAP storage) over rosbags.

`BagWriter("run.mcap")` writes one self-contained MCAP file (playable with `ros2 bag play run.mcap`
on Iron and later, readable by rosbags' readers); any other path becomes a rosbag2 directory with
metadata.yaml and an MCAP file inside.
"""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from rosbags.interfaces import Qos, QosDurability, QosHistory, QosLiveliness, QosReliability, QosTime
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.rosbag2.enums import CompressionFormat, CompressionMode  # noqa: F401  (re-exported for users)

from ..errors import ConfigError
from .messages import TYPESTORE, msgtype_of


def _qos(durability: QosDurability, depth: int) -> Qos:
    never = QosTime(sec=0x7FFFFFFF, nsec=0xFFFFFFFF)  # rosbag2's "infinite" duration
    return Qos(QosHistory.KEEP_LAST, depth, QosReliability.RELIABLE, durability, never, never,
               QosLiveliness.AUTOMATIC, never, False)


# /tf_static is latched (tf2's static broadcaster: reliable, transient local, depth 1): recorded so,
# `ros2 bag play` re-offers it the same way and late subscribers still get the static transforms
LATCHED_QOS = [_qos(QosDurability.TRANSIENT_LOCAL, 1)]
LATCHED_TOPICS = ("/tf_static",)


class BagWriter:
    def __init__(self, path: str | Path, overwrite: bool = True):
        self.path = Path(path)
        self._single_file = self.path.suffix == ".mcap"
        if self.path.exists():
            if not overwrite:
                raise ConfigError(f"output {self.path} exists")
            shutil.rmtree(self.path) if self.path.is_dir() else self.path.unlink()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self._single_file:
            self._tmp = Path(tempfile.mkdtemp(prefix="radarays_bag_", dir=self.path.parent))
            bag_dir = self._tmp / self.path.stem
        else:
            self._tmp = None
            bag_dir = self.path
        self._writer = Writer(bag_dir, version=9, storage_plugin=StoragePlugin.MCAP)
        self._bag_dir = bag_dir
        self._connections: dict[str, object] = {}
        self._writer.open()

    def write(self, topic: str, msg, t_ns: int) -> None:
        """Serialise a rosbags message object to CDR and append it at log time t_ns."""
        msgtype = msgtype_of(msg)
        conn = self._connections.get(topic)
        if conn is None:
            qos = LATCHED_QOS if topic in LATCHED_TOPICS else ()
            conn = self._writer.add_connection(topic, msgtype, typestore=TYPESTORE, offered_qos_profiles=qos)
            self._connections[topic] = conn
        elif conn.msgtype != msgtype:
            raise ConfigError(f"bag topic {topic}: already carries {conn.msgtype}, cannot write {msgtype}")
        self._writer.write(conn, int(t_ns), TYPESTORE.serialize_cdr(msg, msgtype))

    def close(self) -> None:
        if self._writer is None:
            return
        self._writer.close()
        self._writer = None
        if self._tmp is not None:
            (mcap,) = self._bag_dir.glob("*.mcap")
            shutil.move(str(mcap), self.path)
            shutil.rmtree(self._tmp, ignore_errors=True)

    def __enter__(self) -> "BagWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
