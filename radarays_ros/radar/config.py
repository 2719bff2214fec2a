"""Radar configuration: frozen dataclasses loaded from YAML and validated on load.

The YAML file has one mapping per section (the dataclass fields below); dotted keys such as
``beam.width_deg`` name a value for overrides (``--set beam.width_deg=10``, ROS parameters).
Defaults are the RadaRays ``cfg/RadarModel.cfg`` defaults, except that the
azimuth layout, which RadaRays hard-codes (400 columns at -0.9 deg), is configurable here.
Every field carries its allowed range or values; a bad value raises ConfigError naming the file,
the key and what is allowed; unknown keys are errors.
"""
from __future__ import annotations

import dataclasses
import math
import threading
from functools import lru_cache
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from ..config_file import parse_scalar, read_yaml
from ..errors import ConfigError
from ..resources import find_shipped, shipped_example, shipped_names
from .. import limits
from ..validate import Rule, plain

INF = math.inf


# Memory bounds of one frame (each key alone may be at its maximum, not all together): a Navtech-like
# 400 x 6848 image is 2.7 M cells, RadaRays' 400 x 10 beam 4000 rays. The bounds live in limits.py.
MAX_IMAGE_CELLS = limits.MAX_IMAGE_CELLS
MAX_FRAME_RAYS = limits.MAX_FRAME_RAYS
MAX_ENTITY_NAME = 512  # characters of interference.entity (a model::link::visual name)
MAX_INTERFERERS = 16  # radars listed in interference.others: each costs a line-of-sight trace per azimuth
MIN_RATE_HZ = 1e-6  # one sweep in 11.6 days: the period in int64 nanoseconds stays exact

def _f(default, kind, lo=None, hi=None, *, choices=None, nullable=False, lo_open=False, hi_open=False, doc=""):
    """A dataclass field with its validation rule in the metadata."""
    rule = dict(kind=kind, lo=lo, hi=hi, choices=choices, nullable=nullable, lo_open=lo_open, hi_open=hi_open, doc=doc)
    return field(default=default, metadata=rule)


@dataclass(frozen=True)
class AzimuthConfig:
    count: int = _f(400, int, 1, 100_000, doc="azimuth columns per sweep (1 = non-rotating radar)")
    start_deg: float = _f(0.0, float, -360.0, 360.0, doc="azimuth of column 0, from sensor +x, counter-clockwise")
    step_deg: float = _f(-0.9, float, -360.0, 360.0, doc="azimuth increment per column (RadaRays: -0.9, clockwise)")
    scroll: int = _f(0, int, 0, 100_000, doc="output column of azimuth k is (scroll + k) % count")
    rate_hz: float = _f(4.0, float, MIN_RATE_HZ, 1000.0, doc="sweeps per second; azimuth k fires at t0 + k/(count*rate)")
    time_jitter_s: float = _f(0.0, float, 0.0, 1e-2, doc="physical: std of each azimuth's firing time about t0 + k/(count*rate) "
                              "(motor speed wobble, seeded); the antenna's angle follows (encoder values jitter)")


@dataclass(frozen=True)
class RangeConfig:
    resolution: float = _f(0.0438, float, 0.0, 100.0, lo_open=True, doc="metres per range bin")
    bins: int = _f(3424, int, 1, 1_000_000, doc="range bins (image rows)")
    max_range: float | None = _f(None, float, 0.0, 100_000.0, nullable=True, lo_open=True,
                                 doc="when set, bins = ceil(max_range / resolution) (overrides bins)")
    offset: float = _f(0.0, float, -1000.0, 1000.0, doc="metres subtracted from every apparent range")
    write_bin_zero: bool = _f(False, bool, doc="RadaRays never writes row 0 when spreading (false = as original)")

    @property
    def n_bins(self) -> int:
        if self.max_range is not None:  # a tiny resolution makes a huge (even infinite) ratio: capped
            ratio = min(self.max_range / self.resolution - 1e-9, 2.0**62)  # here, refused by the config check
            return max(1, int(math.ceil(ratio)))
        return self.bins


DISTRIBUTIONS = ("D1", "D2", "D3", "D4")


