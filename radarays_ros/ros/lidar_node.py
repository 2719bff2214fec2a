"""`ros2 run radarays_ros lidar_node --ros-args --params-file config/ros/lidar_*.yaml`: one simulated lidar.

With `-p gazebo.enable:=true -p gazebo.world:=NAME` its world is a live mirror of a running Gazebo
(and `pose_source: gazebo` + `gazebo_parent: model::link` mounts it on a Gazebo link); parameters:
node.py's module docstring (the gazebo.* ones: gazebo_link.py's).
"""
import sys

from .entry import run_node


def main(args=None) -> int:
    return run_node("lidar_node", "lidar", args)


if __name__ == "__main__":
    sys.exit(main())
