"""Radar detections as radar_msgs/RadarScan: the same detections as radar/points, in the message's own
conventions, written to a bag that the mcap reference reader decodes from the bag's own schema."""
from __future__ import annotations

import numpy as np
import pytest
from rosbags.highlevel import AnyReader

from radarays_ros.scenario.runner import run_scenario
from support.scenario import RADAR_SET, scenario_file


def test_scenario_bag_radar_scan_matches_radar_points(tmp_path):
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    sensors = {"radar": {"type": "radar", "config": "radarays_default", "set": RADAR_SET, "max_frames": 2,
                         "mount": [0.5, 0, 1.0, 0, 0, 0], "output": {"radar_scan": True}}}
    run_scenario(scenario_file(tmp_path, sensors=sensors, duration=0.3), tmp_path / "run.mcap", quiet=True)
    with AnyReader([tmp_path / "run.mcap"]) as reader:
        by_topic = {}
        for conn, _, raw in reader.messages():
            by_topic.setdefault(conn.topic, []).append(reader.deserialize(raw, conn.msgtype))
    cloud, scan = by_topic["/radar/points"][0], by_topic["/radar/scan"][0]
    assert scan.header.stamp == cloud.header.stamp and scan.header.frame_id == cloud.header.frame_id == "radar"
    pts = np.frombuffer(bytes(cloud.data), np.dtype([("x", "<f4"), ("y", "<f4"), ("z", "<f4"), ("i", "<f4")]))
    assert len(scan.points) == len(pts) > 0
    rng = np.array([p.range for p in scan.points])
    az = np.array([p.azimuth for p in scan.points])
    np.testing.assert_allclose(rng, np.hypot(pts["x"], pts["y"]), rtol=1e-5)
    # radar_msgs: "negative angles are anticlockwise": a detection on the left (+y) has a negative azimuth
    np.testing.assert_allclose(np.sin(az), -pts["y"] / np.hypot(pts["x"], pts["y"]), atol=1e-5)
    np.testing.assert_allclose([p.amplitude for p in scan.points], 10 * np.log10(pts["i"]), rtol=1e-5)
    assert all(p.doppler_velocity == 0.0 and p.elevation == 0.0 for p in scan.points)
    with (tmp_path / "run.mcap").open("rb") as f:  # the schema travels in the bag: an independent decoder reads it
        decoded = [m for _, c, _, m in make_reader(f, decoder_factories=[DecoderFactory()]).iter_decoded_messages()
                   if c.topic == "/radar/scan"]
    assert [p.range for p in decoded[0].points] == pytest.approx(list(rng))


def test_radar_scan_is_off_by_default(tmp_path):
    from radarays_ros.sensors.units import RadarUnit

    assert "radar/scan" not in RadarUnit.topics
    assert RadarUnit.output_params()["radar_scan"].value is False
