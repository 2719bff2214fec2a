"""gz-transport discovery without sockets (radarays_ros/gazebo/discovery.py): forged datagrams straight into the
peer table, a clock of our own. What a same-host peer (any 127.x source, any process uuid) can do to the link."""
from __future__ import annotations

import uuid

import pytest
from support.hostile import D, datagram

from radarays_ros.gazebo.discovery import PROBE_SERVICE, TAKEOVER_S, PeerTable
from radarays_ros.gazebo.netconf import read_config

PARTITION = "/radarays_test"
WORLD = "w"
POSES = f"@{PARTITION}@/world/{WORLD}/pose/info"
SCENE = f"@{PARTITION}@/world/{WORLD}/{PROBE_SERVICE}"
LOCAL = "127.0.0.1"


class Table:
    """A PeerTable with the throttled log's keys counted and a hand-driven clock."""

    def __init__(self, max_peers: int | None = None, monkeypatch=None):
        if max_peers is not None:
            monkeypatch.setenv("RADARAYS_GZ_MAX_PEERS", str(max_peers))
        self.reports: dict[str, int] = {}
        self.peers = PeerTable(read_config("radarays_test", "127.0.0.1"), "us", self._report, lambda: [POSES])
        self.now = 100.0

    def _report(self, key, text):
        self.reports[key] = self.reports.get(key, 0) + 1

    def feed(self, data: bytes, kind: str = "msg", source: str = LOCAL, dt: float = 0.0) -> None:
        self.now += dt
        self.peers.on_datagram(kind, data, source, self.now)

    def tick(self, dt: float) -> None:
        self.now += dt
        self.peers.expire(self.now)

    def publishers(self, topic: str = POSES) -> list:
        return list(self.peers.publishers.get(topic, {}).values())


class Gazebo:
    """The datagrams of one gz process: its world's pose topic and scene/info service."""

    def __init__(self, port: int = 5000):
        self.process, self.node, self.port = str(uuid.uuid4()), str(uuid.uuid4()), port

    def poses(self) -> bytes:
        return datagram(D.ADVERTISE, self.process, POSES, f"tcp://127.0.0.1:{self.port}", node=self.node)

    def scene(self) -> bytes:
        return datagram(D.ADVERTISE, self.process, SCENE, f"tcp://127.0.0.1:{self.port + 1}", node=self.node, srv=True)

    def heartbeat(self, table: Table, dt: float = 1.0) -> None:
        table.tick(dt)
        table.feed(self.poses())
        table.feed(self.scene(), "srv")


def test_forged_bye_and_unadvertise_from_the_same_host_change_nothing_while_gazebo_heartbeats():
    t, gz = Table(), Gazebo()
    gz.heartbeat(t, 0.0)
    (followed,) = t.peers.followed
    for second in range(10):  # 20 forged BYEs and UNADVERTISEs a second, from Gazebo's own address
        for _ in range(20):
            t.feed(datagram(D.BYE, gz.process), dt=0.025)
            t.feed(datagram(D.UNADVERTISE, gz.process, POSES, "tcp://127.0.0.1:5000", node=gz.node), dt=0.025)
            t.tick(0.0)
            assert t.publishers() == [followed] and SCENE in t.peers.services
        gz.heartbeat(t, 0.0)
    assert t.peers.dropped == [] and t.peers.worlds[WORLD].owner == gz.process


def test_a_real_bye_is_honoured_at_once_when_the_connection_drops_else_after_a_missed_heartbeat():
    t, gz = Table(), Gazebo()
    gz.heartbeat(t, 0.0)
    t.peers.down["tcp://127.0.0.1:5000"] = t.now  # Gazebo closed its sockets (the monitor saw it)
    t.feed(datagram(D.BYE, gz.process))
    assert t.publishers() == [] and t.peers.dropped  # at once
    t2, gz2 = Table(), Gazebo()
    gz2.heartbeat(t2, 0.0)
    t2.feed(datagram(D.UNADVERTISE, gz2.process, POSES, "tcp://127.0.0.1:5000", node=gz2.node))
    t2.tick(TAKEOVER_S * 0.9)
    assert t2.publishers()  # one heartbeat may still come
    t2.tick(TAKEOVER_S * 0.2)
    assert t2.publishers() == [] and SCENE in t2.peers.services  # only what it named


