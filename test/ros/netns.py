"""A private network + mount namespace for tests that start DDS.

DDS discovery multicasts on every interface, and Fast DDS shared memory crosses network namespaces
through /dev/shm. So the test process moves into new network and mount namespaces that hold only a
loopback interface and a fresh /dev/shm; every node it starts inherits them. Nothing leaves the
machine and no other DDS participant on the host can be seen.

Only the calling thread (and what it creates afterwards) moves: call `enter()` before any thread
that will touch DDS exists, i.e. before rclpy is imported.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import fcntl
import os
import socket
import struct

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_REC = 0x4000
MS_PRIVATE = 0x40000
SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
_libc.mount.argtypes = (ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p)


class NamespaceError(OSError):
    """The private namespace could not be set up (reason in the message)."""


def _check(ret: int, what: str) -> None:
    if ret != 0:
        err = ctypes.get_errno()
        raise NamespaceError(err, f"{what}: {os.strerror(err)}")


def _unshare() -> None:
    if _libc.unshare(CLONE_NEWNET | CLONE_NEWNS) == 0:
        return
    # Unprivileged: a user namespace in which we are root gives the right to the other two.
    uid, gid = os.getuid(), os.getgid()
    _check(_libc.unshare(CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWNS), "unshare(user|net|mount)")
    with open("/proc/self/setgroups", "w") as f:
        f.write("deny")
    with open("/proc/self/uid_map", "w") as f:
        f.write(f"0 {uid} 1")
    with open("/proc/self/gid_map", "w") as f:
        f.write(f"0 {gid} 1")


def _private_shm() -> None:
    # Keep our mounts out of the host's mount tree, then hide the host's /dev/shm (Fast DDS SHM).
    _check(_libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "make mounts private")
    _check(_libc.mount(b"tmpfs", b"/dev/shm", b"tmpfs", MS_NOSUID | MS_NODEV, b"mode=1777,size=1g"),
           "mount tmpfs on /dev/shm")


def _loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        request = struct.pack("16sh", b"lo", 0)
        flags = struct.unpack("16sh", fcntl.ioctl(s.fileno(), SIOCGIFFLAGS, request + b"\0" * 22)[:18])[1]
        fcntl.ioctl(s.fileno(), SIOCSIFFLAGS, struct.pack("16sh", b"lo", flags | IFF_UP) + b"\0" * 22)


def visible_interfaces() -> list[str]:
    """Interfaces of the current network namespace (sysfs may still show the host's)."""
    return [name for _, name in socket.if_nameindex()]


def enter() -> None:
    """Move this process into private network and mount namespaces with lo up and a fresh /dev/shm."""
    _unshare()
    _private_shm()
    _loopback_up()
