"""Entry points of the nodes (`radar_node`, `lidar_node`, `sensor_rig`): check for ROS 2 before importing it.

Imports nothing from ROS itself, so a Python install without rclpy gets one line saying what to install
(exit status 2) instead of an ImportError traceback, and `--help` answers without ROS 2.
"""
from __future__ import annotations

import os
import sys

NO_ROS = ("{node}: needs ROS 2 (Jazzy), but {reason} cannot be imported: pip install 'radarays_ros[ros]' "
          "(the ROS 2 wheels), or source a ROS 2 install (source /opt/ros/jazzy/setup.bash)")


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
    use_large_message_profile()
    from .node import run

    return run(node_name, kind, args)


def use_large_message_profile() -> None:
    """Use our Fast DDS profile (32 MiB shared-memory segment) unless the user chose one."""
    from ..resources import data_path

    if os.environ.get("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp") != "rmw_fastrtps_cpp":
        return
    if os.environ.get("FASTRTPS_DEFAULT_PROFILES_FILE") or os.environ.get("FASTDDS_DEFAULT_PROFILES_FILE"):
        return
    profile = data_path("ros", "fastdds_large_messages.xml", must_exist=False)
    if profile.is_file():
        os.environ["FASTRTPS_DEFAULT_PROFILES_FILE"] = str(profile)


def help_requested(argv: list[str]) -> bool:
    """-h / --help among the program's own arguments (those before --ros-args)."""
    own = argv[1: argv.index("--ros-args")] if "--ros-args" in argv else argv[1:]
    return "-h" in own or "--help" in own
