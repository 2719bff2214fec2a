"""`python -m radarays_ros.ros.<node> --help` prints the usage and parameters and exits without starting a node."""
from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.ros


@pytest.mark.parametrize("node", ["radar_node", "lidar_node", "sensor_rig"])
def test_help_lists_the_parameters_and_starts_no_node(node):
    from radarays_ros.ros.gazebo_link import GAZEBO_PARAMS, RIG_GAZEBO_PARAMS
    from radarays_ros.ros.node import NODE_PARAMS, SENSOR_PARAMS

    done = subprocess.run([sys.executable, "-m", f"radarays_ros.ros.{node}", "--help"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: ros2 run radarays_ros {node} --ros-args")
    prefix = "NAME." if node == "sensor_rig" else ""
    expected = [*NODE_PARAMS, *(prefix + name for name in SENSOR_PARAMS), *GAZEBO_PARAMS]
    expected += list(RIG_GAZEBO_PARAMS) + ["sensors"] if node == "sensor_rig" else ["config"]
    listed = {line.split()[0] for line in done.stdout.splitlines() if line.startswith("  ") or line.startswith("config")}
    assert set(expected) - {"sensors"} <= listed
    if node == "sensor_rig":
        assert "`sensors`" in done.stdout
    assert "parameter 'world' is empty" not in done.stdout + done.stderr  # no node was created
