"""The parameter registry of `radarays fit lidar`: which sensor-file keys a fit may move, how far, and how.

One line per parameter: `Param(name, key, rule, search, transform)`.
- key: the dotted sensor-file key (`surface.signal_scale`; a list element as `tof.bias[1]`), written back
  into the sensor YAML after the fit, so the output validates exactly as a hand-written file.
- rule: the config validator's own Rule for that key (lidar_ros/physics/*config*.py RULES), so the fit's
  bounds can never leave what `--sensor` accepts; `search` narrows it to a physical window (a log
  transform needs a positive lower bound).
- transform: 'log' for scales, standard deviations and probabilities (the optimiser moves log values, so
  a step is relative), 'linear' for signed values (phase-bias coefficients).

`AWAITING` lists the issue's parameters whose keys do not exist on main yet (another branch adds the lidar
physics behind them): adding one is a line in `SENSOR_STAGE` once the key and its Rule exist.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from radarays_ros.errors import ConfigError
from radarays_ros.validate import Rule

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


def get_value(spec: Mapping[str, Any], key: str, default: float) -> float:
    """The value of dotted `key` in a sensor mapping (`default` where the file leaves it out)."""
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
    """A copy of the sensor mapping with dotted `key` set (list elements keep their siblings)."""
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
    m = _INDEX.match(name)
    if m:
        return 0.0  # tof.bias elements
    kinds = {"surface": SurfaceConfig, "noise": NoiseConfig, "detection": DetectionConfig, "signal": SignalConfig}
    return float(getattr(kinds[section](), name))


R = SurfaceConfig.RULES
N = NoiseConfig.RULES

# The sensor stage of a spinning lidar, fitted from frames alone (held-fixed geometry; lidar_ros/fit/scene.py)
SENSOR_STAGE = (
    Param("signal scale K", "surface.signal_scale", R["signal_scale"], (1e2, 1e8), unit="photons at 1 m"),
    Param("ambient on surfaces", "surface.ambient_level", R["ambient_level"], (1.0, 65535.0), unit="photons",
          group="ambient"),
    Param("ambient of open sky", "surface.ambient_sky", R["ambient_sky"], (0.1, 65535.0), unit="photons",
          group="ambient"),
    # the noise statistic is a median (MAD) of 1 mm-quantised differences: piecewise constant, so a wide step
    Param("range noise sigma", "noise.sigma", N["sigma"], (1e-4, 0.5), unit="m", group="noise", fd_step=0.3),
    Param("range noise per metre", "noise.relative_sigma", N["relative_sigma"], (1e-5, 0.05), unit="m/m",
          off_start=1e-3, group="noise", fd_step=0.3),
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

# The parameters whose keys main does not have yet (lidarreal's branch adds them): name -> what
AWAITING = {
    "near-range overlap": "per-model receiver overlap (signal roll-off under ~2 m): signal_near_rolloff",
    "SNR-dependent range noise": "range sigma as a function of signal/SNR: range_noise_near_m vs _mid_m by signal",
    "SNR-based dropouts": "detection from signal SNR rather than the datasheet limit: valid_fraction, hole_at_far/dark",
    "reflectivity texture": "per-pixel reflectivity spread on one surface: reflectivity_texture",
    "near_ir model": "near-IR from sun + surface albedo per model: near_ir_p5/p50/p95, near_ir_row_banding",
    "per-model signal K": "a signal constant per sensor model in the presets (main: surface.signal_scale, fitted)",
}


def initial_values(spec: Mapping[str, Any], params) -> np.ndarray:
    """Start values: the file's (or the physics default), `off_start` for an effect that is off, inside the window."""
    out = []
    for p in params:
        v = get_value(spec, p.key, defaults_of(p.key))
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
