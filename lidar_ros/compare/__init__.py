"""Comparing a real and a simulated lidar frame: the frame both are read into, and the statistics.

`radarays lidar compare REAL SIM` (lidar_ros/compare/cli.py) reads the files (radarays_ros/io/lidar_frames.py),
measures both with `frame_stats` and draws them side by side (radarays_ros/io/lidar_compare_picture.py).
"""
from .frame import LidarFrame, check_same_sensor
from .stats import format_table, frame_stats

__all__ = ["LidarFrame", "check_same_sensor", "format_table", "frame_stats"]
