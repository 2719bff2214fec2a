"""A private network namespace with multicast on loopback, for tests that talk gz-transport.

gz-transport discovers peers by UDP multicast (239.255.0.7:10317/10318). The tests must neither send
that to the host's networks nor see a Gazebo running on the host, so the test thread moves into a
new network namespace holding only `lo`, with lo up, its MULTICAST flag set and a multicast route
through it. Only the calling thread moves (and whatever it starts later: transport threads, ZeroMQ
I/O threads, the peer process). If the process is already alone with lo (the ROS tests' conftest
may have moved it), that namespace is reused and only multicast is switched on.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import fcntl
import os
import shutil
import socket
import struct
import subprocess

CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1
IFF_MULTICAST = 0x1000

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def interfaces() -> list[str]:
    return [name for _, name in socket.if_nameindex()]


def _unshare_net() -> None:
    if _libc.unshare(CLONE_NEWNET) == 0:
        return
    uid, gid = os.getuid(), os.getgid()
    if _libc.unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"unshare(CLONE_NEWNET): {os.strerror(err)}")
    with open("/proc/self/setgroups", "w") as f:
        f.write("deny")
    with open("/proc/self/uid_map", "w") as f:
        f.write(f"0 {uid} 1")
    with open("/proc/self/gid_map", "w") as f:
        f.write(f"0 {gid} 1")


def _loopback_multicast() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        request = struct.pack("16sh", b"lo", 0) + b"\0" * 22
        flags = struct.unpack("16sh", fcntl.ioctl(s.fileno(), SIOCGIFFLAGS, request)[:18])[1]
        wanted = flags | IFF_UP | IFF_MULTICAST
        if wanted != flags:
            fcntl.ioctl(s.fileno(), SIOCSIFFLAGS, struct.pack("16sh", b"lo", wanted) + b"\0" * 22)
    ip = shutil.which("ip") or "/usr/sbin/ip"
    if os.path.exists(ip):
        subprocess.run([ip, "route", "replace", "224.0.0.0/4", "dev", "lo"], check=False,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def ensure_isolated() -> None:
    """Be in a namespace with only lo, multicast-capable. Raises OSError when that is impossible."""
    if [n for n in interfaces() if n != "lo"]:
        _unshare_net()
    _loopback_multicast()
    others = [n for n in interfaces() if n != "lo"]
    if others:
        raise OSError(f"interfaces other than lo still visible: {others}")
