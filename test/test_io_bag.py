"""The MCAP bag writer, read back with rosbags' reader; point data decoded with a dtype built here from the offsets."""
import numpy as np
from rosbags.highlevel import AnyReader
from rosbags.interfaces import QosDurability

from radarays_ros.io import messages
from radarays_ros.io.bag import BagWriter
from radarays_ros.world.transforms import pose_to_matrix


def read_all(path):
    with AnyReader([path]) as reader:
        connections = {c.topic: c for c in reader.connections}
        return connections, [(c.topic, t, reader.deserialize(raw, c.msgtype)) for c, t, raw in reader.messages()]


def test_single_file_bag_round_trip(tmp_path):
    pts = np.zeros(3, dtype=[("x", "<f4"), ("y", "<f4"), ("z", "<f4"), ("ring", "<u2")])
    pts["x"] = [1, 2, 3]
    pts["ring"] = [7, 8, 9]
    image = np.arange(12, dtype=np.uint8).reshape(3, 4)
    out = tmp_path / "run.mcap"
    with BagWriter(out) as bag:
        bag.write("/points", messages.pointcloud2(pts, 1_500_000_000, "lidar"), 1_500_000_000)
        bag.write("/image", messages.image(image, 2_000_000_001, "radar"), 2_000_000_001)
        bag.write("/tf_static", messages.tf_message([messages.transform_stamped(pose_to_matrix(1, 2, 3, 0, 0, np.pi / 2), 0, "base_link", "radar")]), 0)
    assert out.is_file() and list(tmp_path.iterdir()) == [out]  # one self-contained file, no leftovers
    connections, msgs = read_all(out)
    by_topic = {topic: (t, msg) for topic, t, msg in msgs}
    t, cloud = by_topic["/points"]
    assert t == 1_500_000_000 and cloud.header.stamp.sec == 1 and cloud.header.stamp.nanosec == 500_000_000
    assert [(f.name, f.offset, f.datatype) for f in cloud.fields] == [("x", 0, 7), ("y", 4, 7), ("z", 8, 7), ("ring", 12, 4)]
    decoded = np.frombuffer(bytes(cloud.data), dtype=np.dtype({"names": ["x", "ring"], "formats": ["<f4", "<u2"], "offsets": [0, 12], "itemsize": cloud.point_step}))
    assert list(decoded["x"]) == [1, 2, 3] and list(decoded["ring"]) == [7, 8, 9]
    _, img = by_topic["/image"]
    assert img.encoding == "mono8" and img.step == 4 and bytes(img.data) == image.tobytes()
    _, tf = by_topic["/tf_static"]
    transform = tf.transforms[0].transform
    assert (transform.translation.x, transform.translation.y, transform.translation.z) == (1, 2, 3)
    np.testing.assert_allclose([transform.rotation.z, transform.rotation.w], [np.sqrt(0.5)] * 2)
    latched = connections["/tf_static"].ext.offered_qos_profiles
    assert latched and latched[0].durability == QosDurability.TRANSIENT_LOCAL
    assert not connections["/points"].ext.offered_qos_profiles
