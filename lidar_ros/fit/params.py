"""The parameter registry of `radarays fit lidar`: which sensor-file keys a fit may move, how far, and how.

One line per parameter: `Param(name, key, rule, search, transform)`.
- key: the dotted sensor-file key (`surface.signal_scale`; a list element as `tof.bias[1]`), written back
  into the sensor YAML after the fit, so the output validates exactly as a hand-written file.
- rule: the config validator's own Rule for that key (lidar_ros/physics/*config*.py RULES), so the fit's
  bounds can never leave what `--sensor` accepts; `search` narrows it to a physical window (a log
  transform needs a positive lower bound).
- transform: 'log' for scales, standard deviations and probabilities (the optimiser moves log values, so
  a step is relative), 'linear' for signed values (phase-bias coefficients).

One key is a scale over a list: `noise.snr_sigma[*][1]` is the σ of the first (SNR, σ) pair of the SNR range
law (physics/range_precision.py), and setting it scales every pair's σ alike (the law's exponent, ½ for photon
counting, stays the file's or the datasheet's: SNR_SIGMA_DATASHEET).

`NOT_FROM_FRAMES` lists the issue's parameters a fit from frames alone (the held-fixed scene) cannot tell
apart from the scene, and why; the report prints it. `AWAITING` lists those whose keys main lacks.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from radarays_ros.errors import ConfigError
from radarays_ros.validate import Rule

from ..physics._validate import number
from ..physics.config import NoiseConfig, SurfaceConfig
from ..physics.effects_config import BIAS_RAD, DetectionConfig, SignalConfig
from ..spec import set_dotted

TRANSFORMS = ("log", "linear")


@dataclass(frozen=True)
class Param:
    name: str                      # what reports call it
    key: str                       # dotted sensor-file key; `[i]` picks a list element
    rule: Rule                     # the validator's rule of that key
    search: tuple[float, float]    # the fit's window, inside the rule
    transform: str = "log"
    unit: str = ""
    off_start: float | None = None  # where a fit starts when the file leaves the effect off (0 has no log)
    fd_step: float | None = None    # finite-difference step in transformed space (default: optimise.FD_STEP)
    group: str = ""                 # parameters fitted together (optimise.fit_blocks); "" = its own name

    def __post_init__(self):
        lo, hi = self.bounds
        if not lo < hi:
            raise ConfigError(f"fit parameter {self.name}: search window {self.search} outside {self.rule.allowed()}")
        if self.transform not in TRANSFORMS or (self.transform == "log" and lo <= 0):
            raise ConfigError(f"fit parameter {self.name}: transform {self.transform} needs a positive lower bound")

    @property
    def bounds(self) -> tuple[float, float]:
        """The search window clipped to the rule's range (open ends nudged inside)."""
        lo, hi = self.search
        if self.rule.lo is not None:
            lo = max(lo, float(self.rule.lo) * (1 + 1e-9) + (1e-12 if self.rule.lo_open else 0.0))
        if self.rule.hi is not None:
            hi = min(hi, float(self.rule.hi))
        return float(lo), float(hi)

    def to_x(self, value: float) -> float:
        lo, hi = self.bounds
        value = min(max(float(value), lo), hi)
        return math.log(value) if self.transform == "log" else value

    def from_x(self, x: float) -> float:
        lo, hi = self.bounds
        value = math.exp(x) if self.transform == "log" else float(x)
        return min(max(value, lo), hi)

    @property
    def x_bounds(self) -> tuple[float, float]:
        lo, hi = self.bounds
        return (math.log(lo), math.log(hi)) if self.transform == "log" else (lo, hi)


_INDEX = re.compile(r"^(.*)\[(\d+)\]$")
_SCALED = re.compile(r"^(.*)\[\*\]\[(\d+)\]$")  # `key[*][j]`: element j of every pair, scaled together
# Ouster OS1 (850 nm) datasheet, "Range Repeatability": SNR 12 ±10 cm, SNR 100 ±3 cm (range_precision.py)
SNR_SIGMA_DATASHEET = ((12.0, 0.10), (100.0, 0.03))


