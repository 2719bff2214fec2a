"""The built-in gz-transport client against real peers: Gazebo Harmonic's gz-transport13 and Ignition
Transport 11 (both wire version 10); see conftest.py."""
from __future__ import annotations

import threading
import time

import pytest
from support.gz_harness import Peer, wait_for

from radarays_ros.gazebo import protos
from radarays_ros.gazebo.transport import GzTransportClient, split_topic


@pytest.fixture
def client(gz_peer):
    c = GzTransportClient(partition=gz_peer.partition, host_ip="127.0.0.1")
    yield c
    c.close()


def test_split_topic():
    assert split_topic("@/host:user@/world/w/pose/info") == ("/host:user", "/world/w/pose/info")
    assert split_topic("/clock") == ("", "/clock")


def test_subscribe_pose_and_scene_topics(gz_peer, client):
    world = f"/world/{gz_peer.world}"
    poses, scenes, lock = [], [], threading.Lock()

    def on_pose(payload, type_name):
        with lock:
            poses.append(protos.decode(type_name, payload))

    client.subscribe(world + "/pose/info", on_pose)
    client.subscribe(world + "/scene/info", lambda p, t: scenes.append((t, protos.decode(t, p))))
    assert wait_for(lambda: poses, timeout=30), "no Pose_V arrived from the peer"  # discovery: generous when busy
    with lock:
        names = {p.id: p.name for p in poses[-1].pose}
    assert names[20] == "box" and names[31] == "upper"
    assert client.alive(world + "/pose/info")
    assert wait_for(lambda: world + "/scene/deletion" in client.topics(), timeout=10)  # next heartbeat (1 s; busy)

    gz_peer.send("move box 2 3 0.5 0 0 0")
    def box_at_new_pose():
        with lock:
            return any(p.id == 20 and p.position.x == 2.0 and p.position.y == 3.0 for p in poses[-1].pose)
    assert wait_for(box_at_new_pose)

    gz_peer.send("spawn crate 100 1 2 0.5 1 1 1")
    assert wait_for(lambda: scenes)
    type_name, scene = scenes[0]
    assert type_name == gz_peer.type_prefix + "Scene"  # Harmonic's name, and the Fortress-generation one
    assert scene.model[0].name == "crate" and scene.model[0].id == 100


def test_services_scene_info_and_generate_world_sdf(gz_peer, client):
    world = f"/world/{gz_peer.world}"
    payload, type_name = client.request(world + "/scene/info", timeout=30)  # discovery first: generous when busy
    scene = protos.decode(type_name, payload)
    assert [m.name for m in scene.model] == ["ground", "box", "arm"]
    payload, type_name = client.request(world + "/generate_world_sdf", timeout=5)
    sdf = protos.decode(type_name, payload).data
    assert f'<world name="{gz_peer.world}">' in sdf and '<model name="arm">' in sdf


def test_missing_service_times_out(gz_peer, client):
    with pytest.raises(TimeoutError, match="no gz-transport service '/nope'"):
        client.request("/nope", timeout=0.3)


def test_other_partition_is_not_followed(gz_peer):
    """Positive control in the same window: a client on the peer's own partition hears it meanwhile, so the
    silence of the other partition is the partition's doing, not a peer that is not publishing."""
    topic = f"/world/{gz_peer.world}/pose/info"
    with GzTransportClient(partition="/someone_else", host_ip="127.0.0.1") as other, \
            GzTransportClient(partition=gz_peer.partition, host_ip="127.0.0.1") as own:
        got, heard = [], []
        other.subscribe(topic, lambda p, t: got.append(p))
        own.subscribe(topic, lambda p, t: heard.append(p))
        assert wait_for(lambda: len(heard) >= 3, timeout=30)  # the peer publishes, and is heard on its partition
        heard_before = len(heard)
        assert not wait_for(lambda: got, timeout=1.5)
        assert len(heard) > heard_before  # still publishing during the whole window the other one heard nothing
        assert got == []


