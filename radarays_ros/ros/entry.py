"""Entry points of the nodes (`radar_node`, `lidar_node`, `sensor_rig`): check for ROS 2 before importing it.

Imports nothing from ROS itself, so a Python install without rclpy gets one line saying what to install
(exit status 2) instead of an ImportError traceback.
"""
from __future__ import annotations

import sys

NO_ROS = ("{node}: needs ROS 2 (Jazzy), but {reason} cannot be imported: pip install 'radarays_ros[ros]' "
          "(the ROS 2 wheels), or source a ROS 2 install (source /opt/ros/jazzy/setup.bash)")


def run_node(node_name: str, kind: str, args: list[str] | None = None) -> int:
    try:
        import rclpy  # noqa: F401
    except ImportError as exc:
        print(NO_ROS.format(node=node_name, reason=exc.name or exc), file=sys.stderr)
        return 2
    from .node import run

    return run(node_name, kind, args)
