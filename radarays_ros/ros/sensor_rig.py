"""`ros2 run radarays_ros sensor_rig --ros-args --params-file config/ros/rig_demo.yaml`: several sensors, one world."""
import sys

from .node import run


def main(args=None) -> int:
    return run("sensor_rig", "rig", args)


if __name__ == "__main__":
    sys.exit(main())
