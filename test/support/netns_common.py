"""Namespace plumbing shared by the ROS tests (test/ros/netns.py) and the Gazebo tests
(test/gazebo/gz_netns.py): unshare with an unprivileged fallback, loopback interface flags, the
interface list, and the "skip here, fail under CI" rule for tests that cannot be isolated.

Importable as `netns_common` from any test: test/conftest.py puts this folder on sys.path.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import fcntl
import os
import socket
import struct

import pytest

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1
IFF_MULTICAST = 0x1000

libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


class NamespaceError(OSError):
    """A private namespace could not be set up (reason in the message)."""


def check(ret: int, what: str) -> None:
    """Raise NamespaceError naming `what` and errno's text when a libc call returned non-zero."""
    if ret != 0:
        err = ctypes.get_errno()
        raise NamespaceError(err, f"{what}: {os.strerror(err)}")


def unshare(flags: int, what: str) -> None:
    """unshare(flags); unprivileged, first a user namespace in which we are root (uid/gid mapped to ours).

    Only the calling thread moves, and whatever it starts afterwards.
    """
    if libc.unshare(flags) == 0:
        return
    uid, gid = os.getuid(), os.getgid()
    check(libc.unshare(CLONE_NEWUSER | flags), f"unshare({what})")
    for name, text in (("setgroups", "deny"), ("uid_map", f"0 {uid} 1"), ("gid_map", f"0 {gid} 1")):
        with open(f"/proc/self/{name}", "w") as f:
            f.write(text)


def set_loopback_flags(flags: int) -> None:
    """OR `flags` (IFF_UP, IFF_MULTICAST...) into lo's interface flags; no call when already set."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        request = struct.pack("16sh", b"lo", 0) + b"\0" * 22
        current = struct.unpack("16sh", fcntl.ioctl(s.fileno(), SIOCGIFFLAGS, request)[:18])[1]
        wanted = current | flags
        if wanted != current:
            fcntl.ioctl(s.fileno(), SIOCSIFFLAGS, struct.pack("16sh", b"lo", wanted) + b"\0" * 22)


def interfaces() -> list[str]:
    """Interfaces of the current network namespace (sysfs may still show the host's)."""
    return [name for _, name in socket.if_nameindex()]


def under_ci() -> bool:
    """CI=true (or 1/yes): tests that cannot run must fail, never skip silently."""
    return os.environ.get("CI", "").lower() in ("true", "1", "yes")


def refuse(what: str, reason: str) -> None:
    """Skip with the reason; under CI fail instead ("<what> cannot run under CI: <reason>")."""
    if under_ci():
        pytest.fail(f"{what} cannot run under CI: {reason}")
    pytest.skip(reason)
