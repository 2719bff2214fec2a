"""Cone sensor for ultrasonic and infrared rangers (Kallin 2018, "generic" sensor; sensor_msgs/Range).

    type: cone
    fov_deg: 15                 # full opening angle; or fov_h_deg / fov_v_deg for an elliptic cone
    rings: 8                    # sample rings from the axis to the cone's edge (the last ring is the edge)
    per_ring: 32                # samples on each ring
    radiation: ultrasound       # ultrasound | infrared (sensor_msgs/Range radiation_type)

The cone x²/(z² tan²(θ/2)) + y²/(z² tan²(φ/2)) ≤ 1 around the sensor's +x axis (Kallin's z) is sampled by a
central ray and `rings` ellipses at fractions k/rings of the edge, `per_ring` rays each, so the edge itself
is sampled; the reading is the nearest return of all of them (Kallin: the closest point of any object
inside the cone), at azimuth α = atan(y/x) and elevation e = atan(z/x) of that ray. Row 0 is the axis
(repeated), rows 1..rings the rings; all rays fire at once.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..spec import SpecReader
from . import Pattern, origin_pattern

RADIATION = ("ultrasound", "infrared")


def cone_directions(fov_h: float, fov_v: float, rings: int, per_ring: int) -> np.ndarray:
    """(rings + 1, per_ring, 3) unit directions: the axis, then rings out to the elliptic cone's edge."""
    frac = np.arange(rings + 1)[:, None] / rings
    phi = 2 * np.pi * np.arange(per_ring)[None, :] / per_ring
    y = frac * np.tan(fov_h / 2) * np.cos(phi)
    z = frac * np.tan(fov_v / 2) * np.sin(phi)
    d = np.stack(np.broadcast_arrays(np.ones_like(y), y, z), axis=-1)
    return d / np.linalg.norm(d, axis=-1, keepdims=True)


def build(spec: SpecReader, base_dir: Path, rate_hz: float) -> Pattern:
    fov = spec.number("fov_deg", 15.0, 0.1, 179.0)
    fov_h = np.radians(spec.number("fov_h_deg", fov, 0.1, 179.0))
    fov_v = np.radians(spec.number("fov_v_deg", fov, 0.1, 179.0))
    rings = spec.number("rings", 8, 1, 256, integer=True)
    per_ring = spec.number("per_ring", 32, 3, 1024, integer=True)
    spec.choice("radiation", RADIATION, "ultrasound")
    return origin_pattern(cone_directions(fov_h, fov_v, rings, per_ring), 1.0 / rate_hz, one_laser=True,
                          planar={"fov_h": float(fov_h), "fov_v": float(fov_v)})
