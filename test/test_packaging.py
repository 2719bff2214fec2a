"""The package as it is installed: package.xml, the wheel's contents, and the wheel installed into a fresh venv
running the commands a user types, from an unrelated directory (the colcon install: test/ros/test_ros_installed.py)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def test_package_xml_is_format_3_ament_python():
    from catkin_pkg.package import parse_package

    pkg = parse_package(REPO / "package.xml")
    assert pkg.package_format == 3 and pkg.name == "radarays_ros"
    assert pkg.get_build_type() == "ament_python"
    exec_depends = {d.name for d in pkg.exec_depends}
    assert {"rclpy", "sensor_msgs", "tf2_msgs", "launch_ros", "ros_gz_sim"} <= exec_depends


@pytest.mark.slow
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


# -- the installed wheel, run from elsewhere (`pip install radarays_ros-*.whl` in a fresh venv) -----------
@pytest.fixture(scope="module")
def wheel_bin(tmp_path_factory):
    from support.installs import wheel_venv

    return wheel_venv(tmp_path_factory.mktemp("wheel"))


def _run(bin_dir, cwd, *argv, timeout=300):
    from support.installs import run_from

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "AMENT_PREFIX_PATH", "RADARAYS_LIDAR_CONFIG")}
    return run_from(cwd, [str(bin_dir / argv[0]), *argv[1:]], env=env, timeout=timeout)


@pytest.mark.slow
def test_installed_wheel_runs_its_own_code_and_finds_its_data_by_name(wheel_bin, tmp_path):
    where = _run(wheel_bin, tmp_path, "python", "-c", "import radarays_ros, lidar_ros; print(radarays_ros.__file__)")
    assert where.stdout.strip().startswith(str(wheel_bin.parent / "lib")), where.stdout + where.stderr
    listing = _run(wheel_bin, tmp_path, "radarays", "world", "list")
    assert listing.returncode == 0 and {"office", "street", "hall"} <= set(listing.stdout.split()), listing.stderr
    info = _run(wheel_bin, tmp_path, "radarays", "world", "info", "office")
    assert info.returncode == 0 and "14 entities" in info.stdout and "unresolved URIs: none" in info.stdout, info.stderr
    scenarios = _run(wheel_bin, tmp_path, "radarays", "run", "--list")
    assert scenarios.returncode == 0 and "office_demo" in scenarios.stdout.split(), scenarios.stderr
    presets = _run(wheel_bin, tmp_path, "radarays", "lidar", "--list-presets")
    assert presets.returncode == 0 and {"VLP-16", "OS1-128"} <= set(presets.stdout.split()), presets.stderr
    unknown = _run(wheel_bin, tmp_path, "radarays", "world", "info", "ofice")
    assert unknown.returncode == 2 and "shipped worlds: gz_radarays_demo, hall, office, street, street_clutter" in unknown.stderr


@pytest.mark.slow
def test_installed_wheel_simulates_with_presets_and_scenarios_by_name(wheel_bin, tmp_path):
    radar = _run(wheel_bin, tmp_path, "radarays", "radar", "office", "--config", "navtech_cir204",
                 "--pose", "2 0 1 0 0 0", "--set", "azimuth.count=40", "--out", "r.npz")
    assert radar.returncode == 0, radar.stderr
    import numpy as np

    with np.load(tmp_path / "r.npz") as data:
        assert max(np.asarray(v).size for v in data.values()) >= 40 * 100
    run = _run(wheel_bin, tmp_path, "radarays", "run", "office_demo", "--out", "x.mcap", "--quiet")
    assert run.returncode == 0, run.stderr
    from rosbags.highlevel import AnyReader

    with AnyReader([tmp_path / "x.mcap"]) as reader:
        topics = {c.topic for c in reader.connections}
        assert reader.message_count > 100
    assert any(t.endswith("image") for t in topics) and any(t.endswith("points") for t in topics)


@pytest.mark.slow
def test_installed_node_without_ros_says_what_to_install(tmp_path):
    """The wheel alone in a venv (no dependencies, no ROS): the node's entry point needs none to say so."""
    import sysconfig

    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(wheels),
                    str(REPO)], check=True, capture_output=True)
    base = getattr(sys, "_base_executable", None) or sys.executable
    subprocess.run([base, "-m", "venv", str(tmp_path / "venv")], check=True, capture_output=True)
    bin_dir = tmp_path / "venv" / "bin"
    subprocess.run([str(bin_dir / "python"), "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                    *map(str, wheels.glob("*.whl"))], check=True, capture_output=True)
    assert sysconfig.get_path("purelib") not in (bin_dir.parent / "pyvenv.cfg").read_text()
    for node in ("radar_node", "lidar_node", "sensor_rig"):
        done = _run(bin_dir, tmp_path, node, timeout=60)
        assert done.returncode == 2 and "Traceback" not in done.stderr and "radarays_ros[ros]" in done.stderr, done.stderr
