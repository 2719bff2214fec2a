"""`ros2 run radarays_ros sensor_rig --ros-args --params-file config/ros/rig_demo.yaml`: several sensors, one world.

Beside Gazebo: `--params-file config/ros/rig_gazebo_demo.yaml` (gazebo.enable: true) mirrors the
running world and also runs the sensors it declares in SDF (`<sensor type="custom"
gz:type="radarays_radar">`, gpu_lidar blocks) on their links, topics and frames. Every parameter,
the gazebo.* ones in gazebo_link.py's module docstring, the others in node.py's; all in `ros2 param describe`.
"""
import sys

from .entry import run_node


def main(args=None) -> int:
    return run_node("sensor_rig", "rig", args)


if __name__ == "__main__":
    sys.exit(main())