def test_default_partition_is_gazebos_and_dead_peer_survived(gz_peer, monkeypatch):
    # gz-transport's default partition is "<hostname>:<username>": a Gazebo started without
    # GZ_PARTITION is followed by a client without it, and the test peer's own partition is not.
    from radarays_ros.gazebo.netconf import default_partition

    for name in ("GZ_PARTITION", "IGN_PARTITION"):
        monkeypatch.delenv(name, raising=False)
    ours = Peer(gz_peer.world + "d", default_partition(), gz_peer.binary, gz_peer.env).start()
    try:
        with GzTransportClient(host_ip="127.0.0.1") as c:
            assert c.partition == "/" + default_partition()
            count, foreign = [0], []
            topic = f"/world/{ours.world}/pose/info"
            c.subscribe(topic, lambda p, t: count.__setitem__(0, count[0] + 1))
            c.subscribe(f"/world/{gz_peer.world}/pose/info", lambda p, t: foreign.append(p))
            assert wait_for(lambda: count[0] > 0, timeout=30)  # discovery: generous on a busy machine
            ours.kill()  # no BYE: found dead by 3 s of silence
            assert wait_for(lambda: not c.alive(topic), timeout=20)
            stopped_at = count[0]
            again = ours.twin().start()
            try:
                assert wait_for(lambda: c.alive(topic) and count[0] > stopped_at + 5, timeout=30)  # a new process
            finally:
                again.stop()
            assert wait_for(lambda: not c.alive(topic), timeout=3)  # a clean stop says BYE
            assert not foreign  # the fixture's peer is in another partition
    finally:
        ours.stop()


def test_discovery_settings_from_the_environment(gz_peer, monkeypatch):
    from radarays_ros.errors import ConfigError

    monkeypatch.setenv("GZ_DISCOVERY_MSG_PORT", "11417")  # the peer stays on 10317: not found there
    with GzTransportClient(partition=gz_peer.partition, host_ip="127.0.0.1") as c:
        got = []
        c.subscribe(f"/world/{gz_peer.world}/pose/info", lambda p, t: got.append(p))
        assert not wait_for(lambda: got, timeout=1.5)
    monkeypatch.setenv("GZ_DISCOVERY_MSG_PORT", "port")
    with pytest.raises(ConfigError, match="GZ_DISCOVERY_MSG_PORT = 'port'; expected a UDP port"):
        GzTransportClient(host_ip="127.0.0.1")


def test_request_to_a_crashed_replier_goes_to_the_restarted_one(gz_peer, client):
    # A killed Gazebo says no BYE: its service stays known until 3 s of silence. A request made in
    # that window must not wait for the dead replier: it is re-sent as soon as a new one advertises.
    service = f"/world/{gz_peer.world}/scene/info"
    client.request(service, timeout=30)  # the first replier is known and connected (discovery: generous when busy)
    gz_peer.kill()
    answer = {}

    def ask():
        try:
            answer["reply"] = client.request(service, timeout=2.5)  # shorter than the 3 s of silence
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            answer["error"] = exc

    asking = threading.Thread(target=ask)
    asking.start()
    time.sleep(0.3)  # the request is out, to the dead replier, before the new one exists
    again = gz_peer.twin().start()
    try:
        # Only the new replier can answer (the killed one is gone). No command to the new peer before
        # the answer: a fast peer (gz-transport13) answers the re-sent request before it would run one.
        asking.join(timeout=5)
        assert "error" not in answer, answer
        payload, type_name = answer["reply"]
        assert [m.name for m in protos.decode(type_name, payload).model] == ["ground", "box", "arm"]
    finally:
        again.stop()


def _sockets_closed(c: GzTransportClient) -> list[bool]:
    return [c._sub.closed, c._requester.closed, c._responses.closed, c._ctx.closed,
            *(s.fileno() == -1 for s in c._udp.values())]


def test_close_leaves_the_sockets_to_a_client_thread_still_in_a_callback(isolated_network, monkeypatch):
    """The client thread polls and reads its sockets without the lock: close() must not close them under
    it (libzmq frees a closed socket's memory). A thread still busy after the wait closes them itself."""
    from radarays_ros.gazebo import transport

    monkeypatch.setattr(transport, "CLOSE_WAIT_S", 0.2)
    c = GzTransportClient(partition=f"radarays_close_{time.monotonic_ns()}", host_ip="127.0.0.1")
    entered, release = threading.Event(), threading.Event()
    c.add_idle_callback(lambda: (entered.set(), release.wait(20)))
    try:
        assert entered.wait(10)
        c.close()  # returns after CLOSE_WAIT_S: the thread is still in the callback
        assert c._thread.is_alive()
        assert not any(_sockets_closed(c)), _sockets_closed(c)
    finally:
        release.set()
    c._thread.join(10)
    assert not c._thread.is_alive()
    assert all(_sockets_closed(c)), _sockets_closed(c)


def test_close_from_a_callback_ends_the_thread_and_closes_the_sockets(isolated_network):
    """A callback may close its own client (a node shutting down from a message): no join of the thread
    by itself, and the sockets are closed all the same once the callback returns."""
    c = GzTransportClient(partition=f"radarays_close_{time.monotonic_ns()}", host_ip="127.0.0.1")
    c.add_idle_callback(c.close)
    c._thread.join(10)
    assert not c._thread.is_alive()
    assert all(_sockets_closed(c)), _sockets_closed(c)
    assert not any(k.startswith("error:") for k in c.trouble.totals), c.trouble.totals
