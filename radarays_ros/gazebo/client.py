"""Pick the gz-transport client: Gazebo's official Python bindings when installed, else ours.

Both offer what the mirror needs: subscribe(topic, callback(payload bytes, type name)),
request(service, payload, timeout) -> (bytes, response type), alive(topic), topics(),
add_idle_callback(fn), close().

The official path (gz.transport13 + gz.msgs10, from Gazebo Harmonic's python3-gz-transport13 and
python3-gz-msgs10 packages) is NOT exercised by this repository's tests (no Gazebo here); the
built-in client is, against a real Ignition Transport peer.
"""
from __future__ import annotations

import importlib
import logging
import threading
import time

from .transport import GzTransportClient

log = logging.getLogger(__name__)


def make_client(prefer_official: bool = True, **options):
    """An OfficialClient when gz.transport13 imports (and prefer_official), else a GzTransportClient."""
    if prefer_official:
        try:
            return OfficialClient()
        except ImportError:
            pass
    return GzTransportClient(**options)


class OfficialClient:
    """The same interface over gz.transport13.Node (messages are re-serialized to bytes, so the
    mirror decodes them with our own definitions either way)."""

    SERVICE_TYPES = {  # request, response types of the services the mirror calls
        "scene/info": ("Empty", "Scene"),
        "generate_world_sdf": ("SdfGeneratorConfig", "StringMsg"),
    }

    def __init__(self):
        transport = importlib.import_module("gz.transport13")
        self._msgs = importlib.import_module("gz.msgs10")
        self._node = transport.Node()
        self._last_heard: dict[str, float] = {}
        self._idle: list = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._tick, name="gz-official-idle", daemon=True)
        self._thread.start()

    def _class(self, name: str):
        module = importlib.import_module(f"gz.msgs10.{name.lower()}_pb2")
        return getattr(module, name)

    def subscribe(self, topic: str, callback) -> None:
        type_name = {"pose/info": "Pose_V", "dynamic_pose/info": "Pose_V", "scene/info": "Scene",
                     "scene/deletion": "UInt32_V"}
        suffix = next((s for s in type_name if topic.endswith("/" + s)), None)
        if suffix is None:
            raise ValueError(f"OfficialClient cannot subscribe to {topic}: unknown message type")
        cls = self._class(type_name[suffix])

        def relay(msg, _topic=topic):
            self._last_heard[_topic] = time.monotonic()
            callback(msg.SerializeToString(), f"gz.msgs.{type_name[suffix]}")

        if not self._node.subscribe(cls, topic, relay):
            raise RuntimeError(f"gz.transport13 could not subscribe to {topic}")

    def request(self, service: str, payload: bytes = b"", timeout: float = 3.0):
        suffix = next((s for s in self.SERVICE_TYPES if service.endswith("/" + s)), None)
        if suffix is None:
            raise ValueError(f"OfficialClient cannot call {service}: unknown service types")
        req_name, rep_name = self.SERVICE_TYPES[suffix]
        req_cls, rep_cls = self._class(req_name), self._class(rep_name)
        request = req_cls()
        request.ParseFromString(payload)
        ok, response = self._node.request(service, request, req_cls, rep_cls, int(timeout * 1000))
        if not ok:
            raise TimeoutError(f"gz-transport service '{service}' did not answer within {timeout:.1f} s")
        return response.SerializeToString(), f"gz.msgs.{rep_name}"

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
        self._stop.set()
        self._thread.join(timeout=1)
