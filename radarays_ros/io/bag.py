"""rosbag2 writer (MCAP storage, zstd-compressed chunks) over rosbags.

`BagWriter("run.mcap")` writes one self-contained MCAP file (playable with `ros2 bag play run.mcap`
on Iron and later, readable by rosbags' and mcap's readers); any other path becomes a rosbag2
directory with metadata.yaml and an MCAP file inside. A name ending in `.bag` is refused: that is a
ROS 1 bag, which this writer does not make.

Safety of the output path (nothing the program did not write is ever deleted):
- the bag is written under a temporary name in the same directory (`.NAME.XXXX.partial/`) and
  renamed to its final name when it is complete, so an interrupted run leaves no half bag under the
  final name (a stale `.partial` folder at most, never read as a bag);
- an existing output is refused unless `overwrite=True`, and even then only a file that starts with
  the MCAP magic bytes, or a rosbag2 directory (metadata.yaml and exactly the files it lists), is
  replaced.

Each topic records the QoS a live publisher offers, so `ros2 bag play` re-offers it: sensor data reliable
depth 10 (as the nodes and velodyne_pointcloud publish), /tf_static reliable + transient local (tf2's static
broadcaster), everything else reliable; and its type hash (`topic_type_hash`), as rosbag2 Jazzy writes.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import yaml
from rosbags.interfaces import Qos, QosDurability, QosHistory, QosLiveliness, QosReliability, QosTime
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.rosbag2.enums import CompressionFormat, CompressionMode

from ..errors import ConfigError
from .messages import TYPESTORE, msgtype_of

ROS_DISTRO = "jazzy"
MCAP_MAGIC = b"\x89MCAP0\r\n"


def _qos(reliability: QosReliability, durability: QosDurability, depth: int) -> Qos:
    never = QosTime(sec=0x7FFFFFFF, nsec=0xFFFFFFFF)  # rosbag2's "infinite" duration
    return Qos(QosHistory.KEEP_LAST, depth, reliability, durability, never, never, QosLiveliness.AUTOMATIC, never, False)


# /tf_static is latched (tf2's static broadcaster: reliable, transient local, depth 1): recorded so,
# `ros2 bag play` re-offers it the same way and late subscribers still get the static transforms
LATCHED_QOS = [_qos(QosReliability.RELIABLE, QosDurability.TRANSIENT_LOCAL, 1)]
LATCHED_TOPICS = ("/tf_static",)
LATCHED_MSGTYPES = ("std_msgs/msg/String",)  # ouster-ros /ouster/metadata: latched as the driver publishes it
# sensor streams as the nodes (and velodyne_pointcloud, livox_ros_driver2) publish them: reliable, volatile,
# depth 10, so `ros2 bag play` reaches default-QoS subscribers and best-effort ones alike
SENSOR_QOS = [_qos(QosReliability.RELIABLE, QosDurability.VOLATILE, 10)]
SENSOR_MSGTYPES = ("sensor_msgs/msg/Image", "sensor_msgs/msg/PointCloud2", "sensor_msgs/msg/LaserScan")
# /tf, /clock, /odom and the rest: reliable, volatile (tf2's broadcaster uses depth 100)
RELIABLE_QOS = [_qos(QosReliability.RELIABLE, QosDurability.VOLATILE, 100)]


def topic_qos(topic: str, msgtype: str) -> list[Qos]:
    """The QoS profile a live publisher of this topic offers."""
    if topic in LATCHED_TOPICS or msgtype in LATCHED_MSGTYPES:
        return LATCHED_QOS
    if msgtype in SENSOR_MSGTYPES:
        return SENSOR_QOS
    return RELIABLE_QOS


def is_rosbag2_output(path: Path) -> bool:
    """True for what this writer makes: an MCAP file, or a rosbag2 directory holding only its listed files."""
    if path.is_symlink():
        return False
    if path.is_file():
        with path.open("rb") as f:
            return f.read(len(MCAP_MAGIC)) == MCAP_MAGIC
    if not path.is_dir():
        return False
    try:
        meta = yaml.safe_load((path / "metadata.yaml").read_text("utf8"))
        listed = set(meta["rosbag2_bagfile_information"]["relative_file_paths"])
    except (OSError, UnicodeError, yaml.YAMLError, KeyError, TypeError):
        return False
    present = {p.name for p in path.iterdir()}
    return all(isinstance(n, str) and "/" not in n for n in listed) and present == listed | {"metadata.yaml"}


def check_output_path(path: str | Path, overwrite: bool) -> Path:
    """The output path, or a one-line ConfigError when it may not be written."""
    path = Path(path)
    if path.suffix == ".bag":
        raise ConfigError(f"output {path}: .bag is a ROS 1 bag; this writes rosbag2 MCAP: name it "
                          f"{path.with_suffix('.mcap').name} (one file) or {path.stem} (a rosbag2 directory)")
    if path.exists() or path.is_symlink():
        if not overwrite:
            raise ConfigError(f"output {path} exists; give another name, or --overwrite to replace a bag "
                              "written by radarays")
        if not is_rosbag2_output(path):
            raise ConfigError(f"output {path} exists and is not an MCAP file or a rosbag2 directory "
                              "(metadata.yaml and its files only): not replaced, even with --overwrite")
    return path


def _channel_with_type_hash(storage):
    """The MCAP storage's add_connection writing the channel metadata rosbag2 Jazzy writes: the offered QoS
    profiles and `topic_type_hash` (the type's RIHS01 hash, rosbag2_storage_mcap's key; rosbags 0.11 puts the
    hash in metadata.yaml only). Tools that replay or bridge a bag take the DDS type hash from this key."""
    from io import BytesIO

    from rosbags.rosbag2.storage_mcap import Channel, write_channel, write_string

    def add_connection(connection, offered_qos_profiles: str) -> None:
        metadata = BytesIO()
        for key, value in (("offered_qos_profiles", offered_qos_profiles), ("topic_type_hash", connection.digest)):
            write_string(metadata, key)
            write_string(metadata, value)
        storage.channels.append(Channel(connection.id, connection.msgtype, connection.topic,
                                        connection.ext.serialization_format, metadata.getvalue()))
        storage.channel_stats[connection.id] = 0
        write_channel(storage.chunk.bio, storage.channels[-1], storage.schemas)

    return add_connection


class _Writer(Writer):
    """rosbags' Writer, recording the ROS distribution whose message definitions the bag holds and each
    channel's type hash as rosbag2 Jazzy does."""

    def open(self) -> None:
        super().open()
        self.storage.add_connection = _channel_with_type_hash(self.storage)
        storage_close = self.storage.close

        def close(version: int, metadata: str) -> None:
            storage_close(version, metadata.replace("ros_distro: rosbags", f"ros_distro: {ROS_DISTRO}"))

        self.storage.close = close

    def close(self) -> None:
        super().close()
        text = self.metapath.read_text("utf8")
        self.metapath.write_text(text.replace("ros_distro: rosbags", f"ros_distro: {ROS_DISTRO}"), "utf8")


