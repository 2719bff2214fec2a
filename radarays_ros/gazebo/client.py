"""The gz-transport client of the Gazebo mirror: ours (the default) or Gazebo's official Python bindings.

Both offer what the mirror needs: subscribe(topic, callback(payload bytes, type name)),
request(service, payload, timeout) -> (bytes, response type), alive(topic), topics(),
add_idle_callback(fn), close().

    make_client("builtin")   # transport.GzTransportClient: our client of the wire protocol (default)
    make_client("official")  # OfficialClient over gz.transport13 (python3-gz-transport13 of a Harmonic install)

Why the built-in client is the default: the upstream bindings (gz-transport 13.x) hold Python's GIL for
the whole of a blocking `request_raw` and `topic_list` call, while each subscription callback has to take
the GIL on gz-transport's one reception thread. A request made while poses stream can therefore wait for
its own answer behind a callback that waits for the GIL: measured against Harmonic, 9 of 100 requests
timed out with a 50 Hz pose subscription (0 without), and `topic_list()` blocks every Python thread for
about 1.8 s. The built-in client never holds the GIL while it waits. Both are tested against the same
gz-transport13 peer (test/gazebo/test_clients.py).

What OfficialClient does about it: requests are sent in slices that start short (`REQUEST_SLICE_S`; a
slow service such as gz-sim 8's generate_world_sdf, 150-1300 ms on the server, starts at
`FIRST_SLICE_S[service]`): a slice that stalls behind a callback ends, the GIL passes to the waiting
callback, and the request is sent again, so a stall costs a slice instead of the whole timeout. Against a
real gz-sim 8 that is not enough: its /clock (about 440 messages a second on the loaded test machine) and
pose/info streams put a callback in front of every answer, so no slice is ever answered (measured: 0 of 52
requests, scene/info and generate_world_sdf, with any one stream followed; all answered without one). The
reply is read by the same reception thread that waits for the GIL (gz-transport13 NodeShared), so after a
first unanswered slice the client pauses its subscriptions (Node.unsubscribe: gz-transport runs callbacks
outside its lock, so this cannot deadlock with one waiting for the GIL), sends the request again in slices
that double up to the timeout, and subscribes again: the streams lose what the server sent meanwhile (a
few hundred milliseconds for generate_world_sdf), the request is answered. It subscribes with
`subscribe_raw` (bytes and the publisher's type name, any topic, no message classes needed) and calls
services with `request_raw`, with the request / response type names of the services the mirror and the
node call.
"""
from __future__ import annotations

import importlib
import logging
import threading
import time

from ..errors import ConfigError
from ..threads import context_thread
from .transport import GzTransportClient

log = logging.getLogger(__name__)

CLIENTS = ("builtin", "official")
REQUEST_SLICE_S = 0.1  # first blocking request_raw of the official bindings (they hold the GIL meanwhile)
FIRST_SLICE_S = {"generate_world_sdf": 1.0}  # services that take longer than a slice on a real server
ANY_TYPE = "google.protobuf.Message"  # gz-transport's generic type: a raw subscription of any publisher


def make_client(kind: str = "builtin", **options):
    """The gz-transport client named by `kind` (see CLIENTS and the module doc): ConfigError for another
    name, or for "official" when gz.transport13 is not importable."""
    if kind == "builtin":
        return GzTransportClient(**options)
    if kind == "official":
        try:
            return OfficialClient()
        except ImportError as exc:
            raise ConfigError(f"gazebo client 'official': Gazebo's Python bindings (gz.transport13) are not "
                              f"importable ({exc}); install python3-gz-transport13 or use 'builtin'") from None
    raise ConfigError(f"gazebo client '{kind}'; allowed: {', '.join(CLIENTS)}")


