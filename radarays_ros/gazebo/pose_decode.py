"""Fast decoding of Pose_V (the mirror's hot path): ids, positions and quaternions as numpy arrays.

Why not the ordinary message classes: protobuf (upb) parses a 300-pose Pose_V in ~20 µs, but then
reading 300 x 8 fields through Python wrapper objects costs ~0.3 ms per message, most of the
mirror's budget at 60 Hz. Here the same bytes are parsed with *views* of the schema (a submessage
is length-delimited on the wire, so `bytes` reads the same encoding):

1. Pose_V with its poses as `bytes`: the list of 300 pose bodies costs ~10 µs. A body equal to the
   one of the previous message (same id, same numbers: links and visuals fixed in their model,
   models standing still) is skipped before anything is decoded.
2. The changed bodies are parsed as a Pose whose `position` and `orientation` are `bytes`: three
   attribute reads per pose; the doubles are pulled out of the joined submessage bytes in one
   numpy pass.

A Vector3d / Quaternion body is a run of 9-byte records: tag (field << 3 | 1, wire type fixed64) and
8 little-endian bytes. proto3 leaves zero-valued fields out, so a body holds 0..3 (0..4) records in
field order (as every protobuf serializer writes them). Anything else (a header in the
submessage, another wire type, fields out of order or repeated) makes `decode_pose_v` fall back
to the ordinary classes, so the result is the same for every valid message.
"""
from __future__ import annotations

from operator import attrgetter, ne

import numpy as np

from ..errors import MessageError
from . import protos

# The view: field numbers and wire types as in gz_msgs.proto (Pose_V, Pose); name/header of a Pose
# are left out (upb keeps them as unknown fields, which costs nothing to carry).
_VIEW_PROTO = """
syntax = "proto3";
package radarays.fast;
message Time { int64 sec = 1; int32 nsec = 2; }
message Header { Time stamp = 1; }
message PoseView { uint32 id = 3; bytes position = 4; bytes orientation = 5; }
message Pose_VView { Header header = 1; repeated bytes pose = 2; }
"""


def _view_classes():
    from google.protobuf import descriptor_pool

    fdp = protos.parse_proto(_VIEW_PROTO, "radarays_ros/gz_pose_view.proto")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return tuple(protos._message_class(pool.FindMessageTypeByName(f"radarays.fast.{name}"))
                 for name in ("Pose_VView", "PoseView"))


Pose_VView, PoseView = _view_classes()
_FIELDS = attrgetter("id", "position", "orientation")
_RECORD = 9  # tag byte + fixed64
_WIRE_FIXED64 = 1


class PoseArrays:
    """A decoded Pose_V: ids (N,) int64, positions (N,3), quaternions (N,4) x,y,z,w (all-zero for an
    unset orientation), stamp_ns (0 when the header has no stamp); `bodies`: the message's pose
    bodies, to pass as `previous` when decoding the next one."""

    __slots__ = ("ids", "positions", "quaternions", "stamp_ns", "bodies")

    def __init__(self, ids: np.ndarray, positions: np.ndarray, quaternions: np.ndarray, stamp_ns: int,
                 bodies: list | None = None):
        self.ids, self.positions, self.quaternions, self.stamp_ns = ids, positions, quaternions, stamp_ns
        self.bodies = bodies


def parse_view(payload: bytes):
    """The cheap first step (~20 µs): the bytes parsed into the view; the stamp is readable at once,
    the poses are decoded later by `decode_view` (only for the message the mirror applies)."""
    view = Pose_VView()
    try:
        view.ParseFromString(payload)
    except Exception as exc:  # noqa: BLE001 - protobuf's DecodeError
        raise MessageError(f"a Pose_V message of {len(payload)} bytes cannot be decoded ({type(exc).__name__})") from None
    return view


def stamp_ns(view) -> int:
    stamp = view.header.stamp
    return stamp.sec * 1_000_000_000 + stamp.nsec


