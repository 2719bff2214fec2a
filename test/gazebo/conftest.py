"""Fixtures for the Gazebo transport tests: a private network namespace and a real gz-transport peer.

The peer (test/gazebo/peer/gz_peer.cc) is a C++ program on Debian's Ignition Transport 11, built by
scripts/setup_gz_peer.sh into build/gz_peer/gz_peer. Tests that need it are skipped with the reason
when it cannot be had, and fail instead under CI=true.
"""
from __future__ import annotations

import sys
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import gz_netns  # noqa: E402
from gz_harness import PEER, Peer  # noqa: E402
from netns_common import refuse  # noqa: E402


@pytest.fixture
def isolated_network():
    try:
        gz_netns.ensure_isolated()
    except OSError as exc:
        refuse("gz-transport test", f"cannot create a private network namespace with multicast on lo: {exc}")


@pytest.fixture
def gz_peer(isolated_network):
    if not PEER.exists():
        refuse("gz-transport test", f"{PEER} is not built (bash scripts/setup_gz_peer.sh installs Ignition Transport and builds it)")
    peer = Peer(world=f"w{uuid.uuid4().hex[:8]}", partition=f"radarays_test_{uuid.uuid4().hex[:8]}")
    peer.start()
    yield peer
    peer.stop()
