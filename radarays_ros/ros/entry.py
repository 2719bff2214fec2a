"""Entry points of the nodes (`radar_node`, `lidar_node`, `sensor_rig`): check for ROS 2 before importing it.

Imports nothing from ROS itself, so a Python install without rclpy gets one line saying what to install
(exit status 2) instead of an ImportError traceback, and `--help` answers without ROS 2.
"""
from __future__ import annotations

import os
import sys

NO_ROS = ("{node}: needs ROS 2 (Jazzy), but {reason} cannot be imported: pip install 'radarays_ros[ros]' "
          "(the ROS 2 wheels), or source a ROS 2 install (source /opt/ros/jazzy/setup.bash)")
# The interface packages a node imports at run time, and where each comes from when it is missing. The
# `[ros]` extra's wheels carry all but tf2_msgs, which PyPI does not have.
NODE_INTERFACES = ("rcl_interfaces", "std_msgs", "sensor_msgs", "geometry_msgs", "nav_msgs",
                   "rosgraph_msgs", "diagnostic_msgs", "tf2_msgs")
NO_INTERFACE = ("{node}: needs the ROS 2 message package {package}, which cannot be imported: {remedy}")
NOT_ON_PYPI = {"tf2_msgs": "it is not on PyPI; source a ROS 2 Jazzy install (apt install ros-jazzy-tf2-msgs), "
                           "or build it from the wheels' generators as scripts/setup_ros_test.sh does"}


def run_node(node_name: str, kind: str, args: list[str] | None = None) -> int:
    if help_requested(sys.argv if args is None else args):
        from .node_params import help_text  # the package's own dependencies (numpy), not ROS

        print(help_text(node_name, kind))
        return 0
    try:
        import rclpy  # noqa: F401
    except ImportError as exc:
        print(NO_ROS.format(node=node_name, reason=exc.name or exc), file=sys.stderr)
        return 2
    missing = missing_interface()
    if missing:
        remedy = NOT_ON_PYPI.get(missing, "pip install 'radarays_ros[ros]', or source a ROS 2 install")
        print(NO_INTERFACE.format(node=node_name, package=missing, remedy=remedy), file=sys.stderr)
        return 2
    use_large_message_profile()
    from .node import run

    return run(node_name, kind, args, lifecycle=lifecycle_requested(sys.argv if args is None else args))


def missing_interface() -> str | None:
    """The first interface package a node needs that cannot be imported, or None."""
    import importlib.util

    for package in NODE_INTERFACES:
        try:
            found = importlib.util.find_spec(f"{package}.msg") is not None
        except (ImportError, ValueError, AttributeError):  # AttributeError: a module set to None
            found = False
        if not found:
            return package
    return None


def use_large_message_profile() -> None:
    """Use our Fast DDS profile (32 MiB shared-memory segment) unless the user chose a profile or the
    built-in transports (FASTDDS_BUILTIN_TRANSPORTS, e.g. Jazzy's LARGE_DATA): a user's choice wins."""
    from ..resources import data_path

    if os.environ.get("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp") != "rmw_fastrtps_cpp":
        return
    if (os.environ.get("FASTRTPS_DEFAULT_PROFILES_FILE") or os.environ.get("FASTDDS_DEFAULT_PROFILES_FILE")
            or os.environ.get("FASTDDS_BUILTIN_TRANSPORTS")):
        return
    profile = data_path("ros", "fastdds_large_messages.xml", must_exist=False)
    if profile.is_file():
        os.environ["FASTRTPS_DEFAULT_PROFILES_FILE"] = str(profile)


def _own(argv: list[str]) -> list[str]:
    """The program's own arguments (those before --ros-args)."""
    return argv[1: argv.index("--ros-args")] if "--ros-args" in argv else argv[1:]


def help_requested(argv: list[str]) -> bool:
    """-h / --help among the program's own arguments."""
    own = _own(argv)
    return "-h" in own or "--help" in own


def lifecycle_requested(argv: list[str]) -> bool:
    """--lifecycle among the program's own arguments: a managed node (ouster-ros' os_driver is one)."""
    return "--lifecycle" in _own(argv)
