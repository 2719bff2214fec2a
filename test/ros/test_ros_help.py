"""`python -m radarays_ros.ros.<node> --help`, and what a node says about a bad params file."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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


def test_bad_params_file_names_the_key_and_the_range_and_the_node_stays_up(tmp_path):
    """A typo'd node key is reported as unknown; a sensor value out of range stops that sensor with the key and
    the allowed range, and its sensor.* keys are not called unknown as well."""
    import time

    from ros_harness import NodeProcess, write_params

    room = Path(__file__).parent / "data" / "room.sdf"
    params = write_params(tmp_path / "lidar.yaml", "lidar_node", {
        "world": str(room), "pose_source": "fixed", "pose_sourc": "fixed", "sensor": {"range": {"max": -3.0}}})
    with NodeProcess("radarays_ros.ros.lidar_node", params_file=params) as node:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and "ignored unknown parameter" not in node.output():
            time.sleep(0.2)
        assert node.alive(), node.output()
        log = node.output()
    (started,) = [line for line in log.splitlines() if "not started" in line]
    assert "range.max = -3.0" in started and "(0.0, 1000000.0]" in started
    (unknown,) = [line for line in log.splitlines() if "ignored unknown parameter" in line]
    assert "ignored unknown parameter(s) pose_sourc;" in unknown
