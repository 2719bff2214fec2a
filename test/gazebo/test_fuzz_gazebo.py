"""Property-based fuzzing of what Gazebo's transport delivers (issue 11): message payloads decode or
raise our MessageError/ConfigError; discovery datagrams of any shape are counted and ignored, and a
real publisher is followed afterwards. Fixed budget and seed (derandomize=True)."""
from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from radarays_ros.errors import RadaraysError
from radarays_ros.gazebo import pose_decode, protos

FUZZ = settings(derandomize=True, max_examples=150, deadline=None, database=None,
                suppress_health_check=list(HealthCheck))


def valid_pose_v() -> bytes:
    msg = protos.message_class("gz.msgs.Pose_V")()
    for i in range(3):
        pose = msg.pose.add(name=f"m{i}", id=i)
        pose.position.x, pose.orientation.w = i, 1.0
    return msg.SerializeToString()


mutated = st.builds(lambda data, at, junk: data[:at] + junk + data[at + len(junk):],
                    st.just(valid_pose_v()), st.integers(0, 60), st.binary(min_size=1, max_size=8))


@FUZZ
@given(st.one_of(st.binary(max_size=300), mutated),
       st.sampled_from(["gz.msgs.Pose_V", "gz.msgs.Scene", "gz.msgs.UInt32_V", "gz.msgs.Clock", "gz.msgs.StringMsg",
                        "ignition.msgs.Scene", "gz.msgs.NoSuchType"]))
def test_gazebo_messages(payload, type_name):
    for decode in (lambda: protos.decode(type_name, payload), lambda: pose_decode.decode_pose_v(payload)):
        try:
            decode()
        except RadaraysError as exc:
            assert "\n" not in str(exc)


def _discovery(msg_type, process, topic, address, version):
    msg = protos.Discovery(version=version, process_uuid=process, type=msg_type)
    if topic is not None:
        msg.pub.topic, msg.pub.address, msg.pub.process_uuid = topic, address, process
        msg.pub.node_uuid = "n"
        msg.pub.msg_pub.msg_type = "gz.msgs.Pose_V"
    body = msg.SerializeToString()
    return struct.pack("<H", len(body)) + body


datagrams = st.one_of(
    st.binary(max_size=200),
    st.builds(_discovery, st.integers(0, 12), st.text(max_size=40), st.one_of(st.none(), st.text(max_size=60)),
              st.text(max_size=40), st.sampled_from([10, 10, 9, 0])),
    st.builds(_discovery, st.sampled_from([1, 8]), st.sampled_from(["p1", "p2"]),
              st.sampled_from(["@/fuzz@/world/w/pose/info", "@/fuzz@/t", "@@/x", "@/other@/t"]),
              st.sampled_from(["tcp://127.0.0.1:1", "tcp://8.8.8.8:1", "tcp://x", ""]), st.just(10)),
)


@pytest.fixture(scope="module")
def fuzz_client():
    from support import gz_netns

    from support.netns_common import refuse
    from radarays_ros.gazebo.transport import GzTransportClient

    try:
        gz_netns.ensure_isolated()
    except OSError as exc:
        refuse("gz-transport fuzz", f"cannot create a private network namespace: {exc}")
    client = GzTransportClient(partition="fuzz", host_ip="127.0.0.1")
    yield client
    client.close()


@FUZZ
@given(st.lists(datagrams, min_size=1, max_size=20), st.sampled_from(["127.0.0.1", "127.0.0.2", "10.1.2.3"]))
def test_discovery_datagrams(fuzz_client, batch, source):
    # _on_datagram is what the client thread runs for each datagram: called directly, under the lock,
    # with a chosen source address (the network part is covered by test_transport_hostile.py)
    import time

    with fuzz_client._lock:
        for data in batch:
            fuzz_client._on_datagram("msg", data, source, time.monotonic())
        assert len(fuzz_client.peers.processes) <= fuzz_client.config.max_peers
        assert fuzz_client.peers.endpoints == sum(map(len, fuzz_client.peers.publishers.values())) + len(fuzz_client.peers.services)
