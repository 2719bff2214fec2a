"""A built-in client of Gazebo's transport (gz-transport 13 / Ignition Transport 8-12, wire version 10).

Lets a node installed with pip follow a Gazebo running in another container or on another machine,
without Gazebo's own Python bindings. What it speaks (checked against the gz-transport sources and
against Debian's Ignition Transport 11 in test/gazebo):

Discovery (UDP multicast, group 239.255.0.7; messages on port 10317, services on 10318): each
datagram is a little-endian uint16 length followed by a serialized `Discovery` protobuf (version 10).
Publishers re-ADVERTISE every heartbeat (1 s); a process silent for 3 s, or one that says BYE, is gone.
Topic names on the wire are fully qualified: "@<partition>@<topic>"; the default partition of
gz-transport is "<hostname>:<username>", so by default this client accepts any partition
(`partition=None`) or only the one given (or GZ_PARTITION / IGN_PARTITION).

Messages (ZeroMQ): the subscriber connects a SUB socket to the publisher's address, subscribes to the
qualified topic, and tells the publisher's control (DEALER) socket [topic, process uuid, node uuid,
"6" (NEW_CONNECTION)] so that the publisher starts sending. Data frames are [topic, sender address,
payload, type name].

Services (ZeroMQ ROUTER sockets): a request is [replier socket id, topic, our response address, our
response socket id, node uuid, request uuid, payload, request type, response type]; the answer comes
back to our bound ROUTER as [replier id, topic, node uuid, request uuid, payload, "1"|"0"].
Type names of either generation ("gz.msgs.X" or "ignition.msgs.X") are accepted; requests use the
types the replier advertised.
"""
from __future__ import annotations

import logging
import os
import socket
import struct
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Callable

import zmq

from ..errors import ConfigError
from . import protos

log = logging.getLogger(__name__)

WIRE_VERSION = 10
MULTICAST_GROUP = "239.255.0.7"
MSG_DISCOVERY_PORT = 10317
SRV_DISCOVERY_PORT = 10318
HEARTBEAT_S = 1.0
SILENCE_S = 3.0
IDLE_PERIOD_MS = 20  # idle callbacks run at least this often
POLL_MS = 100  # without idle callbacks: heartbeats (1 s) and silence (3 s) need no finer clock
NEW_CONNECTION = "6"
END_CONNECTION = "7"

D = protos.Discovery

MessageCallback = Callable[[bytes, str], None]  # (payload, wire type name)


def split_topic(qualified: str) -> tuple[str, str]:
    """'@/host:user@/world/w/pose/info' -> ('/host:user', '/world/w/pose/info'); plain names pass."""
    if qualified.startswith("@"):
        end = qualified.find("@", 1)
        if end > 0:
            return qualified[1:end], qualified[end + 1 :]
    return "", qualified


def _env(*names: str) -> str | None:
    for name in names:
        if os.environ.get(name):
            return os.environ[name]
    return None


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


@dataclass
class _Subscription:
    topic: str  # unqualified
    callback: MessageCallback
    node_uuid: str