@dataclass(frozen=True)
class BeamConfig:
    width_deg: float = _f(8.0, float, 0.0, 180.0, lo_open=True, doc="full beam width (circular beam)")
    width_h_deg: float | None = _f(None, float, 0.0, 180.0, nullable=True, lo_open=True, doc="horizontal width (elliptic beam)")
    width_v_deg: float | None = _f(None, float, 0.0, 180.0, nullable=True, lo_open=True, doc="vertical width (elliptic beam)")
    samples: int = _f(10, int, 1, 1_000_000, doc="rays per azimuth (Ns)")
    distribution: str = _f("D3", str, choices=DISTRIBUTIONS, doc="sample density D1..D4 (Mock et al., RadaRays, RA-L 2025, beam densities; RadaRays' numbering 0..3)")
    p_in_cone: float = _f(0.8, float, 0.0, 1.0, lo_open=True, hi_open=True, doc="D3/D4: probability of a sample inside the beam")
    gain_weighting: bool = _f(False, bool, doc="weight samples by a Gaussian two-way antenna gain (not in RadaRays)")
    redraw: str = _f("cached", str, choices=("cached", "per_frame"), doc="cone drawn once (CPU RadaRays) or every frame (GPU)")

    @property
    def widths_rad(self) -> tuple[float, float]:
        """(horizontal, vertical) full widths in radians."""
        h = self.width_h_deg if self.width_h_deg is not None else self.width_deg
        v = self.width_v_deg if self.width_v_deg is not None else self.width_deg
        return math.radians(h), math.radians(v)


@dataclass(frozen=True)
class TracingConfig:
    passes: int = _f(4, int, 1, 32, doc="ray-cast passes (n_reflections; 1 = first hit only)")
    energy_threshold: float = _f(0.001, float, 0.0, 1.0, hi_open=True, doc="waves and signals at or below this energy are dropped")
    skip_distance: float = _f(0.001, float, 0.0, 1.0, doc="metres a new wave moves off the surface before its next cast")
    max_distance: float = _f(1000.0, float, 0.0, 1e7, lo_open=True, doc="metres a ray is traced (RadaRays: 1000)")
    polarization: float = _f(0.5, float, 0.0, 1.0, doc="weight of the s-polarised part in the Fresnel split")


@dataclass(frozen=True)
class ReturnsConfig:
    multi_reflection: bool = _f(True, bool, doc="record back-path returns of later passes (ghosts at total path length)")
    multipath: bool = _f(False, bool, doc="record returns through air straight back to the sensor (pass > 0)")
    multipath_threshold: float = _f(0.5, float, -1.0, 1.0, doc="multipath gate on dot(incoming dir, sensor->hit dir)")
    occlusion_test: bool = _f(False, bool, doc="multipath returns need a free line of sight to the sensor (one extra trace)")
    keep: bool = _f(False, bool, doc="keep the list of raw returns in RadarImage.returns")


KERNELS = ("none", "triangular", "gaussian", "maxwell_boltzmann")


@dataclass(frozen=True)
class KernelConfig:
    type: str = _f("triangular", str, choices=KERNELS, doc="range spread ('measurement noise' of Mock et al., RadaRays, RA-L 2025: a blur along range)")
    width: int = _f(50, int, 1, 100_000, doc="kernel length in bins")
    mode: float = _f(0.35, float, 0.0, 1.0, doc="peak position as a fraction of the width")
    gaussian_sigma: float | None = _f(None, float, 0.0, 100_000.0, nullable=True, lo_open=True, doc="gaussian: sigma in bins (default width/6)")


