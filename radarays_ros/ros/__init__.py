"""ROS 2 layer: the sensor nodes and what they need (the only package that imports rclpy).

Modules that import rclpy (the nodes) are imported on demand; `convert` needs rclpy's message
packages, `tf_buffer` and `params` need nothing from ROS.
"""