class GzTransportClient:
    """Subscribe to Gazebo topics and call Gazebo services over gz-transport's wire protocol.

    Callbacks run on the client's own thread. `alive(topic)` says whether a publisher of the topic
    is currently known (it disappears after a BYE or 3 s of silence).
    """

    def __init__(
        self,
        partition: str | None = None,
        host_ip: str | None = None,
        group: str | None = None,
        msg_port: int | None = None,
        srv_port: int | None = None,
    ):
        """Unset arguments come from the environment as gz-transport reads it (GZ_PARTITION, GZ_IP,
        GZ_DISCOVERY_MULTICAST_IP, GZ_DISCOVERY_MSG_PORT, GZ_DISCOVERY_SRV_PORT; IGN_* likewise),
        else the defaults (any partition, 239.255.0.7, 10317, 10318)."""
        group = group or _env("GZ_DISCOVERY_MULTICAST_IP", "IGN_DISCOVERY_MULTICAST_IP") or MULTICAST_GROUP
        msg_port = msg_port or _port("GZ_DISCOVERY_MSG_PORT", "IGN_DISCOVERY_MSG_PORT", MSG_DISCOVERY_PORT)
        srv_port = srv_port or _port("GZ_DISCOVERY_SRV_PORT", "IGN_DISCOVERY_SRV_PORT", SRV_DISCOVERY_PORT)
        self.partition = partition if partition is not None else _env("GZ_PARTITION", "IGN_PARTITION")
        if self.partition is not None and not self.partition.startswith("/"):
            self.partition = "/" + self.partition
        self.host_ip = host_ip or _env("GZ_IP", "IGN_IP") or _default_ip()
        self.group = group
        self.process_uuid = str(uuid.uuid4())
        self._lock = threading.RLock()  # guards the zmq sockets and the tables below
        self._subs: dict[str, list[_Subscription]] = {}
        self._publishers: dict[str, dict[str, RemoteEndpoint]] = {}  # qualified topic -> node uuid -> pub
        self._services: dict[str, RemoteEndpoint] = {}  # qualified service name -> replier
        self._activity: dict[str, float] = {}  # process uuid -> last heard (monotonic)
        self._connected: set[tuple[str, str]] = set()  # (qualified topic, address) subscribed at
        self._sub_addresses: set[str] = set()
        self._req_addresses: set[str] = set()
        self._pending: dict[str, dict] = {}  # request uuid -> {'event', 'reply', 'ok'}
        self._idle: list[Callable[[], None]] = []
        self._new_subs: list[_Subscription] = []  # subscriptions not yet connected to known publishers
        self._routes: dict[bytes, tuple[str, bool]] = {}  # data frame topic -> (name, ours)
        self._type_names: dict[bytes, str] = {}
        self._ctx = zmq.Context()
        self._sub = self._ctx.socket(zmq.SUB)
        self._requester = self._ctx.socket(zmq.ROUTER)
        self._requester.setsockopt(zmq.ROUTER_MANDATORY, 1)
        self._requester.setsockopt(zmq.LINGER, 0)
        self._response_id = str(uuid.uuid4())
        self._responses = self._ctx.socket(zmq.ROUTER)
        self._responses.setsockopt(zmq.IDENTITY, self._response_id.encode())
        self._responses.bind(f"tcp://{self.host_ip}:*")
        self._response_address = self._responses.getsockopt(zmq.LAST_ENDPOINT).decode()
        self._udp = {
            "msg": _multicast_socket(group, msg_port, self.host_ip),
            "srv": _multicast_socket(group, srv_port, self.host_ip),
        }
        self._ports = {"msg": msg_port, "srv": srv_port}
        self._poller = zmq.Poller()
        self._poller.register(self._sub, zmq.POLLIN)
        self._poller.register(self._responses, zmq.POLLIN)
        for sock in self._udp.values():
            self._poller.register(sock, zmq.POLLIN)
        self._stop = threading.Event()
        self._next_heartbeat = 0.0
        self._thread = threading.Thread(target=self._run, name="gz-transport", daemon=True)
        self._thread.start()

    # -- public API -----------------------------------------------------------------------------
    def subscribe(self, topic: str, callback: MessageCallback) -> None:
        """Call `callback(payload, type_name)` for every message on `topic` (unqualified name)."""
        with self._lock:
            sub = _Subscription(topic, callback, str(uuid.uuid4()))
            self._subs.setdefault(topic, []).append(sub)
            self._new_subs.append(sub)  # connected by the client thread, the only user of the SUB socket
            if self.partition is not None:  # ask publishers to re-advertise now instead of at the heartbeat
                self._send("msg", D.SUBSCRIBE, sub_topic=f"@{self.partition}@{topic}")

    def add_idle_callback(self, fn: Callable[[], None]) -> None:
        """Run `fn()` on the client thread at least every 20 ms (rate-capped work, timeouts)."""
        with self._lock:
            self._idle.append(fn)

    def alive(self, topic: str) -> bool:
        """True while at least one publisher of `topic` is known and not silent. Lock-free (a sensor
        loop asks before every frame): the table is copied in one step under the GIL."""
        return any(pubs and self._matches(q, topic) for q, pubs in list(self._publishers.items()))

    def topics(self) -> list[str]:
        with self._lock:
            return sorted(split_topic(q)[1] for q, pubs in self._publishers.items() if pubs)

    def services(self) -> list[str]:
        with self._lock:
            return sorted(split_topic(q)[1] for q in self._services)

    def request(self, service: str, payload: bytes = b"", timeout: float = 3.0) -> tuple[bytes, str]:
        """Call a service; returns (response bytes, response type). TimeoutError if nobody answers.

        The request follows the service while it waits: when another replier advertises it (a
        Gazebo restarted after a crash: the dead one never says BYE and is only forgotten after 3 s of
        silence) or the one asked is forgotten, the same request goes to the replier known now; an
        unreachable replier (its connection is gone) is tried again every few milliseconds."""
        deadline = time.monotonic() + timeout
        request_uuid = str(uuid.uuid4())
        waiter = {"event": threading.Event(), "reply": b"", "ok": False}
        asked: RemoteEndpoint | None = None  # the replier the request last reached
        found = False
        with self._lock:
            self._pending[request_uuid] = waiter
        try:
            while True:
                replier = self._replier(service)
                found = found or replier is not None
                if replier is not None and not _same_replier(replier, asked) and self._try_send(
                        replier, request_uuid, payload):
                    asked = replier  # a heartbeat re-advertising the same replier sends nothing again
                connecting = replier is not None and asked is None  # ROUTER_MANDATORY: not reachable yet
                if waiter["event"].wait(0.01 if connecting else 0.05):
                    break
                if time.monotonic() > deadline:
                    if not found:
                        raise TimeoutError(f"no gz-transport service '{service}' found within {timeout:.1f} s")
                    raise TimeoutError(f"gz-transport service '{service}' did not answer within {timeout:.1f} s")
        finally:
            with self._lock:
                self._pending.pop(request_uuid, None)
        if not waiter["ok"]:
            raise RuntimeError(f"gz-transport service '{service}' reported failure")
        return waiter["reply"], asked.response_type

    def _replier(self, service: str) -> RemoteEndpoint | None:
        """The replier of `service` known now (the latest advertisement); asks for one when none."""
        with self._lock:
            replier = next((r for q, r in self._services.items() if self._matches(q, service)), None)
            if replier is None and self.partition is not None:
                self._send("srv", D.SUBSCRIBE, sub_topic=f"@{self.partition}@{service}")
            return replier

    def _try_send(self, replier: RemoteEndpoint, request_uuid: str, payload: bytes) -> bool:
        """Send the request to `replier`; False while it cannot be reached (ROUTER_MANDATORY refuses
        while the TCP connection is being made, and for a replier whose process died)."""
        frames = [replier.socket_id, replier.topic, self._response_address, self._response_id,
                  self.process_uuid, request_uuid]
        message = [f.encode() for f in frames] + [payload, replier.type_name.encode(), replier.response_type.encode()]
        with self._lock:
            if replier.address not in self._req_addresses:
                self._requester.connect(replier.address)
                self._req_addresses.add(replier.address)
            try:
                self._requester.send_multipart(message)
            except zmq.error.ZMQError as exc:
                if exc.errno != zmq.EHOSTUNREACH:
                    raise TimeoutError(f"cannot send to gz-transport replier at {replier.address}: {exc}") from None
                return False
        return True

    def close(self) -> None:
        """Stop the thread and close the sockets (publishers see us leave)."""
        if self._stop.is_set():
            return
        self._stop.set()
        self._thread.join(timeout=2.0)
        with self._lock:
            for kind in self._udp:  # publishers drop us now instead of after 3 s of silence
                self._send(kind, D.BYE)
            for sock in self._udp.values():
                sock.close()
            for s in (self._sub, self._requester, self._responses):
                s.close(linger=0)
            self._ctx.term()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- internals ------------------------------------------------------------------------------
    def _matches(self, qualified: str, topic: str) -> bool:
        partition, name = split_topic(qualified)
        return name == topic and (self.partition is None or partition == self.partition)

    def _run(self) -> None:
        # Housekeeping and idle callbacks run on their own clock, not on every wake-up: at 60 Hz of
        # poses (and as many clock messages) each wake-up should cost only the receiving. The poll
        # waits without the lock (other threads call request/alive meanwhile); only this thread
        # uses the polled sockets.
        udp = [(kind, sock, sock.fileno()) for kind, sock in self._udp.items()]
        next_chores = 0.0
        while not self._stop.is_set():
            try:
                ready = dict(self._poller.poll(IDLE_PERIOD_MS if self._idle else POLL_MS))
                with self._lock:
                    if self._new_subs:
                        self._connect_new_subscriptions()
                    for kind, sock, fd in udp:
                        if fd in ready:
                            self._receive_discovery(kind, sock)
                    if self._sub in ready:
                        self._receive_message()
                    if self._responses in ready:
                        self._receive_response()
                    now = time.monotonic()
                    due = now >= next_chores
                    if due:
                        next_chores = now + (IDLE_PERIOD_MS if self._idle else POLL_MS) / 1000.0
                        self._housekeeping(now)
                        idle = list(self._idle)
                if due:
                    for fn in idle:
                        fn()
            except Exception:  # a bad datagram or callback must not kill the transport thread
                log.exception("gz-transport client: error while handling traffic")
                time.sleep(0.05)

    def _connect_new_subscriptions(self) -> None:
        for sub in self._new_subs:
            for qualified, pubs in self._publishers.items():
                if self._matches(qualified, sub.topic):
                    for pub in pubs.values():
                        self._connect_publisher(pub, sub)
        self._new_subs.clear()

    def _receive_discovery(self, kind: str, sock: socket.socket) -> None:
        while True:
            try:
                data = sock.recv(65535, socket.MSG_DONTWAIT)
            except BlockingIOError:
                return
            if len(data) < 2 or struct.unpack_from("<H", data)[0] + 2 != len(data):
                continue  # another wire generation (length prefix counted differently) or garbage
            msg = D()
            try:
                msg.ParseFromString(data[2:])
            except Exception:
                continue
            if msg.version != WIRE_VERSION or msg.process_uuid == self.process_uuid:
                continue
            self._activity[msg.process_uuid] = time.monotonic()
            if msg.type == D.ADVERTISE and msg.HasField("pub"):
                self._on_advertise(kind, msg.pub)
            elif msg.type == D.UNADVERTISE and msg.HasField("pub"):
                self._forget(lambda ep: ep.topic == msg.pub.topic and ep.node_uuid == msg.pub.node_uuid)
            elif msg.type == D.BYE:
                self._forget(lambda ep: ep.process_uuid == msg.process_uuid)

    def _on_advertise(self, kind: str, pub) -> None:
        if kind == "srv" and pub.WhichOneof("pub_type") == "srv_pub":
            self._services[pub.topic] = RemoteEndpoint(
                pub.topic, pub.address, pub.process_uuid, pub.node_uuid,
                pub.srv_pub.request_type, pub.srv_pub.response_type, socket_id=pub.srv_pub.socket_id,
            )
            return
        if kind != "msg" or pub.WhichOneof("pub_type") != "msg_pub":
            return
        endpoint = RemoteEndpoint(
            pub.topic, pub.address, pub.process_uuid, pub.node_uuid, pub.msg_pub.msg_type, ctrl=pub.msg_pub.ctrl
        )
        known = self._publishers.setdefault(pub.topic, {})
        if pub.node_uuid in known and known[pub.node_uuid].address == pub.address:
            return
        known[pub.node_uuid] = endpoint
        _, name = split_topic(pub.topic)
        for sub in self._subs.get(name, []):
            if self._matches(pub.topic, name):
                self._connect_publisher(endpoint, sub)

    def _connect_publisher(self, pub: RemoteEndpoint, sub: _Subscription) -> None:
        if pub.address not in self._sub_addresses:
            self._sub.connect(pub.address)
            self._sub_addresses.add(pub.address)
        if (pub.topic, pub.address) not in self._connected:
            self._sub.setsockopt(zmq.SUBSCRIBE, pub.topic.encode())
            self._connected.add((pub.topic, pub.address))
            log.info("gz-transport: following %s (%s) from %s", pub.topic, pub.type_name, pub.address)
        # Tell the publisher it has a remote subscriber, or it will not send anything: a NEW_CONNECTION
        # discovery message addressed by the publisher's process uuid (Ignition Transport 8+ and
        # gz-transport, which advertise ctrl "unused"),
        # and the older control-socket message where a control address is advertised.
        self._send("msg", D.NEW_CONNECTION, pub=(pub.topic, pub.type_name, sub.node_uuid, pub.process_uuid))
        if pub.ctrl.startswith("tcp://"):
            ctrl = self._ctx.socket(zmq.DEALER)
            ctrl.setsockopt(zmq.LINGER, 300)
            ctrl.connect(pub.ctrl)
            ctrl.send_multipart([pub.topic.encode(), self.process_uuid.encode(), sub.node_uuid.encode(),
                                 NEW_CONNECTION.encode()])
            ctrl.close()

    def _forget(self, gone: Callable[[RemoteEndpoint], bool]) -> None:
        for topic in list(self._publishers):
            pubs = self._publishers[topic]
            for node in [n for n, ep in pubs.items() if gone(ep)]:
                ep = pubs.pop(node)
                self._connected.discard((ep.topic, ep.address))
                if ep.address in self._sub_addresses and not any(
                    e.address == ep.address for p in self._publishers.values() for e in p.values()
                ):
                    self._sub.disconnect(ep.address)
                    self._sub_addresses.discard(ep.address)
                log.info("gz-transport: publisher of %s at %s is gone", ep.topic, ep.address)
        for name in [n for n, ep in self._services.items() if gone(ep)]:
            ep = self._services.pop(name)
            if ep.address in self._req_addresses:
                self._requester.disconnect(ep.address)
                self._req_addresses.discard(ep.address)

    def _receive_message(self) -> None:
        while True:
            try:
                frames = self._sub.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            if len(frames) < 3:
                continue
            route = self._routes.get(frames[0])
            if route is None:  # topic bytes -> (unqualified name, from our partition), once per topic
                qualified = frames[0].decode(errors="replace")
                name = split_topic(qualified)[1]
                route = self._routes[frames[0]] = (name, self._matches(qualified, name))
            name, ours = route
            if not ours:
                continue
            payload = frames[2]
            type_name = self._type_names.get(frames[3], "") if len(frames) > 3 else ""
            if len(frames) > 3 and not type_name:
                type_name = self._type_names[frames[3]] = frames[3].decode(errors="replace")
            for sub in self._subs.get(name, []):
                try:
                    sub.callback(payload, type_name)
                except Exception:
                    log.exception("gz-transport: callback for %s failed", name)

    def _receive_response(self) -> None:
        while True:
            try:
                frames = self._responses.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            if len(frames) < 6:
                continue
            waiter = self._pending.get(frames[3].decode(errors="replace"))
            if waiter is not None:
                waiter["reply"], waiter["ok"] = frames[4], frames[5] == b"1"
                waiter["event"].set()

    def _housekeeping(self, now: float) -> None:
        if now >= self._next_heartbeat:
            self._next_heartbeat = now + HEARTBEAT_S
            self._send("msg", D.HEARTBEAT)
        silent = [p for p, t in self._activity.items() if now - t > SILENCE_S]
        for process in silent:
            del self._activity[process]
            self._forget(lambda ep, p=process: ep.process_uuid == p)

    def _send(self, kind: str, msg_type: int, sub_topic: str | None = None,
              pub: tuple[str, str, str, str] | None = None) -> None:
        """One discovery datagram; `pub` = (qualified topic, message type, our node uuid, publisher's
        process uuid). In a NEW_CONNECTION the `ctrl` field carries the publisher's process uuid."""
        msg = D(version=WIRE_VERSION, process_uuid=self.process_uuid, type=msg_type)
        if sub_topic is not None:
            msg.sub.topic = sub_topic
        if pub is not None:
            topic, type_name, node_uuid, publisher_process = pub
            msg.pub.topic = topic
            msg.pub.address = self._response_address
            msg.pub.process_uuid = self.process_uuid
            msg.pub.node_uuid = node_uuid
            msg.pub.scope = D.Publisher.ALL
            msg.pub.msg_pub.msg_type = type_name
            msg.pub.msg_pub.ctrl = publisher_process
        body = msg.SerializeToString()
        try:
            self._udp[kind].sendto(struct.pack("<H", len(body)) + body, (self.group, self._ports[kind]))
        except OSError as exc:  # no route to the group: discovery simply finds nobody
            log.debug("gz-transport: cannot send discovery datagram: %s", exc)


def _same_replier(a: RemoteEndpoint | None, b: RemoteEndpoint | None) -> bool:
    return a is not None and b is not None and (a.address, a.socket_id) == (b.address, b.socket_id)


def _port(name: str, legacy: str, default: int) -> int:
    text = _env(name, legacy)
    if text is None:
        return default
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 < port < 65536:
        raise ConfigError(f"environment variable {name} = '{text}'; expected a UDP port 1..65535")
    return port


def _default_ip() -> str:
    """The address gz-transport would pick: the host's outward address, else loopback."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("10.255.255.255", 1))  # no packet is sent; this only selects a route
            ip = s.getsockname()[0]
            if ip and not ip.startswith("0."):
                return ip
    except OSError:
        pass
    return "127.0.0.1"


def _multicast_socket(group: str, port: int, ip: str) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_UDP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if hasattr(socket, "SO_REUSEPORT"):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind(("", port))
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(ip))
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 1)
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 1)
    try:
        sock.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, socket.inet_aton(group) + socket.inet_aton(ip))
    except OSError as exc:
        log.warning("gz-transport: cannot join multicast group %s on %s: %s (Gazebo will not be found)",
                    group, ip, exc)
    sock.setblocking(False)
    return sock
