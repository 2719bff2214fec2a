"""The colcon install (no --symlink-install), run from its install space in an unrelated directory:
`ros2 run` finds every executable, the share folder holds what launch files name, `radarays world info
office` finds the shipped data, and radar_node publishes its first image of a shipped world by name."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from importlib.metadata import distribution
from pathlib import Path

import pytest

from support.installs import colcon_build, installed_env, run_from
from support.ros_harness import Probe, write_params
from support.waits import wait_for

REPO = Path(__file__).resolve().parents[2]
# source folder -> folder under share/radarays_ros (worlds and scenarios are copies of the package data)
SHARED_FOLDERS = {"launch": "launch", "config": "config", "urdf": "urdf", "rviz": "rviz",
                  "radarays_ros/data/worlds": "worlds", "radarays_ros/data/scenarios": "scenarios"}

pytestmark = pytest.mark.slow


def console_scripts() -> list[str]:
    return sorted(ep.name for ep in distribution("radarays_ros").entry_points if ep.group == "console_scripts")


@pytest.fixture(scope="module")
def colcon_install(tmp_path_factory):
    return colcon_build(tmp_path_factory.mktemp("ws"))


def test_ros2_run_finds_every_executable(colcon_install):
    lib = colcon_install / "lib" / "radarays_ros"
    assert console_scripts(), "no console_scripts declared"
    for name in console_scripts():
        assert os.access(lib / name, os.X_OK), f"{name} not installed in lib/radarays_ros (setup.cfg script_dir)"


def test_source_install_setup_bash_works_in_a_venv(colcon_install):
    """`source install/setup.bash` as the README says: colcon-bash (test extra) writes it; it puts the package's
    prefix on AMENT_PREFIX_PATH and its site-packages on the path."""
    setup = colcon_install.parents[0] / "setup.bash"
    assert setup.is_file(), "install/setup.bash missing: colcon-bash not installed (pip install radarays_ros[test])"
    script = (f"source {setup} && {sys.executable} -c 'import os, radarays_ros; "
              "print(os.environ[\"AMENT_PREFIX_PATH\"]); print(radarays_ros.__file__)'")
    result = subprocess.run(["bash", "-c", script], capture_output=True, text=True, cwd=colcon_install.parents[1])
    assert result.returncode == 0, result.stdout + result.stderr
    prefixes, module = result.stdout.strip().splitlines()[-2:]
    assert str(colcon_install) in prefixes.split(os.pathsep) and module.startswith(str(colcon_install))


def test_package_is_registered_and_data_is_installed(colcon_install):
    assert (colcon_install / "share" / "ament_index" / "resource_index" / "packages" / "radarays_ros").is_file()
    share = colcon_install / "share" / "radarays_ros"
    assert (share / "package.xml").is_file()
    for folder, target in SHARED_FOLDERS.items():
        if (REPO / folder).is_dir() and any((REPO / folder).rglob("*.*")):
            installed = {p.relative_to(share / target) for p in (share / target).rglob("*") if p.is_file()}
            shipped = {p.relative_to(REPO / folder) for p in (REPO / folder).rglob("*") if p.is_file() and "__pycache__" not in p.parts}
            assert shipped <= installed, f"{folder}: not installed: {sorted(map(str, shipped - installed))[:5]}"


def test_installed_radarays_finds_the_shipped_data_from_elsewhere(colcon_install, tmp_path):
    env = installed_env(colcon_install)
    where = run_from(tmp_path, ["python", "-c", "import radarays_ros; print(radarays_ros.__file__)"], env=env)
    assert where.stdout.strip().startswith(str(colcon_install)), where.stdout + where.stderr
    radarays = str(colcon_install / "lib" / "radarays_ros" / "radarays")
    info = run_from(tmp_path, [radarays, "world", "info", "office"], env=env)
    assert info.returncode == 0 and "14 entities" in info.stdout, info.stdout + info.stderr
    presets = run_from(tmp_path, [radarays, "lidar", "--list-presets"], env=env)
    assert presets.returncode == 0 and "VLP-16" in presets.stdout.split(), presets.stderr


@pytest.mark.ros
def test_installed_radar_node_publishes_a_shipped_world_by_name(colcon_install, tmp_path):
    """radar_node from the install space, world `office` by name, preset by name: its first image arrives."""
    params = write_params(tmp_path / "radar.yaml", "radar_node", {
        "world": "office", "config": "radarays_default", "pose_source": "fixed", "lazy": False,
        "fixed_pose": [2.0, 0.0, 1.0, 0.0, 0.0, 0.0],
        "sensor": {"azimuth": {"count": 40, "step_deg": -9.0}, "beam": {"samples": 4}, "tracing": {"passes": 1}}})
    log = open(tmp_path / "node.log", "wb")
    node = subprocess.Popen([str(colcon_install / "lib" / "radarays_ros" / "radar_node"), "--ros-args",
                             "--params-file", str(params)], cwd=tmp_path, env=installed_env(colcon_install),
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        with Probe() as probe:
            images = probe.subscribe("/radar/image", "sensor_msgs/msg/Image")
            msg = images.wait(1, timeout=90)[-1]
        assert node.poll() is None, (tmp_path / "node.log").read_text()
    finally:
        node.terminate()
        node.wait(20)
        log.close()
    output = (tmp_path / "node.log").read_text()
    assert msg.width * msg.height > 0 and max(msg.data) > 0
    assert "world " + str(colcon_install) in output and "Traceback" not in output, output


@pytest.mark.ros
@pytest.mark.parametrize("launch_file, extra, topic, type_name", [
    ("radar.launch.py", (), "/radar/image", "sensor_msgs/msg/Image"),
    ("lidar.launch.py", (), "/points", "sensor_msgs/msg/PointCloud2"),
    ("lidar.launch.py", ("lifecycle:=true",), "/points", "sensor_msgs/msg/PointCloud2")])  # configured + activated
def test_launch_file_shows_data_out_of_the_box(colcon_install, tmp_path, launch_file, extra, topic, type_name):
    """`ros2 launch radarays_ros <file> rviz:=false` with the real Jazzy launch tools and nothing else running:
    the sensor stands in the default world, publishes data and its frame on /tf_static (what rviz needs); with
    lifecycle:=true the launch file configures and activates the managed node, as ouster-ros' auto_start."""
    pytest.importorskip("ros2launch", reason="the Jazzy launch tools (scripts/setup_ros_test.sh installs them)")
    ros2 = Path(sys.executable).parent / "ros2"
    log = open(tmp_path / "launch.log", "wb")
    launch = subprocess.Popen([str(ros2), "launch", "radarays_ros", launch_file, "rviz:=false", *extra], cwd=tmp_path,
                              env=installed_env(colcon_install), stdout=log, stderr=subprocess.STDOUT,
                              start_new_session=True)
    try:
        with Probe() as probe:
            data = probe.subscribe(topic, type_name)
            static = probe.subscribe("/tf_static", "tf2_msgs/msg/TFMessage", qos=static_qos())
            msg = data.wait(1, timeout=120)[-1]
            (tf,) = static.wait(1, timeout=30)[-1:]
            # the node's services as discovery lists them, waited for (get_parameters, which every node has, and
            # change_state when managed), not read once: on a busy machine they can be listed after its data came
            node_name = launch_file.split(".")[0] + "_node"  # radar_node, lidar_node
            wanted = {f"/{node_name}/get_parameters"} | ({"/lidar_node/change_state"} if "lifecycle:=true" in extra
                                                         else set())
            wait_for(lambda: wanted <= {name for name, _ in probe.node.get_service_names_and_types()}, 30, 0.1)
            services = {name for name, _ in probe.node.get_service_names_and_types()}
        assert launch.poll() is None, (tmp_path / "launch.log").read_text()
        assert ("/lidar_node/change_state" in services) == ("lifecycle:=true" in extra)  # managed only when asked
    finally:
        os.killpg(launch.pid, signal.SIGINT)  # Ctrl-C in the terminal reaches the whole group
        try:
            launch.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(launch.pid, signal.SIGKILL)
            launch.wait(10)
        log.close()
    output = (tmp_path / "launch.log").read_text()
    assert msg.width * msg.height > 0 and max(msg.data) > 0, output
    (transform,) = tf.transforms
    assert transform.header.frame_id == "map" and transform.child_frame_id == msg.header.frame_id
    t = transform.transform.translation
    assert (t.x, t.y, t.z) == (1.0, 0.0, 1.0)  # the launch file's default fixed_pose
    assert "Traceback" not in output, output


def static_qos():
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

    return QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
