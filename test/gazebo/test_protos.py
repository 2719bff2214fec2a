"""Our own gz-msgs subset: the runtime-parsed descriptors against protoc and against real bytes."""
from __future__ import annotations

import math
import shutil
import subprocess
from pathlib import Path

import pytest
from google.protobuf import descriptor_pb2

from radarays_ros.errors import ConfigError
from radarays_ros.gazebo import protos

FIXTURES = Path(__file__).parent / "fixtures"


def _fields(fdp: descriptor_pb2.FileDescriptorProto) -> dict:
    """Every (message path, field) -> (number, label, type, type_name, oneof) for comparison."""
    out = {}

    def walk(msgs, prefix):
        for m in msgs:
            for f in m.field:
                oneof = m.oneof_decl[f.oneof_index].name if f.HasField("oneof_index") else None
                out[(prefix + m.name, f.name)] = (f.number, f.label, f.type, f.type_name, oneof)
            walk(m.nested_type, prefix + m.name + ".")
            for e in m.enum_type:
                out[(prefix + m.name + "." + e.name, "")] = tuple((v.name, v.number) for v in e.value)

    walk(fdp.message_type, "")
    return out


@pytest.mark.skipif(shutil.which("protoc") is None, reason="protoc not installed (scripts/setup_gz_peer.sh)")
def test_runtime_parser_matches_protoc(tmp_path):
    out = tmp_path / "ref.desc"
    subprocess.run(["protoc", f"--proto_path={protos.PROTO_PATH.parent}", f"--descriptor_set_out={out}",
                    protos.PROTO_PATH.name], check=True)
    reference = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes()).file[0]
    ours = protos.parse_proto(protos.PROTO_PATH.read_text(), "x.proto")
    assert _fields(ours) == _fields(reference)
    assert len(_fields(ours)) > 100


def test_pose_v_recorded_from_ignition_transport_peer():
    # pose_v.bin was serialized by the C++ peer (ignition-msgs 8): models, links, visuals, parent-relative.
    msg = protos.decode("ignition.msgs.Pose_V", (FIXTURES / "pose_v.bin").read_bytes())
    by_id = {p.id: p for p in msg.pose}
    assert [by_id[i].name for i in (20, 21, 22)] == ["box", "link", "visual"]
    assert (by_id[20].position.x, by_id[20].position.y, by_id[20].position.z) == (5.0, 0.0, 0.5)
    arm = by_id[30]  # yaw 90 deg about z: q = (0, 0, sin 45, cos 45)
    assert arm.orientation.z == pytest.approx(math.sqrt(0.5))
    assert arm.orientation.w == pytest.approx(math.sqrt(0.5))
    assert by_id[31].name == "upper" and by_id[31].position.x == 1.0
    assert by_id[32].name == "shell" and by_id[32].position.z == 0.5


def test_scene_recorded_from_ignition_transport_peer():
    scene = protos.decode("gz.msgs.Scene", (FIXTURES / "scene.bin").read_bytes())
    assert [m.name for m in scene.model] == ["ground", "box", "arm"]
    ground = scene.model[0]
    assert ground.is_static and ground.id == 10
    visual = ground.link[0].visual[0]
    assert visual.id == 12 and visual.parent_id == 11 and visual.parent_name == "ground::link"
    assert visual.geometry.type == protos.Geometry.BOX
    size = visual.geometry.box.size
    assert (size.x, size.y, size.z) == (40.0, 40.0, pytest.approx(0.1))
    assert scene.model[2].link[0].name == "upper" and scene.model[2].link[0].pose.position.x == 1.0


def test_deletion_recorded():
    assert list(protos.decode("ignition.msgs.UInt32_V", (FIXTURES / "deletion.bin").read_bytes()).data) == [20, 21, 22]


def test_round_trip_and_type_names():
    msg = protos.Pose_V()
    p = msg.pose.add(name="crate", id=7)
    p.position.x, p.orientation.w = 1.25, 1.0
    data = msg.SerializeToString()
    for name in ("gz.msgs.Pose_V", "ignition.msgs.Pose_V", "Pose_V"):
        assert protos.decode(name, data).pose[0].position.x == 1.25
    assert protos.short_name("ignition.msgs.Scene") == "Scene"


def test_unknown_type_is_a_clear_error():
    with pytest.raises(ConfigError, match="unknown Gazebo message type 'gz.msgs.Nope'"):
        protos.message_class("gz.msgs.Nope")


@pytest.mark.parametrize(
    "text, match",
    [
        ('syntax = "proto2"; message A { int32 x = 1; }', "only proto3"),
        ('syntax = "proto3"; message A { Missing x = 1; }', "unknown type 'Missing'"),
        ('syntax = "proto3"; message A { int32 x = one; }', "integer number"),
        ('syntax = "proto3"; message A { int32 x = 1; ', "unexpected end of file"),
    ],
)
def test_bad_proto_text(text, match):
    with pytest.raises(ConfigError, match=match):
        protos.parse_proto(text, "bad.proto")
