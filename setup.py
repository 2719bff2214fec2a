"""radarays_ros: installs with `colcon build` (ament_python) and with `pip install .`."""
from glob import glob
import os

from setuptools import find_packages, setup

PACKAGE = "radarays_ros"


DATA = "radarays_ros/data"  # everything the code reads: package data, found by radarays_ros.resources


def tree(folder: str, share_as: str | None = None):
    """data_files entries installing folder/** into share/radarays_ros/<share_as or folder>/**."""
    entries = {}
    for path in glob(f"{folder}/**/*", recursive=True):
        if os.path.isfile(path) and "__pycache__" not in path:
            rel = os.path.relpath(os.path.dirname(path), folder)
            target = os.path.normpath(os.path.join("share", PACKAGE, share_as or folder, rel))
            entries.setdefault(target, []).append(path)
    return sorted(entries.items())


def package_data(folder: str) -> list[str]:
    """Every file under folder, relative to the radarays_ros package (setuptools package_data)."""
    return sorted(os.path.relpath(p, PACKAGE) for p in glob(f"{folder}/**/*", recursive=True)
                  if os.path.isfile(p) and "__pycache__" not in p)


setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(exclude=["test", "test.*", "benchmarks"]),
    package_data={"radarays_ros": ["gazebo/proto/*.proto", *package_data(DATA)]},
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
        # what ROS users look for in share/radarays_ros: launch files, node parameters, URDF, RViz;
        # the demo worlds, scenarios and DDS profile as copies of the package data (launch files use them)
        *[e for folder in ("launch", "config", "urdf", "rviz") for e in tree(folder)],
        *tree(f"{DATA}/worlds", "worlds"),
        *tree(f"{DATA}/scenarios", "scenarios"),
        *tree(f"{DATA}/ros", "config/ros"),
    ],
    python_requires=">=3.10",
    install_requires=[
        "numpy>=1.26,<3",
        "trimesh>=4.0,<6",
        "embreex>=2.17.7,<5",
        "lxml>=4.9,<7",
        "pycollada>=0.8,<1",
        "rosbags>=0.10,<1",
        "pillow>=10,<14",
        "matplotlib>=3.6.3,<4",  # floors Ubuntu 24.04 meets (test/test_rosdep_keys.py)
        "pyyaml>=6,<7",
        "scipy>=1.11,<2",
        "protobuf>=3.21.12,<7",  # Noble's python3-protobuf 3.21.12 is the 4.21 (protobuf 21.x) line
        "pyzmq>=24.0.1,<28",
        "tqdm>=4.66,<5",
        "numba>=0.59,<1",  # compiled per-ray loops without the GIL (radarays_ros/compiled.py)
    ],
    extras_require={
        "test": [
            "pytest>=7,<10",
            "hypothesis>=6.100,<7",  # fuzz tests of every reader (test/test_fuzz_readers.py)
            "xacro>=2.0,<3",
            # batch and bag tests: a real Ray local cluster; bags read back by the mcap reference reader
            "ray>=2.9,<3",
            "mcap>=1.1,<2",
            "mcap-ros2-support>=0.5,<1",
            # colcon builds the package in a temporary workspace, as a Jazzy user would
            "colcon-core>=0.15,<1",
            "colcon-ros>=0.4,<1",
            "colcon-python-setup-py>=0.2,<1",
            "colcon-package-selection>=0.2,<1",
            "colcon-bash>=0.4,<1",  # writes install/setup.bash (`source install/setup.bash` in a venv)
            "catkin_pkg>=0.5,<2",
            "setuptools>=64",
            "wheel>=0.40",
            # the warp backend's kernels run on Warp's CPU device in CI (tested with 1.0.2 and 1.19.0)
            "warp-lang>=1.0.2,<2",
            # lidar odometry on simulated bags (test/test_slam_kiss_icp.py, benchmarks/slam_kiss_icp.py);
            # tested with kiss-icp 1.3.0 and evo 1.38.1 (cp311 manylinux wheels)
            "kiss-icp>=1.0,<2",
            "evo>=1.28,<2",
            # package.xml's rosdep keys resolved with rosdistro's key files (test/test_rosdep_keys.py)
            "rosdep>=0.25,<1",
        ],
        "ray": ["ray>=2.9,<3"],
        "ros": [
            "ros-jazzy-rclpy[fastrtps]==7.1.6",
            "ros-jazzy-std-msgs",
            "ros-jazzy-geometry-msgs",
            "ros-jazzy-sensor-msgs",
            "ros-jazzy-rosgraph-msgs",
            "ros-jazzy-diagnostic-msgs",
            "ros-jazzy-nav-msgs",
        ],
        "gpu": ["cupy-cuda12x>=13", "warp-lang>=1.0.2,<2"],
    },
    zip_safe=False,  # shipped data is read from files on disk (radarays_ros.resources)
    maintainer="radarays_ros developers",
    maintainer_email="radarays-ros@example.org",
    description="Rotating FMCW radar (RadaRays) and lidar simulation by ray tracing a mesh mirror of the world",
    license="BSD-3-Clause",
    entry_points={
        "console_scripts": [
            "radarays = radarays_ros.cli:main",
            "radar_node = radarays_ros.ros.radar_node:main",
            "lidar_node = radarays_ros.ros.lidar_node:main",
            "sensor_rig = radarays_ros.ros.sensor_rig:main",
        ],
    },
)
