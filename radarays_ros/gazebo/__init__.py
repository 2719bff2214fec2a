"""Follow a running Gazebo (Harmonic / gz-transport 13, or Ignition Transport 8-12) without rclpy.

* `mirror.GazeboMirror` / `MirrorConfig`: a Scene kept in step with a Gazebo world (poses, spawned and
  deleted models), from the SDF file or Gazebo's generate_world_sdf service.
* `sensors.find_sensors(sdf_path_or_text) -> list[SensorSpec]`: radarays sensors (and gpu_lidar
  blocks) declared in SDF worlds or URDF `<gazebo>` blocks.
* `tf_source.TfPoseSource`: poses from PosePublisher transforms bridged to /tf (documented setup).
* `client.make_client()`: Gazebo's official Python bindings when installed, else `transport.GzTransportClient`
  (our client of the wire protocol); `protos`: our gz-msgs subset.
"""
