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

from support import netns_common
from support.netns_common import CLONE_NEWNET, CLONE_NEWNS, IFF_UP, NamespaceError, check, interfaces, libc

MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_REC = 0x4000
MS_PRIVATE = 0x40000

libc.mount.argtypes = (ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p)

__all__ = ["NamespaceError", "enter", "visible_interfaces"]


def _private_shm() -> None:
    # Keep our mounts out of the host's mount tree, then hide the host's /dev/shm (Fast DDS SHM).
    check(libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "make mounts private")
    check(libc.mount(b"tmpfs", b"/dev/shm", b"tmpfs", MS_NOSUID | MS_NODEV, b"mode=1777,size=1g"),
          "mount tmpfs on /dev/shm")


def visible_interfaces() -> list[str]:
    """Interfaces of the current network namespace (sysfs may still show the host's)."""
    return interfaces()


def enter() -> None:
    """Move this process into private network and mount namespaces with lo up and a fresh /dev/shm."""
    netns_common.unshare(CLONE_NEWNET | CLONE_NEWNS, "net|mount")
    _private_shm()
    netns_common.set_loopback_flags(IFF_UP)
