"""`lidar_node --lifecycle`: a managed node as ouster-ros' os_driver, driven through lifecycle_msgs services with
real rclpy: unconfigured publishes nothing, configure makes the publishers (the latched metadata goes out),
activate publishes frames and the IMU, deactivate stops them, cleanup releases the publishers."""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from support.ros_harness import NodeProcess, Probe, write_params
from support.waits import wait_for

pytestmark = pytest.mark.ros

ROOM = Path(__file__).parent / "data" / "room.sdf"


def _call(probe: Probe, srv_type, name: str, request, timeout: float = 20.0):
    client = probe.node.create_client(srv_type, name)
    try:
        assert client.wait_for_service(timeout_sec=timeout), f"{name} not available"
        future = client.call_async(request)
        deadline = time.monotonic() + timeout
        while not future.done():
            assert time.monotonic() < deadline, f"{name} did not answer"
            time.sleep(0.01)
        return future.result()
    finally:
        probe.node.destroy_client(client)


def _state(probe: Probe, node: str) -> str:
    from lifecycle_msgs.srv import GetState

    return _call(probe, GetState, f"/{node}/get_state", GetState.Request()).current_state.label


def _transition(probe: Probe, node: str, transition_id: int) -> bool:
    from lifecycle_msgs.srv import ChangeState

    request = ChangeState.Request()
    request.transition.id = transition_id
    return _call(probe, ChangeState, f"/{node}/change_state", request).success


def _quiet(inbox, seconds: float) -> int:
    """Messages arriving in `seconds` after the inbox is emptied."""
    inbox.clear()
    time.sleep(seconds)
    return len(inbox)


def test_ouster_lidar_as_a_lifecycle_node(tmp_path):
    from lifecycle_msgs.msg import Transition
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

    params = write_params(tmp_path / "ouster.yaml", "lidar_node", {
        "world": str(ROOM), "config": "OS1-16", "pose_source": "fixed", "fixed_pose": [0.0, 0.0, 1.0, 0.0, 0.0, 0.0],
        "driver_names": True})
    latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    with Probe() as probe, NodeProcess("radarays_ros.ros.lidar_node", params_file=params,
                                       own_args=("--lifecycle",)) as node:
        assert _state(probe, "lidar_node") == "unconfigured"
        points = probe.subscribe("/ouster/points", "sensor_msgs/msg/PointCloud2", qos=10)
        imu = probe.subscribe("/ouster/imu", "sensor_msgs/msg/Imu", qos=10)
        assert not probe.node.get_publishers_info_by_topic("/ouster/points")

        assert _transition(probe, "lidar_node", Transition.TRANSITION_CONFIGURE)
        assert _state(probe, "lidar_node") == "inactive"
        probe.wait_for_publisher("/ouster/points")
        metadata = probe.subscribe("/ouster/metadata", "std_msgs/msg/String", qos=latched)
        assert "1024x10" in metadata.wait(1, timeout=20)[-1].data  # configured: the sensor's metadata is out
        assert _quiet(points, 1.5) == 0 and len(imu) == 0  # inactive: 10 Hz clouds and 100 Hz IMU held back

        assert _transition(probe, "lidar_node", Transition.TRANSITION_ACTIVATE)
        assert _state(probe, "lidar_node") == "active"
        cloud = points.wait(2, timeout=40)[-1]
        assert cloud.header.frame_id == "os_lidar" and cloud.height == 16
        imu.wait(5, timeout=20)

        assert _transition(probe, "lidar_node", Transition.TRANSITION_DEACTIVATE)
        assert _state(probe, "lidar_node") == "inactive"
        time.sleep(0.5)  # a frame already on the wire may still arrive
        assert _quiet(points, 1.5) == 0 and _quiet(imu, 0.5) == 0

        assert _transition(probe, "lidar_node", Transition.TRANSITION_ACTIVATE)  # again: frames come back
        points.wait(1, timeout=40)

        assert _transition(probe, "lidar_node", Transition.TRANSITION_DEACTIVATE)
        assert _transition(probe, "lidar_node", Transition.TRANSITION_CLEANUP)
        assert _state(probe, "lidar_node") == "unconfigured"
        # released; generous: discovery tells of a removed publisher late on a busy machine
        assert wait_for(lambda: not probe.node.get_publishers_info_by_topic("/ouster/points"), 30, 0.1), \
            "cleanup left the /ouster/points publisher"
        assert _transition(probe, "lidar_node", Transition.TRANSITION_CONFIGURE)  # and configurable again
        assert _state(probe, "lidar_node") == "inactive"
        assert node.alive(), node.output()
