"""lidar_ros: lidar models and presets on top of radarays_ros' world, tracing and io layers."""
