"""Both gz-transport clients (ours and Gazebo's official Python bindings, gz.transport13 / gz.msgs10)
against the same real gz-transport13 peer (Gazebo Harmonic's library, built from the release sources by
scripts/setup_gz_harmonic.sh). What they return is read back with gz.msgs10's own classes."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
import uuid
from pathlib import Path

import numpy as np
import pytest
from support.gz_harness import Peer, peer_binary, wait_for

from support import gz_harmonic
from support.netns_common import refuse
from radarays_ros.errors import ConfigError
from radarays_ros.gazebo import protos
from radarays_ros.gazebo.client import OfficialClient, make_client
from radarays_ros.gazebo.mirror import GazeboMirror, MirrorConfig
from radarays_ros.tracing import make_backend

CLIENTS = ["builtin", "official"]
pytestmark = pytest.mark.slow  # a peer process (the make_client check costs nothing beside)


@pytest.fixture
def harmonic_peer(isolated_network, monkeypatch):
    binary = peer_binary("gz13")
    peer = Peer(world=f"w{uuid.uuid4().hex[:8]}", partition=f"radarays_test_{uuid.uuid4().hex[:8]}",
                binary=binary, env=gz_harmonic.environment())
    for key in ("GZ_PARTITION", "IGN_PARTITION"):  # the official bindings read them when a Node is made
        monkeypatch.setenv(key, peer.partition)
    for key in ("GZ_IP", "IGN_IP"):
        monkeypatch.setenv(key, "127.0.0.1")
    peer.start()
    yield peer
    peer.stop()


def bindings():
    try:
        return gz_harmonic.import_bindings()
    except (ImportError, OSError) as exc:
        refuse("gz-transport13 bindings test", f"the official bindings do not import from {gz_harmonic.prefix()}: {exc}")


@pytest.fixture(params=CLIENTS)
def client(request, harmonic_peer):
    if request.param == "official":
        bindings()
    c = make_client(request.param)
    yield c
    c.close()


def gz_msgs_class(name: str):
    """A gz.msgs10 class (the official Python messages), e.g. 'Pose_V' -> gz.msgs10.pose_v_pb2.Pose_V."""
    import importlib

    _, msgs = bindings()
    module = importlib.import_module(f"{msgs.__name__}.{name.lower()}_pb2")
    return getattr(module, name)


def test_make_client_names_the_choices(monkeypatch):
    with pytest.raises(ConfigError, match="gazebo client 'gz'; allowed: builtin, official"):
        make_client("gz")
    monkeypatch.setitem(sys.modules, "gz.transport13", None)  # not importable
    with pytest.raises(ConfigError, match="gazebo client 'official'.*not importable.*use 'builtin'"):
        make_client("official")


def test_the_bindings_keep_crash_reports_and_one_libpython():
    """Importing the official bindings in a test process keeps pytest's faulthandler (a crash prints the
    Python threads' tracebacks) and loads no second libpython (gz-sim's python system loader links the
    system's). A child process imports them, lists its libpython mappings, then crashes on purpose."""
    bindings()
    code = textwrap.dedent("""
        import ctypes, faulthandler, json, os
        faulthandler.enable()
        from support import gz_harmonic
        gz_harmonic.import_bindings()
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "/" in line}
        print(json.dumps(sorted(p for p in paths if os.path.basename(p).startswith("libpython"))), flush=True)
        ctypes.string_at(0)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parents[1])
    assert done.returncode != 0
    assert len(json.loads(done.stdout.splitlines()[0])) <= 1, done.stdout
    assert "Fatal Python error: Segmentation fault" in done.stderr, done.stderr[-2000:]


def test_topics_and_services_read_back_by_gz_msgs10(harmonic_peer, client):
    world = f"/world/{harmonic_peer.world}"
    got: dict[str, list] = {"pose/info": [], "clock": [], "scene/info": [], "scene/deletion": []}
    lock = threading.Lock()

    def keep(suffix):
        def on_message(payload, type_name):
            with lock:
                got[suffix].append((payload, type_name))
        return on_message

    for suffix in got:
        client.subscribe(f"{world}/{suffix}", keep(suffix))
    # discovery: generous on a busy machine
    assert wait_for(lambda: got["pose/info"] and got["clock"], timeout=30), {k: len(v) for k, v in got.items()}
    assert client.alive(f"{world}/pose/info")

    def spawned_and_deleted():
        """Once each, and again until heard: a one-off message published before the subscriber's connection
        to that topic came up is not delivered (seen on a busy machine), however long the test waits."""
        harmonic_peer.send("spawn crate 100 1 2 0.5 1 1 1")
        harmonic_peer.send("delete crate")
        return wait_for(lambda: got["scene/info"] and got["scene/deletion"], timeout=3)

    assert wait_for(spawned_and_deleted, timeout=30, interval=0)
    with lock:
        pose_payload, pose_type = got["pose/info"][-1]
        (scene_payload, scene_type), (deletion_payload, deletion_type) = got["scene/info"][0], got["scene/deletion"][0]
        clock_payload, clock_type = got["clock"][-1]
    assert (pose_type, scene_type, deletion_type, clock_type) == (
        "gz.msgs.Pose_V", "gz.msgs.Scene", "gz.msgs.UInt32_V", "gz.msgs.Clock")
    official = gz_msgs_class("Pose_V")()
    official.ParseFromString(pose_payload)
    assert {p.id: p.name for p in official.pose}[20] == "box"
    assert protos.decode(pose_type, pose_payload).pose[0].name == official.pose[0].name
    deletion = gz_msgs_class("UInt32_V")()
    deletion.ParseFromString(deletion_payload)
    assert list(deletion.data) == [100, 101, 102]
    scene = gz_msgs_class("Scene")()
    scene.ParseFromString(scene_payload)
    assert scene.model[0].name == "crate" and scene.model[0].id == 100

    payload, type_name = client.request(f"{world}/scene/info", timeout=30)  # the first request: generous when busy
    assert type_name == "gz.msgs.Scene"
    whole = gz_msgs_class("Scene")()
    whole.ParseFromString(payload)
    assert [m.name for m in whole.model] == ["ground", "box", "arm"]
    payload, type_name = client.request(f"{world}/generate_world_sdf", timeout=5)
    text = gz_msgs_class("StringMsg")()
    text.ParseFromString(payload)
    assert f'<world name="{harmonic_peer.world}">' in text.data


def test_requests_are_answered_while_poses_stream(harmonic_peer, client):
    """The official bindings hold the GIL in a blocking request while callbacks wait for it on the one
    reception thread; OfficialClient sends requests in short slices so that none times out."""
    world = f"/world/{harmonic_peer.world}"
    harmonic_peer.send("rate 200")
    harmonic_peer.send("swarm 30")
    count = [0]
    client.subscribe(f"{world}/pose/info", lambda p, t: count.__setitem__(0, count[0] + 1))
    assert wait_for(lambda: count[0] > 20, timeout=30)  # discovery: generous on a busy machine
    failures = []
    before = count[0]
    for _ in range(40):
        try:
            client.request(f"{world}/scene/info", timeout=3.0)
        except TimeoutError as exc:
            failures.append(str(exc))
    assert failures == []
    # the reception thread survived the requests: poses keep coming (waited for, not sampled once: 40 quick
    # requests can take less time than 20 poses at 200 Hz on a busy machine)
    assert wait_for(lambda: count[0] > before + 20, timeout=8), (before, count[0])


@pytest.mark.parametrize("kind", CLIENTS)
def test_mirror_follows_harmonic_with_either_client(harmonic_peer, kind):
    if kind == "official":
        bindings()
    c = make_client(kind)
    if kind == "official":
        assert isinstance(c, OfficialClient)
    mirror = GazeboMirror(MirrorConfig(world=harmonic_peer.world), client=c).start()  # the world from the service
    try:
        assert mirror.wait_ready(30) and wait_for(lambda: mirror.alive, timeout=15)
        assert mirror.degraded == {}  # every topic followed
        first = mirror.sim_time_ns
        assert first is not None and wait_for(lambda: mirror.sim_time_ns > first)
        scene = mirror.scene
        backend = make_backend("embree", scene, threads=1)
        down = np.array([[0.0, 0.0, -1.0]])
        harmonic_peer.send("move box 2 -3 0.5 0 0 0.7")
        assert wait_for(lambda: np.allclose(scene.entity("box::link::visual").pose[:3, 3], [2, -3, 0.5]))
        assert float(backend.trace(np.array([[2.0, -3.0, 5.0]]), down).distance[0]) == pytest.approx(4.0, abs=1e-4)
        harmonic_peer.send("spawn crate 100 -4 4 0.5 1 1 1 0.01 0.3 0.6 777")  # tagged in generate_world_sdf only

        def crate_material():
            entity = scene.find("crate::link::visual")
            return None if entity is None else scene.materials[int(scene.entity(entity).face_materials[0])]

        assert wait_for(lambda: crate_material() is not None and crate_material().radar.get("C") == 777.0, timeout=10)
        harmonic_peer.send("delete crate")
        assert wait_for(lambda: scene.find("crate::link::visual") is None)
        backend.close()
    finally:
        mirror.close()
        c.close()
