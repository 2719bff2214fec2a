"""Livox Risley-prism scanners (Mid-40, Mid-70, Avia): a non-repetitive rosette that never repeats.

Each emitter's beam passes through N wedge prisms that turn about the optical axis at their own rotor
frequencies f_i; prism i has one face normal to the axis and one face tilted by its wedge angle
|alpha_i|, turned to phi_i(t) = 2*pi*f_i*t: the entry face for alpha_i > 0, the exit face for
alpha_i < 0 (the sign of HELIOS' prism angle says which side is inclined). With this reading the
HELIOS parameters give exactly the datasheet fields of view: Mid-40 38.4 deg circular, Mid-70
70.4 deg circular, Avia 70.4 deg x 77.2 deg (test_lidar_sensors checks it). The beam is refracted at both faces by Snell's law in
vector form (refractive index n_i inside, n_air outside). Parameters: HELIOS++ scanner definitions
(config/lidar/livox/livox_risley_helios.yaml, optical axis = +y of that file's frame, which maps to
+x of our sensor frame; the Avia emitters, spread along x of that frame, span the 77.2 deg vertical
field, so x_s = y_h, y_s = z_h, z_s = x_h).

Because the rotor frequencies are incommensurate, the pattern depends on the absolute time: every
frame gets its own directions (`Pattern.retime(t0)`), and coverage grows with integration time.
Rows = emitters (channels), columns = pulses of one frame in firing order.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from radarays_ros.errors import ConfigError

from ..physics._validate import fail
from ..spec import SpecReader
from . import Pattern, origin_pattern

AXIS = np.array([0.0, 1.0, 0.0])  # optical axis in the parameter file's frame
_E1, _E2 = np.array([1.0, 0.0, 0.0]), np.array([0.0, 0.0, 1.0])
_HELIOS_TO_SENSOR = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])


def refract(d: np.ndarray, n_along: np.ndarray, eta: float) -> np.ndarray:
    """Snell refraction of unit directions d at surfaces with unit normals n_along (n.d > 0), eta = n1/n2.

    Total internal reflection (not reached by real Livox geometry) keeps the direction."""
    cos_i = np.einsum("...i,...i->...", d, n_along)
    k = 1.0 - eta**2 * (1.0 - cos_i**2)
    t = eta * d + (np.sqrt(np.maximum(k, 0.0)) - eta * cos_i)[..., None] * n_along
    t = np.where((k >= 0)[..., None], t, d)
    return t / np.linalg.norm(t, axis=-1, keepdims=True)


def prism_directions(incident: np.ndarray, prisms: list[dict], n_air: float, times: np.ndarray) -> np.ndarray:
    """(channels, len(times), 3) beam directions after all prisms, in the parameter file's frame."""
    d = np.broadcast_to(incident[:, None, :], (len(incident), len(times), 3)).astype(float)
    for p in prisms:
        alpha = np.radians(abs(p["angle_deg"]))
        phi = 2 * np.pi * p["rotor_freq_hz"] * times
        tilted = np.broadcast_to((np.cos(alpha) * AXIS[None, :] + np.sin(alpha) * (np.cos(phi)[:, None] * _E1 + np.sin(phi)[:, None] * _E2))[None], d.shape)
        flat = np.broadcast_to(AXIS, d.shape)
        entry, exit_ = (tilted, flat) if p["angle_deg"] > 0 else (flat, tilted)
        d = refract(d, entry, n_air / p["refr_index"])
        d = refract(d, exit_, p["refr_index"] / n_air)
    return d


def build(spec: SpecReader, base_dir: Path, rate_hz: float) -> Pattern:
    value = spec.raw("prisms")
    if not isinstance(value, list) or not value:
        raise ConfigError(f"{spec.where('prisms')}: expected a list of {{rotor_freq_hz, angle_deg, refr_index}}")
    prisms = []
    for i, entry in enumerate(value):
        p = SpecReader(entry, spec.origin, f"{spec.prefix}prisms[{i}].")
        prisms.append({
            "rotor_freq_hz": p.number("rotor_freq_hz", lo=-10000, hi=10000),
            "angle_deg": p.number("angle_deg", lo=-60, hi=60),
            "refr_index": p.number("refr_index", lo=1.0, hi=4.0),
        })
        p.finish()
    n_air = spec.number("refr_index_air", 1.0, 1.0, 4.0)
    channels = spec.raw("channels_incident_beam_xyz", [[0.0, 1.0, 0.0]])
    if not isinstance(channels, list) or not channels:
        raise ConfigError(f"{spec.where('channels_incident_beam_xyz')}: expected a list of [x, y, z] directions")
    incident = np.array([SpecReader({"v": c}, spec.origin, f"{spec.prefix}channels_incident_beam_xyz[{i}].").numbers("v", length=3)
                         for i, c in enumerate(channels)], float)
    norm = np.linalg.norm(incident, axis=1)
    if np.any(norm < 1e-9) or np.any(incident @ AXIS <= 0):
        raise ConfigError(f"{spec.where('channels_incident_beam_xyz')}: directions must be non-zero and point along +y (the optical axis)")
    incident /= norm[:, None]
    pulse_rate = spec.number("pulse_rate_hz", lo=1.0, hi=10_000_000)
    cols = int(round(pulse_rate / rate_hz))
    if cols < 1:
        fail(spec.where("pulse_rate_hz"), pulse_rate, f"no pulse per frame at rate_hz = {rate_hz:g}",
             f"at least rate_hz = {rate_hz:g}")
    offsets = np.arange(cols) / pulse_rate

    def directions_at(t0: float) -> np.ndarray:
        d = prism_directions(incident, prisms, n_air, t0 + offsets)
        return d @ _HELIOS_TO_SENSOR.T

    return origin_pattern(directions_at(0.0), 1.0 / rate_hz, column_times=offsets, retime=directions_at)
