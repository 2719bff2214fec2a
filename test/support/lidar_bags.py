"""A small lidar room (fixture `room`) and clouds written to a bag and read back through their own PointFields."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import trimesh
from rosbags.highlevel import AnyReader
from rosbags.typesys import Stores, get_typestore

from radarays_ros.io.bag import BagWriter
from radarays_ros.io.lidar_clouds import pointcloud_msg
from radarays_ros.tracing import make_backend
from radarays_ros.world.mesh import TriMesh
from radarays_ros.world.scene import Scene
from radarays_ros.world.transforms import pose_to_matrix


T0 = 1_500_000_000
NUMPY_OF_POINTFIELD = {1: "i1", 2: "u1", 3: "<i2", 4: "<u2", 5: "<i4", 6: "<u4", 7: "<f4", 8: "<f8"}


@pytest.fixture(scope="module")
def room():
    """A 6 m x 6 m room with 2 m walls (z -1..1) and no ceiling: rays above the walls miss."""
    scene = Scene()
    for name, size, xyz in (("front", [0.2, 6, 2], [3.1, 0, 0]), ("back", [0.2, 6, 2], [-3.1, 0, 0]),
                            ("left", [6, 0.2, 2], [0, 3.1, 0]), ("right", [6, 0.2, 2], [0, -3.1, 0]),
                            ("floor", [6, 6, 0.2], [0, 0, -1.1])):
        box = trimesh.creation.box(size)
        scene.add_entity(name, TriMesh(box.vertices, box.faces), pose_to_matrix(*xyz), material="concrete")
    return scene, make_backend("embree", scene, threads=2)


def read_bag(path: Path) -> dict:
    out: dict = {}
    with AnyReader([path], default_typestore=get_typestore(Stores.ROS2_JAZZY)) as reader:
        for conn, t, raw in reader.messages():
            out.setdefault(conn.topic, []).append((conn.msgtype, reader.deserialize(raw, conn.msgtype), t))
    return out


def points_of(msg) -> np.ndarray:
    """The cloud's bytes viewed through a dtype built from its decoded PointFields, (height, width)."""
    dtype = np.dtype({"names": [f.name for f in msg.fields],
                      "formats": [NUMPY_OF_POINTFIELD[f.datatype] for f in msg.fields],
                      "offsets": [f.offset for f in msg.fields], "itemsize": msg.point_step})
    assert not msg.is_bigendian and msg.row_step == msg.point_step * msg.width
    return np.frombuffer(bytes(msg.data), dtype).reshape(msg.height, msg.width)


def bag_cloud(tmp_path, scan, **kw):
    path = tmp_path / f"cloud_{len(list(tmp_path.glob('cloud_*.mcap')))}.mcap"  # a bag refuses an existing file
    msg = pointcloud_msg(scan, **kw)
    with BagWriter(path) as bag:
        bag.write("/points", msg, T0)
    (msgtype, decoded, _), = read_bag(path)["/points"]
    assert msgtype == "sensor_msgs/msg/PointCloud2"
    return decoded
