"""A built-in client of Gazebo's transport (gz-transport 13 / Ignition Transport 8-12, wire version 10).

Lets a node installed with pip follow a Gazebo running in another container or on another machine,
without Gazebo's own Python bindings. What it speaks (checked against the gz-transport sources and
against Debian's Ignition Transport 11 in test/gazebo):

Discovery (UDP multicast, group 239.255.0.7; messages on port 10317, services on 10318): each
datagram is a little-endian uint16 length followed by a serialized `Discovery` protobuf (version 10).
Publishers re-ADVERTISE every heartbeat (1 s); a process silent for 3 s, or one that says BYE, is gone.
Topic names on the wire are fully qualified: "@<partition>@<topic>". Which partition, addresses and
limits apply is netconf.py's (gz-transport's rules, plus an allowed set of networks).

Messages (ZeroMQ): the subscriber connects a SUB socket to the publisher's address, subscribes to the
qualified topic, and tells the publisher's control (DEALER) socket [topic, process uuid, node uuid,
"6" (NEW_CONNECTION)] so that the publisher starts sending. Data frames are [topic, sender address,
payload, type name].

Services (ZeroMQ ROUTER sockets): a request is [replier socket id, topic, our response address, our
response socket id, node uuid, request uuid, payload, request type, response type]; the answer comes
back to our bound ROUTER as [replier id, topic, node uuid, request uuid, payload, "1"|"0"].
Type names of either generation ("gz.msgs.X" or "ignition.msgs.X") are accepted; requests use the
types the replier advertised.

Hostile or broken peers (README, Security). Discovery has no authentication; whom to believe is
discovery.py's (socket-free: the peer table, datagram parsing, world ownership), in short:
- only datagrams from allowed networks, for our partition, are read; a process may speak only from the
  address it first spoke from; advertised addresses outside the allowed networks are refused;
- a BYE/UNADVERTISE only doubts the endpoints it names: they go once their connection drops or they are
  not advertised again within 1.5 s (a forged BYE beside a heartbeating Gazebo changes nothing);
- a full peer table evicts the least recently heard process we do not rely on;
- a world's topics and services ("/world/<w>/...") are taken from one process, its owner: one that
  answered the world's services (this client asks candidates' scene/info) outranks one that serves them,
  which outranks one that only publishes; an owner is also replaced once it is gone (a restarted Gazebo);
- sockets are never disconnected: libzmq aborts the process (`!_more`, fq.cpp) when a pipe holding
  a half-read multipart message goes away, and the poller pre-reads the first part. A socket whose
  connections went stale is closed and made anew instead;
- messages above a size are refused by ZeroMQ, queues are short, tables have caps, and silent
  processes are forgotten after 3 s; every kind of trouble is one rate-limited log line.
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
from ..threads import context_thread
from ..throttled_log import ThrottledLog
from . import protos
from .discovery import HEARTBEAT_S, MAX_TYPE_LENGTH, SILENCE_S, WIRE_VERSION, PeerTable, RemoteEndpoint, split_topic
from .netconf import NetConfig, read_config, shorten, tcp_endpoint

log = logging.getLogger(__name__)

MULTICAST_GROUP = "239.255.0.7"
MSG_DISCOVERY_PORT = 10317
SRV_DISCOVERY_PORT = 10318
IDLE_PERIOD_MS = 20  # idle callbacks run at least this often
POLL_MS = 100  # without idle callbacks: heartbeats (1 s) and silence (3 s) need no finer clock
NEW_CONNECTION = "6"
DATAGRAMS_PER_WAKE = 256  # discovery cannot starve the data: both are bounded per wake-up
MESSAGES_PER_WAKE = 1000
STALE_CONNECTIONS = 4  # a socket with more connections to forgotten peers is made anew
MAX_CONNECTIONS = 64  # distinct publisher addresses followed at once
CLOSE_WAIT_S = 2.0  # close() waits this long for the client thread (which closes the sockets itself)

D = protos.Discovery

MessageCallback = Callable[[bytes, str], None]  # (payload, wire type name)


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
        else the defaults ('<hostname>:<username>', loopback, 239.255.0.7, 10317, 10318). Limits and
        the allowed networks: netconf.py."""
        self.config: NetConfig = read_config(partition, host_ip)
        group = group or _env("GZ_DISCOVERY_MULTICAST_IP", "IGN_DISCOVERY_MULTICAST_IP") or MULTICAST_GROUP
        msg_port = msg_port or _port("GZ_DISCOVERY_MSG_PORT", "IGN_DISCOVERY_MSG_PORT", MSG_DISCOVERY_PORT)
        srv_port = srv_port or _port("GZ_DISCOVERY_SRV_PORT", "IGN_DISCOVERY_SRV_PORT", SRV_DISCOVERY_PORT)
        self.partition = self.config.partition
        self.host_ip = self.config.host_ip
        self.group = group
        self.process_uuid = str(uuid.uuid4())
        self.trouble = ThrottledLog(log, period_s=10.0)  # .totals: what was refused, by kind
        self._lock = threading.RLock()  # guards the zmq sockets and the tables below
        self._subs: dict[str, list[_Subscription]] = {}
        # who is out there and whom to believe (no sockets): discovery.py
        self.peers = PeerTable(self.config, self.process_uuid, self.trouble.report,
                               lambda: [f"@{self.partition}@{t}" for t in self._subs])
        self._following: dict[tuple[bytes, bytes], str] = {}  # (qualified topic, sender) -> topic
        self._sub_addresses: set[str] = set()
        self._sub_topics: set[bytes] = set()
        self._req_addresses: set[str] = set()
        self._pending: dict[str, dict] = {}  # request uuid -> {'event', 'reply', 'ok'}
        self._idle: list[Callable[[], None]] = []
        self._new_subs: list[_Subscription] = []  # subscriptions not yet connected to known publishers
        self._type_names: dict[bytes, str] = {}
        self._ctx = zmq.Context()
        self._sub = self._new_socket(zmq.SUB)
        self._requester = self._new_requester()
        self._response_id = str(uuid.uuid4())
        self._responses = self._new_socket(zmq.ROUTER)
        self._responses.setsockopt(zmq.IDENTITY, self._response_id.encode())
        try:
            self._responses.bind(f"tcp://{self.host_ip}:*")
        except zmq.ZMQError as exc:
            self._ctx.destroy(linger=0)
            raise ConfigError(f"GZ_IP = '{shorten(self.host_ip)}': cannot bind there ({exc}); "
                              "expected an IPv4 address of this host") from None
        self._response_address = self._responses.getsockopt(zmq.LAST_ENDPOINT).decode()
        self._udp = {"msg": _multicast_socket(group, msg_port, self.config.discovery_ips),
                     "srv": _multicast_socket(group, srv_port, self.config.discovery_ips)}
        self._sender = _sender_socket()
        self._ports = {"msg": msg_port, "srv": srv_port}
        self._last_rebuild = 0.0
        self._poller = zmq.Poller()
        self._poller.register(self._sub, zmq.POLLIN)
        self._monitor = self._watch(self._sub)
        self._poller.register(self._responses, zmq.POLLIN)
        for sock in self._udp.values():
            self._poller.register(sock, zmq.POLLIN)
        self._stop = threading.Event()
        self._next_heartbeat = 0.0
        self._thread = context_thread(self._run, "gz-transport")
        self._thread.start()

    def _new_socket(self, kind: int) -> zmq.Socket:
        sock = self._ctx.socket(kind)
        sock.setsockopt(zmq.MAXMSGSIZE, self.config.max_message_bytes)  # larger: connection dropped
        sock.setsockopt(zmq.RCVHWM, self.config.queue)
        sock.setsockopt(zmq.LINGER, 0)
        return sock

    def _watch(self, sock: zmq.Socket) -> zmq.Socket:
        """A monitor of `sock`'s connections: a killed Gazebo's TCP connection drops at once, which
        lets a restarted one take its world over without waiting for the missed heartbeat."""
        monitor = sock.get_monitor_socket(zmq.EVENT_CONNECTED | zmq.EVENT_DISCONNECTED)
        self._poller.register(monitor, zmq.POLLIN)
        return monitor

    def _receive_monitor(self) -> None:
        from zmq.utils.monitor import recv_monitor_message

        for _ in range(MESSAGES_PER_WAKE):
            try:
                event = recv_monitor_message(self._monitor, zmq.NOBLOCK)
            except zmq.Again:
                return
            address = event.get("endpoint", b"").decode(errors="replace")
            if event["event"] == zmq.EVENT_DISCONNECTED:
                self.peers.down.setdefault(address, time.monotonic())
            else:
                self.peers.down.pop(address, None)

    def _cut_off(self, live: set[str], now: float) -> bool:
        """A followed publisher that still heartbeats lost its connection for good: ZeroMQ ends a
        connection that brought a message over the size cap (a protocol error) without reconnecting.
        The socket is made anew, at most once a second."""
        cut = [a for a, since in self.peers.down.items() if a in live and now - since > 0.5]
        if not cut or now - self._last_rebuild < 1.0:
            return False
        self._bad("cut", lambda: f"gz-transport: connection to {cut[0]} dropped (a message over "
                  f"{self.config.max_message_bytes} bytes, RADARAYS_GZ_MAX_MESSAGE_BYTES, or the peer left); reconnecting")
        return True

    def _new_requester(self) -> zmq.Socket:
        sock = self._new_socket(zmq.ROUTER)
        sock.setsockopt(zmq.ROUTER_MANDATORY, 1)
        return sock

    # -- public API -----------------------------------------------------------------------------
    def subscribe(self, topic: str, callback: MessageCallback) -> None:
        """Call `callback(payload, type_name)` for every message on `topic` (unqualified name)."""
        with self._lock:
            sub = _Subscription(topic, callback, str(uuid.uuid4()))
            self._subs.setdefault(topic, []).append(sub)
            self._new_subs.append(sub)  # connected by the client thread, the only user of the SUB socket
            # ask publishers to re-advertise now instead of at the heartbeat
            self._send("msg", D.SUBSCRIBE, sub_topic=f"@{self.partition}@{topic}")

    def add_idle_callback(self, fn: Callable[[], None]) -> None:
        """Run `fn()` on the client thread at least every 20 ms (rate-capped work, timeouts)."""
        with self._lock:
            self._idle.append(fn)

    def alive(self, topic: str) -> bool:
        """True while at least one publisher of `topic` is known and not silent. Lock-free (a sensor
        loop asks before every frame): the table is copied in one step under the GIL."""
        return bool(self.peers.publishers.get(f"@{self.partition}@{topic}"))

    def topics(self) -> list[str]:
        with self._lock:
            return sorted(split_topic(q)[1] for q, pubs in self.peers.publishers.items() if pubs)

    def services(self) -> list[str]:
        with self._lock:
            return sorted(split_topic(q)[1] for q in self.peers.services)

    def request(self, service: str, payload: bytes = b"", timeout: float = 3.0) -> tuple[bytes, str]:
        """Call a service; returns (response bytes, response type). TimeoutError if nobody answers.

        The request follows the service while it waits: when another replier advertises it (a
        Gazebo restarted after a crash: the dead one never says BYE and is replaced once it missed a
        heartbeat) or the one asked is forgotten, the same request goes to the replier known now; an
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
        with self._lock:  # an answer from a world's replier ranks its process first (discovery.py)
            self.peers.answered(asked, time.monotonic())
        return waiter["reply"], asked.response_type

    def _replier(self, service: str) -> RemoteEndpoint | None:
        """The replier of `service` known now (the latest advertisement); asks for one when none."""
        with self._lock:
            replier = self.peers.services.get(f"@{self.partition}@{service}")
            if replier is None:
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
                if len(self._req_addresses) >= MAX_CONNECTIONS:
                    self._rebuild_requester()
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
        """Stop the thread, which says BYE (publishers see us leave) and closes the sockets on its way out.
        Waits up to CLOSE_WAIT_S for it (not at all when called from a callback, on the thread itself): a
        socket closed while the thread still polls or reads it is memory libzmq frees under that thread."""
        if self._stop.is_set():
            return
        self._stop.set()
        if threading.current_thread() is self._thread:
            return
        self._thread.join(timeout=CLOSE_WAIT_S)
        if self._thread.is_alive():
            log.warning("gz-transport: the client thread is still in a callback after %.1f s; it closes its "
                        "sockets when that returns", CLOSE_WAIT_S)

    def _close_sockets(self) -> None:
        """The client thread's last act: it is the sockets' only poller and reader."""
        with self._lock:
            for kind in self._udp:  # publishers drop us now instead of after 3 s of silence
                self._send(kind, D.BYE)
            for sock in list(self._udp.values()) + [self._sender]:
                sock.close()
            self._sub.disable_monitor()
            for s in (self._monitor, self._sub, self._requester, self._responses):
                s.close(linger=0)
            self._ctx.term()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- the client thread ----------------------------------------------------------------------
    def _run(self) -> None:
        try:
            self._serve()
        finally:
            self._close_sockets()

    def _serve(self) -> None:
        # Housekeeping and idle callbacks run on their own clock, not on every wake-up: at 60 Hz of
        # poses (and as many clock messages) each wake-up should cost only the receiving. The poll
        # waits without the lock (other threads call request/alive meanwhile); only this thread
        # uses the polled sockets. Data is read before discovery, both in bounded amounts.
        next_chores = 0.0
        while not self._stop.is_set():
            try:
                ready = dict(self._poller.poll(IDLE_PERIOD_MS if self._idle else POLL_MS))
            except zmq.ZMQError as exc:
                self.trouble.report("poll", f"gz-transport: poll failed: {exc}")
                self._stop.wait(0.01)
                continue
            with self._lock:
                if self._sub in ready:
                    self._guarded("message", self._receive_messages)
                if self._monitor in ready:
                    self._guarded("monitor", self._receive_monitor)
                if self._responses in ready:
                    self._guarded("response", self._receive_responses)
                for kind, sock in self._udp.items():
                    if sock.fileno() in ready:
                        self._guarded("discovery", self._receive_discovery, kind, sock)
                if self._new_subs:
                    self._guarded("subscribe", self._connect_new_subscriptions)
                now = time.monotonic()
                due = now >= next_chores
                if due:
                    next_chores = now + (IDLE_PERIOD_MS if self._idle else POLL_MS) / 1000.0
                    self._guarded("housekeeping", self._housekeeping, now)
                    idle = list(self._idle)
            if due:
                for fn in idle:
                    self._guarded("idle callback", fn)

    def _guarded(self, what: str, fn, *args) -> None:
        """Run fn; an exception becomes one rate-limited line (type and message), not a traceback."""
        try:
            fn(*args)
        except Exception as exc:  # noqa: BLE001 - nothing from the network may stop the thread
            self.trouble.report(f"error:{what}:{type(exc).__name__}",
                                lambda: f"gz-transport: {what} failed: {type(exc).__name__}: {shorten(exc, 200)}")

    # -- discovery ------------------------------------------------------------------------------
    def _bad(self, key: str, text) -> None:
        self.trouble.report(key, text)

    def _receive_discovery(self, kind: str, sock: socket.socket) -> None:
        for _ in range(DATAGRAMS_PER_WAKE):
            try:
                data, (source, _) = sock.recvfrom(65535)
            except (BlockingIOError, InterruptedError):
                return
            self._on_datagram(kind, data, source, time.monotonic())

    def _on_datagram(self, kind: str, data: bytes, source: str, now: float) -> None:
        """One discovery datagram: the peer table reads it, the sockets follow what changed."""
        self.peers.on_datagram(kind, data, source, now)
        self._apply_discovery()

    def _apply_discovery(self) -> None:
        """Connect new publishers of subscribed topics, stop delivering forgotten ones, ask again for names."""
        peers = self.peers
        followed, peers.followed = peers.followed, []
        dropped, peers.dropped = peers.dropped, []
        asks, peers.asks = peers.asks, []
        for ep in dropped:
            if not any(e.address == ep.address for e in peers.publishers.get(ep.topic, {}).values()):
                self._following.pop((ep.topic.encode(), ep.address.encode()), None)
            log.info("gz-transport: publisher of %s at %s is gone", ep.topic, ep.address)
        for ep in followed:
            for sub in self._subs.get(split_topic(ep.topic)[1], []):
                self._connect_publisher(ep, sub)
        for kind, qualified in dict.fromkeys(asks):
            self._send(kind, D.SUBSCRIBE, sub_topic=qualified)

    # -- following publishers -------------------------------------------------------------------
    def _connect_new_subscriptions(self) -> None:
        subs, self._new_subs = self._new_subs, []
        for sub in subs:
            for pub in list(self.peers.publishers.get(f"@{self.partition}@{sub.topic}", {}).values()):
                self._connect_publisher(pub, sub)

    def _connect_publisher(self, pub: RemoteEndpoint, sub: _Subscription) -> None:
        topic = pub.topic.encode()
        if pub.address not in self._sub_addresses:
            if len(self._sub_addresses) >= MAX_CONNECTIONS:
                self._rebuild_sub()
                if len(self._sub_addresses) >= MAX_CONNECTIONS:
                    self._bad("connections", f"gz-transport: already following {MAX_CONNECTIONS} addresses; "
                              f"{pub.address} ignored")
                    return
            self._sub.connect(pub.address)
            self._sub_addresses.add(pub.address)
        if topic not in self._sub_topics:
            self._sub.setsockopt(zmq.SUBSCRIBE, topic)
            self._sub_topics.add(topic)
        key = (topic, pub.address.encode())
        if key not in self._following:
            self._following[key] = split_topic(pub.topic)[1]
            log.info("gz-transport: following %s (%s) from %s", pub.topic, shorten(pub.type_name), pub.address)
        # Tell the publisher it has a remote subscriber, or it will not send anything: a NEW_CONNECTION
        # discovery message addressed by the publisher's process uuid (Ignition Transport 8+ and
        # gz-transport, which advertise ctrl "unused"),
        # and the older control-socket message where a control address is advertised.
        self._send("msg", D.NEW_CONNECTION, pub=(pub.topic, pub.type_name, sub.node_uuid, pub.process_uuid))
        ctrl = tcp_endpoint(pub.ctrl, self.config) if pub.ctrl.startswith("tcp://") else None
        if ctrl is not None:
            dealer = self._ctx.socket(zmq.DEALER)
            dealer.setsockopt(zmq.LINGER, 300)
            dealer.connect(ctrl)
            dealer.send_multipart([pub.topic.encode(), self.process_uuid.encode(), sub.node_uuid.encode(),
                                   NEW_CONNECTION.encode()], zmq.NOBLOCK)
            dealer.close()

    def _rebuild_sub(self) -> None:
        """A new SUB socket connected to the publishers followed now (the old one's connections to
        forgotten peers go with it; closing, unlike disconnecting, never trips libzmq's assertion)."""
        self._poller.unregister(self._sub)
        self._poller.unregister(self._monitor)
        self._sub.disable_monitor()
        self._monitor.close(linger=0)
        self._sub.close(linger=0)
        self._sub = self._new_socket(zmq.SUB)
        self._poller.register(self._sub, zmq.POLLIN)
        self._monitor = self._watch(self._sub)
        self.peers.down.clear()
        self._last_rebuild = time.monotonic()
        self._sub_addresses, self._sub_topics = set(), set()
        for topic, address in list(self._following):
            if address.decode() not in self._sub_addresses:
                self._sub.connect(address.decode())
                self._sub_addresses.add(address.decode())
            if topic not in self._sub_topics:
                self._sub.setsockopt(zmq.SUBSCRIBE, topic)
                self._sub_topics.add(topic)

    def _rebuild_requester(self) -> None:
        self._requester.close(linger=0)
        self._requester = self._new_requester()
        self._req_addresses = set()

    # -- data -----------------------------------------------------------------------------------
    def _receive_messages(self) -> None:
        for _ in range(MESSAGES_PER_WAKE):
            try:
                frames = self._sub.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            if len(frames) != 4:
                self._bad("frames", f"gz-transport: a message of {len(frames)} frames (expected 4), ignored")
                continue
            name = self._following.get((frames[0], frames[1]))
            if name is None:
                continue  # a publisher no longer followed (its connection goes with the next rebuild)
            type_name = self._type_names.get(frames[3])
            if type_name is None:
                if len(frames[3]) > MAX_TYPE_LENGTH:
                    self._bad("frames", "gz-transport: a message with an over-long type name, ignored")
                    continue
                if len(self._type_names) >= 256:
                    self._type_names.clear()
                type_name = self._type_names[frames[3]] = frames[3].decode(errors="replace")
            for sub in self._subs.get(name, []):
                try:
                    sub.callback(frames[2], type_name)
                except Exception as exc:  # noqa: BLE001 - a bad message must not stop the others
                    self.trouble.report(f"callback:{name}:{type(exc).__name__}",
                                        lambda: f"gz-transport: message on {name} refused: "
                                                f"{type(exc).__name__}: {shorten(exc, 200)}")

    def _receive_responses(self) -> None:
        for _ in range(MESSAGES_PER_WAKE):
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
                if "probe" in waiter:
                    self._pending.pop(frames[3].decode(errors="replace"), None)
                    if waiter["ok"]:
                        self.peers.answered(waiter["probe"], time.monotonic())

    def _housekeeping(self, now: float) -> None:
        if now >= self._next_heartbeat:
            self._next_heartbeat = now + HEARTBEAT_S
            self._send("msg", D.HEARTBEAT)
        self.peers.expire(now)
        for replier in self.peers.probes(now):  # does a candidate owner answer the world's services?
            self._probe(replier, now)
        for request_uuid in [u for u, w in self._pending.items() if w.get("until", now) < now]:
            del self._pending[request_uuid]  # a probe nobody answered
        self._apply_discovery()
        live = {address.decode() for _, address in self._following}
        if len(self._sub_addresses - live) > STALE_CONNECTIONS or self._cut_off(live, now):
            self._rebuild_sub()
        services = {ep.address for ep in self.peers.services.values()}
        if len(self._req_addresses - services) > STALE_CONNECTIONS and not self._pending:
            self._rebuild_requester()

    def _probe(self, replier: RemoteEndpoint, now: float) -> None:
        """An empty request to `replier` (discovery.PROBE_SERVICE of a world); its answer ranks its process."""
        request_uuid = str(uuid.uuid4())
        self._pending[request_uuid] = {"event": threading.Event(), "reply": b"", "ok": False, "probe": replier,
                                       "until": now + SILENCE_S}
        try:
            self._try_send(replier, request_uuid, b"")
        except TimeoutError:
            self._pending.pop(request_uuid, None)

    def _send(self, kind: str, msg_type: int, sub_topic: str | None = None,
              pub: tuple[str, str, str, str] | None = None) -> None:
        """One discovery datagram on every discovery interface; `pub` = (qualified topic, message
        type, our node uuid, publisher's process uuid). In a NEW_CONNECTION the `ctrl` field carries
        the publisher's process uuid."""
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
        if len(body) > 65533:
            return
        datagram = struct.pack("<H", len(body)) + body
        for ip in self.config.discovery_ips:
            try:
                self._sender.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(ip))
                self._sender.sendto(datagram, (self.group, self._ports[kind]))
            except OSError as exc:  # no route to the group: discovery simply finds nobody there
                self.trouble.report(f"send:{ip}", f"gz-transport: cannot send discovery on {ip}: {exc}", logging.DEBUG)


