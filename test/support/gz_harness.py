"""Helpers of the Gazebo transport tests: the C++ peer process and polling (support.gz_harness, imported
by the Gazebo and the ROS tests)."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

from support import gz_harmonic
from support.netns_common import refuse
from support.waits import wait_for  # noqa: F401  (the gazebo tests import it from here)

REPO = Path(__file__).resolve().parents[2]
PEER = Path(os.environ.get("RADARAYS_GZ_PEER", REPO / "build" / "gz_peer" / "gz_peer"))
FIXTURES = Path(__file__).resolve().parents[1] / "gazebo" / "fixtures"

class Peer:
    """The running gz_peer process: `send('move box 1 2 0.5 0 0 0')` waits for its 'ok'.
    `binary`: the Ignition Transport 11 build (PEER) or the gz-transport13 one (gz_harmonic.PEER13),
    whose message type names start with `type_prefix` ('ignition.msgs.' or 'gz.msgs.')."""

    def __init__(self, world: str, partition: str, binary: Path = PEER, env: dict | None = None):
        self.world, self.partition, self.binary, self.env = world, partition, Path(binary), env
        self.type_prefix = "ignition.msgs." if self.binary == PEER else "gz.msgs."
        self.proc: subprocess.Popen | None = None

    def twin(self) -> "Peer":
        """A new (not started) peer of the same build, world and partition: the same Gazebo restarted."""
        return Peer(self.world, self.partition, self.binary, self.env)

    def start(self) -> "Peer":
        # gz-transport13 reads only GZ_*, Ignition Transport 11 only IGN_*: both are set
        env = dict(self.env if self.env is not None else os.environ, GZ_PARTITION=self.partition,
                   IGN_PARTITION=self.partition, GZ_IP="127.0.0.1", IGN_IP="127.0.0.1")
        self.proc = subprocess.Popen([str(self.binary), self.world], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
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


def peer_binary(flavor: str) -> Path:
    """The built peer of a flavor (ign11, gz13); refused (skip, or fail under CI) when it is not built."""
    if flavor == "ign11":
        if not PEER.exists():
            refuse("gz-transport test", f"{PEER} is not built (bash scripts/setup_gz_peer.sh installs Ignition "
                   "Transport and builds it)")
        return PEER
    if not gz_harmonic.stage_complete("transport"):
        refuse("gz-transport13 test", gz_harmonic.missing("transport"))
    if not gz_harmonic.PEER13.exists():
        refuse("gz-transport13 test", f"{gz_harmonic.PEER13} is not built (bash scripts/setup_gz_peer.sh builds it "
               "once Gazebo Harmonic is built)")
    return gz_harmonic.PEER13
