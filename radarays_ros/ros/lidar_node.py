"""`ros2 run radarays_ros lidar_node --ros-args --params-file config/ros/lidar_*.yaml`: one simulated lidar."""
import sys

from .node import run


def main(args=None) -> int:
    return run("lidar_node", "lidar", args)


if __name__ == "__main__":
    sys.exit(main())
