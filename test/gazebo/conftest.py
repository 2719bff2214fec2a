"""Fixtures for the Gazebo transport tests: a private network namespace and a real gz-transport peer.

The peer (test/gazebo/peer/gz_peer.cc) is a C++ program on Debian's Ignition Transport 11, built by
scripts/setup_gz_peer.sh into build/gz_peer/gz_peer. Tests that need it are skipped with the reason
when it cannot be had, and fail instead under CI=true.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import gz_netns  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
PEER = Path(os.environ.get("RADARAYS_GZ_PEER", REPO / "build" / "gz_peer" / "gz_peer"))
FIXTURES = Path(__file__).parent / "fixtures"


def _under_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("true", "1", "yes")


def _refuse(reason: str):
    if _under_ci():
        pytest.fail(f"gz-transport test cannot run under CI: {reason}")
    pytest.skip(reason)


class Peer:
    """The running gz_peer process: `send('move box 1 2 0.5 0 0 0')` waits for its 'ok'."""

    def __init__(self, world: str, partition: str):
        self.world, self.partition = world, partition
        self.proc: subprocess.Popen | None = None

    def start(self) -> "Peer":
        env = dict(os.environ, IGN_PARTITION=self.partition, IGN_IP="127.0.0.1")
        self.proc = subprocess.Popen([str(PEER), self.world], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True, env=env)
        line = self.proc.stdout.readline().strip()
        if line != "ready":
            raise RuntimeError(f"gz_peer did not start (said {line!r})")
        return self

    def send(self, command: str) -> None:
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"gz_peer exited while handling {command!r}")
            if line.strip() == f"ok {command}":
                return

    def stop(self) -> None:
        """End the peer cleanly (it says BYE)."""
        if self.proc and self.proc.poll() is None:
            self.proc.stdin.write("quit\n")
            self.proc.stdin.flush()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def kill(self) -> None:
        """Kill the peer without goodbye (a crashed Gazebo)."""
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def isolated_network():
    try:
        gz_netns.ensure_isolated()
    except OSError as exc:
        _refuse(f"cannot create a private network namespace with multicast on lo: {exc}")


@pytest.fixture
def gz_peer(isolated_network):
    if not PEER.exists():
        _refuse(f"{PEER} is not built (bash scripts/setup_gz_peer.sh installs Ignition Transport and builds it)")
    peer = Peer(world=f"w{uuid.uuid4().hex[:8]}", partition=f"radarays_test_{uuid.uuid4().hex[:8]}")
    peer.start()
    yield peer
    peer.stop()


def wait_for(predicate, timeout: float = 5.0, interval: float = 0.01) -> bool:
    """Poll `predicate()` until true or `timeout` seconds pass; returns its last value."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(interval)
    return bool(predicate())
