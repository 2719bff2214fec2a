"""The node entry points on a Python without ROS 2: one line naming what to install, exit status 2."""
import subprocess
import sys

import pytest


@pytest.mark.parametrize("module, node", [("radar_node", "radar_node"), ("lidar_node", "lidar_node"),
                                          ("sensor_rig", "sensor_rig")])
def test_a_node_without_rclpy_says_what_to_install(module, node):
    script = ("import sys\n"
              "sys.modules['rclpy'] = None  # what `import rclpy` meets where ROS 2 is not installed\n"
              f"from radarays_ros.ros.{module} import main\n"
              "sys.exit(main([]))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert done.stdout == "" and "Traceback" not in done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"{node}: needs ROS 2") and "radarays_ros[ros]" in line and "/opt/ros/jazzy" in line
