"""The node entry points on a Python without ROS 2: one line naming what to install, exit status 2."""
import importlib
import subprocess
import sys

import pytest

from support.cli import run_main

NODES = ["radar_node", "lidar_node", "sensor_rig"]


def _check(done, node):
    assert done.returncode == 2, done.stderr
    assert done.stdout == "" and "Traceback" not in done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"{node}: needs ROS 2") and "radarays_ros[ros]" in line and "/opt/ros/jazzy" in line


@pytest.mark.parametrize("node", NODES)
def test_a_node_without_rclpy_says_what_to_install(node, monkeypatch):
    monkeypatch.setitem(sys.modules, "rclpy", None)  # what `import rclpy` meets where ROS 2 is not installed
    main = importlib.import_module(f"radarays_ros.ros.{node}").main
    _check(run_main(main, []), node)


@pytest.mark.slow
@pytest.mark.parametrize("node", NODES)
def test_the_node_process_without_rclpy_says_what_to_install(node):
    """The entry point as a fresh interpreter runs it: importing the node module loads nothing of ROS."""
    script = ("import sys\n"
              "sys.modules['rclpy'] = None  # what `import rclpy` meets where ROS 2 is not installed\n"
              f"from radarays_ros.ros.{node} import main\n"
              "sys.exit(main([]))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    _check(done, node)


@pytest.mark.parametrize("package", ["tf2_msgs", "sensor_msgs", "rcl_interfaces"])
def test_a_node_without_a_message_package_names_it_and_where_it_comes_from(package, monkeypatch):
    """The `[ros]` extra gives rclpy but not tf2_msgs (not on PyPI): the node says which package is missing and
    how to get it, instead of dying with ModuleNotFoundError after start-up."""
    import types

    monkeypatch.setitem(sys.modules, "rclpy", types.ModuleType("rclpy"))  # rclpy importable
    monkeypatch.setitem(sys.modules, package, None)  # this message package is not
    monkeypatch.setitem(sys.modules, f"{package}.msg", None)
    main = importlib.import_module("radarays_ros.ros.radar_node").main
    done = run_main(main, [])
    assert done.returncode == 2, done.stderr
    assert done.stdout == "" and "Traceback" not in done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"radar_node: needs the ROS 2 message package {package}")
    if package == "tf2_msgs":
        assert "not on PyPI" in line and "ros-jazzy-tf2-msgs" in line
    else:
        assert "radarays_ros[ros]" in line


def test_a_users_fast_dds_transport_choice_is_not_overridden(monkeypatch):
    """Our large-message profile steps back where the user chose Fast DDS's built-in transports."""
    from radarays_ros.ros import entry

    for name in ("FASTRTPS_DEFAULT_PROFILES_FILE", "FASTDDS_DEFAULT_PROFILES_FILE", "RMW_IMPLEMENTATION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("FASTDDS_BUILTIN_TRANSPORTS", "LARGE_DATA")
    entry.use_large_message_profile()
    assert "FASTRTPS_DEFAULT_PROFILES_FILE" not in entry.os.environ
    monkeypatch.delenv("FASTDDS_BUILTIN_TRANSPORTS")
    entry.use_large_message_profile()
    assert entry.os.environ["FASTRTPS_DEFAULT_PROFILES_FILE"].endswith("fastdds_large_messages.xml")
