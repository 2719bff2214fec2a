"""A private network namespace with multicast on loopback, for tests that talk gz-transport.

gz-transport discovers peers by UDP multicast (239.255.0.7:10317/10318). The tests must neither send
that to the host's networks nor see a Gazebo running on the host, so the test thread moves into a
new network namespace holding only `lo`, with lo up, its MULTICAST flag set and a multicast route
through it. Only the calling thread moves (and whatever it starts later: transport threads, ZeroMQ
I/O threads, the peer process). If the process is already alone with lo (the ROS tests' conftest
may have moved it), that namespace is reused and only multicast is switched on. The unshare and lo
plumbing is test/netns_common.py's (shared with the ROS tests).
"""
from __future__ import annotations

import os
import shutil
import subprocess

from support.netns_common import CLONE_NEWNET, IFF_MULTICAST, IFF_UP, interfaces, set_loopback_flags, unshare


def _loopback_multicast() -> None:
    set_loopback_flags(IFF_UP | IFF_MULTICAST)
    ip = shutil.which("ip") or "/usr/sbin/ip"
    if os.path.exists(ip):
        subprocess.run([ip, "route", "replace", "224.0.0.0/4", "dev", "lo"], check=False,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def ensure_isolated() -> None:
    """Be in a namespace with only lo, multicast-capable. Raises OSError when that is impossible."""
    if [n for n in interfaces() if n != "lo"]:
        unshare(CLONE_NEWNET, "net")
    _loopback_multicast()
    others = [n for n in interfaces() if n != "lo"]
    if others:
        raise OSError(f"interfaces other than lo still visible: {others}")
