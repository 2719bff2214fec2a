"""ROS 2 layer: the sensor nodes and what they need (the only package that imports rclpy).

Modules that import rclpy (the nodes) are imported on demand; `convert` needs rclpy's message
packages, `params` needs nothing from ROS (the transform buffer lives in radarays_ros.sensors).
"""
