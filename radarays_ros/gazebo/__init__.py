"""Follow a running Gazebo (Harmonic / gz-transport 13, or Ignition Transport 8-12) without rclpy.

* `mirror.GazeboMirror` / `MirrorConfig`: a Scene kept in step with a Gazebo world (poses, spawned and
  deleted models), from the SDF file or Gazebo's generate_world_sdf service; its parts: `entity_tree`
  (the model -> link -> visual tree and its pose arrays), `liveness` (when it may be trusted),
  `material_tags` (tags of spawned models), `scene_sdf` (Scene message -> SDF, Gazebo's SDF made parseable).
* `sensors.find_sensors(sdf_path_or_text) -> list[SensorSpec]`: radarays sensors (and gpu_lidar
  blocks) declared in SDF worlds or URDF `<gazebo>` blocks.
* `tf_source.TfPoseSource`: poses from PosePublisher transforms bridged to /tf (documented setup).
* `client.make_client(kind)`: `transport.GzTransportClient` (our client of the wire protocol, the default)
  or Gazebo's official Python bindings ("official"; why not the default: client.py); `protos`: our gz-msgs subset.
"""
