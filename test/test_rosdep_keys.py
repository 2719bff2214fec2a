"""package.xml's keys resolve with rosdep on Jazzy's platform (Ubuntu 24.04 Noble) and on Debian 12, using
rosdistro's own key files (../shared/vendor/ros2-jazzy-python), and setup.py's floors are met by what Noble
ships, so `rosdep install` and a colcon build work there.

ROS packages (rclpy, sensor_msgs, ...) are not in these key files: rosdep resolves them from the rosdistro
index, which needs the network; this test checks every other key."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
KEY_FILES = ("rosdistro-base.yaml", "rosdistro-python.yaml")

# Ubuntu 24.04 (Noble) package versions of the Python dependencies that have apt keys (packages.ubuntu.com,
# noble and noble-updates, amd64), and the packages Noble does not have at all.
NOBLE_VERSIONS = {"numpy": "1.26.4", "scipy": "1.11.4", "matplotlib": "3.6.3", "lxml": "5.2.1",
                  "pyyaml": "6.0.1", "pillow": "10.2.0", "pyzmq": "24.0.1", "protobuf": "3.21.12",
                  "tqdm": "4.66.2"}
NOBLE_LACKS = {"python3-numba"}
ROS_PACKAGE = re.compile(r"^(rclpy|rcl_interfaces|launch|launch_ros|xacro|rviz2|robot_state_publisher|tf2_ros|"
                         r"ros_gz_sim|ros_gz_bridge|[a-z0-9_]+_msgs)$")


def vendor_folder() -> Path | None:
    for base in (REPO.parent, REPO.parent.parent):
        folder = base / "shared" / "vendor" / "ros2-jazzy-python"
        if all((folder / name).is_file() for name in KEY_FILES):
            return folder
    return None


def package_keys() -> list[str]:
    from catkin_pkg.package import parse_package

    package = parse_package(str(REPO / "package.xml"))
    return sorted({d.name for d in package.exec_depends + package.build_depends + package.test_depends})


@pytest.fixture(scope="module")
def rosdep_env(tmp_path_factory):
    pytest.importorskip("rosdep2")
    vendor = vendor_folder()
    if vendor is None:
        pytest.skip("no rosdistro key files in ../shared/vendor/ros2-jazzy-python")
    root = tmp_path_factory.mktemp("rosdep")
    (root / "sources").mkdir()
    (root / "sources" / "20-default.list").write_text(
        "".join(f"yaml file://{vendor / name}\n" for name in KEY_FILES))
    (root / "index.yaml").write_text("%YAML 1.1\n---\ntype: index\nversion: 4\ndistributions: {}\n")
    env = dict(os.environ, ROSDEP_SOURCE_PATH=str(root / "sources"), ROS_HOME=str(root / "home"),
               ROSDISTRO_INDEX_URL=f"file://{root / 'index.yaml'}", ROS_PYTHON_VERSION="3")
    rosdep = [sys.executable, "-c", "import sys; from rosdep2.main import rosdep_main; sys.exit(rosdep_main())"]
    done = subprocess.run([*rosdep, "update"], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return rosdep, env


def resolve(rosdep_env, key: str, platform: str) -> tuple[str, list[str]] | None:
    rosdep, env = rosdep_env
    done = subprocess.run([*rosdep, "resolve", key, f"--os={platform}"], env=env, capture_output=True, text=True,
                          timeout=60)
    if done.returncode != 0:
        return None
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    installer = next(line[1:] for line in lines if line.startswith("#"))
    return installer, [p for line in lines if not line.startswith("#") for p in line.split()]


def test_package_xml_declares_the_ros_packages_the_nodes_import():
    keys = set(package_keys())
    sources = [*REPO.joinpath("radarays_ros", "ros").glob("*.py"), *REPO.joinpath("launch").glob("*.py")]
    imported = set()
    for source in sources:
        imported |= set(re.findall(r"^\s*(?:from|import) (rclpy|launch_ros|launch|[a-z0-9_]+_msgs|rcl_interfaces)\b",
                                   source.read_text(), re.MULTILINE))
    assert imported and imported <= keys, f"imported but not declared: {sorted(imported - keys)}"


@pytest.mark.parametrize("platform", ["ubuntu:noble", "debian:bookworm"])
def test_every_system_key_resolves_to_a_package_the_platform_has(rosdep_env, platform):
    system_keys = [k for k in package_keys() if not ROS_PACKAGE.match(k)]
    assert "python3-numpy" in system_keys and "python3-trimesh-pip" in system_keys
    unresolved, lacking = [], []
    for key in system_keys:
        found = resolve(rosdep_env, key, platform)
        if found is None:
            unresolved.append(key)
        elif platform == "ubuntu:noble" and found[0] == "apt" and set(found[1]) & NOBLE_LACKS:
            lacking.append(key)
    assert not unresolved, f"keys rosdep cannot resolve on {platform}: {unresolved}"
    assert not lacking, f"keys whose apt package Ubuntu 24.04 lacks: {lacking}"


def test_a_key_noble_lacks_would_be_caught(rosdep_env):
    """The check above can fail: python3-numba resolves to an apt package that Noble does not have."""
    installer, packages = resolve(rosdep_env, "python3-numba", "ubuntu:noble")
    assert installer == "apt" and set(packages) & NOBLE_LACKS


def test_setup_py_floors_are_met_by_noble():
    from packaging.requirements import Requirement

    text = (REPO / "setup.py").read_text()
    block = text[text.index("install_requires=["): text.index("],", text.index("install_requires=["))]
    requirements = {Requirement(r).name.lower(): Requirement(r) for r in re.findall(r'"([^"]+)"', block)}
    assert set(NOBLE_VERSIONS) <= set(requirements)
    too_high = {name: str(requirements[name].specifier) for name, version in NOBLE_VERSIONS.items()
                if not requirements[name].specifier.contains(version, prereleases=True)}
    assert not too_high, f"floors above Ubuntu 24.04's packages: {too_high}"
