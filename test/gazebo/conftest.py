"""Fixtures for the Gazebo transport tests: a private network namespace and a real gz-transport peer.

The peer (test/gazebo/peer/gz_peer.cc) is a C++ program built twice by scripts/setup_gz_peer.sh: on
Debian's Ignition Transport 11 (build/gz_peer/gz_peer) and on Gazebo Harmonic's gz-transport13 /
gz-msgs10 built from the release sources by scripts/setup_gz_harmonic.sh (build/gz_peer13/gz_peer).
`gz_peer` runs each test against both (ids ign11, gz13). Tests that need a peer are skipped with the
reason when it cannot be had, and fail instead under CI=true.
"""
from __future__ import annotations

import uuid

import pytest

from support import gz_netns  # noqa: E402
from support import gz_harmonic  # noqa: E402
from support.gz_harness import Peer, peer_binary  # noqa: E402
from support.netns_common import refuse  # noqa: E402


@pytest.fixture
def isolated_network():
    try:
        gz_netns.ensure_isolated()
    except OSError as exc:
        refuse("gz-transport test", f"cannot create a private network namespace with multicast on lo: {exc}")


@pytest.fixture(params=["ign11", "gz13"])
def gz_peer(request, isolated_network):
    binary = peer_binary(request.param)
    env = gz_harmonic.environment() if request.param == "gz13" else None
    peer = Peer(world=f"w{uuid.uuid4().hex[:8]}", partition=f"radarays_test_{uuid.uuid4().hex[:8]}",
                binary=binary, env=env)
    peer.start()
    yield peer
    peer.stop()
