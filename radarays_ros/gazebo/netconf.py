"""Who the built-in gz-transport client talks to: partition, addresses and limits, read once.

The rules follow gz-transport 13 (NodeOptions, TopicUtils, NetUtils, Discovery), restated:
- partition: GZ_PARTITION (IGN_PARTITION for Fortress-generation peers), else "<hostname>:<username>"
  (USER, else the password database), as every Gazebo process picks it; a name that gz-transport
  would refuse (over 65535 characters, "/", "~", " ", "//", "@" or ":=") is an error here too;
- topics on the wire are "@/<partition>@<topic>" and only the own partition is followed;
- GZ_IP (IGN_IP) is the address everything binds to; unset, this client binds to loopback, which
  is right for a Gazebo on the same host (a remote one needs GZ_IP, as gz-transport itself does);
- discovery listens on the interface GZ_IP names, else on every local multicast interface and lo.

Ours, not gz-transport's (it trusts everyone who can reach the multicast group):
- endpoints and datagram senders must be in the allowed networks: RADARAYS_GZ_ALLOW (comma list of
  addresses or CIDR networks), else this host's own addresses, plus GZ_IP's network when it is set
  to a non-loopback address;
- caps from the environment (RADARAYS_GZ_MAX_MESSAGE_BYTES, GZ_TRANSPORT_RCVHWM, RADARAYS_GZ_MAX_PEERS,
  RADARAYS_GZ_MAX_ENDPOINTS).
"""
from __future__ import annotations

import fcntl
import ipaddress
import os
import pwd
import socket
import struct
from dataclasses import dataclass

from ..errors import ConfigError

MAX_NAME_LENGTH = 65535  # gz-transport's kMaxNameLength
SIOCGIFFLAGS, SIOCGIFADDR, SIOCGIFNETMASK = 0x8913, 0x8915, 0x891B
IFF_UP, IFF_LOOPBACK, IFF_MULTICAST = 0x1, 0x8, 0x1000

DEFAULT_MAX_MESSAGE_BYTES = 16 * 2**20  # a Pose_V of 10 000 entities is ~1 MB; a world SDF a few MB
DEFAULT_QUEUE = 64  # messages per connection held by ZeroMQ (gz-transport's own default is 1000)
DEFAULT_MAX_PEERS = 256  # processes remembered at once
DEFAULT_MAX_ENDPOINTS = 1024  # topic publishers and service repliers remembered at once


def env(*names: str) -> str | None:
    """The first of `names` set (even to ''), else None."""
    for name in names:
        if name in os.environ:
            return os.environ[name]
    return None


def valid_name(name: str) -> bool:
    """gz-transport's rule for a namespace, partition or topic (TopicUtils::IsValidNamespace)."""
    if not name:
        return True
    return (len(name) <= MAX_NAME_LENGTH and name != "/" and not any(bad in name for bad in ("~", " ", "//", "@", ":=")))


def split_topic(qualified: str) -> tuple[str, str] | None:
    """'@/host:user@/world/w/pose/info' -> ('/host:user', '/world/w/pose/info'); None when the name is
    not a valid fully qualified one (gz-transport's DecomposeFullyQualifiedTopic)."""
    first, last = qualified.find("@"), qualified.rfind("@")
    if first != 0 or first == last or last == len(qualified) - 1:
        return None
    partition, topic = qualified[1:last], qualified[last + 1:]
    if not valid_name(partition) or not topic or not valid_name(topic):
        return None
    return partition, topic


def default_partition() -> str:
    """'<hostname>:<username>', as gz-transport's NodeOptions picks it."""
    user = os.environ.get("USER")
    if not user:
        try:
            user = pwd.getpwuid(os.getuid()).pw_name
        except KeyError:
            user = str(os.getuid())
    return f"{socket.gethostname()}:{user}"


def normalise_partition(partition: str, source: str) -> str:
    """Leading '/', no trailing one (TopicUtils::FullyQualifiedName); ConfigError for an invalid name."""
    if not valid_name(partition):
        raise ConfigError(f"{source} = '{shorten(partition)}' is not a valid gz-transport partition "
                          f"(at most {MAX_NAME_LENGTH} characters, none of '~', ' ', '//', '@', ':=', not '/')")
    if partition and not partition.startswith("/"):
        partition = "/" + partition
    return partition.rstrip("/") if len(partition) > 1 else partition


