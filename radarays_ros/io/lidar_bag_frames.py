"""A lidar frame from a rosbag2 (MCAP or sqlite3) sensor_msgs/PointCloud2 topic in a driver layout, read into
lidar_ros.compare.LidarFrame (what `radarays fit lidar` and the comparison take).

The cloud must be organized (height = beams, width = columns, as ouster-ros, velodyne_pointcloud's organized
mode and Gazebo's gpu_lidar publish it). Fields are read by their PointField names and offsets:
  range (uint32 mm, ouster-ros)  else the norm of x, y, z;  misses: 0 / NaN / inf
  reflectivity                   calibrated reflectivity
  signal, else `intensity` in the ouster layouts (ouster-ros puts signal there)
  near_ir, else ambient
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from lidar_ros.compare import LidarFrame

from ..errors import ConfigError

POINTFIELD_NUMPY = {1: "i1", 2: "u1", 3: "<i2", 4: "<u2", 5: "<i4", 6: "<u4", 7: "<f4", 8: "<f8"}
CLOUD = "sensor_msgs/msg/PointCloud2"


def is_bag(path: str | Path) -> bool:
    p = Path(path)
    return p.suffix.lower() in (".mcap", ".db3") or (p.is_dir() and (p / "metadata.yaml").is_file())


def cloud_array(msg, where: str) -> np.ndarray:
    """(height, width) structured array of a PointCloud2 through its own PointFields."""
    names, formats, offsets = [], [], []
    for f in msg.fields:
        if f.datatype not in POINTFIELD_NUMPY or f.count != 1:
            continue
        names.append(f.name)
        formats.append(POINTFIELD_NUMPY[f.datatype].replace("<", ">") if msg.is_bigendian else POINTFIELD_NUMPY[f.datatype])
        offsets.append(f.offset)
    if not {"x", "y", "z"} <= set(names):
        raise ConfigError(f"{where}: the cloud has no x, y, z fields (fields {', '.join(names)})")
    dtype = np.dtype({"names": names, "formats": formats, "offsets": offsets, "itemsize": msg.point_step})
    data = np.asarray(msg.data, np.uint8)
    h, w = int(msg.height), int(msg.width)
    if msg.row_step != w * msg.point_step or data.size != h * msg.row_step:
        raise ConfigError(f"{where}: {data.size} data bytes do not make {h} x {w} points of {msg.point_step} bytes")
    return np.frombuffer(data.tobytes(), dtype).reshape(h, w)


def read_bag_frame(path: str | Path, topic: str | None = None, index: int = 0) -> LidarFrame:
    """Message `index` of the PointCloud2 `topic` (the bag's only PointCloud2 topic when None)."""
    from rosbags.highlevel import AnyReader

    from .messages import TYPESTORE

    bag = Path(path)
    if not bag.exists():
        raise ConfigError(f"lidar bag {path}: no such file or directory")
    try:
        with AnyReader([bag], default_typestore=TYPESTORE) as reader:
            clouds = sorted({c.topic for c in reader.connections if c.msgtype == CLOUD})
            if topic is None:
                if len(clouds) != 1:
                    raise ConfigError(f"lidar bag {path}: {len(clouds)} PointCloud2 topics ({', '.join(clouds) or 'none'}); "
                                      "name one with --topic")
                topic = clouds[0]
            if topic not in clouds:
                raise ConfigError(f"lidar bag {path}: no PointCloud2 topic {topic}; PointCloud2 topics: "
                                  f"{', '.join(clouds) or 'none'}")
            conns = [c for c in reader.connections if c.topic == topic]
            for i, (conn, _, raw) in enumerate(reader.messages(connections=conns)):
                if i == index:
                    msg = reader.deserialize(raw, conn.msgtype)
                    break
            else:
                raise ConfigError(f"lidar bag {path}: topic {topic} has no message {index}")
    except ConfigError:
        raise
    except Exception as exc:  # rosbags' own errors: one line
        raise ConfigError(f"lidar bag {path}: cannot be read ({str(exc)[:100]})") from None
    where = f"lidar bag {path} {topic}[{index}]"
    if int(msg.height) < 3:
        raise ConfigError(f"{where}: an unorganized cloud (height {msg.height}); the fit needs the driver's organized "
                          "cloud (height = beams, width = columns)")
    cloud = cloud_array(msg, where)
    names = cloud.dtype.names
    xyz = np.stack([cloud[k].astype(np.float64) for k in ("x", "y", "z")], axis=-1)
    if "range" in names:
        r = cloud["range"].astype(np.float64) / 1000.0
    else:
        r = np.linalg.norm(xyz, axis=-1)
    r = np.where(np.isfinite(r) & (r > 0), r, np.nan)

    def field(*keys):
        for k in keys:
            if k in names:
                return cloud[k].astype(np.float64)
        return None

    ouster = "ring" in names and ("ambient" in names or "near_ir" in names)
    signal = field("signal") if "signal" in names else (field("intensity") if ouster else None)
    return LidarFrame(name=f"{bag.name}:{topic}[{index}]", sensor="", range_m=r, xyz_m=np.nan_to_num(xyz),
                      reflectivity=field("reflectivity"), signal=signal, near_ir=field("near_ir", "ambient"))
