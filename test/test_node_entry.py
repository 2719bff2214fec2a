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
