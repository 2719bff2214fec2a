"""Outputs: arrays -> ROS 2 message layouts, rosbag2 (MCAP) files and pictures. No rclpy here."""
