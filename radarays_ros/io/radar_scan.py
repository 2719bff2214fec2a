"""Radar detections as radar_msgs/RadarScan (ros-perception/radar_msgs, released for Jazzy).

RadarScan is `std_msgs/Header header` + `radar_msgs/RadarReturn[] points`; a RadarReturn holds range (m),
azimuth (rad, "negative angles are anticlockwise from the sensor" in the message's own comment, so a
detection to the left, +y in REP-103, has a negative azimuth), elevation (rad, 0 for a 2-D radar),
doppler_velocity (m/s) and amplitude (dB). The detections are radar/points' CFAR peaks (radar_image.
radar_points); the simulated spinning radar measures no Doppler (0), and the amplitude is 10 log10 of the
detection's value (relative power for the physical stage, the image value for the RadaRays stage).

The definitions are registered in the bag writer's typestore, so bags hold RadarScan with its schema. A
ROS node needs the radar_msgs package itself (`apt install ros-jazzy-radar-msgs`; no PyPI wheel exists).
"""
from __future__ import annotations

import numpy as np
from rosbags.typesys import get_types_from_msg

from .messages import TYPESTORE, header
from .radar_image import radar_points

RADAR_MSGS = {  # msg/RadarReturn.msg and msg/RadarScan.msg of ros-perception/radar_msgs (field names and types)
    "radar_msgs/msg/RadarReturn": "float32 range\nfloat32 azimuth\nfloat32 elevation\nfloat32 doppler_velocity\n"
                                  "float32 amplitude\n",
    "radar_msgs/msg/RadarScan": "std_msgs/Header header\nradar_msgs/RadarReturn[] points\n",
}
SCAN_TYPE = "radar_msgs/msg/RadarScan"


def _register() -> None:
    if SCAN_TYPE in TYPESTORE.types:
        return
    types = {}
    for name, text in RADAR_MSGS.items():
        types.update(get_types_from_msg(text, name))
    TYPESTORE.register(types)


_register()


def radar_scan_msg(img, t_ns: int, frame_id: str, **options):
    """rosbags radar_msgs/RadarScan of radar_points(img, **options) (CFAR peaks)."""
    pts = radar_points(img, **options)
    x, y, z = (pts[k].astype(np.float64) for k in ("x", "y", "z"))
    horizontal = np.hypot(x, y)
    rng = np.sqrt(horizontal ** 2 + z ** 2)
    azimuth = -np.arctan2(y, x)  # the message's convention: anticlockwise negative
    elevation = np.arctan2(z, horizontal)
    with np.errstate(divide="ignore"):
        amplitude = np.where(pts["intensity"] > 0, 10.0 * np.log10(pts["intensity"].astype(np.float64)), -np.inf)
    ret = TYPESTORE.types["radar_msgs/msg/RadarReturn"]
    scan = TYPESTORE.types[SCAN_TYPE]
    points = [ret(range=float(r), azimuth=float(a), elevation=float(e), doppler_velocity=0.0, amplitude=float(p))
              for r, a, e, p in zip(rng, azimuth, elevation, amplitude)]
    return scan(header=header(t_ns, frame_id), points=points)