class OfficialClient:
    """The mirror's client interface over gz.transport13.Node (bytes in, bytes out)."""

    TOPIC_TYPES = {"pose/info": "gz.msgs.Pose_V", "dynamic_pose/info": "gz.msgs.Pose_V", "scene/info": "gz.msgs.Scene",
                   "scene/deletion": "gz.msgs.UInt32_V", "clock": "gz.msgs.Clock"}
    SERVICE_TYPES = {  # request, response types of the services the mirror and the node call
        "scene/info": ("gz.msgs.Empty", "gz.msgs.Scene"),
        "generate_world_sdf": ("gz.msgs.SdfGeneratorConfig", "gz.msgs.StringMsg"),
    }

    def __init__(self):
        transport = importlib.import_module("gz.transport13")
        self._node = transport.Node()
        self._options = transport.SubscribeOptions()
        self._last_heard: dict[str, float] = {}
        self._idle: list = []
        self._closed = False
        self._subscriptions: dict[str, object] = {}  # topic -> the relay given to subscribe_raw (to resume)
        self._requesting = threading.Lock()  # one request at a time: pausing the streams is process-wide
        self._stop = threading.Event()
        self._thread = context_thread(self._tick, "gz-official-idle")
        self._thread.start()

    def subscribe(self, topic: str, callback) -> None:
        """Every message of `topic`, whatever its type, as (bytes, type name). The bindings' MessageInfo
        carries no type name: it is the one of the world topics the mirror follows, else '' (the
        receiver's default type)."""
        type_name = next((t for suffix, t in self.TOPIC_TYPES.items() if topic.endswith("/" + suffix)), "")

        def relay(payload, _info, _topic=topic):
            if self._closed:
                return
            self._last_heard[_topic] = time.monotonic()
            try:
                callback(bytes(payload), type_name)
            except Exception:  # noqa: BLE001 - the bindings would print it to stderr and go on; log it instead
                log.exception("gz-transport callback of %s failed", _topic)

        if not self._node.subscribe_raw(topic, relay, ANY_TYPE, self._options):
            raise RuntimeError(f"gz.transport13 could not subscribe to {topic}")
        self._subscriptions[topic] = relay

    def request(self, service: str, payload: bytes = b"", timeout: float = 3.0):
        suffix = next((s for s in self.SERVICE_TYPES if service.endswith("/" + s)), None)
        if suffix is None:
            raise ValueError(f"OfficialClient cannot call {service}: unknown service types "
                             f"(known: {', '.join(self.SERVICE_TYPES)})")
        req_type, rep_type = self.SERVICE_TYPES[suffix]
        end = time.monotonic() + timeout
        slice_s = FIRST_SLICE_S.get(suffix, REQUEST_SLICE_S)
        with self._requesting:
            ok, response = self._node.request_raw(service, payload, req_type, rep_type,
                                                  max(1, int(1000 * min(slice_s, timeout))))
            if ok:
                return bytes(response), rep_type
            paused = self._pause()  # the streams kept the answer from the reception thread (module doc)
            try:
                while True:
                    time.sleep(0.001)  # let a callback that waited for the GIL run before the next slice
                    left = end - time.monotonic()
                    if left <= 0:
                        raise TimeoutError(f"gz-transport service '{service}' did not answer within {timeout:.1f} s")
                    slice_s *= 2  # nothing competes now: a service slower than the slice gets its time
                    ok, response = self._node.request_raw(service, payload, req_type, rep_type,
                                                          max(1, int(1000 * min(slice_s, left))))
                    if ok:
                        return bytes(response), rep_type
            finally:
                self._resume(paused)

    def _pause(self) -> dict:
        """Unsubscribe every followed topic; what _resume needs to follow them again."""
        paused = dict(self._subscriptions)
        for topic in paused:
            self._node.unsubscribe(topic)
        return paused

    def _resume(self, paused: dict) -> None:
        for topic, relay in paused.items():
            if not self._closed and not self._node.subscribe_raw(topic, relay, ANY_TYPE, self._options):
                log.error("gz.transport13: %s could not be followed again after a request", topic)

    def alive(self, topic: str) -> bool:
        return time.monotonic() - self._last_heard.get(topic, -1e9) < 3.0

    def topics(self) -> list[str]:
        return sorted(self._node.topic_list())

    def add_idle_callback(self, fn) -> None:
        self._idle.append(fn)

    def _tick(self) -> None:
        while not self._stop.wait(0.02):
            for fn in list(self._idle):
                try:
                    fn()
                except Exception:
                    log.exception("gz idle callback failed")

    def close(self) -> None:
        self._closed = True
        self._stop.set()
        self._thread.join(timeout=1)
        # No more callbacks into this process from a closed client's reception thread (a request in flight
        # in another thread resumes nothing once _closed is set); a callback already running returns at once.
        for topic in list(self._subscriptions):
            self._node.unsubscribe(topic)
        self._subscriptions.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
