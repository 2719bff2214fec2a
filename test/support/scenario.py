"""A scenario file of a small room with a radar and a lidar (`radarays run` and `radarays batch` tests)."""
from __future__ import annotations

from pathlib import Path

import yaml


ROOM = """<?xml version="1.0"?>
<sdf version="1.11"><world name="room">
  <model name="walls"><static>true</static><link name="link">
    <visual name="north"><pose>10 0 1 0 0 0</pose><geometry><box><size>0.2 20 2</size></box></geometry></visual>
    <visual name="south"><pose>-10 0 1 0 0 0</pose><geometry><box><size>0.2 20 2</size></box></geometry></visual>
    <visual name="east"><pose>0 -10 1 0 0 0</pose><geometry><box><size>20 0.2 2</size></box></geometry></visual>
    <visual name="west"><pose>0 10 1 0 0 0</pose><geometry><box><size>20 0.2 2</size></box></geometry></visual>
  </link></model>
  <model name="crate"><static>false</static><pose>5 -6 0.5 0 0 0</pose><link name="link">
    <visual name="v"><geometry><box><size>1 1 1</size></box></geometry></visual>
  </link></model>
</world></sdf>
"""


RADAR_SET = {"azimuth.count": 40, "azimuth.step_deg": -9.0, "azimuth.rate_hz": 10.0, "range.bins": 300,
             "range.resolution": 0.05, "beam.samples": 4, "tracing.passes": 1, "kernel.width": 5}


def scenario_file(tmp_path: Path, **changes) -> Path:
    (tmp_path / "room.sdf").write_text(ROOM)
    data = {
        "world": "room.sdf",
        "duration": 0.5,
        "tf_rate_hz": 20,
        "bag_time": "trajectory",  # stamps = the trajectory's times (from 0), which the tests' physics reads
        "trajectory": {"waypoints": [[-2.0, 0.0], [8.0, 0.0]], "speed": 2.0, "z": 0.0},
        "sensors": {
            "radar": {"type": "radar", "config": "radarays_default", "set": RADAR_SET, "mount": [0.5, 0, 1.0, 0, 0, 0]},
            "lidar": {"type": "lidar", "config": "VLP-16", "set": {"noise.sigma": 0.0},
                      "mount": [0.0, 0, 1.5, 0, 0, 0], "frame_id": "velodyne"},
        },
    }
    data.update(changes)
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path