class BagWriter:
    def __init__(self, path: str | Path, overwrite: bool = False):
        self.path = check_output_path(path, overwrite)
        self._single_file = self.path.suffix == ".mcap"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._tmp = Path(tempfile.mkdtemp(prefix=f".{self.path.name}.", suffix=".partial", dir=self.path.parent))
        self._bag_dir = self._tmp / (self.path.stem if self._single_file else self.path.name)
        self._writer = _Writer(self._bag_dir, version=9, storage_plugin=StoragePlugin.MCAP)
        self._writer.set_compression(CompressionMode.STORAGE, CompressionFormat.ZSTD)
        self._connections: dict[str, object] = {}
        self._writer.open()

    def write(self, topic: str, msg, t_ns: int) -> None:
        """Serialise a rosbags message object to CDR and append it at log time t_ns."""
        msgtype = msgtype_of(msg)
        conn = self._connections.get(topic)
        if conn is None:
            conn = self._writer.add_connection(topic, msgtype, typestore=TYPESTORE,
                                               offered_qos_profiles=topic_qos(topic, msgtype))
            self._connections[topic] = conn
        elif conn.msgtype != msgtype:
            raise ConfigError(f"bag topic {topic}: already carries {conn.msgtype}, cannot write {msgtype}")
        self._writer.write(conn, int(t_ns), TYPESTORE.serialize_cdr(msg, msgtype))

    def close(self) -> None:
        """Finish the bag and move it under its final name (replacing a bag there only if allowed)."""
        if self._writer is None:
            return
        writer, self._writer = self._writer, None
        try:
            writer.close()
            done = next(self._bag_dir.glob("*.mcap")) if self._single_file else self._bag_dir
            if self.path.exists():  # checked at open: a bag of ours, and overwrite was given
                check_output_path(self.path, overwrite=True)
                shutil.rmtree(self.path) if self.path.is_dir() else self.path.unlink()
            os.replace(done, self.path)
        finally:
            shutil.rmtree(self._tmp, ignore_errors=True)

    def abort(self) -> None:
        """Drop the unfinished bag: nothing appears under the final name."""
        if self._writer is None:
            return
        writer, self._writer = self._writer, None
        try:
            writer.abort()
        except Exception:  # noqa: BLE001  the temporary folder goes anyway
            pass
        shutil.rmtree(self._tmp, ignore_errors=True)

    def __enter__(self) -> "BagWriter":
        return self

    def __exit__(self, exc_type, *exc) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()
