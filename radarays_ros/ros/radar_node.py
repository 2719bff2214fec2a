"""`ros2 run radarays_ros radar_node --ros-args --params-file config/ros/radar_*.yaml`: one simulated radar."""
import sys

from .node import run


def main(args=None) -> int:
    return run("radar_node", "radar", args)


if __name__ == "__main__":
    sys.exit(main())
