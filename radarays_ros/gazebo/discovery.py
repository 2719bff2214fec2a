"""gz-transport discovery without sockets: datagrams in, a table of peers and endpoints out, and the policy of
whom to believe. transport.py owns the sockets and feeds this table; everything here runs (and is tested)
with plain bytes, addresses and a clock.

What a datagram is (gz-transport 13, wire version 10): a little-endian uint16 length and a serialized
`Discovery` protobuf. Publishers re-ADVERTISE every heartbeat (1 s); a process silent for 3 s is gone.

gz-transport has no authentication: anyone who can reach the multicast group can name any process uuid.
The table believes only what a peer cannot forge cheaply (README, Security):

* identity is bound to the source address a process first spoke from (another address is ignored) and to
  its endpoints: a BYE or UNADVERTISE only *doubts* the endpoints it names. A doubted endpoint is forgotten
  once its TCP connection drops (a process that leaves closes its sockets) or when it is not advertised again
  within TAKEOVER_S; a heartbeat that re-advertises it clears the doubt. A forged BYE from the same host
  therefore costs nothing while the real process heartbeats;
* the peer table is bounded, but full means the least recently heard process that we do not rely on is
  evicted (not: newcomers refused), so uuids invented in bulk cannot lock a restarted Gazebo out; a
  process owning a world or publishing a followed topic is never evicted by a newcomer;
* a world's topics and services ("/world/<w>/...") come from one process, its owner. Among the processes
  advertising in a world, one that answered a world service outranks one that advertises a world service,
  which outranks one that only advertises topics; the owner is replaced by a live process of higher rank, or
  once it is gone (missed a heartbeat, or its connection dropped: a crashed Gazebo says no BYE).
  `probes()` names the service of a candidate the socket client should ask, `answered()` records the answer.
"""
from __future__ import annotations

import logging
import struct
from dataclasses import dataclass, field
from typing import Callable, Iterable

from . import protos
from .netconf import NetConfig, shorten, tcp_endpoint
from .netconf import split_topic as _decompose

log = logging.getLogger("radarays_ros.gazebo.transport")

WIRE_VERSION = 10
HEARTBEAT_S = 1.0
SILENCE_S = 3.0
TAKEOVER_S = 1.5  # one missed heartbeat: a world's owner may be replaced, a doubted endpoint is forgotten
PROBE_EVERY_S = 5.0  # a candidate owner's world service is asked at most this often
MAX_ID_LENGTH = 64  # process and node uuids are 36 characters
MAX_TYPE_LENGTH = 256
PROBE_SERVICE = "scene/info"  # a read-only service every Gazebo world answers (gz-sim SceneBroadcaster)

D = protos.Discovery


def split_topic(qualified: str) -> tuple[str, str]:
    """'@/host:user@/world/w/pose/info' -> ('/host:user', '/world/w/pose/info'); plain names pass."""
    parts = _decompose(qualified)
    return parts if parts is not None else ("", qualified)


def world_of(topic: str) -> str | None:
    """'/world/w/pose/info' -> 'w'; None for topics outside a world."""
    if not topic.startswith("/world/"):
        return None
    name = topic[7:].split("/", 1)[0]
    return name or None


def is_local(ip: str, config: NetConfig) -> bool:
    return ip.startswith("127.") or ip in config.discovery_ips or ip == config.host_ip


@dataclass
class RemoteEndpoint:
    """A publisher or service replier learnt from discovery."""

    topic: str  # qualified, as on the wire
    address: str
    process_uuid: str
    node_uuid: str
    type_name: str = ""  # message type, or request type for services
    response_type: str = ""
    ctrl: str = ""  # control address (messages)
    socket_id: str = ""  # replier identity (services)
    doubted: float | None = None  # when a BYE/UNADVERTISE named it and no ADVERTISE came since


@dataclass
class Process:
    source: str  # the IP its first datagram came from: the only one it may speak from
    last_heard: float  # last datagram other than BYE/UNADVERTISE