@dataclass(frozen=True)
class NoiseConfig:
    ambient: str = _f("perlin", str, choices=("none", "uniform", "perlin"), doc="ambient noise model (Mock et al., RadaRays, RA-L 2025: uniform or Perlin)")
    at_signal_0: float = _f(0.3, float, 0.0, 100.0, doc="noise amplitude (x column max) where there is no signal")
    at_signal_1: float = _f(0.03, float, 0.0, 100.0, doc="noise amplitude (x column max) on the strongest signal")
    energy_max: float = _f(0.5, float, 0.0, 100.0, doc="noise floor at range 0 (x column max)")
    energy_min: float = _f(0.1, float, 0.0, 100.0, doc="noise floor far away (x column max)")
    energy_loss: float = _f(0.05, float, 0.0, 100.0, doc="noise floor decay per metre")
    perlin_scale_low: float = _f(0.05, float, 0.0, 100.0, lo_open=True, doc="low-frequency Perlin scale per bin/column")
    perlin_scale_high: float = _f(0.2, float, 0.0, 100.0, lo_open=True, doc="high-frequency Perlin scale per bin/column")
    perlin_p_low: float = _f(0.9, float, 0.0, 1.0, doc="weight of the low-frequency octave")
    perlin_coherent: bool = _f(False, bool, doc="one Perlin offset per frame (smooth across azimuth) instead of one per column")
    system_std: float = _f(0.0, float, 0.0, 1000.0, doc="std of white Gaussian noise added to the output image (output units)")


NORMALISATIONS = ("radarays", "gazebo", "global", "db")


@dataclass(frozen=True)
class OutputConfig:
    normalisation: str = _f("radarays", str, choices=NORMALISATIONS, doc="per-column (RadaRays CPU), Gazebo plugin, whole frame, or dB")
    energy_max: float = _f(0.5, float, 0.0, 100.0, doc="the strongest return of a column maps to energy_max * signal_max")
    signal_max: float = _f(120.0, float, 0.0, 1e6, lo_open=True, doc="output value of a column maximum of 1")
    db_reference: float = _f(1.0, float, 0.0, 1e30, lo_open=True, doc="db: energy E0 that maps to 255 (1 = one emitted sample)")
    db_range: float = _f(60.0, float, 0.0, 1000.0, lo_open=True, doc="db: dB below E0 that map to 0 (cut-off)")
    radar_equation: bool = _f(False, bool, doc="scale returns by (reference_range / R)^4 (absolute power)")
    reference_range: float = _f(1.0, float, 0.0, 1e6, lo_open=True, doc="metres at which the radar equation factor is 1")


# -- the physical sensor stage (radar/physical/; used when sensor.model = physical) ----------------
@dataclass(frozen=True)
class SensorConfig:
    model: str = _f("radarays", str, choices=("radarays", "physical"),
                    doc="sensor stage: radarays (the RadaRays images, bit for bit) or physical (radar/physical/)")


PATTERNS = ("gaussian", "sinc")


@dataclass(frozen=True)
class AntennaConfig:
    azimuth_pattern: str = _f("sinc", str, choices=PATTERNS, doc="one-way azimuth pattern shape (physical)")
    azimuth_width_deg: float = _f(1.8, float, 0.0, 90.0, lo_open=True, doc="one-way -3 dB azimuth width (Navtech 1.8)")
    elevation_pattern: str = _f("gaussian", str, choices=PATTERNS, doc="one-way elevation pattern shape")
    elevation_width_deg: float = _f(25.0, float, 0.0, 120.0, lo_open=True, doc="one-way -3 dB elevation width (fan)")
    elevation_tilt_deg: float = _f(0.0, float, -45.0, 45.0, doc="boresight elevation above the horizontal plane")
    cosec2: bool = _f(False, bool, doc="cosec^2 fill below the main lobe (gain ~ 1/sin^2 of the depression)")
    gain_dbi: float = _f(30.0, float, 0.0, 60.0, doc="peak one-way gain (Tx = Rx)")
    azimuth_extent: float = _f(4.0, float, 1.0, 20.0, doc="sampled half-extent in azimuth, in one-way widths (sidelobes)")
    elevation_extent: float = _f(1.6, float, 0.5, 5.0, doc="sampled half-extent in elevation, in one-way widths")
    samples_azimuth: int = _f(8, int, 1, 4096, doc="azimuth strata per azimuth column (importance-sampled)")
    samples_elevation: int = _f(24, int, 1, 4096, doc="elevation strata per azimuth column (importance-sampled)")


WINDOWS = ("rectangular", "hann", "hamming", "blackman")
CHIRPS = ("up", "down", "alternating")


