"""Node parameters from the outside: `--help`, what a node says about a bad params file, shipped params files."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.ros


@pytest.mark.parametrize("node", ["radar_node", "lidar_node", "sensor_rig"])
def test_help_lists_the_parameters_and_starts_no_node(node):
    from radarays_ros.ros.gazebo_link import GAZEBO_PARAMS, RIG_GAZEBO_PARAMS
    from radarays_ros.ros.node_params import NODE_PARAMS, SENSOR_PARAMS

    done = subprocess.run([sys.executable, "-m", f"radarays_ros.ros.{node}", "--help"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: ros2 run radarays_ros {node} [--lifecycle] --ros-args")
    prefix = "NAME." if node == "sensor_rig" else ""
    expected = [*NODE_PARAMS, *(prefix + name for name in SENSOR_PARAMS), *GAZEBO_PARAMS]
    expected += list(RIG_GAZEBO_PARAMS) + ["sensors"] if node == "sensor_rig" else ["config"]
    listed = {line.split()[0] for line in done.stdout.splitlines() if line.startswith("  ") or line.startswith("config")}
    assert set(expected) - {"sensors"} <= listed
    if node == "sensor_rig":
        assert "`sensors`" in done.stdout
    assert "parameter 'world' is empty" not in done.stdout + done.stderr  # no node was created


def test_bad_params_file_names_the_key_and_the_range_and_the_node_stays_up(tmp_path):
    """A typo'd node key is reported as unknown; node values out of range fall back to the default with the key
    and the allowed values; a sensor value out of range stops that sensor with the key and the allowed range,
    and its sensor.* keys are not called unknown as well."""
    import time

    from support.ros_harness import NodeProcess, write_params

    room = Path(__file__).parent / "data" / "room.sdf"
    params = write_params(tmp_path / "lidar.yaml", "lidar_node", {
        "world": str(room), "pose_source": "fixed", "pose_sourc": "fixed", "threads": -1, "fixed_pose": [1.0, 2.0],
        "sensor": {"range": {"max": -3.0}}})
    with NodeProcess("radarays_ros.ros.lidar_node", params_file=params) as node:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and "ignored unknown parameter" not in node.output():
            time.sleep(0.2)
        assert node.alive(), node.output()
        log = node.output()
    (started,) = [line for line in log.splitlines() if "not started" in line]
    assert "range.max = -3.0" in started and "(0.0, 1000000.0]" in started
    assert "threads = -1: out of range, allowed [0, 1024] (integer); using the default 0" in log  # not rclpy's wording
    assert "fixed_pose = [1.0, 2.0]: expected six numbers x y z roll pitch yaw, got 2; using the identity" in log
    (unknown,) = [line for line in log.splitlines() if "ignored unknown parameter" in line]
    assert "ignored unknown parameter(s) pose_sourc;" in unknown


@pytest.mark.parametrize("path", sorted((Path(__file__).resolve().parents[2] / "config" / "ros").glob("*.yaml")),
                         ids=lambda p: p.name)
def test_shipped_params_files_name_only_known_node_keys(path):
    """A typo in a params file is only a warning at run time (rclpy ignores unknown keys): catch it here.
    Nested sensor-model keys (NAME.sensor.beam.samples) must be keys of that sensor's config. Sensors a
    Gazebo world declares in SDF exist only once the node has read the world: their settings belong in
    the SDF block's <overrides>, a params-file key for them is reported unknown at start."""
    import yaml
    from lidar_ros import load_sensor

    from radarays_ros.ros.gazebo_link import GAZEBO_PARAMS, RIG_GAZEBO_PARAMS
    from radarays_ros.ros.node_params import NODE_PARAMS, SENSOR_PARAMS
    from radarays_ros.radar.config import resolve_radar_config
    from radarays_ros.sensors.units import LidarUnit, RadarUnit

    ((node, body),) = yaml.safe_load(path.read_text()).items()
    params = body["ros__parameters"]
    node_keys = set(NODE_PARAMS) | set(GAZEBO_PARAMS) | (set(RIG_GAZEBO_PARAMS) | {"sensors"} if node == "sensor_rig" else set())
    kinds = {name: params[name]["type"] for name in params.get("sensors", [])} if node == "sensor_rig" else {}
    sdf_only = set()
    if node == "sensor_rig" and params.get("gazebo", {}).get("sdf_sensors"):  # the demo world's SDF sensors
        from radarays_ros.gazebo.sensors import find_sensors

        demo = path.parents[2] / "radarays_ros" / "data" / "worlds" / "gz_radarays_demo.sdf"
        sdf_only = {spec.name for spec in find_sensors(demo)} - set(kinds)
    flat = _flat_nested(params)
    for key, value in flat.items():
        name, _, rest = key.partition(".")
        if key in node_keys:
            continue
        if node != "sensor_rig":
            name, rest, kind, config = "", key, node.split("_")[0], params.get("config", "")
        else:
            assert name not in sdf_only, (f"{path.name}: {key}: sensor '{name}' is declared in the world's SDF; "
                                          "set it in that block's <overrides> (the node knows it only later)")
            assert name in kinds, f"{path.name}: {key}: neither a node parameter nor a listed sensor's"
            kind, config = kinds[name], params[name].get("config", "")
        sensor_keys = set(SENSOR_PARAMS) | {"config"} | ({"type"} if node == "sensor_rig" else set())
        outputs = {"output." + k for k in (RadarUnit if kind == "radar" else LidarUnit).output_params()}
        assert rest in sensor_keys | outputs or rest.startswith("sensor."), f"{path.name}: unknown parameter {key}"
        if rest.startswith("sensor."):  # a key of the sensor model: that config must have it
            override = {rest[len("sensor."):]: value}
            try:
                if kind == "radar":
                    resolve_radar_config(config or "radarays_default", override)
                else:
                    load_sensor(config or "VLP-16", override)
            except Exception as exc:  # noqa: BLE001 - reported with the key
                raise AssertionError(f"{path.name}: {key}: {exc}") from None


def _flat_nested(d: dict, prefix: str = "") -> dict:
    out = {}
    for key, value in d.items():
        out.update(_flat_nested(value, f"{prefix}{key}.") if isinstance(value, dict) else {prefix + key: value})
    return out