def shorten(text: str, limit: int = 60) -> str:
    """A value as shown in a log line or error: at most `limit` characters."""
    text = str(text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _ioctl_ip(sock: socket.socket, request: int, name: str) -> str | None:
    try:
        packed = fcntl.ioctl(sock.fileno(), request, struct.pack("256s", name.encode()[:15]))
    except OSError:
        return None
    return socket.inet_ntoa(packed[20:24])


def local_interfaces() -> list[tuple[str, str, str, int]]:
    """(name, IPv4 address, netmask, flags) of this namespace's interfaces that have an address."""
    found = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for _, name in socket.if_nameindex():
            ip = _ioctl_ip(s, SIOCGIFADDR, name)
            if ip is None:
                continue
            mask = _ioctl_ip(s, SIOCGIFNETMASK, name) or "255.255.255.255"
            try:
                raw = fcntl.ioctl(s.fileno(), SIOCGIFFLAGS, struct.pack("256s", name.encode()[:15]))
                flags = struct.unpack_from("H", raw, 16)[0]
            except OSError:
                flags = 0
            found.append((name, ip, mask, flags))
    return found


def _networks(text: str, source: str) -> list[ipaddress.IPv4Network]:
    nets = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        try:
            nets.append(ipaddress.IPv4Network(item, strict=False))
        except ValueError:
            raise ConfigError(f"{source} = '{shorten(text)}': '{shorten(item)}' is not an IPv4 address or "
                              "network (e.g. 192.168.1.0/24)") from None
    return nets


def _positive(names: tuple[str, ...], default: int, maximum: int) -> int:
    text = env(*names)
    if text is None or text == "":
        return default
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 0 < value <= maximum:
        raise ConfigError(f"environment variable {names[0]} = '{shorten(text)}'; expected an integer 1..{maximum}")
    return value


@dataclass(frozen=True)
class NetConfig:
    partition: str  # normalised: '/host:user'
    host_ip: str  # where our ZeroMQ sockets bind
    discovery_ips: tuple[str, ...]  # interfaces that join the multicast group and send on it
    allowed: tuple[ipaddress.IPv4Network, ...]
    max_message_bytes: int
    queue: int
    max_peers: int
    max_endpoints: int

    def allows(self, ip: str) -> bool:
        try:
            addr = ipaddress.IPv4Address(ip)
        except ValueError:
            return False
        return any(addr in net for net in self.allowed)


def read_config(partition: str | None = None, host_ip: str | None = None) -> NetConfig:
    """The settings from arguments, then the environment (see the module docstring)."""
    if partition is not None and partition != "":
        part = normalise_partition(partition, "partition")
    else:
        text = env("GZ_PARTITION", "IGN_PARTITION")
        source = "GZ_PARTITION" if "GZ_PARTITION" in os.environ else "IGN_PARTITION"
        part = normalise_partition(text, source) if text is not None else normalise_partition(default_partition(), "hostname:username")
    interfaces = local_interfaces()
    explicit_ip = host_ip or env("GZ_IP", "IGN_IP") or None
    if explicit_ip is not None:
        try:
            ipaddress.IPv4Address(explicit_ip)
        except ValueError:
            raise ConfigError(f"GZ_IP = '{shorten(explicit_ip)}' is not an IPv4 address of this host") from None
    bind_ip = explicit_ip or "127.0.0.1"
    own = [ipaddress.IPv4Network(ip) for _, ip, _, _ in interfaces] + [ipaddress.IPv4Network("127.0.0.0/8")]
    if explicit_ip is not None:
        discovery = (explicit_ip,)
    else:
        multicast = [ip for _, ip, _, flags in interfaces if flags & IFF_UP and flags & IFF_MULTICAST]
        discovery = tuple(dict.fromkeys(["127.0.0.1"] + multicast))
    allow_text = env("RADARAYS_GZ_ALLOW")
    if allow_text:
        allowed = _networks(allow_text, "RADARAYS_GZ_ALLOW")
    else:
        allowed = own
        if explicit_ip is not None and not explicit_ip.startswith("127."):
            mask = next((m for _, ip, m, _ in interfaces if ip == explicit_ip), "255.255.255.0")
            allowed = own + [ipaddress.IPv4Network(f"{explicit_ip}/{mask}", strict=False)]
    return NetConfig(
        partition=part, host_ip=bind_ip, discovery_ips=discovery, allowed=tuple(allowed),
        max_message_bytes=_positive(("RADARAYS_GZ_MAX_MESSAGE_BYTES",), DEFAULT_MAX_MESSAGE_BYTES, 2**31 - 1),
        queue=_positive(("GZ_TRANSPORT_RCVHWM",), DEFAULT_QUEUE, 100000),
        max_peers=_positive(("RADARAYS_GZ_MAX_PEERS",), DEFAULT_MAX_PEERS, 100000),
        max_endpoints=_positive(("RADARAYS_GZ_MAX_ENDPOINTS",), DEFAULT_MAX_ENDPOINTS, 1000000),
    )


def tcp_endpoint(address: str, config: NetConfig) -> str | None:
    """'tcp://ip:port' when it names an allowed IPv4 host and a valid port, else None."""
    if not address.startswith("tcp://") or len(address) > 64:
        return None
    host, sep, port = address[6:].rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536 or not config.allows(host):
        return None
    return address