@dataclass(frozen=True)
class FmcwConfig:
    carrier_hz: float = _f(76.5e9, float, 1e9, 1e12, doc="carrier frequency (Navtech 76-77 GHz)")
    bandwidth_hz: float = _f(1.0e9, float, 1e6, 1e11, doc="sweep bandwidth B: range resolution c / (2 B)")
    chirp_time_s: float = _f(6.0e-4, float, 1e-7, 1.0, doc="chirp duration T (slope B / T; noise bandwidth 1 / T)")
    window: str = _f("hann", str, choices=WINDOWS, doc="range FFT window (main lobe and sidelobes)")
    response_half_width: float = _f(8.0, float, 1.0, 64.0, doc="range response kept to +- this many resolutions")
    chirp: str = _f("up", str, choices=CHIRPS, doc="chirp direction; alternating = up on even azimuths (Navtech RAS6)")
    doppler: bool = _f(False, bool, doc="range-Doppler coupling: shift v f_c T / B, sign by chirp direction")
    velocity_channel: bool = _f(False, bool, doc="RadarImage.velocity: power-weighted radial velocity per cell")


@dataclass(frozen=True)
class ReceiverConfig:
    transmit_power_dbm: float = _f(15.0, float, -50.0, 60.0, doc="transmit power")
    noise_figure_db: float = _f(12.0, float, 0.0, 50.0, doc="receiver noise figure F")
    temperature_k: float = _f(290.0, float, 1.0, 1000.0, doc="reference temperature of kTB")
    noise_dbm: float | None = _f(None, float, -250.0, 50.0, nullable=True, doc="noise per range bin (overrides k T F / T_chirp)")
    system_loss_db: float = _f(3.0, float, 0.0, 100.0, doc="losses L of the radar equation")
    stc_range_m: float = _f(0.0, float, 0.0, 10_000.0, doc="sensitivity-time control: 40 log10(R/R_stc) dB below this range (0 = off)")
    stc_max_db: float = _f(40.0, float, 0.0, 200.0, doc="largest STC attenuation")
    leakage_dbm: float | None = _f(None, float, -250.0, 50.0, nullable=True, doc="Tx-Rx leakage power at leakage_range_m (null = none)")
    leakage_range_m: float = _f(0.3, float, 0.0, 100.0, doc="apparent range of the leakage")
    zero_dbm: float = _f(-140.0, float, -300.0, 100.0, doc="power that reads 0 counts")
    db_per_count: float = _f(0.5, float, 0.01, 100.0, doc="log detector step (Navtech: 0.5 dB per count)")
    # the receiver chain (physical/receiver_chain.py); the defaults keep the plain model (STC on everything)
    thermal_noise_at: str = _f("input", str, choices=("input", "if"),
                               doc="thermal noise enters before the STC/IF filters (input) or after them (if)")
    phase_noise_dbc_hz: float | None = _f(None, float, -200.0, 0.0, nullable=True,
                                          doc="synthesiser SSB phase noise at phase_noise_offset_hz (dBc/Hz): the leakage's skirt (null = none)")
    phase_noise_offset_hz: float = _f(1.0e6, float, 1.0, 1e10, doc="offset of phase_noise_dbc_hz")
    flicker_corner_hz: float = _f(0.0, float, 0.0, 1e10, doc="phase noise flicker (1/f^3) corner: below it the skirt falls 10 dB/decade")
    phase_noise_targets: bool = _f(False, bool, doc="every return carries its residual phase-noise skirt along its range line (needs phase_noise_dbc_hz)")
    highpass_range_m: float = _f(0.0, float, 0.0, 10_000.0, doc="IF high-pass (range compensation) corner, as the range of its beat frequency (0 = none)")
    highpass_order: int = _f(2, int, 1, 8, doc="Butterworth order of the high-pass (2: 40 dB/decade, the R^-4 law)")
    lowpass_range_m: float = _f(0.0, float, 0.0, 100_000.0, doc="IF anti-alias low-pass corner, as a range (0 = none)")
    lowpass_order: int = _f(4, int, 1, 16, doc="Butterworth order of the anti-alias low-pass")
    full_scale_dbm: float | None = _f(None, float, -200.0, 60.0, nullable=True,
                                      doc="input power of a tone at ADC full scale: stronger rows clip (spokes); null = no clipping")
    adc_samples: int | None = _f(None, int, 2, 10_000_000, nullable=True,
                                 doc="real ADC samples per chirp (null: Nyquist at the last bin, 2 R_max / (c / 2B))")
    leakage_spread_m: float = _f(0.0, float, 0.0, 100.0, doc="leakage as a speckled plateau this wide around leakage_range_m (0 = a point)")
    integer_power: bool = _f(False, bool, doc="FFT power in integer steps of the zero_dbm level before the log (a comb at low counts, exact zeros)")