def decode_view(view, payload: bytes | None = None, previous: list | None = None) -> PoseArrays:
    """Arrays of a parsed view: every pose, or with `previous` (the `bodies` of an earlier result)
    only the poses whose bytes differ from the pose at the same place in it. `payload` (the view's
    bytes) is needed only for the rare fallback."""
    bodies = list(view.pose)
    n = len(bodies)
    changed = bodies
    if previous is not None and len(previous) == n:
        mask = np.fromiter(map(ne, bodies, previous), bool, n)
        changed = [bodies[i] for i in np.flatnonzero(mask).tolist()]
    if not changed:
        return PoseArrays(np.zeros(0, np.int64), np.zeros((0, 3)), np.zeros((0, 4)), stamp_ns(view), bodies)
    m = len(changed)
    try:
        ids, position_bytes, orientation_bytes = zip(*map(_FIELDS, map(PoseView.FromString, changed)))
    except Exception as exc:  # noqa: BLE001 - protobuf's DecodeError in one pose
        raise MessageError(f"a Pose_V message with {n} poses cannot be decoded ({type(exc).__name__})") from None
    values = _records(position_bytes + orientation_bytes, m)
    if values is None:
        slow = _decode_slowly(payload if payload is not None else view.SerializeToString())
        slow.bodies = bodies
        return slow
    return PoseArrays(np.fromiter(ids, np.int64, m), values[:m, :3], values[m:], stamp_ns(view), bodies)


def decode_pose_v(payload: bytes) -> PoseArrays:
    """Pose_V bytes -> PoseArrays (same values as reading the ordinary message field by field)."""
    return decode_view(parse_view(payload), payload)


def _column_table() -> np.ndarray:
    """(512,) int64: tag byte (+256 for a Quaternion body) -> output column, or a large negative
    number for a tag that is not a fixed64 field of that message."""
    table = np.full(512, -(1 << 40), np.int64)
    for field in (2, 3, 4):  # Vector3d x, y, z
        table[field << 3 | _WIRE_FIXED64] = field - 2
    for field in (2, 3, 4, 5):  # Quaternion x, y, z, w
        table[256 + (field << 3 | _WIRE_FIXED64)] = field - 2
    return table


_COLUMN = _column_table()


def _records(bodies: tuple[bytes, ...], n_positions: int) -> np.ndarray | None:
    """(len(bodies), 4) doubles of the submessage bodies: the first `n_positions` are Vector3d
    (fields 2..4 -> columns 0..2), the rest Quaternion (fields 2..5 -> columns 0..3). One numpy pass
    for both, in few numpy calls (their fixed cost is most of the time at a few hundred poses).
    None when a body holds anything else, or its fields out of order or repeated (valid protobuf,
    never written by Gazebo)."""
    k = len(bodies)
    lengths = np.fromiter(map(len, bodies), np.int64, k)
    counts = lengths // _RECORD
    out = np.zeros((k, 4))
    if not counts.any():
        return None if lengths.any() else out
    if np.any(counts * _RECORD != lengths):
        return None
    records = np.frombuffer(b"".join(bodies), np.uint8).reshape(-1, _RECORD)
    owner = np.repeat(np.arange(k), counts)
    # flat index into out: row * 4 + column; an unknown tag makes it hugely negative
    flat = owner * 4 + _COLUMN[records[:, 0] + np.where(owner < n_positions, 0, 256)]
    if flat[0] < 0 or (len(flat) > 1 and np.diff(flat).min() <= 0):
        return None  # strictly increasing: known tags, in field order, none repeated
    out.reshape(-1)[flat] = np.ascontiguousarray(records[:, 1:]).view("<f8").ravel()
    return out


def _decode_slowly(payload: bytes) -> PoseArrays:
    """The ordinary classes, field by field (any valid Pose_V)."""
    msg = protos.decode("Pose_V", payload)
    n = len(msg.pose)
    ids = np.zeros(n, np.int64)
    positions, quaternions = np.zeros((n, 3)), np.zeros((n, 4))
    for i, p in enumerate(msg.pose):
        a, q = p.position, p.orientation
        ids[i] = p.id
        positions[i] = a.x, a.y, a.z
        quaternions[i] = q.x, q.y, q.z, q.w
    stamp = msg.header.stamp
    return PoseArrays(ids, positions, quaternions, stamp.sec * 1_000_000_000 + stamp.nsec)