def _node(spec: Mapping[str, Any], dotted: str) -> Any:
    node: Any = spec
    for part in dotted.split("."):
        node = node.get(part) if isinstance(node, Mapping) else None
    return node


def get_value(spec: Mapping[str, Any], key: str, default: float) -> float:
    """The value of dotted `key` in a sensor mapping (`default` where the file leaves it out)."""
    m = _SCALED.match(key)
    if m:
        pairs = _node(spec, m.group(1))
        return float(pairs[0][int(m.group(2))]) if isinstance(pairs, (list, tuple)) and len(pairs) else default
    node: Any = spec
    parts = key.split(".")
    for i, part in enumerate(parts):
        m = _INDEX.match(part)
        name, index = (m.group(1), int(m.group(2))) if m else (part, None)
        if not isinstance(node, Mapping) or node.get(name) is None:
            return default
        node = node[name]
        if index is not None:
            node = list(node)[index] if isinstance(node, (list, tuple)) and index < len(node) else default
    return float(node)


def set_value(spec: Mapping[str, Any], key: str, value: float, default_list=None) -> dict:
    """A copy of the sensor mapping with dotted `key` set (list elements keep their siblings; `key[*][j]`
    scales element j of every pair by value / the first pair's)."""
    m = _SCALED.match(key)
    if m:
        head, j = m.group(1), int(m.group(2))
        pairs = _node(spec, head)
        pairs = [list(p) for p in (pairs if isinstance(pairs, (list, tuple)) and len(pairs) else SNR_SIGMA_DATASHEET)]
        scale = float(value) / float(pairs[0][j])
        for p in pairs:
            p[j] = float(p[j]) * scale
        return set_dotted(dict(spec), head, pairs)
    m = _INDEX.match(key)
    if not m:
        return set_dotted(dict(spec), key, float(value))
    head, index = m.group(1), int(m.group(2))
    node: Any = spec
    for part in head.split("."):
        node = node.get(part) if isinstance(node, Mapping) else None
    items = list(node) if isinstance(node, (list, tuple)) else list(default_list or [])
    items[index] = float(value)
    return set_dotted(dict(spec), head, items)


def defaults_of(key: str) -> float:
    """The dataclass default of a physics key (what a sensor file without it means)."""
    section, _, name = key.partition(".")
    if _SCALED.match(name):
        return 0.0  # off: no pairs
    m = _INDEX.match(name)
    if m:
        return 0.0  # tof.bias elements
    kinds = {"surface": SurfaceConfig, "noise": NoiseConfig, "detection": DetectionConfig, "signal": SignalConfig}
    if key == "noise.snr_floor":  # unset (None) means the SNR law is floored at noise.sigma
        return float(NoiseConfig().sigma)
    return float(getattr(kinds[section](), name))


R = SurfaceConfig.RULES
N = NoiseConfig.RULES
SNR_SIGMA_RULE = number(0.0, 10.0, low_open=True)  # the σ of a noise.snr_sigma pair (physics/config.py _snr_sigma)

