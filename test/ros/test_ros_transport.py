"""The test harness itself: isolation holds and a large message crosses processes intact."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import radarays_test_netns as netns  # loaded by conftest.py
from support.ros_harness import Probe

pytestmark = pytest.mark.ros

# A throw-away publisher process: 1.6 MB PointCloud2 (larger than Fast DDS' default SHM segment).
PUBLISHER = textwrap.dedent(
    """
    import sys, array, rclpy
    from rclpy.qos import qos_profile_sensor_data
    from sensor_msgs.msg import PointCloud2, PointField
    rclpy.init(args=sys.argv)
    node = rclpy.create_node("big_publisher")
    pub = node.create_publisher(PointCloud2, "big", qos_profile_sensor_data)
    msg = PointCloud2(height=1, width=100_000, point_step=16, row_step=1_600_000, is_dense=True)
    msg.header.frame_id = "sensor"
    msg.fields = [PointField(name=n, offset=4 * i, datatype=PointField.FLOAT32, count=1)
                  for i, n in enumerate("xyzi")]
    payload = bytes(range(256)) * 6250
    msg.data = array.array("B", payload)
    count = [0]
    def tick():
        count[0] += 1
        msg.header.stamp.sec = count[0]
        pub.publish(msg)
    node.create_timer(0.05, tick)
    try:
        rclpy.spin(node)
    except KeyboardInterrupt:
        pass
    """
)


def test_namespace_has_only_loopback():
    assert netns.visible_interfaces() == ["lo"]
    # the host's /dev/shm is hidden: ours is a fresh tmpfs, without other participants' segments
    assert not any(name.startswith("fastrtps_") and "radarays" in name for name in os.listdir("/dev/shm"))
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))  # lo is up


def test_large_cloud_crosses_processes(tmp_path):
    script = tmp_path / "pub.py"
    script.write_text(PUBLISHER)
    with Probe() as probe:
        inbox = probe.subscribe("/big", "sensor_msgs/msg/PointCloud2", qos="sensor")
        proc = subprocess.Popen([sys.executable, str(script)], env=os.environ.copy())
        try:
            messages = inbox.wait(3, timeout=30)
        finally:
            proc.terminate()
            proc.wait(10)
    msg = messages[-1]
    assert msg.width == 100_000 and msg.point_step == 16 and msg.header.frame_id == "sensor"
    assert [f.name for f in msg.fields] == ["x", "y", "z", "i"]
    data = np.asarray(msg.data, np.uint8)
    assert data.size == 1_600_000
    assert np.array_equal(data[:512], np.tile(np.arange(256, dtype=np.uint8), 2))
    stamps = [m.header.stamp.sec for m in messages]
    assert stamps == sorted(stamps)
