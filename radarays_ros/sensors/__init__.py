"""The sensor runtime shared by the ROS nodes, `radarays radar|lidar|run` and the batch runner.

A sensor unit is a config + a simulator + the messages one frame becomes (`units`); its tunable values
and their checks are `params`, the topic naming rule `topics`, where a sensor is during a sweep `poses`;
`tf_buffer` is the pose source fed by tf messages (nodes) or by a scenario's transforms. No ROS here.
"""
