"""The package installs as a ROS 2 ament_python package: `colcon build` in a workspace, as a Jazzy user does."""
import os
import shutil
import subprocess
import sys
from importlib.metadata import distribution
from pathlib import Path

import pytest

from netns_common import refuse

REPO = Path(__file__).resolve().parents[1]
# source folder -> folder under share/radarays_ros (worlds and scenarios are copies of the package data)
SHARED_FOLDERS = {"launch": "launch", "config": "config", "urdf": "urdf", "rviz": "rviz",
                  "radarays_ros/data/worlds": "worlds", "radarays_ros/data/scenarios": "scenarios"}
NOT_SOURCES = shutil.ignore_patterns(".git", ".venv", "build", "install", "log", "out", "__pycache__", "*.egg-info", ".pytest_cache")


def console_scripts() -> list[str]:
    return sorted(ep.name for ep in distribution("radarays_ros").entry_points if ep.group == "console_scripts")


def test_package_xml_is_format_3_ament_python():
    from catkin_pkg.package import parse_package

    pkg = parse_package(REPO / "package.xml")
    assert pkg.package_format == 3 and pkg.name == "radarays_ros"
    assert pkg.get_build_type() == "ament_python"
    exec_depends = {d.name for d in pkg.exec_depends}
    assert {"rclpy", "sensor_msgs", "tf2_msgs", "launch_ros", "ros_gz_sim"} <= exec_depends


@pytest.fixture(scope="module")
def colcon_install(tmp_path_factory):
    colcon = shutil.which("colcon", path=str(Path(sys.executable).parent)) or shutil.which("colcon")
    if colcon is None:
        refuse("colcon build test", "colcon is not installed (pip install radarays_ros[test])")
    ws = tmp_path_factory.mktemp("ws")
    shutil.copytree(REPO, ws / "src" / "radarays_ros", ignore=NOT_SOURCES)
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    result = subprocess.run([colcon, "build", "--packages-select", "radarays_ros"], cwd=ws, capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    return ws / "install" / "radarays_ros"


def test_ros2_run_finds_every_executable(colcon_install):
    lib = colcon_install / "lib" / "radarays_ros"
    assert console_scripts(), "no console_scripts declared"
    for name in console_scripts():
        assert os.access(lib / name, os.X_OK), f"{name} not installed in lib/radarays_ros (setup.cfg script_dir)"


def test_package_is_registered_and_data_is_installed(colcon_install):
    assert (colcon_install / "share" / "ament_index" / "resource_index" / "packages" / "radarays_ros").is_file()
    share = colcon_install / "share" / "radarays_ros"
    assert (share / "package.xml").is_file()
    for folder, target in SHARED_FOLDERS.items():
        if (REPO / folder).is_dir() and any((REPO / folder).rglob("*.*")):
            installed = {p.relative_to(share / target) for p in (share / target).rglob("*") if p.is_file()}
            shipped = {p.relative_to(REPO / folder) for p in (REPO / folder).rglob("*") if p.is_file() and "__pycache__" not in p.parts}
            assert shipped <= installed, f"{folder}: not installed: {sorted(map(str, shipped - installed))[:5]}"


def test_wheel_carries_every_subpackage_and_the_data(tmp_path):
    """`pip install .` (no ROS): the wheel holds all Python packages and the shared data files."""
    import zipfile

    result = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                             "-w", str(tmp_path), str(REPO)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    (wheel,) = tmp_path.glob("radarays_ros-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    packages = {str(p.parent.relative_to(REPO)) for p in REPO.glob("*/**/__init__.py")
                if p.parts[len(REPO.parts)] in ("radarays_ros", "lidar_ros")}
    for package in packages:
        assert f"{package}/__init__.py" in names, f"package {package} missing from the wheel"
    assert "radarays_ros/data/materials/default.yaml" in names  # package data: radarays_ros.resources
    shipped = {str(p.relative_to(REPO)) for p in (REPO / "radarays_ros" / "data").rglob("*") if p.is_file()
               and "__pycache__" not in p.parts}
    assert shipped <= names, f"package data missing from the wheel: {sorted(shipped - names)[:5]}"
    data = [n for n in names if ".data/data/share/radarays_ros/" in n]
    assert any(n.endswith("package.xml") for n in data)