@dataclass
class World:
    owner: str
    since: float  # when the owner took it
    claimed: float | None = None  # when another process last claimed it while the owner was alive
    answered: set = field(default_factory=set)  # processes that answered one of its services
    serving: dict = field(default_factory=dict)  # process -> its PROBE_SERVICE replier (candidates)
    probed: dict = field(default_factory=dict)  # process -> when last asked


class Refused(Exception):
    """A datagram not taken: `key` (the kind, for the throttled log's totals) and a one-line text."""

    def __init__(self, key: str, text: str):
        super().__init__(text)
        self.key = key


def parse_datagram(data: bytes, source: str) -> D:
    """The Discovery message of one datagram; Refused when the framing or the protobuf is bad."""
    if len(data) < 2 or struct.unpack_from("<H", data)[0] + 2 != len(data):
        raise Refused("framing", f"gz-transport: discovery datagram from {source} with a bad length prefix, ignored")
    msg = D()
    try:
        msg.ParseFromString(data[2:])
    except Exception:  # noqa: BLE001 - protobuf's DecodeError and friends
        raise Refused("protobuf", f"gz-transport: discovery datagram from {source} is not a Discovery message, "
                      "ignored") from None
    return msg


class PeerTable:
    """The processes, publishers and service repliers discovery found, and who owns each world.

    `config`: the client's NetConfig (partition, allowed networks, caps); `own_uuid`: our process uuid (our
    datagrams loop back); `report(key, text)`: the throttled log; `subscribed()`: the qualified topics the
    client follows (their publishers' processes are never evicted). `down`: connection address -> when its
    TCP connection dropped, kept by the socket client. The client drains `followed` (publishers to connect),
    `dropped` (endpoints forgotten) and `asks` ((kind, qualified name) to SUBSCRIBE to again) after each call.
    """

    def __init__(self, config: NetConfig, own_uuid: str, report: Callable[[str, object], None],
                 subscribed: Callable[[], Iterable[str]] = tuple):
        self.config, self.own_uuid, self._report, self._subscribed = config, own_uuid, report, subscribed
        self.partition = config.partition
        self.processes: dict[str, Process] = {}  # in order of last heard (the least recent first)
        self.publishers: dict[str, dict[str, RemoteEndpoint]] = {}  # qualified topic -> node uuid -> publisher
        self.services: dict[str, RemoteEndpoint] = {}  # qualified service name -> replier
        self.endpoints = 0  # publishers + repliers remembered (capped)
        self.worlds: dict[str, World] = {}
        self.down: dict[str, float] = {}
        self.followed: list[RemoteEndpoint] = []
        self.dropped: list[RemoteEndpoint] = []
        self.asks: list[tuple[str, str]] = []

    # -- datagrams ------------------------------------------------------------------------------
    def on_datagram(self, kind: str, data: bytes, source: str, now: float) -> None:
        """One discovery datagram ('msg' or 'srv' port): checks that cost microseconds first, then the protobuf."""
        try:
            if not self.config.allows(source):
                raise Refused("outside", f"gz-transport: discovery datagram from {source}, outside the allowed "
                              "networks (RADARAYS_GZ_ALLOW), ignored")
            self._on_message(kind, parse_datagram(data, source), source, now)
        except Refused as refused:
            self._report(refused.key, str(refused))

    def _on_message(self, kind: str, msg: D, source: str, now: float) -> None:
        if msg.version != WIRE_VERSION or msg.process_uuid == self.own_uuid:
            return  # another wire generation, or our own datagram looped back
        process_id = msg.process_uuid
        if not process_id or len(process_id) > MAX_ID_LENGTH:
            raise Refused("process", f"gz-transport: discovery datagram from {source} with a bad process uuid, ignored")
        process = self.processes.get(process_id)
        if process is None:
            if msg.type in (D.BYE, D.UNADVERTISE):
                return
            process = self._admit(process_id, source, now)
            if process is None:
                return
        elif process.source != source:
            raise Refused("spoof", f"gz-transport: datagram for process {shorten(process_id, 40)} from {source}, "
                          f"but it speaks from {process.source}: ignored")
        if msg.type == D.UNADVERTISE and msg.HasField("pub"):
            topic, node = msg.pub.topic, msg.pub.node_uuid
            self._doubt(lambda ep: ep.process_uuid == process_id and ep.topic == topic and ep.node_uuid == node, now)
            return
        if msg.type == D.BYE:
            self._doubt(lambda ep: ep.process_uuid == process_id, now)
            return
        process.last_heard = now  # only what a leaving process does not send keeps it alive
        self.processes[process_id] = self.processes.pop(process_id)  # the table stays in order of last heard
        if msg.type == D.ADVERTISE and msg.HasField("pub"):
            self._on_advertise(kind, msg.pub, process_id, source, now)

    def _admit(self, process_id: str, source: str, now: float) -> Process | None:
        """A new process; when the table is full the least recently heard one we do not rely on makes room."""
        if len(self.processes) >= self.config.max_peers:
            kept = {w.owner for w in self.worlds.values()}
            for topic in self._subscribed():
                kept.update(ep.process_uuid for ep in self.publishers.get(topic, {}).values())
            evicted = next((pid for pid in self.processes if pid not in kept), None)  # in order of last heard
            if evicted is None:
                self._report("peers", f"gz-transport: more than {self.config.max_peers} peers "
                             f"(RADARAYS_GZ_MAX_PEERS), all relied on; {source} ignored")
                return None
            self._report("peers", lambda: f"gz-transport: more than {self.config.max_peers} peers "
                         "(RADARAYS_GZ_MAX_PEERS); the least recently heard is forgotten")
            self.forget_process(evicted)
        process = self.processes[process_id] = Process(source, now)
        return process

    def _on_advertise(self, kind: str, pub, process_id: str, source: str, now: float) -> None:
        parts = _decompose(pub.topic)
        if parts is None or pub.process_uuid != process_id or not pub.node_uuid or len(pub.node_uuid) > MAX_ID_LENGTH:
            raise Refused("advertise", f"gz-transport: malformed ADVERTISE from {source} "
                          f"(topic '{shorten(pub.topic)}'), ignored")
        partition, name = parts
        if partition != self.partition:
            return  # another partition: not ours to follow (gz-transport's rule)
        if pub.scope == D.Publisher.PROCESS or (pub.scope == D.Publisher.HOST and not is_local(source, self.config)):
            return
        address = tcp_endpoint(pub.address, self.config)
        if address is None:
            raise Refused("address", f"gz-transport: {shorten(name)} advertised at '{shorten(pub.address)}' from "
                          f"{source}: not a tcp:// address in the allowed networks (RADARAYS_GZ_ALLOW), ignored")
        pub_type = pub.WhichOneof("pub_type")
        if kind == "srv" and pub_type == "srv_pub":
            srv = pub.srv_pub
            if max(len(srv.request_type), len(srv.response_type), len(srv.socket_id)) > MAX_TYPE_LENGTH:
                raise Refused("advertise", f"gz-transport: service {shorten(name)} advertised with over-long names, "
                              "ignored")
            endpoint = RemoteEndpoint(pub.topic, address, process_id, pub.node_uuid, srv.request_type,
                                      srv.response_type, socket_id=srv.socket_id)
            if not self._owned_by(name, process_id, now, endpoint):
                return
            known = self.services.get(pub.topic)
            if known is None and not self._room():
                return
            self.endpoints += known is None
            self.services[pub.topic] = endpoint
            return
        if kind != "msg" or pub_type != "msg_pub":
            return
        msg_pub = pub.msg_pub
        if max(len(msg_pub.msg_type), len(msg_pub.ctrl)) > MAX_TYPE_LENGTH:
            raise Refused("advertise", f"gz-transport: topic {shorten(name)} advertised with over-long names, ignored")
        if not self._owned_by(name, process_id, now):
            return
        known = self.publishers.get(pub.topic, {})
        old = known.get(pub.node_uuid)
        if old is not None and old.address == address:
            old.doubted = None  # the heartbeat's re-advertisement: whatever BYE named it was not its own
            return
        if old is None and not self._room():
            return
        endpoint = RemoteEndpoint(pub.topic, address, process_id, pub.node_uuid, msg_pub.msg_type, ctrl=msg_pub.ctrl)
        if old is not None:
            self.forget(lambda ep: ep is old)
        self.publishers.setdefault(pub.topic, {})[pub.node_uuid] = endpoint
        self.endpoints += 1
        self.followed.append(endpoint)

    def _room(self) -> bool:
        if self.endpoints < self.config.max_endpoints:
            return True
        self._report("endpoints", f"gz-transport: more than {self.config.max_endpoints} topics and services "
                     "advertised (RADARAYS_GZ_MAX_ENDPOINTS); new ones ignored until some go silent")
        return False

    # -- world ownership ------------------------------------------------------------------------
    def rank(self, world: World, process_id: str) -> int:
        """2: answered one of the world's services; 1: advertises its PROBE_SERVICE; 0: topics only."""
        return 2 if process_id in world.answered else 1 if process_id in world.serving else 0

    def _owned_by(self, topic: str, process_id: str, now: float, service: RemoteEndpoint | None = None) -> bool:
        """A world's topics and services come from its owner only (the module docstring says who that is)."""
        name = world_of(topic)
        if name is None:
            return True
        world = self.worlds.get(name)
        if world is None:
            if len(self.worlds) >= self.config.max_endpoints:
                return False
            world = self.worlds[name] = World(process_id, now)
        if service is not None and topic == f"/world/{name}/{PROBE_SERVICE}" and (
                process_id in world.serving or len(world.serving) < self.config.max_peers):
            world.serving[process_id] = service  # a candidate: probes() asks it
        if world.owner == process_id:
            return True
        if not self.gone(world.owner, now) and self.rank(world, process_id) <= self.rank(world, world.owner):
            world.claimed = now
            owner = world.owner
            self._report("owner", lambda: f"gz-transport: world '{shorten(name)}' belongs to "
                         f"{self.processes[owner].source if owner in self.processes else '?'} ({shorten(owner, 40)}); "
                         "another process advertising in it is ignored")
            return False
        self._take(name, world, process_id, now)
        return True

    def _take(self, name: str, world: World, process_id: str, now: float) -> None:
        """`process_id` owns `name` from now on; the previous owner's endpoints stay until the new owner's
        replace them (no gap) or SILENCE_S passed (`expire`)."""
        log.info("gz-transport: world '%s' now follows process %s (%s)", shorten(name), shorten(process_id, 40),
                 "it answers the world's services" if self.rank(world, process_id) == 2 else
                 "it serves the world" if self.rank(world, process_id) == 1 else "the previous one is silent")
        world.owner, world.since, world.claimed = process_id, now, None
        # ask for the world's names again, so that the new owner is followed without waiting for its heartbeat
        self.asks += [(kind, ep.topic) for kind, eps in self.endpoints_by_kind() for ep in eps
                      if world_of(split_topic(ep.topic)[1]) == name]

    def probes(self, now: float) -> list[RemoteEndpoint]:
        """Service repliers to ask once (PROBE_SERVICE of a world's candidates outranking nobody yet): the
        socket client sends an empty request and calls `answered(endpoint)` on a good answer."""
        out = []
        for world in self.worlds.values():
            if world.owner in world.answered:
                continue
            for process_id, endpoint in world.serving.items():
                asked = world.probed.get(process_id)
                if process_id not in world.answered and (asked is None or now - asked >= PROBE_EVERY_S):
                    world.probed[process_id] = now
                    out.append(endpoint)
        return out

    def answered(self, endpoint: RemoteEndpoint, now: float) -> None:
        """`endpoint` (a replier under /world/<w>/) answered a request: its process outranks the others."""
        name = world_of(split_topic(endpoint.topic)[1])
        world = self.worlds.get(name) if name else None
        if world is None or endpoint.process_uuid not in self.processes:
            return
        world.answered.add(endpoint.process_uuid)
        if world.owner != endpoint.process_uuid and self.rank(world, world.owner) < 2:
            self._take(name, world, endpoint.process_uuid, now)

    # -- liveness -------------------------------------------------------------------------------
    def gone(self, process_id: str, now: float) -> bool:
        """The process missed a heartbeat, or the connection to one of its publishers dropped."""
        process = self.processes.get(process_id)
        if process is None or now - process.last_heard > TAKEOVER_S:
            return True
        return any(ep.process_uuid == process_id and ep.address in self.down
                   for pubs in self.publishers.values() for ep in pubs.values())

    def _doubt(self, named: Callable[[RemoteEndpoint], bool], now: float) -> None:
        for kind, endpoints in self.endpoints_by_kind():
            for ep in endpoints:
                if named(ep) and ep.doubted is None:
                    ep.doubted = now
        self.forget(lambda ep: ep.doubted is not None and ep.address in self.down)  # it left: its socket is closed

    def expire(self, now: float) -> None:
        """Housekeeping: silent processes, doubted endpoints not advertised again, former owners' endpoints."""
        for process_id in [p for p, proc in self.processes.items() if now - proc.last_heard > SILENCE_S]:
            self.forget_process(process_id)
        self.forget(lambda ep: ep.doubted is not None and (now - ep.doubted > TAKEOVER_S or ep.address in self.down))
        for name, world in list(self.worlds.items()):
            if world.owner not in self.processes:
                if not any(world_of(split_topic(ep.topic)[1]) == name for _, eps in self.endpoints_by_kind()
                           for ep in eps):
                    del self.worlds[name]
                continue
            if world.claimed is not None and now - world.claimed <= SILENCE_S and self.gone(world.owner, now):
                del self.worlds[name]  # the next advertisement in it (asked for now) takes it
                self.asks += [(kind, ep.topic) for kind, eps in self.endpoints_by_kind() for ep in eps
                              if world_of(split_topic(ep.topic)[1]) == name]

        def former(ep: RemoteEndpoint) -> bool:
            # endpoints in a world from a process that no longer owns it, once the new owner has owned it for
            # as long as a silent process is remembered (a restarted Gazebo may unadvertise and advertise again
            # while it starts: the old entries keep `alive` true meanwhile)
            name = world_of(split_topic(ep.topic)[1])
            world = self.worlds.get(name) if name else None
            return world is not None and world.owner != ep.process_uuid and now - world.since > SILENCE_S

        self.forget(former)

    # -- tables ---------------------------------------------------------------------------------
    def endpoints_by_kind(self):
        yield "msg", [ep for pubs in self.publishers.values() for ep in pubs.values()]
        yield "srv", list(self.services.values())

    def forget(self, gone: Callable[[RemoteEndpoint], bool]) -> None:
        for topic in list(self.publishers):
            pubs = self.publishers[topic]
            for node in [n for n, ep in pubs.items() if gone(ep)]:
                self.dropped.append(pubs.pop(node))
                self.endpoints -= 1
            if not pubs:
                del self.publishers[topic]
        for name in [n for n, ep in self.services.items() if gone(ep)]:
            del self.services[name]
            self.endpoints -= 1

    def forget_process(self, process_id: str) -> None:
        self.processes.pop(process_id, None)
        self.forget(lambda ep: ep.process_uuid == process_id)
        for world in self.worlds.values():
            world.serving.pop(process_id, None)
            world.answered.discard(process_id)
            world.probed.pop(process_id, None)
