"""The fast Pose_V decoder against the ordinary message classes (recorded C++ bytes, edge cases)."""
from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from radarays_ros.gazebo import pose_decode, protos

FIXTURES = Path(__file__).parent / "fixtures"


def _field_by_field(payload: bytes):
    msg = protos.decode("Pose_V", payload)
    ids = [p.id for p in msg.pose]
    positions = [(p.position.x, p.position.y, p.position.z) for p in msg.pose]
    quaternions = [(p.orientation.x, p.orientation.y, p.orientation.z, p.orientation.w) for p in msg.pose]
    stamp = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nsec
    return np.array(ids), np.array(positions).reshape(-1, 3), np.array(quaternions).reshape(-1, 4), stamp


def _assert_same(payload: bytes):
    fast = pose_decode.decode_pose_v(payload)
    ids, positions, quaternions, stamp = _field_by_field(payload)
    np.testing.assert_array_equal(fast.ids, ids)
    np.testing.assert_array_equal(fast.positions, positions)
    np.testing.assert_array_equal(fast.quaternions, quaternions)
    assert fast.stamp_ns == stamp
    return fast


def test_recorded_cpp_pose_v_decodes_as_field_by_field():
    fast = _assert_same((FIXTURES / "pose_v.bin").read_bytes())
    by_id = dict(zip(fast.ids.tolist(), fast.positions.tolist()))
    assert by_id[20] == [5.0, 0.0, 0.5]  # the peer's box; zero fields are absent on the wire


def test_zero_unset_and_negative_values():
    msg = protos.Pose_V()
    msg.header.stamp.sec, msg.header.stamp.nsec = 7, 123
    msg.pose.add(name="a", id=1)  # no position, no orientation at all
    p = msg.pose.add(name="b", id=4_000_000_000)  # a uint32 id above 2^31
    p.position.z, p.orientation.w = -2.5, 1.0
    p = msg.pose.add(name="c" * 300, id=3)  # a long name: multi-byte lengths
    p.position.x, p.position.y, p.orientation.x, p.orientation.y = 1e-300, -0.0, 0.5, -0.5
    fast = _assert_same(msg.SerializeToString())
    assert fast.stamp_ns == 7_000_000_123 and fast.ids[1] == 4_000_000_000
    np.testing.assert_array_equal(fast.quaternions[0], [0, 0, 0, 0])  # unset: the mirror reads identity


def test_empty_pose_v():
    fast = pose_decode.decode_pose_v(b"")
    assert fast.ids.shape == (0,) and fast.positions.shape == (0, 3) and fast.stamp_ns == 0


def _with_position_body(body: bytes) -> bytes:
    """A Pose_V with one pose (id 9) whose position submessage is `body` verbatim."""
    pose = b"\x18\x09" + b"\x22" + bytes([len(body)]) + body
    return b"\x12" + bytes([len(pose)]) + pose


@pytest.mark.parametrize("body", [
    b"\x21" + struct.pack("<d", 3.0) + b"\x11" + struct.pack("<d", 1.0),  # fields out of order
    b"\x11" + struct.pack("<d", 1.0) + b"\x11" + struct.pack("<d", 2.0),  # a field repeated: last wins
    b"\x0a\x00" + b"\x11" + struct.pack("<d", 1.0),  # a (empty) header inside the Vector3d
    b"\x29" + struct.pack("<d", 1.0),  # field 5: a Quaternion's w, unknown to a Vector3d
])
def test_unusual_but_valid_bodies_fall_back_to_the_ordinary_classes(body):
    assert pose_decode._records((body, b""), 1) is None  # the vectorised pass declines it...
    fast = _assert_same(_with_position_body(body))  # ...and the result is still protobuf's
    assert fast.ids.tolist() == [9]


def test_only_poses_whose_bytes_changed_are_decoded_after_a_previous_message():
    msg = protos.Pose_V()
    for i in range(3):
        p = msg.pose.add(name=f"m{i}", id=10 + i)
        p.position.x, p.orientation.w = float(i), 1.0
    first = pose_decode.decode_pose_v(msg.SerializeToString())
    assert first.ids.tolist() == [10, 11, 12]
    msg.pose[1].position.x = 7.5  # only the middle one moves
    second = pose_decode.decode_view(pose_decode.parse_view(msg.SerializeToString()), previous=first.bodies)
    assert second.ids.tolist() == [11] and second.positions.tolist() == [[7.5, 0.0, 0.0]]
    same = pose_decode.decode_view(pose_decode.parse_view(msg.SerializeToString()), previous=second.bodies)
    assert same.ids.tolist() == []
    msg.pose.add(name="new", id=99)  # another count (a model spawned): everything again
    grown = pose_decode.decode_view(pose_decode.parse_view(msg.SerializeToString()), previous=same.bodies)
    assert grown.ids.tolist() == [10, 11, 12, 99]
