"""Helpers of the Gazebo transport tests: the C++ peer process and polling (imported by the tests;
a module name of its own so that it never collides with another folder's conftest)."""
from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PEER = Path(os.environ.get("RADARAYS_GZ_PEER", REPO / "build" / "gz_peer" / "gz_peer"))
FIXTURES = Path(__file__).parent / "fixtures"

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


def wait_for(predicate, timeout: float = 5.0, interval: float = 0.01) -> bool:
    """Poll `predicate()` until true or `timeout` seconds pass; returns its last value."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(interval)
    return bool(predicate())