@dataclass(frozen=True)
class ScatterConfig:
    table: str = _f("backscatter_77ghz", str, doc="sigma0(theta) classes: a preset name or YAML file (physical)")
    default_class: str = _f("concrete", str, doc="class of materials whose name matches no class")
    speckle: bool = _f(True, bool, doc="random complex amplitudes of distributed clutter (false: expected power)")
    azimuth_correlation: bool = _f(True, bool, doc="clutter field correlated between azimuths by the beam overlap")
    specular_bounces: int = _f(2, int, 0, 5, doc="mirror bounces traced after the first hit (ghosts, corners)")
    multipath: bool = _f(True, bool, doc="clutter after a mirror also returns straight to the sensor (bistatic)")
    occlusion_test: bool = _f(True, bool, doc="a bistatic return needs a free line of sight back (one extra trace)")
    mirror_ghosts: bool = _f(False, bool, doc="physical: every scatterer's image in each large vertical flat face (walls, windows >= 4 m^2): multipath ghosts behind building faces, deterministic (physical/mirror_ghosts.py)")
    moving_entities: str = _f("frame", str, choices=("frame", "sweep"),
                              doc="physical: entities whose twist moves them are seen where they are at the frame's start "
                              "(frame) or at each azimuth's time (sweep: a passing car stretched or squeezed over the "
                              "sweep, as a spinning radar sees it; embree or warp backend)")


@dataclass(frozen=True)
class InterferenceConfig:
    preset: str = _f("", str, doc="physical: another spinning FMCW radar nearby, a radar preset name or YAML file ('' = none): "
                     "its chirps crossing ours give the radial spokes of mutual interference (physical/interference.py)")
    entity: str = _f("", str, doc="the scene entity that carries it: a model name (its first entity) or a model::link::visual "
                     "name ('' = fixed in the world); it then moves with that entity (a scenario's entities, a Gazebo "
                     "model) and its carrier never blocks its signal; absent from the scene: no interference that frame")
    on_sensor: bool = _f(False, bool, doc="it is mounted on our own platform: x/y/z/heading in our sensor's frame (another "
                         "radar of the same rig, moving and turning with ours; not with entity)")
    x_m: float = _f(0.0, float, -1e6, 1e6, doc="its antenna's position, x (m): in the world frame, entity's frame or our sensor's frame")
    y_m: float = _f(0.0, float, -1e6, 1e6, doc="its antenna's position, y (m): in the world frame, entity's frame or our sensor's frame")
    z_m: float = _f(0.0, float, -1e6, 1e6, doc="its antenna's position, z (m): in the world frame, entity's frame or our sensor's frame")
    heading_deg: float = _f(0.0, float, -360.0, 360.0, doc="its azimuth 0 direction (from +x, counter-clockwise) in the world, "
                            "entity's frame or our sensor's frame")
    clock_offset_s: float | None = _f(None, float, 0.0, 1e6, nullable=True,
                                      doc="when its azimuth 0 chirp starts on our clock, modulo its sweep (null: "
                                      "unsynchronised, drawn per frame from the seed)")
    others: str = _f("", str, doc="physical: a YAML file listing more radars nearby, each a mapping of the keys above (preset, "
                     f"entity or on_sensor, x_m, y_m, z_m, heading_deg, clock_offset_s), at most {MAX_INTERFERERS} ('' = none)")


