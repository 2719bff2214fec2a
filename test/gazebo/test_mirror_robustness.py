"""The mirror thread never dies: clients that refuse topics, service answers that are malformed, name
files that do not load or raise what nobody expected; gz-sim 8's generate_world_sdf (undeclared `gz:`
prefix) keeps its material tags. Against the real peers (gz-transport13 and Ignition Transport 11)."""
from __future__ import annotations

import logging
import re
import threading

import numpy as np
import pytest
from support.gz_harness import wait_for

from radarays_ros.gazebo import protos
from radarays_ros.gazebo.mirror import GazeboMirror, MirrorConfig
from radarays_ros.gazebo.scene_sdf import declare_prefixes
from radarays_ros.gazebo.transport import GzTransportClient


class ShapedClient:
    """A real client, with topics it refuses (as a client without their message types would) and
    service answers replaced: `answers[suffix]` is a callable returning StringMsg text or raising."""

    def __init__(self, inner, refuse=(), answers=None):
        self.inner, self.refuse, self.answers = inner, tuple(refuse), dict(answers or {})
        self.asked: dict[str, int] = {}

    def subscribe(self, topic, callback):
        if any(topic.endswith("/" + suffix) for suffix in self.refuse):
            raise ValueError(f"cannot subscribe to {topic}: unknown message type")
        return self.inner.subscribe(topic, callback)

    def request(self, service, payload=b"", timeout=3.0):
        for suffix, answer in self.answers.items():
            if service.endswith("/" + suffix):
                self.asked[suffix] = self.asked.get(suffix, 0) + 1
                text = answer(self.inner, service)
                if text is not None:
                    return protos.StringMsg(data=text).SerializeToString(), "gz.msgs.StringMsg"
        return self.inner.request(service, payload, timeout)

    def alive(self, topic):
        return self.inner.alive(topic)

    def topics(self):
        return self.inner.topics()

    def add_idle_callback(self, fn):
        self.inner.add_idle_callback(fn)

    def close(self):
        self.inner.close()


@pytest.fixture
def client(gz_peer):
    c = GzTransportClient(partition=gz_peer.partition, host_ip="127.0.0.1")
    yield c
    c.close()


def peer_world_sdf(inner, service) -> str:
    payload, type_name = inner.request(service, b"", timeout=15)  # maybe the first request: generous when busy
    return protos.decode(type_name, payload).data


def mirror_thread_alive() -> bool:
    return any(t.name == "gazebo-mirror" and t.is_alive() for t in threading.enumerate())


def test_declare_prefixes_declares_only_what_is_undeclared():
    text = '<?xml version="1.0"?>\n<!-- c --><sdf version="1.11"><world name="w"><gz:type>x</gz:type>' \
           '<a xmlns:k="urn:k"><k:b/></a><c gz:flag="1"/></world></sdf>'
    fixed = declare_prefixes(text)
    assert fixed.count("xmlns:gz=") == 1 and "xmlns:k=" not in fixed.replace('xmlns:k="urn:k"', "")
    assert fixed.startswith('<?xml version="1.0"?>\n<!-- c --><sdf xmlns:gz="urn:undeclared:gz" version="1.11">')
    assert declare_prefixes("<sdf><world/></sdf>") == "<sdf><world/></sdf>"
    from lxml import etree

    etree.fromstring(fixed.encode())  # well-formed now


def test_refused_optional_topics_leave_a_degraded_mirror_that_follows(gz_peer, client, caplog):
    caplog.set_level(logging.INFO, logger="radarays_ros.gazebo.mirror")
    shaped = ShapedClient(client, refuse=("clock", "scene/deletion"))
    with GazeboMirror(MirrorConfig(world=gz_peer.world), client=shaped) as mirror:
        assert mirror.wait_ready(30) and wait_for(lambda: mirror.alive)
        assert set(mirror.degraded) == {"clock", "scene/deletion"}
        first = mirror.sim_time_ns
        assert first is not None and wait_for(lambda: mirror.sim_time_ns > first)  # from the Pose_V stamps
        gz_peer.send("move box 2 -3 0.5 0 0 0")
        assert wait_for(lambda: np.allclose(mirror.scene.entity("box::link::visual").pose[:3, 3], [2, -3, 0.5]))
        gz_peer.send("spawn crate 100 -4 4 0.5 1 1 1")
        assert wait_for(lambda: mirror.scene.find("crate::link::visual") is not None)
        assert mirror_thread_alive()
    lines = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("/clock is not followed" in line and "sim time comes from the pose" in line for line in lines), lines
    assert any("/scene/deletion is not followed" in line for line in lines), lines


def test_refused_pose_topic_is_retried_with_one_error_line(gz_peer, client, caplog):
    caplog.set_level(logging.INFO, logger="radarays_ros.gazebo.mirror")
    shaped = ShapedClient(client, refuse=("pose/info",))
    with GazeboMirror(MirrorConfig(world=gz_peer.world), client=shaped) as mirror:
        assert wait_for(lambda: caplog.text.count("cannot follow") >= 1, timeout=15)  # discovery first
        assert not mirror.alive
        shaped.refuse = ()  # the client can now: the mirror picks it up on its next try
        assert mirror.wait_ready(30) and wait_for(lambda: mirror.alive, timeout=15)
    assert caplog.text.count("cannot follow") == 1