# The sensor stage of a spinning lidar, fitted from frames alone (held-fixed geometry; lidar_ros/fit/scene.py)
SENSOR_STAGE = (
    # K and the near-range overlap r0 act on the signal bands together (r0 on those under ~2 r0 only)
    Param("signal scale K", "surface.signal_scale", R["signal_scale"], (1e2, 1e8), unit="photons at 1 m",
          group="signal"),
    Param("near-range overlap r0", "surface.overlap_range_m", R["overlap_range_m"], (0.05, 200.0), unit="m",
          off_start=1.0, group="signal"),
    Param("ambient on surfaces", "surface.ambient_level", R["ambient_level"], (1.0, 65535.0), unit="photons",
          group="ambient"),
    Param("ambient of open sky", "surface.ambient_sky", R["ambient_sky"], (0.1, 65535.0), unit="photons",
          group="ambient"),
    # the noise statistic is a median (MAD) of 1 mm-quantised differences: piecewise constant, so a wide step
    Param("range noise sigma", "noise.sigma", N["sigma"], (1e-4, 0.5), unit="m", group="noise", fd_step=0.3),
    Param("range noise per metre", "noise.relative_sigma", N["relative_sigma"], (1e-5, 0.05), unit="m/m",
          off_start=1e-3, group="noise", fd_step=0.3),
    # σ of the SNR law at its first pair's SNR (every pair scaled alike); acts only where the file has a
    # background (signal.noise_floor > 0): without one every SNR is infinite and no statistic responds
    Param("SNR range noise (sigma at pair 1)", "noise.snr_sigma[*][1]", SNR_SIGMA_RULE, (1e-3, 2.0), unit="m",
          off_start=SNR_SIGMA_DATASHEET[0][1], group="noise", fd_step=0.3),
    # the law's floor (clock and laser jitter; physics/range_precision.py): with a background it replaces
    # noise.sigma on every return whose SNR is high, so it is what the near-range noise statistic moves
    Param("SNR range noise floor", "noise.snr_floor", SNR_SIGMA_RULE, (1e-4, 0.5), unit="m", group="noise",
          fd_step=0.3),
    Param("dropout probability", "detection.dropout_probability", DetectionConfig.RULES["dropout_probability"],
          (1e-5, 0.3), off_start=1e-3, fd_step=0.3),  # Bernoulli draws: a step that changes whole pixels
    Param("ambient row gain spread", "signal.row_gain_sigma", SignalConfig.RULES["row_gain_sigma"], (1e-3, 0.5),
          off_start=0.05),
)

# Heiden et al.'s 2-D CW phase-ranging scanner (lidar_ros/fit/cw_room.py)
CW_STAGE = (
    Param("phase bias a (L^2)", "tof.bias[0]", BIAS_RAD, (-5.0, 5.0), "linear", "rad"),
    Param("phase bias b (L)", "tof.bias[1]", BIAS_RAD, (-5.0, 5.0), "linear", "rad"),
    Param("phase bias c", "tof.bias[2]", BIAS_RAD, (-1.0, 1.0), "linear", "rad"),
    Param("range noise sigma", "noise.sigma", N["sigma"], (1e-4, 0.5), unit="m"),
)

# The parameters a fit from frames alone cannot move, and why (the report lists them)
NOT_FROM_FRAMES = {
    "reflectivity texture (surface.texture_sigma, texture_length_m)":
        "the held-fixed scene's ρ is the frame's own calibrated reflectivity, texture included: the texture "
        "is part of the scene, not told apart from it (with --world and --poses it is fitted: texture_fit.py)",
    "edge dropout (detection.edge_dropout)":
        "a flag without a continuous parameter; its amount follows the beam footprint on depth edges, which a "
        "frame-as-scene (one range per pixel, no sub-rays) does not have",
    "limits probability (surface.limits_probability)":
        "the datasheet's quoted detection probability, not a property of the unit; the held scene holds only "
        "the returns the real unit detected, so a fitted detection curve would act on them twice",
}
# Keys the issue names that main does not have yet (another branch adds them)
AWAITING = {
    "per-model signal K": "a signal constant per sensor product line in the presets (main: surface.signal_scale, fitted)",
}


def initial_values(spec: Mapping[str, Any], params) -> np.ndarray:
    """Start values: the file's (or the physics default), `off_start` for an effect that is off, inside the window."""
    out = []
    for p in params:
        v = get_value(spec, p.key, None)
        if v is None:  # not in the file (or null): its default; an unset SNR floor is the file's noise.sigma
            v = get_value(spec, "noise.sigma", defaults_of("noise.sigma")) if p.key == "noise.snr_floor" else defaults_of(p.key)
        if v == 0 and p.off_start is not None:
            v = p.off_start
        out.append(p.from_x(p.to_x(v)))
    return np.array(out, float)


def apply_values(spec: Mapping[str, Any], params, values) -> dict:
    """The sensor mapping with every parameter's value set (tof.bias keeps its three elements)."""
    out = dict(spec)
    for p, v in zip(params, values):
        out = set_value(out, p.key, v, default_list=[0.0, 0.0, 0.0])
    return out