SECTIONS = {
    "azimuth": AzimuthConfig,
    "range": RangeConfig,
    "beam": BeamConfig,
    "tracing": TracingConfig,
    "returns": ReturnsConfig,
    "kernel": KernelConfig,
    "noise": NoiseConfig,
    "output": OutputConfig,
    "sensor": SensorConfig,
    "antenna": AntennaConfig,
    "fmcw": FmcwConfig,
    "receiver": ReceiverConfig,
    "scatter": ScatterConfig,
    "interference": InterferenceConfig,
}
_DISTRIBUTION_ALIASES = {0: "D1", 1: "D2", 2: "D3", 3: "D4"}
_CHECKING = threading.local()  # .interferer: an interference.preset is being loaded on this thread


@dataclass(frozen=True)
class RadarConfig:
    """Everything the radar model needs; see radarays_ros/data/radar/radarays_default.yaml for every key."""

    azimuth: AzimuthConfig = field(default_factory=AzimuthConfig)
    range: RangeConfig = field(default_factory=RangeConfig)
    beam: BeamConfig = field(default_factory=BeamConfig)
    tracing: TracingConfig = field(default_factory=TracingConfig)
    returns: ReturnsConfig = field(default_factory=ReturnsConfig)
    kernel: KernelConfig = field(default_factory=KernelConfig)
    noise: NoiseConfig = field(default_factory=NoiseConfig)
    output: OutputConfig = field(default_factory=OutputConfig)
    sensor: SensorConfig = field(default_factory=SensorConfig)
    antenna: AntennaConfig = field(default_factory=AntennaConfig)
    fmcw: FmcwConfig = field(default_factory=FmcwConfig)
    receiver: ReceiverConfig = field(default_factory=ReceiverConfig)
    scatter: ScatterConfig = field(default_factory=ScatterConfig)
    interference: InterferenceConfig = field(default_factory=InterferenceConfig)
    seed: int = 0
    origin: str = field(default="<defaults>", compare=False)

    # -- loading --------------------------------------------------------------------------------
    @classmethod
    def from_yaml(cls, path: str | Path, overrides: Mapping[str, Any] | None = None) -> "RadarConfig":
        """Read a YAML file (sections as in to_dict()), then apply dotted-key overrides."""
        path = Path(path)
        data = read_yaml(path, "radar config")
        config = cls.from_dict(data or {}, origin=str(path))
        return config.with_overrides(overrides) if overrides else config

    @classmethod
    def from_dict(cls, data: Any, origin: str = "<dict>") -> "RadarConfig":
        """Build and validate from a nested mapping {section: {key: value}, seed: n}; missing keys keep defaults."""
        if not isinstance(data, Mapping):
            raise ConfigError(f"radar config {origin}: expected a mapping of sections {sorted(SECTIONS)} and 'seed'")
        allowed = set(SECTIONS) | {"seed"}
        unknown = sorted(set(map(str, data)) - allowed)
        if unknown:
            raise ConfigError(f"radar config {origin}: unknown key(s) {unknown}; allowed: {sorted(allowed)}")
        kwargs: dict[str, Any] = {}
        for name, section_cls in SECTIONS.items():
            raw = data.get(name) or {}
            if not isinstance(raw, Mapping):
                raise ConfigError(f"radar config {origin}: '{name}' must be a mapping of keys to values")
            kwargs[name] = _build_section(section_cls, name, raw, origin)
        kwargs["seed"] = _check_value("seed", data.get("seed", 0), dict(kind=int, lo=0, hi=2**63 - 1, choices=None,
                                      nullable=False, lo_open=False, hi_open=False), origin)
        config = cls(**kwargs, origin=origin)
        config._check_consistency()
        return config

    def with_overrides(self, overrides: Mapping[str, Any] | None) -> "RadarConfig":
        """A copy with dotted keys replaced, e.g. {"beam.width_deg": "10"}; strings are parsed as YAML scalars."""
        if not overrides:
            return self
        data = self.to_dict()
        for key, value in overrides.items():
            parts = str(key).split(".")
            value = parse_scalar(value)  # "10" -> 10, "1e-7" -> 1e-07, "true" -> True
            if parts == ["seed"]:
                data["seed"] = value
                continue
            if len(parts) != 2 or parts[0] not in SECTIONS:
                raise ConfigError(f"radar config override '{key}': expected section.key with section one of {sorted(SECTIONS)} (or 'seed')")
            keys = [f.name for f in dataclasses.fields(SECTIONS[parts[0]])]
            if parts[1] not in keys:
                raise ConfigError(f"radar config override '{key}': unknown key; {parts[0]} has {keys}")
            data[parts[0]][parts[1]] = value
        return RadarConfig.from_dict(data, origin=f"{self.origin} + overrides")

    def to_dict(self) -> dict:
        """Nested plain dict, the same shape from_dict reads."""
        out: dict[str, Any] = {name: dataclasses.asdict(getattr(self, name)) for name in SECTIONS}
        out["seed"] = self.seed
        return out

    @staticmethod
    def keys() -> dict[str, str]:
        """Every dotted key with its documentation (for ROS parameter descriptors and --help)."""
        return {f"{s}.{f.name}": f.metadata.get("doc", "") for s, c in SECTIONS.items() for f in dataclasses.fields(c)} | {"seed": "random seed"}

    # -- derived --------------------------------------------------------------------------------
    @property
    def n_azimuths(self) -> int:
        return self.azimuth.count

    @property
    def n_bins(self) -> int:
        return self.range.n_bins

    def _check_consistency(self) -> None:
        a = self.azimuth
        where = f"radar config {self.origin}"
        limits.check_product(where, {"azimuth.count": a.count, "range bins": self.n_bins}, MAX_IMAGE_CELLS, "cells")
        rays = limits.check_product(where, {"azimuth.count": a.count, "beam.samples": self.beam.samples},
                                    MAX_FRAME_RAYS, "rays per frame")
        limits.check_product(where, {"rays": rays, "tracing.passes": self.tracing.passes},
                             MAX_FRAME_RAYS * 8, "ray bounces per frame")
        if self.sensor.model == "physical":
            limits.check_product(where, {"azimuth.count": a.count, "antenna.samples_azimuth": self.antenna.samples_azimuth,
                                         "antenna.samples_elevation": self.antenna.samples_elevation},
                                 MAX_FRAME_RAYS, "rays per frame")
        n = self.noise
        if n.energy_min > n.energy_max:
            raise ConfigError(f"radar config {self.origin}: noise.energy_min ({n.energy_min}) must be <= noise.energy_max ({n.energy_max})")
        self._check_interferer(self.interference, f"{where}: ", "interference.", required=False)
        if self.interference.others:
            for k, spec in enumerate(other_interferers(self.interference.others)):
                self._check_interferer(spec, f"{where}: interference.others = {self.interference.others}, radar {k}: ", "")
        if self.sensor.model == "physical":
            resolution = 299_792_458.0 / (2.0 * self.fmcw.bandwidth_hz)
            if self.range.resolution > resolution * (1 + 1e-9):
                raise ConfigError(f"radar config {self.origin}: range.resolution = {self.range.resolution}: the FFT bins "
                                  f"must be <= the physical resolution c/(2 fmcw.bandwidth_hz) = {resolution:.5g} m")

    def _check_interferer(self, spec: "InterferenceConfig", where: str, key: str, required: bool = True) -> None:
        """One other radar (the interference section, or an entry of its others file: `where` says which, `key`
        prefixes its keys): its preset only with the physical stage and a radar config that loads, placed in one
        frame, its carrier a name; `required`: it must name a radar (the section need not: its others file may).
        The other radar's own interference section is never used, so it is not followed (two files naming each
        other would recurse)."""
        placed = "entity" if spec.entity else "on_sensor" if spec.on_sensor else ""
        if not spec.preset:
            if placed:
                raise ConfigError(f"{where}{key}{placed} = {plain(getattr(spec, placed))} places another radar, but "
                                  f"{key}preset (that radar) is not set")
            if not required:
                return
            raise ConfigError(f"{where}{key}preset: required (the other radar's preset name or YAML file)")
        if self.sensor.model != "physical":
            raise ConfigError(f"{where}{key}preset = '{spec.preset}' needs sensor.model: physical "
                              f"(the RadaRays stage has no receiver to interfere with)")
        if spec.entity and spec.on_sensor:
            raise ConfigError(f"{where}{key}entity = {plain(spec.entity)} and {key}on_sensor = true: the "
                              "other radar rides on that entity or on our platform, not both")
        if len(spec.entity) > MAX_ENTITY_NAME or not spec.entity.isprintable():
            raise ConfigError(f"{where}{key}entity = {plain(spec.entity)}: not an entity name "
                              f"(printable text of at most {MAX_ENTITY_NAME} characters)")
        if getattr(_CHECKING, "interferer", False):
            return
        _CHECKING.interferer = True
        try:
            resolve_radar_config(spec.preset)
        except ConfigError as exc:
            raise ConfigError(f"{where}{key}preset = '{spec.preset}': {exc}") from None
        finally:
            _CHECKING.interferer = False


