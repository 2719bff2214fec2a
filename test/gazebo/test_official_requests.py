"""OfficialClient's requests without a server (a fake gz.transport13 node): slices that grow after each
unanswered one, so a service slower than the first slice (gz-sim 8's generate_world_sdf: 150-1300 ms) is
answered instead of abandoned and sent again until the timeout; and the mirror asks generate_world_sdf
with expand_include_tags. Against a real gz sim: test_gz_sim.py."""
from __future__ import annotations

import threading

import pytest

from radarays_ros.gazebo import client as client_module
from radarays_ros.gazebo.client import OfficialClient
from radarays_ros.gazebo.mirror import SERVICE_REQUESTS
from radarays_ros.gazebo.scene_sdf import world_sdf_request


class SlowService:
    """request_raw that answers only when the caller waits at least `takes_ms` (the server's work)."""

    def __init__(self, takes_ms: int):
        self.takes_ms, self.calls = takes_ms, []

    def request_raw(self, service, payload, req_type, rep_type, timeout_ms):
        self.calls.append(timeout_ms)
        return (timeout_ms >= self.takes_ms, b"answer" if timeout_ms >= self.takes_ms else b"")


def official(node) -> OfficialClient:
    c = OfficialClient.__new__(OfficialClient)  # no gz.transport13 needed: the node is the fake
    c._node, c._closed, c._stop, c._last_heard, c._idle = node, False, threading.Event(), {}, []
    return c


@pytest.mark.parametrize("takes_ms", [150, 1300])
def test_a_slow_generate_world_sdf_is_answered(takes_ms, monkeypatch):
    node = SlowService(takes_ms)
    monkeypatch.setattr(client_module.time, "sleep", lambda s: None)
    payload, rep = official(node).request("/world/w/generate_world_sdf", world_sdf_request(), timeout=3.0)
    assert (payload, rep) == (b"answer", "gz.msgs.StringMsg")
    assert len(node.calls) <= 2  # 1.0 s, then 2.0 s: not re-sent every 0.1 s


def test_short_services_keep_short_slices():
    """A short service is asked in 0.1 s slices throughout: a longer slice would stall behind the pose stream's
    callbacks (test_clients.py: requests answered while poses stream); only the slow services grow theirs."""
    node = SlowService(50)
    payload, _ = official(node).request("/world/w/scene/info", b"", timeout=3.0)
    assert payload == b"answer" and node.calls == [100]
    stuck = SlowService(10_000)
    with pytest.raises(TimeoutError):
        official(stuck).request("/world/w/scene/info", b"", timeout=0.5)
    assert stuck.calls[0] == 100 and max(stuck.calls) == 100  # no slice grows (near the end: what is left)


def test_a_service_that_never_answers_times_out():
    node = SlowService(10_000)
    with pytest.raises(TimeoutError, match="did not answer within 0.5 s"):
        official(node).request("/world/w/scene/info", b"", timeout=0.5)


def test_the_mirror_asks_for_expanded_includes():
    assert SERVICE_REQUESTS["generate_world_sdf"] == world_sdf_request(True) != b""