def _with_box_tag(text: str) -> str:
    """The peer's world as gz-sim 8 writes it: `gz:` elements without the namespace declared, and the
    box's visual tagged."""
    text = text.replace("<world ", "<world ", 1).replace("</world>", "<gz:type>generated</gz:type></world>")
    box = text.index('<model name="box">')
    end = text.index("</visual>", box)
    return text[:end] + "<radarays><material>metal</material></radarays>" + text[end:]


def test_generated_world_with_undeclared_gz_prefix_keeps_its_tags(gz_peer, client, caplog):
    caplog.set_level(logging.INFO, logger="radarays_ros.gazebo.mirror")
    shaped = ShapedClient(client, answers={"generate_world_sdf": lambda inner, s: _with_box_tag(peer_world_sdf(inner, s))})
    with GazeboMirror(MirrorConfig(world=gz_peer.world), client=shaped) as mirror:  # the world from Gazebo
        assert mirror.wait_ready(30) and wait_for(lambda: mirror.alive)
        scene = mirror.scene
        box = scene.entity("box::link::visual")
        assert {scene.materials[int(m)].name for m in box.face_materials} == {"metal"}
        assert scene.materials[int(scene.entity("ground::link::visual").face_materials[0])].name != "metal"

        # a spawned model's tags, from the same kind of answer, survive too
        def spawned_tagged(inner, service):
            text = peer_world_sdf(inner, service).replace("</world>", "<gz:type>generated</gz:type></world>")
            crate = text.find('<model name="crate">')
            if crate < 0:
                return text
            end = text.index("</visual>", crate)
            return text[:end] + "<radarays><material>glass</material></radarays>" + text[end:]

        shaped.answers["generate_world_sdf"] = spawned_tagged
        gz_peer.send("spawn crate 100 -4 4 0.5 1 1 1")

        def crate_material():
            entity = scene.find("crate::link::visual")
            return None if entity is None else scene.materials[int(scene.entity(entity).face_materials[0])].name

        assert wait_for(lambda: crate_material() == "glass", timeout=20)  # a world re-read: generous when busy
    assert "cannot be loaded" not in caplog.text  # the world text itself loaded (not only scene/info)
    assert "not read" not in caplog.text


BAD_ANSWERS = {
    "malformed_xml": lambda inner, s: "<sdf><world name='w'><model",
    "corrupt_mesh": "mesh",
    "corrupt_heightmap_image": "heightmap",
    "unexpected_exception": "raise",
}


@pytest.mark.parametrize("case", sorted(BAD_ANSWERS))
def test_mirror_thread_survives_any_bad_world_answer(gz_peer, client, tmp_path, caplog, case):
    caplog.set_level(logging.INFO, logger="radarays_ros.gazebo.mirror")
    (tmp_path / "broken.stl").write_bytes(b"solid x\nfacet normal nan\n garbage \x00\x01")
    (tmp_path / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 40)
    raised = []

    def answer(inner, service):
        text = peer_world_sdf(inner, service)
        if case == "malformed_xml":
            return BAD_ANSWERS[case](inner, service)
        if case == "unexpected_exception" and not raised:
            raised.append(1)
            raise KeyError("a client bug")  # no exception type the mirror knows of
        extra = (f'<model name="rock"><static>true</static><link name="link"><visual name="v"><geometry><mesh>'
                 f'<uri>{tmp_path / "broken.stl"}</uri></mesh></geometry></visual></link></model>'
                 if case == "corrupt_mesh" else
                 f'<model name="hill"><static>true</static><link name="link"><visual name="v"><geometry><heightmap>'
                 f'<uri>{tmp_path / "broken.png"}</uri><size>10 10 2</size></heightmap></geometry></visual></link>'
                 f'</model>')
        return text.replace("</world>", extra + "</world>")

    shaped = ShapedClient(client, answers={"generate_world_sdf": answer})
    with GazeboMirror(MirrorConfig(world=gz_peer.world), client=shaped) as mirror:
        assert mirror.wait_ready(30) and wait_for(lambda: mirror.alive)
        assert mirror_thread_alive()
        # the models come from scene/info (or the world text, where it loaded): the box is there and moves
        assert mirror.scene.find("box::link::visual") is not None
        gz_peer.send("move box 0 -2 0.5 0 0 0")
        assert wait_for(lambda: np.allclose(mirror.scene.entity("box::link::visual").pose[:3, 3], [0, -2, 0.5]))
        # a spawned model's tag request meets the same answer on the worker thread: rules, no death
        gz_peer.send("spawn crate 100 -4 4 0.5 1 1 1")
        assert wait_for(lambda: mirror.scene.find("crate::link::visual") is not None)
        assert wait_for(lambda: not mirror.tags.queue, timeout=10)
        gz_peer.send("move crate -4 5 0.5 0 0 0")
        assert wait_for(lambda: np.allclose(mirror.scene.entity("crate::link::visual").pose[:3, 3], [-4, 5, 0.5]))
        assert mirror_thread_alive()
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    if case == "malformed_xml":
        assert any("cannot be loaded" in e and "malformed XML" in e for e in errors), errors
    if case == "unexpected_exception":
        assert any("KeyError" in e and "a client bug" in e for e in errors), errors
    assert not re.search(r"Traceback|Exception in thread", caplog.text.split("Gazebo mirror: KeyError")[0])