def test_bye_from_another_address_is_a_spoof():
    t, gz = Table(), Gazebo()
    gz.heartbeat(t, 0.0)
    t.feed(datagram(D.BYE, gz.process), source="127.0.0.2")
    t.tick(5 * TAKEOVER_S)  # no heartbeat either: silent -> forgotten, but the BYE itself was refused
    assert t.reports["spoof"] == 1


def test_invented_process_uuids_cannot_lock_a_restarted_gazebo_out(monkeypatch):
    t = Table(max_peers=256, monkeypatch=monkeypatch)
    fakes = [str(uuid.uuid4()) for _ in range(300)]
    gz = Gazebo()
    gz.heartbeat(t, 0.0)
    for second in range(5):  # 300 fakes heartbeating: the table is full all the time
        for fake in fakes:
            t.feed(datagram(D.HEARTBEAT, fake), dt=1.0 / 300)
        gz.heartbeat(t, 0.0)
        assert gz.process in t.peers.processes and len(t.peers.processes) <= 256
    assert t.reports["peers"] > 0
    t.peers.forget_process(gz.process)  # Gazebo crashed; a new one starts while the fakes go on
    again = Gazebo(port=6000)
    for second in range(3):
        for fake in fakes:
            t.feed(datagram(D.HEARTBEAT, fake), dt=1.0 / 300)
        again.heartbeat(t, 0.0)
    assert [ep.address for ep in t.publishers()] == ["tcp://127.0.0.1:6000"]
    assert t.peers.worlds[WORLD].owner == again.process


def test_the_server_that_answers_the_worlds_services_owns_the_world():
    t, squatter, gz = Table(), Gazebo(port=7000), Gazebo(port=5000)
    t.feed(squatter.poses())  # before Gazebo starts: first come, but it serves nothing
    assert t.peers.worlds[WORLD].owner == squatter.process
    gz.heartbeat(t, 0.1)  # Gazebo advertises the world's scene/info service: it outranks a publisher
    assert t.peers.worlds[WORLD].owner == gz.process
    assert ("msg", POSES) in t.peers.asks  # its topics are asked for again (the squatter's are still known)
    for _ in range(4):
        gz.heartbeat(t)
    assert [ep.address for ep in t.publishers()] == ["tcp://127.0.0.1:5000"]


def test_a_squatter_that_also_advertises_the_service_loses_once_gazebo_answers():
    t, squatter, gz = Table(), Gazebo(port=7000), Gazebo(port=5000)
    squatter.heartbeat(t, 0.0)  # poses and a scene/info service it never answers
    gz.heartbeat(t, 0.1)
    assert t.peers.worlds[WORLD].owner == squatter.process  # a tie: the owner keeps it
    probes = t.peers.probes(t.now)
    assert sorted(ep.address for ep in probes) == ["tcp://127.0.0.1:5001", "tcp://127.0.0.1:7001"]
    assert t.peers.probes(t.now + 1.0) == []  # asked at most every PROBE_EVERY_S
    (answered,) = [ep for ep in probes if ep.process_uuid == gz.process]
    t.peers.answered(answered, t.now)
    assert t.peers.worlds[WORLD].owner == gz.process and t.peers.asks  # and its names are asked for again
    gz.heartbeat(t, 0.5)
    squatter.heartbeat(t, 0.0)
    assert t.peers.worlds[WORLD].owner == gz.process
    for _ in range(5):
        gz.heartbeat(t)
        squatter.heartbeat(t, 0.0)
    assert [ep.address for ep in t.publishers()] == ["tcp://127.0.0.1:5000"]
    assert t.peers.services[SCENE].process_uuid == gz.process


def test_a_crashed_owner_is_replaced_by_the_restarted_gazebo():
    t, gz = Table(), Gazebo(port=5000)
    gz.heartbeat(t, 0.0)
    t.peers.down["tcp://127.0.0.1:5000"] = t.now  # killed: no BYE, its connection drops
    again = Gazebo(port=6000)
    again.heartbeat(t, 0.1)
    assert t.peers.worlds[WORLD].owner == again.process
    for _ in range(4):
        again.heartbeat(t)
    assert [ep.address for ep in t.publishers()] == ["tcp://127.0.0.1:6000"]


@pytest.mark.parametrize("data", [b"", b"\x01", b"\x05\x00abc", b"\x03\x00\xff\xff\xff",
                                  datagram(D.ADVERTISE, "x" * 100, POSES, "tcp://127.0.0.1:1")])
def test_malformed_datagrams_are_counted_not_raised(data):
    t = Table()
    t.feed(data)
    assert sum(t.reports.values()) == 1 and not t.peers.processes