def file_version(name: str) -> int:
    """A key that changes when the file `name` is edited (its modification time; 0 for a preset name, no file): what
    the caches of files read per frame are keyed by, so that a file edited under a running node is read again."""
    path = Path(name)
    return path.stat().st_mtime_ns if path.is_file() else 0


def other_interferers(path: str) -> tuple:
    """The InterferenceConfig of each radar listed in an interference.others file (read once per file version)."""
    return _interferer_list(str(path), file_version(path))


@lru_cache(maxsize=8)
def _interferer_list(path: str, version: int) -> tuple:
    what = "radar config interference.others"
    data = read_yaml(path, what)
    if not isinstance(data, list) or not data or len(data) > MAX_INTERFERERS:
        raise ConfigError(f"{what} {path}: expected a list of 1 to {MAX_INTERFERERS} radars, each a mapping of "
                          "preset, entity or on_sensor, x_m, y_m, z_m, heading_deg, clock_offset_s")
    specs = []
    for k, item in enumerate(data):
        if not isinstance(item, Mapping) or "others" in item:
            raise ConfigError(f"{what} {path}: radar {k}: expected a mapping of the interference keys but others "
                              "(a list does not name further lists)")
        specs.append(_build_section(InterferenceConfig, "interference", item, f"{path} radar {k}"))
    return tuple(specs)


