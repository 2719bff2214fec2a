"""Tests that start real ROS 2 (rclpy + Fast DDS) run in a private network namespace.

pytest_configure moves the whole test process, before rclpy is imported, into new network and
mount namespaces with only `lo` and a fresh /dev/shm (see netns.py), and picks a random
ROS_DOMAIN_ID. Node processes started by the tests inherit all of it. Tests marked `ros` are
refused (skipped, or failed under CI=true) when rclpy is missing, the namespace could not be made,
or any interface other than lo is visible.
"""
from __future__ import annotations

import importlib.util
import os
import random
import sys
import tempfile
from pathlib import Path

import pytest


sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the support package (test/conftest.py does too)
from support.netns_common import refuse  # noqa: E402


def _load_netns():
    """netns.py next to this file, under a name of its own (other test folders have a conftest too)."""
    spec = importlib.util.spec_from_file_location("radarays_test_netns", Path(__file__).with_name("netns.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


netns = _load_netns()

REPO = Path(__file__).resolve().parents[2]
FASTDDS_PROFILE = REPO / "radarays_ros" / "data" / "ros" / "fastdds_large_messages.xml"

_problem: str | None = None  # why DDS tests cannot run here, None when they can


def pytest_configure(config):
    global _problem
    config.addinivalue_line("markers", "ros: needs real ROS 2 (rclpy); runs in the private network namespace")
    if "rclpy" in sys.modules:
        _problem = "rclpy was imported before the network namespace existed; its DDS threads would escape it"
        return
    if importlib.util.find_spec("rclpy") is None:
        _problem = "rclpy is not installed (bash scripts/setup_env.sh --test installs the ros-jazzy wheels)"
        return
    try:
        netns.enter()
    except OSError as exc:
        _problem = f"cannot create a private network namespace: {exc}"
        return
    os.environ["ROS_DOMAIN_ID"] = str(random.Random().randint(1, 100))
    os.environ["RMW_IMPLEMENTATION"] = "rmw_fastrtps_cpp"
    os.environ["FASTRTPS_DEFAULT_PROFILES_FILE"] = str(FASTDDS_PROFILE)
    os.environ.pop("ROS_LOCALHOST_ONLY", None)
    os.environ["ROS_LOG_DIR"] = tempfile.mkdtemp(prefix="radarays_ros_log_")
    if importlib.util.find_spec("tf2_msgs") is None:
        _problem = "tf2_msgs is not built (bash scripts/setup_ros_test.sh builds it into .venv)"


@pytest.fixture(autouse=True)
def _dds_isolation(request):
    """Refuse ROS tests unless they are isolated: skip with the reason, fail under CI."""
    if request.node.get_closest_marker("ros") is None:
        return
    problem = _problem
    if problem is None:
        others = [name for name in netns.visible_interfaces() if name != "lo"]
        if others:
            problem = f"interfaces other than lo are visible ({', '.join(others)}): DDS would leave the namespace"
    if problem is not None:
        refuse("ROS 2 test", problem)
