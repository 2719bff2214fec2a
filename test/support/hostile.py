"""Hostile gz-transport peers for the hardening tests: forged discovery datagrams from a chosen source
address, a ZeroMQ publisher that claims a world, and a subprocess victim (a client whose abort must
show as a failed test, not kill pytest). Run as a script: `victim` or `flood` modes (see main)."""
from __future__ import annotations

import socket
import struct
import sys
import time
import uuid

from radarays_ros.gazebo import protos

D = protos.Discovery
GROUP, MSG_PORT, SRV_PORT = "239.255.0.7", 10317, 10318


def datagram(msg_type: int, process: str, topic: str = "", address: str = "", node: str = "",
             msg_type_name: str = "gz.msgs.Pose_V", srv: bool = False) -> bytes:
    """A framed Discovery datagram (uint16 length + protobuf)."""
    msg = D(version=10, process_uuid=process, type=msg_type)
    if topic:
        msg.pub.topic, msg.pub.address, msg.pub.process_uuid = topic, address, process
        msg.pub.node_uuid, msg.pub.scope = node or str(uuid.uuid4()), D.Publisher.ALL
        if srv:
            msg.pub.srv_pub.socket_id, msg.pub.srv_pub.request_type = "x", "gz.msgs.Empty"
            msg.pub.srv_pub.response_type = "gz.msgs.Scene"
        else:
            msg.pub.msg_pub.msg_type, msg.pub.msg_pub.ctrl = msg_type_name, "unused"
    body = msg.SerializeToString()
    return struct.pack("<H", len(body)) + body


class Forger:
    """Sends datagrams to the discovery group from `source` (any 127.x address works on lo)."""

    def __init__(self, source: str = "127.0.0.1"):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((source, 0))
        self.sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton("127.0.0.1"))
        self.sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 1)

    def send(self, data: bytes, port: int = MSG_PORT) -> None:
        self.sock.sendto(data, (GROUP, port))

    def close(self) -> None:
        self.sock.close()


def sniff_process(topic_suffix: str, timeout: float = 5.0) -> tuple[str, str]:
    """(process uuid, qualified topic) of the first ADVERTISE whose topic ends with `topic_suffix`."""
    pub = sniff_advertise(topic_suffix, timeout)
    return pub.process_uuid, pub.topic


def sniff_advertise(topic_suffix: str, timeout: float = 5.0):
    """The `pub` (topic, address, process and node uuid) of the first ADVERTISE whose topic ends with
    `topic_suffix`: what a same-host peer learns by listening, enough to forge that process's datagrams."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((GROUP, MSG_PORT))
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, socket.inet_aton(GROUP) + socket.inet_aton("127.0.0.1"))
    sock.settimeout(0.2)
    end = time.monotonic() + timeout
    try:
        while time.monotonic() < end:
            try:
                data = sock.recv(65535)
            except socket.timeout:
                continue
            msg = D()
            msg.ParseFromString(data[2:])
            if msg.type == D.ADVERTISE and msg.pub.topic.endswith(topic_suffix):
                return msg.pub
    finally:
        sock.close()
    raise TimeoutError(f"no ADVERTISE of *{topic_suffix} seen")


def victim(partition: str, topic: str, seconds: float) -> None:
    """A client counting messages on `topic`; prints 'count N' every 0.25 s, then 'done'."""
    from radarays_ros.gazebo.transport import GzTransportClient

    count = [0]
    with GzTransportClient(partition=partition, host_ip="127.0.0.1") as client:
        client.subscribe(topic, lambda p, t: count.__setitem__(0, count[0] + 1))
        print("ready", flush=True)
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            time.sleep(0.25)
            print("count", count[0], flush=True)
    print("done", flush=True)


def flood(address: str, size: int, count: int, small_every: int) -> None:
    """A ZeroMQ publisher at `address` sending `count` messages of `size` bytes on argv topic, with a
    small valid one after every `small_every`; prints 'bound' once listening, 'sent' at the end."""
    import zmq

    topic = sys.argv[6].encode()
    ctx = zmq.Context()
    pub = ctx.socket(zmq.PUB)
    pub.bind(address)
    print("bound", flush=True)
    big = bytes(size)
    time.sleep(1.5)  # the victim connects after the next advertisement
    for i in range(count):
        pub.send_multipart([topic, address.encode(), big, b"gz.msgs.Pose_V"], copy=False)
        if i % small_every == 0:
            pub.send_multipart([topic, address.encode(), b"", b"gz.msgs.Pose_V"])
    for _ in range(50):
        pub.send_multipart([topic, address.encode(), b"", b"gz.msgs.Pose_V"])
        time.sleep(0.02)
    print("sent", flush=True)
    sys.stdin.readline()


if __name__ == "__main__":
    if sys.argv[1] == "victim":
        victim(sys.argv[2], sys.argv[3], float(sys.argv[4]))
    else:
        flood(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