def _same_replier(a: RemoteEndpoint | None, b: RemoteEndpoint | None) -> bool:
    return a is not None and b is not None and (a.address, a.socket_id) == (b.address, b.socket_id)


def _env(*names: str) -> str | None:
    for name in names:
        if os.environ.get(name):
            return os.environ[name]
    return None


def _port(name: str, legacy: str, default: int) -> int:
    text = _env(name, legacy)
    if text is None:
        return default
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 < port < 65536:
        raise ConfigError(f"environment variable {name} = '{shorten(text)}'; expected a UDP port 1..65535")
    return port


def _multicast_socket(group: str, port: int, interfaces: tuple[str, ...]) -> socket.socket:
    """Receives the group's datagrams on `port` (bound to the group address, not to every address
    of the host), joined on each interface."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_UDP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if hasattr(socket, "SO_REUSEPORT"):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)  # a burst of datagrams, bounded
    sock.bind((group, port))
    for ip in interfaces:
        try:
            sock.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, socket.inet_aton(group) + socket.inet_aton(ip))
        except OSError as exc:
            log.warning("gz-transport: cannot join multicast group %s on %s: %s (Gazebo will not be found there)",
                        group, ip, exc)
    sock.setblocking(False)
    return sock


def _sender_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_UDP)
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 1)
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 1)
    sock.setblocking(False)
    return sock
