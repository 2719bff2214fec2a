"""Livox HAP and Mid-360: a few emitters swept in azimuth while a wedge wobbles them in elevation.

No public scan-pattern parameters exist for these two (Livox publishes 4 s pattern CSVs for its
Gazebo plugin, livox_laser_simulation `scan_mode/{HAP,mid360}.csv`, which are not available here), so
this is a parametric model built on the datasheet numbers, not Livox's exact trace:

* `emitters` lines (livox_ros_driver2 `line` 0..n-1: Mid-360 has 4, livox_ros_driver2 issue #75),
  firing `pulse_rate_hz` points per second together (datasheet point rate), round-robin;
* azimuth: `rotate` turns at `freq_hz` through 360 deg (Mid-360's spinning head), emitters spread
  evenly around the turn; `oscillate` swings sinusoidally over `span_deg` at `freq_hz` (HAP's 120 deg),
  emitters spread in phase;
* elevation: the vertical field [min_deg, max_deg] is cut into one band per emitter; a rotating wedge
  moves each emitter over its band, el_k(t) = centre_k + (band/2)·sin(2π·wobble_hz·t + 2πk/n);
* `wobble_hz` and `freq_hz` are incommensurate, so frames never repeat and coverage grows with
  integration time (the defining property of Livox scanning); every frame gets its own rays
  (`Pattern.retime(t0)`), as for the Risley sensors.

    type: sweep
    emitters: 4
    pulse_rate_hz: 200000
    azimuth: {mode: rotate, freq_hz: 10.0}            # or {mode: oscillate, freq_hz: 13.7, span_deg: 120}
    elevation: {min_deg: -7.0, max_deg: 52.0, wobble_hz: 1017.3}

Rows = emitters, columns = pulses of one emitter in one frame, in firing order.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..physics._validate import fail
from ..spec import SpecReader
from . import Pattern, origin_pattern, unit_vectors

AZIMUTH_MODES = ("rotate", "oscillate")


def sweep_angles(t: np.ndarray, emitters: int, mode: str, freq_hz: float, span: float, el_min: float,
                 el_max: float, wobble_hz: float) -> tuple[np.ndarray, np.ndarray]:
    """(azimuth, elevation) in radians of the emitters (rows) at absolute times t (s), shape (emitters, N)."""
    k = np.arange(emitters)[:, None]
    phase = 2 * np.pi * k / emitters
    if mode == "rotate":
        azimuth = 2 * np.pi * freq_hz * t + phase
        azimuth = (azimuth + np.pi) % (2 * np.pi) - np.pi
    else:
        azimuth = 0.5 * span * np.sin(2 * np.pi * freq_hz * t + phase)
    band = (el_max - el_min) / emitters
    elevation = el_min + (k + 0.5) * band + 0.5 * band * np.sin(2 * np.pi * wobble_hz * t + phase)
    return azimuth, elevation


def build(spec: SpecReader, base_dir: Path, rate_hz: float) -> Pattern:
    emitters = spec.number("emitters", lo=1, hi=64, integer=True)
    pulse_rate = spec.number("pulse_rate_hz", lo=1.0, hi=10_000_000)
    az = spec.sub("azimuth", required=True)
    mode = az.choice("mode", AZIMUTH_MODES)
    freq = az.number("freq_hz", lo=0.01, hi=10000)
    span = np.radians(az.number("span_deg", 360.0, 1.0, 360.0))
    az.finish()
    el = spec.sub("elevation", required=True)
    el_min = np.radians(el.number("min_deg", lo=-89.0, hi=89.0))
    el_max = np.radians(el.number("max_deg", lo=-89.0, hi=89.0))
    wobble = el.number("wobble_hz", lo=0.01, hi=100000)
    el.finish()
    if el_max <= el_min:
        fail(spec.where("elevation.max_deg"), float(np.degrees(el_max)),
             f"not above elevation.min_deg = {np.degrees(el_min):g}", f"({np.degrees(el_min):g}, 89.0]")
    cols = int(round(pulse_rate / emitters / rate_hz))
    if cols < 1:
        fail(spec.where("pulse_rate_hz"), pulse_rate, f"no pulse per emitter per frame at rate_hz = {rate_hz:g}",
             f"at least emitters x rate_hz = {emitters * rate_hz:g}")
    # round-robin: emitter k fires k/pulse_rate after the column's first pulse
    column_period = emitters / pulse_rate
    offsets = np.arange(cols) * column_period
    delay = np.arange(emitters) / pulse_rate

    def directions_at(t0: float) -> np.ndarray:
        t = t0 + offsets[None, :] + delay[:, None]  # each pulse's own firing time
        return unit_vectors(*sweep_angles(t, emitters, mode, freq, span, el_min, el_max, wobble))

    return origin_pattern(directions_at(0.0), 1.0 / rate_hz, column_times=offsets, beam_time_offset=delay,
                          retime=directions_at)
