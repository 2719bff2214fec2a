"""`radarays fit`: calibration commands (radar: radarays_ros/radar/fit/, lidar: lidar_ros/fit/ when present)."""
