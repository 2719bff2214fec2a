"""The sensor runtime shared by the ROS nodes, `radarays radar|lidar|run` and the batch runner.

A sensor unit is a config + a simulator + the messages one frame becomes (`units`); `tf_buffer` is the
pose source fed by tf messages (nodes) or by a scenario's transforms. No ROS here.
"""