def _build_section(section_cls, name: str, raw: Mapping, origin: str):
    fields = {f.name: f for f in dataclasses.fields(section_cls)}
    unknown = sorted(set(map(str, raw)) - set(fields))
    if unknown:
        raise ConfigError(f"radar config {origin}: unknown key(s) {[f'{name}.{k}' for k in unknown]}; {name} allows {sorted(fields)}")
    values = {}
    for key, value in raw.items():
        rule = fields[key].metadata
        if name == "beam" and key == "distribution" and isinstance(value, int) and not isinstance(value, bool):
            value = _DISTRIBUTION_ALIASES.get(value, value)  # RadaRays' beam_sample_dist 0..3
        values[key] = _check_value(f"{name}.{key}", value, rule, origin)
    return section_cls(**values)


def _check_value(key: str, value: Any, rule: Mapping, origin: str):
    """One key against its field rule, in the package's one rule vocabulary (radarays_ros.validate)."""
    return Rule(kind=rule["kind"], lo=rule["lo"], hi=rule["hi"], lo_open=rule["lo_open"], hi_open=rule["hi_open"],
                choices=tuple(rule["choices"] or ()), nullable=bool(rule.get("nullable")),
                doc=rule.get("doc", "")).check(value, f"radar config {origin}: {key}")


def resolve_radar_config(source: str | Path, overrides: Mapping[str, Any] | None = None):
    """RadarConfig from a preset name (package data radar/NAME.yaml) or a YAML path, plus dotted overrides
    (as lidar_ros.config.load_sensor is for lidar presets)."""
    text = str(source or "radarays_default")
    path = Path(text)
    if not path.is_file() and find_shipped("radar", text) is None and shipped_example(text) is not None:
        path = shipped_example(text)  # `radarays_compat`: the shipped example config of that name
    elif not path.suffix and not path.is_file():
        path = find_shipped("radar", text)
        if path is None:
            presets = shipped_names("radar")
            raise ConfigError(f"unknown radar config '{text}': not a file and not a preset; presets: {', '.join(presets)}")
    return RadarConfig.from_yaml(path, dict(overrides or {}))
