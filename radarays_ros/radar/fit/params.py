"""The registry of fittable radar parameters: name -> config key, search bounds, transform.

A parameter is one line (`Param("floor", "receiver.noise_figure_db")`); its hard bounds are the config
validator's rule for that key (radar/config.py field metadata, the one vocabulary of radarays_ros/validate.py),
narrowed by an optional search range where the validator allows values no sensor has (a 1 MHz sweep,
noise figures of 50 dB). The optimiser works on transformed coordinates (`log` for scale-like keys) scaled
to [0, 1] over the search range, so every parameter moves on the same footing.

New receiver keys (the chain of issue #22: floor shape, compression, range resolution) are added by one
line each in SENSOR_PARAMS once they exist in ReceiverConfig; `available()` drops entries whose key the
running config does not have, so the registry may name keys before they land.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from ...errors import ConfigError
from ..config import SECTIONS, RadarConfig

TRANSFORMS = ("identity", "log")


@dataclass(frozen=True)
class Param:
    """One fittable scalar: `key` is the dotted config key; `search` (lo, hi) narrows the validator's range."""

    key: str
    transform: str = "identity"
    search: tuple[float, float] | None = None
    what: str = ""  # what the parameter shapes in the image, for reports
    default: bool = True  # fitted unless --params names the keys (False: a datasheet constant, fitted on request)

    @property
    def name(self) -> str:
        return self.key

    def rule(self) -> dict:
        section, _, key = self.key.partition(".")
        fields = {f.name: f for f in dataclasses.fields(SECTIONS[section])}
        return dict(fields[key].metadata)

    def bounds(self) -> tuple[float, float]:
        """(lo, hi): the search range within the validator's closed range (an open end moved in by 1e-9 relative)."""
        rule = self.rule()
        lo, hi = rule["lo"], rule["hi"]
        lo = -math.inf if lo is None else (lo + abs(lo) * 1e-9 + 1e-300 if rule["lo_open"] else lo)
        hi = math.inf if hi is None else (hi - abs(hi) * 1e-9 if rule["hi_open"] else hi)
        if self.search is not None:
            lo, hi = max(lo, self.search[0]), min(hi, self.search[1])
        return float(lo), float(hi)

    # -- optimiser coordinates: transformed and scaled to [0, 1] over the bounds ---------------------
    def _t(self, value: float) -> float:
        return math.log(value) if self.transform == "log" else value

    def _t_inv(self, value: float) -> float:
        return math.exp(value) if self.transform == "log" else value

    def to_unit(self, value: float) -> float:
        lo, hi = (self._t(b) for b in self.bounds())
        return (self._t(value) - lo) / (hi - lo)

    def from_unit(self, u: float) -> float:
        lo, hi = (self._t(b) for b in self.bounds())
        value = self._t_inv(lo + min(max(u, 0.0), 1.0) * (hi - lo))
        b_lo, b_hi = self.bounds()
        return min(max(value, b_lo), b_hi)

    def get(self, config: RadarConfig) -> float:
        section, _, key = self.key.partition(".")
        return getattr(getattr(config, section), key)


C = 299_792_458.0

# The receiver chain of the physical stage, in the order the fit tries them (an earlier parameter wins
# when two are confounded: the later one is reported as such and kept at the preset value).
SENSOR_PARAMS = (
    Param("receiver.noise_figure_db", search=(0.0, 40.0), what="noise floor level (thermal noise k T F / T)"),
    Param("receiver.stc_range_m", search=(0.5, 200.0), what="floor shape over range: STC / IF high-pass corner"),
    Param("receiver.stc_max_db", search=(0.0, 80.0), what="floor shape over range: deepest STC attenuation"),
    Param("receiver.leakage_dbm", search=(-140.0, 0.0), what="Tx-Rx leakage level at near range"),
    Param("receiver.leakage_range_m", search=(0.0, 5.0), what="Tx-Rx leakage apparent range"),
    Param("fmcw.bandwidth_hz", transform="log", search=(1e8, 1e10), what="effective range resolution c / 2B (range correlation)"),
    Param("receiver.db_per_count", transform="log", search=(0.1, 2.0), what="detector step: spread of speckle in counts (Navtech SDK: 0.5)",
          default=False),
    Param("receiver.zero_dbm", search=(-220.0, -80.0), what="detector zero = receiver gain (level of everything)"),
    # the receiver chain of issue #22 (radarchain): named here, used where the config has them; on request
    # (--params) until their recovery is tested like the keys above
    Param("receiver.highpass_range_m", search=(0.5, 200.0), what="floor shape: IF high-pass corner as a range"),
    Param("receiver.lowpass_range_m", search=(1.0, 100_000.0), transform="log", what="far floor roll-off: anti-alias low-pass",
          default=False),
    Param("receiver.leakage_spread_m", search=(0.0, 5.0), what="width of the near-range leakage plateau", default=False),
    Param("receiver.full_scale_dbm", search=(-100.0, 20.0), what="ADC full scale: compression / saturation spokes",
          default=False),
    Param("receiver.phase_noise_dbc_hz", search=(-160.0, -40.0), what="phase-noise skirt level around strong returns",
          default=False),
    # on request: a quiet frame's floor is noise and phase-noise skirts, drawn anew each chirp (one per azimuth), so
    # its azimuth correlation hardly depends on the beam width; fit it with a scene (clutter) or --params
    Param("antenna.azimuth_width_deg", transform="log", search=(0.3, 10.0), what="azimuth correlation of clutter (none in noise)",
          default=False),
)

# RadaRays-compatible materials (radar/materials.py): velocity v (m/ns) and the radarays BRDF's A, B, C
# (RadaRays' paper: v, A, S (B here), C); bounds from radar/brdf.py's parameter table and AIR_VELOCITY.
MATERIAL_KEYS = ("velocity", "A", "B", "C")


def defaults(params=SENSOR_PARAMS) -> list[Param]:
    return [p for p in params if p.default]


def available(params, config: RadarConfig) -> list[Param]:
    """The registry entries whose key exists in this config and is set inside its search range (keys of a
    newer chain may be named early; a key left null or off, e.g. no phase noise or stc_range_m 0 where the
    IF high-pass shapes the floor, has no value to start from: set it to fit it)."""
    out = []
    for p in params:
        section, _, key = p.key.partition(".")
        if section in SECTIONS and key in {f.name for f in dataclasses.fields(SECTIONS[section])} \
                and p.get(config) is not None and p.bounds()[0] <= p.get(config) <= p.bounds()[1]:
            out.append(p)
    return out


def select(names, params=SENSOR_PARAMS) -> list[Param]:
    """Registry entries by key (or a unique suffix: `noise_figure_db`); ConfigError naming the known keys."""
    out = []
    for name in names:
        hits = [p for p in params if p.key == name or p.key.endswith("." + name)]
        if len(hits) != 1:
            raise ConfigError(f"fit parameter {name!r}: {'ambiguous' if hits else 'unknown'}; "
                              f"known: {', '.join(p.key for p in params)}")
        out.append(hits[0])
    return out


def apply(config: RadarConfig, params, values) -> RadarConfig:
    """A copy of config with each parameter set (validated by the config itself: a value the validator
    refuses raises ConfigError). The physical range-resolution rule clips fmcw.bandwidth_hz to c / 2 res."""
    overrides = {}
    for p, v in zip(params, values):
        if p.key == "fmcw.bandwidth_hz":
            v = min(float(v), C / (2.0 * config.range.resolution) * (1 - 1e-12))
        overrides[p.key] = float(v)
    return config.with_overrides(overrides) if overrides else config
