"""The MCAP bag writer, read back with rosbags' reader; point data decoded with a dtype built here from the offsets."""
import re

import numpy as np
from rosbags.highlevel import AnyReader
from rosbags.typesys import Stores, get_typestore
from rosbags.interfaces import QosDurability, QosReliability

from radarays_ros.io import messages
from radarays_ros.io.bag import BagWriter
from radarays_ros.world.transforms import pose_to_matrix

TYPESTORE = get_typestore(Stores.ROS2_JAZZY)


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
    sensor = connections["/points"].ext.offered_qos_profiles  # as the nodes publish: reliable, depth 10
    assert sensor and (sensor[0].reliability, sensor[0].depth) == (QosReliability.RELIABLE, 10)


def write_small_bag(path, **kwargs):
    with BagWriter(path, **kwargs) as bag:
        bag.write("/image", messages.image(np.full((2, 3), 7, np.uint8), 5, "radar"), 5)
        bag.write("/tf_static", messages.tf_message([messages.transform_stamped(np.eye(4), 0, "base_link", "radar")]), 0)
        bag.write("/clock", messages.clock(9), 9)


def test_mcap_reference_reader_sees_zstd_chunks_qos_and_jazzy(tmp_path):
    """The bytes as the mcap project's own reader decodes them (schemas from the file, not from rosbags)."""
    import yaml
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    out = tmp_path / "run.mcap"
    write_small_bag(out)
    with out.open("rb") as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        summary = reader.get_summary()
        assert {c.compression for c in summary.chunk_indexes} == {"zstd"}
        qos = {c.topic: yaml.safe_load(c.metadata["offered_qos_profiles"])[0] for c in summary.channels.values()}
        assert (qos["/image"]["reliability"], qos["/image"]["depth"]) == ("reliable", 10)
        # the channel's type hash under rosbag2_storage_mcap's key, as `ros2 bag record` writes it on Jazzy
        hashes = {c.topic: c.metadata.get("topic_type_hash") for c in summary.channels.values()}
        types = {c.topic: summary.schemas[c.schema_id].name for c in summary.channels.values()}
        assert set(hashes) == {"/image", "/tf_static", "/clock"}
        for topic, value in hashes.items():
            assert value == TYPESTORE.hash_rihs01(types[topic]) and re.fullmatch(r"RIHS01_[0-9a-f]{64}", value)
        assert (qos["/tf_static"]["reliability"], qos["/tf_static"]["durability"]) == ("reliable", "transient_local")
        assert (qos["/clock"]["reliability"], qos["/clock"]["durability"]) == ("reliable", "volatile")
        (record,) = [m for m in reader.iter_metadata() if m.name == "rosbag2"]
        assert yaml.safe_load(record.metadata["serialized_metadata"])["ros_distro"] == "jazzy"
        decoded = {channel.topic: (message.log_time, ros_msg) for _, channel, message, ros_msg in reader.iter_decoded_messages()}
    assert decoded["/image"][0] == 5 and bytes(decoded["/image"][1].data) == bytes([7] * 6)
    assert decoded["/image"][1].header.frame_id == "radar" and decoded["/clock"][1].clock.nanosec == 9


def test_rosbag2_directory_metadata(tmp_path):
    import yaml

    out = tmp_path / "run"
    write_small_bag(out)
    meta = yaml.safe_load((out / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    assert meta["ros_distro"] == "jazzy" and meta["relative_file_paths"] == ["run.mcap"]
    assert sorted(p.name for p in out.iterdir()) == ["metadata.yaml", "run.mcap"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]
    qos = {t["topic_metadata"]["name"]: t["topic_metadata"]["offered_qos_profiles"] for t in meta["topics_with_message_count"]}
    assert qos["/tf_static"][0]["durability"] == "transient_local" and qos["/image"][0]["reliability"] == "reliable"
    hashes = {t["topic_metadata"]["name"]: t["topic_metadata"]["type_description_hash"] for t in meta["topics_with_message_count"]}
    from mcap.reader import make_reader

    with (out / "run.mcap").open("rb") as f:  # the same hash in the MCAP channel as in metadata.yaml
        channels = make_reader(f).get_summary().channels.values()
        assert {c.topic: c.metadata["topic_type_hash"] for c in channels} == hashes


def test_existing_output_is_refused_and_only_a_bag_is_ever_replaced(tmp_path):
    import pytest

    from radarays_ros.errors import ConfigError

    for name in ("run.mcap", "run"):
        out = tmp_path / name
        write_small_bag(out)
        before = sorted(p.name for p in tmp_path.rglob("*"))
        with pytest.raises(ConfigError, match=f"output .*{name} exists; .*--overwrite"):
            write_small_bag(out)
        assert sorted(p.name for p in tmp_path.rglob("*")) == before
        write_small_bag(out, overwrite=True)  # a bag we wrote: replaced
        assert sorted(p.name for p in tmp_path.rglob("*")) == before

    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "thesis.tex").write_text("years of work")
    (tmp_path / "notes.mcap").write_text("not an MCAP file")
    faked = tmp_path / "faked"  # looks like a bag, but holds a file metadata.yaml does not list
    write_small_bag(faked)
    (faked / "thesis.tex").write_text("years of work")
    for path in (precious, tmp_path / "notes.mcap", faked):
        with pytest.raises(ConfigError, match="is not an MCAP file or a rosbag2 directory .* not replaced"):
            write_small_bag(path, overwrite=True)
    assert (precious / "thesis.tex").read_text() == "years of work" == (faked / "thesis.tex").read_text()
    assert (tmp_path / "notes.mcap").read_text() == "not an MCAP file"


def test_ros1_bag_name_is_an_error_and_creates_nothing(tmp_path):
    import pytest

    from radarays_ros.errors import ConfigError

    with pytest.raises(ConfigError, match=r"m.bag: .bag is a ROS 1 bag; .*m.mcap \(one file\) or m \(a rosbag2 directory\)"):
        BagWriter(tmp_path / "m.bag")
    assert list(tmp_path.iterdir()) == []


def test_interrupted_write_leaves_no_bag_under_the_final_name(tmp_path):
    import pytest

    for name in ("run.mcap", "run"):
        out = tmp_path / name
        with pytest.raises(KeyboardInterrupt):
            with BagWriter(out) as bag:
                bag.write("/clock", messages.clock(1), 1)
                assert not out.exists()  # written under a temporary name until complete
                raise KeyboardInterrupt
        assert list(tmp_path.iterdir()) == []
