"""OfficialClient's requests without a server (a fake gz.transport13 node): after an unanswered first slice the
subscriptions pause (a streaming callback holds the reply back: client.py's module doc) and the slices grow, so a
service slower than the first slice (gz-sim 8's generate_world_sdf: 150-1300 ms) is answered instead of abandoned
and sent again until the timeout, and the streams are followed again afterwards; the mirror asks
generate_world_sdf with expand_include_tags. Against a real gz sim: test_gz_sim.py."""
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
        self.takes_ms, self.calls, self.subscribed, self.events = takes_ms, [], set(), []

    def request_raw(self, service, payload, req_type, rep_type, timeout_ms):
        self.calls.append(timeout_ms)
        self.events.append(("request", frozenset(self.subscribed)))
        return (timeout_ms >= self.takes_ms, b"answer" if timeout_ms >= self.takes_ms else b"")

    def subscribe_raw(self, topic, callback, msg_type, options):
        self.subscribed.add(topic)
        return True

    def unsubscribe(self, topic):
        self.subscribed.discard(topic)
        return True


def official(node) -> OfficialClient:
    c = OfficialClient.__new__(OfficialClient)  # no gz.transport13 needed: the node is the fake
    c._node, c._closed, c._stop, c._last_heard, c._idle = node, False, threading.Event(), {}, []
    c._subscriptions, c._requesting, c._options = {}, threading.Lock(), None
    return c


@pytest.mark.parametrize("takes_ms", [150, 1300])
def test_a_slow_generate_world_sdf_is_answered(takes_ms, monkeypatch):
    node = SlowService(takes_ms)
    monkeypatch.setattr(client_module.time, "sleep", lambda s: None)
    payload, rep = official(node).request("/world/w/generate_world_sdf", world_sdf_request(), timeout=3.0)
    assert (payload, rep) == (b"answer", "gz.msgs.StringMsg")
    assert len(node.calls) <= 2  # 1.0 s, then 2.0 s: not re-sent every 0.1 s


def test_an_unanswered_slice_pauses_the_streams_until_the_answer():
    """A quick answer in the first 0.1 s slice leaves the streams alone; an unanswered one (a callback held the reply
    back) pauses every subscription, the request is sent again in doubling slices with none followed, and every
    subscription is back afterwards, also when the request times out."""
    topics = ["/world/w/pose/info", "/world/w/clock"]
    quick = SlowService(50)
    client = official(quick)
    for topic in topics:
        client.subscribe(topic, lambda payload, type_name: None)
    assert client.request("/world/w/scene/info", b"", timeout=3.0)[0] == b"answer"
    assert quick.calls == [100] and quick.events == [("request", frozenset(topics))]
    slow = SlowService(350)
    client = official(slow)
    for topic in topics:
        client.subscribe(topic, lambda payload, type_name: None)
    assert client.request("/world/w/scene/info", b"", timeout=3.0)[0] == b"answer"
    assert slow.calls == [100, 200, 400]
    assert slow.events == [("request", frozenset(topics))] + [("request", frozenset())] * 2
    assert slow.subscribed == set(topics)
    stuck = SlowService(10_000)
    client = official(stuck)
    client.subscribe(topics[0], lambda payload, type_name: None)
    with pytest.raises(TimeoutError):
        client.request("/world/w/scene/info", b"", timeout=0.5)
    assert stuck.subscribed == {topics[0]}


def test_a_service_that_never_answers_times_out():
    node = SlowService(10_000)
    with pytest.raises(TimeoutError, match="did not answer within 0.5 s"):
        official(node).request("/world/w/scene/info", b"", timeout=0.5)


def test_the_mirror_asks_for_expanded_includes():
    assert SERVICE_REQUESTS["generate_world_sdf"] == world_sdf_request(True) != b""


def test_close_ends_every_subscription_and_calls_nothing_after():
    """A closed client's node follows no topic any more: its reception thread calls nothing in this
    process (a relay the bindings still hold returns at once)."""
    node, heard = SlowService(0), []
    c = official(node)
    c._thread = threading.Thread(target=c._tick, daemon=True)
    c._thread.start()
    c.subscribe("/world/w/pose/info", lambda payload, type_name: heard.append(payload))
    c.subscribe("/world/w/clock", lambda payload, type_name: heard.append(payload))
    relay = c._subscriptions["/world/w/pose/info"]
    relay(b"before", None)
    c.close()
    assert node.subscribed == set() and c._subscriptions == {}
    relay(b"after", None)
    assert heard == [b"before"]
