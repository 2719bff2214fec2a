"""Multi-layer line scanner with a rotating mirror (Ibeo LUX; BlenSor, Gschwandtner et al. 2011, Sec. 3.3).

The emitters are fixed and fire up the mirror's rotation axis (+z), each tilted by its layer angle
delta_i in the x-z plane; a mirror at 45 deg turning about z sends them out. The reflection of e_i at a
mirror turned by phi is  d = Rz(phi) * S * Rz(-phi) * e_i,  S swapping x and z (the mirror plane at
phi = 0), which gives

    d_i(phi) = Rz(phi) (cos delta_i,  -sin delta_i sin phi,  sin delta_i cos phi)

so at phi = 0 the layers keep their pitch spread, and as the mirror turns toward 90 deg the pitch
separation turns into yaw separation: both the yaw and the pitch of every ray change with the mirror
angle, as BlenSor describes. Columns = mirror angles (the central beam's azimuth); the mirror turns
once per period, so column c fires at |phi_c - phi_0| / (2*pi*rate).

    type: mirror
    layers_deg: [-1.2, -0.4, 0.4, 1.2]
    horizontal: {min_deg: -60, max_deg: 50, step_deg: 0.25}
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..spec import SpecReader
from . import Pattern, ring_rank
from .axis import read_axis


def mirror_directions(layers: np.ndarray, mirror_angles: np.ndarray) -> np.ndarray:
    """(layers, angles, 3) ray directions for emitter tilts `layers` and mirror angles (radians)."""
    delta = np.asarray(layers)[:, None]
    phi = np.asarray(mirror_angles)[None, :]
    local = np.stack(np.broadcast_arrays(np.cos(delta), -np.sin(delta) * np.sin(phi), np.sin(delta) * np.cos(phi)), axis=-1)
    c, s = np.cos(phi), np.sin(phi)
    x = c * local[..., 0] - s * local[..., 1]
    y = s * local[..., 0] + c * local[..., 1]
    return np.stack([x, y, local[..., 2]], axis=-1)


def build(spec: SpecReader, base_dir: Path, rate_hz: float) -> Pattern:
    layers = np.radians(spec.numbers("layers_deg", lo=-45, hi=45))
    angles = read_axis(spec.sub("horizontal", required=True))
    order = np.argsort(ring_rank(layers))  # row 0 = lowest layer
    rows, cols = len(layers), len(angles)
    period = 1.0 / rate_hz
    return Pattern(
        directions=mirror_directions(layers[order], angles),
        origins=np.zeros((rows, cols, 3)),
        ring=np.arange(rows),
        laser_index=order,
        column_times=np.abs(angles - angles[0]) / (2 * np.pi * rate_hz),
        pixel_column=np.broadcast_to(np.arange(cols), (rows, cols)).copy(),
        beam_time_offset=np.zeros(rows),
        period=period,
    )
