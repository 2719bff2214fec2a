"""Configuration of the lidar effects beyond the surface model: beam footprint and echoes, detection
probability, photon counts and ambient light, weather, time-of-flight ambiguity.

Each is a frozen dataclass built from its own section of a sensor file with `from_dict` (every key
checked, errors name the key and the allowed values). Every default is off, so a sensor without these
sections is exactly the geometric sensor of before. Example::

    beam:                        # footprint.py, echoes.py
      divergence_mrad: 3.0       # full angle of the beam cone (datasheet); 0 = a thin ray
      sub_rays: 4                # rays traced per beam over its footprint (1 = the central ray only)
      profile: gaussian          # uniform | gaussian (1/e² diameter = the divergence cone)
      return_mode: strongest     # strongest | last | first | dual (strongest + last) | mixed |
                                 # dual_strongest (strongest + second strongest: Ouster's *_DUAL profiles) |
                                 # dual_first (strongest + first: Hesai's first + strongest dual mode)
      echo_separation_m: 0.5     # sub-returns nearer to each other than this form one echo
    detection:                   # detection_probability.py
      model: threshold           # threshold (hard range–reflectivity limit) | snr (smooth curve)
      snr_at_limit: 4.0          # threshold / noise σ at the limit curve: steepness of the curve
      dropout_probability: 0.0   # random single-pixel dropouts
      edge_dropout: false        # edge_dropout.py: a split footprint's echo kept with its power share (sub_rays > 1)
    signal:                      # photons.py, ambient.py, blooming.py
      poisson: false             # shot noise on signal photons
      noise_floor: 0.0           # mean photons reported where there is no return
      saturation: 65535          # largest signal count
      ambient_model: flat        # flat (surface.ambient_level/ambient_sky) | sun (ambient.py)
      sun_elevation_deg: 45.0    # sun above the horizon; < 0 = night (ambient from sky glow only)
      sun_azimuth_deg: 0.0
      row_gain_sigma: 0.0        # relative per-row (per-beam) ambient gain spread, fixed per run
      bloom_threshold: 0.0       # blooming.py: reflectivity (x white) from which a return leaks; 0 = off
      bloom_width_px: 2          # columns of halo on each side
      bloom_leak: 0.01           # stray-light fraction per column
    weather:                     # weather.py
      fog_visibility_km: 0.0     # meteorological visibility; 0 = no fog
      rain_rate_mm_h: 0.0
      snow_rate_mm_h: 0.0        # snowfall rate (snow.py); or snow_visibility_km: visibility in snow
      snow_type: dry             # dry | wet
      backscatter: true          # particle returns near the sensor
      wavelength_nm: 905         # laser wavelength (fog extinction depends on it)
    tof:                         # backfolding.py, cw_phase.py
      unambiguous_range_m: 0.0   # pulsed: c / (2 f_rep); 0 = no folding
      mode: pulsed               # pulsed | cw (two-frequency phase ranging, Heiden et al. 2020)
      frequencies_mhz: [46.55, 53.2]  # cw modulation frequencies (Hokuyo URG-04LX)
      periods: 15                # cw periods per phase estimate
      bias: [0, 0, 0]            # cw phase bias a·L² + b·L + c (rad), L = ρ/r² of the return
      multipath: false           # multipath.py: one diffuse bounce (depth cameras: corners read long);
                                 # phasor sum at frequencies_mhz[0] in cw mode, mean path when pulsed
      multipath_patches: 256     # emitting patches (a grid of the camera's pixels) per frame
    glass:                       # glass.py
      specular: false            # the specular return of glass hit near head-on (and ghosts below)
      refractive_index: 1.5      # Fresnel R0 = ((n-1)/(n+1))²
      lobe_deg: 0.5              # angular width of the specular lobe
      ghosts: true               # points of what the glass reflects, behind it
    timing:                      # column_timing.py
      column_jitter_us: 0.0      # white jitter of each measurement column's time stamp (1 sigma)
      column_wander_us: 0.0      # random-walk step of the column times (rotor phase wander), per column
      moving_entities: frame     # frame: every ray meets moving entities where they are at the frame's start |
                                 # sweep: where their twist takes them by its column's firing time (a passing
                                 # car is stretched or squeezed as a spinning sensor sees it; embree or warp)
    foliage:                     # foliage.py, leaf_angles.py
      volume: false              # materials with a leaf_area_density (tree crowns, hedges) are leaf volumes a
                                 # ray may cross or meet a leaf in; off: they return from their surface
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from ._validate import FLAG, CheckedConfig, choice, fail, integer, number
from .snow import SNOW_TYPES

RETURN_MODES = ("strongest", "last", "first", "dual", "mixed", "dual_strongest", "dual_first")
PROFILES = ("uniform", "gaussian")
DETECTION_CURVES = ("threshold", "snr")
TOF_MODES = ("pulsed", "cw")
AMBIENT_MODELS = ("flat", "sun")
MOVING_ENTITIES = ("frame", "sweep")
MAX_SUB_RAYS = 64


@dataclass(frozen=True)
class BeamConfig(CheckedConfig):
    divergence_mrad: float = 0.0
    sub_rays: int = 1
    profile: str = "uniform"
    return_mode: str = "strongest"
    echo_separation_m: float = 0.5

    RULES = dict(divergence_mrad=number(0.0, 100.0), sub_rays=integer(1, MAX_SUB_RAYS), profile=choice(*PROFILES),
                 return_mode=choice(*RETURN_MODES), echo_separation_m=number(0.0, 100.0))

    @property
    def footprint(self) -> bool:
        """Sub-rays are traced (more than the central ray)."""
        return self.sub_rays > 1

    @property
    def dual(self) -> bool:
        return self.return_mode in ("dual", "dual_strongest", "dual_first")


@dataclass(frozen=True)
class DetectionConfig(CheckedConfig):
    model: str = "threshold"
    snr_at_limit: float = 4.0
    dropout_probability: float = 0.0
    edge_dropout: bool = False

    RULES = dict(model=choice(*DETECTION_CURVES), snr_at_limit=number(0.0, 1000.0, low_open=True),
                 dropout_probability=number(0.0, 1.0), edge_dropout=FLAG)


@dataclass(frozen=True)
class SignalConfig(CheckedConfig):
    poisson: bool = False
    noise_floor: float = 0.0
    saturation: float = 65535.0
    ambient_model: str = "flat"
    sun_elevation_deg: float = 45.0
    sun_azimuth_deg: float = 0.0
    row_gain_sigma: float = 0.0
    bloom_threshold: float = 0.0
    bloom_width_px: int = 2
    bloom_leak: float = 0.01

    RULES = dict(poisson=FLAG, noise_floor=number(0.0, 65535.0), saturation=number(1.0, 65535.0),
                 ambient_model=choice(*AMBIENT_MODELS), sun_elevation_deg=number(-90.0, 90.0),
                 sun_azimuth_deg=number(-360.0, 360.0), row_gain_sigma=number(0.0, 1.0), bloom_threshold=number(0.0, 1e6),
                 bloom_width_px=integer(0, 32), bloom_leak=number(0.0, 1.0))


@dataclass(frozen=True)
class WeatherConfig(CheckedConfig):
    fog_visibility_km: float = 0.0
    rain_rate_mm_h: float = 0.0
    snow_rate_mm_h: float = 0.0
    snow_type: str = "dry"
    snow_visibility_km: float = 0.0
    backscatter: bool = True
    wavelength_nm: float = 905.0

    RULES = dict(fog_visibility_km=number(0.0, 1000.0), rain_rate_mm_h=number(0.0, 500.0),
                 snow_rate_mm_h=number(0.0, 100.0), snow_type=choice(*SNOW_TYPES), snow_visibility_km=number(0.0, 1000.0),
                 backscatter=FLAG, wavelength_nm=number(400.0, 2000.0))

    @classmethod
    def _more(cls, values: dict[str, Any], where: str) -> dict[str, Any]:
        if values["snow_rate_mm_h"] and values["snow_visibility_km"]:
            fail(f"{where}.snow_visibility_km", values["snow_visibility_km"], "snow_rate_mm_h is given too",
                 "0 with snow_rate_mm_h (give the snow as snow_rate_mm_h or as snow_visibility_km, not both)")
        return values

    @property
    def enabled(self) -> bool:
        return bool(self.fog_visibility_km or self.rain_rate_mm_h or self.snow_rate_mm_h or self.snow_visibility_km)


FREQUENCY_MHZ = number(0.001, 1e4)
BIAS_RAD = number(-100.0, 100.0)


@dataclass(frozen=True)
class TofConfig(CheckedConfig):
    unambiguous_range_m: float = 0.0
    mode: str = "pulsed"
    frequencies_mhz: tuple = (46.55, 53.2)
    periods: int = 15
    bias: tuple = (0.0, 0.0, 0.0)
    multipath: bool = False
    multipath_patches: int = 256

    RULES = dict(unambiguous_range_m=number(0.0, 1e6), mode=choice(*TOF_MODES), periods=integer(1, 1000),
                 multipath=FLAG, multipath_patches=integer(4, 4096))

    @classmethod
    def _more(cls, values: dict[str, Any], where: str) -> dict[str, Any]:
        freqs, bias = values["frequencies_mhz"], values["bias"]
        if not (isinstance(freqs, (list, tuple)) and len(freqs) == 2):
            fail(f"{where}.frequencies_mhz", freqs, "not two frequencies", "two modulation frequencies in MHz")
        freqs = tuple(FREQUENCY_MHZ.check(f, f"{where}.frequencies_mhz[{i}]") for i, f in enumerate(freqs))
        if freqs[0] == freqs[1]:
            fail(f"{where}.frequencies_mhz", list(freqs), "equal frequencies", "two different frequencies")
        if not (isinstance(bias, (list, tuple)) and len(bias) == 3):
            fail(f"{where}.bias", bias, "not three numbers", "[a, b, c] of the phase bias a·L² + b·L + c (rad)")
        bias = tuple(BIAS_RAD.check(b, f"{where}.bias[{i}]") for i, b in enumerate(bias))
        return {**values, "frequencies_mhz": freqs, "bias": bias}


@dataclass(frozen=True)
class GlassConfig(CheckedConfig):
    specular: bool = False
    refractive_index: float = 1.5
    lobe_deg: float = 0.5
    ghosts: bool = True

    RULES = dict(specular=FLAG, ghosts=FLAG, refractive_index=number(1.0, 4.0, low_open=True),
                 lobe_deg=number(0.0, 45.0, low_open=True))


@dataclass(frozen=True)
class TimingConfig(CheckedConfig):
    column_jitter_us: float = 0.0
    column_wander_us: float = 0.0
    moving_entities: str = "frame"

    RULES = dict(column_jitter_us=number(0.0, 1000.0), column_wander_us=number(0.0, 1000.0),
                 moving_entities=choice(*MOVING_ENTITIES))

    @property
    def enabled(self) -> bool:
        return bool(self.column_jitter_us or self.column_wander_us)


@dataclass(frozen=True)
class FoliageConfig(CheckedConfig):
    volume: bool = False

    RULES = dict(volume=FLAG)


@dataclass(frozen=True)
class EffectsConfig:
    """Every effect section of one sensor."""

    beam: BeamConfig = BeamConfig()
    detection: DetectionConfig = DetectionConfig()
    signal: SignalConfig = SignalConfig()
    weather: WeatherConfig = WeatherConfig()
    tof: TofConfig = TofConfig()
    glass: GlassConfig = GlassConfig()
    timing: TimingConfig = TimingConfig()
    foliage: FoliageConfig = FoliageConfig()

    SECTIONS = {"beam": BeamConfig, "detection": DetectionConfig, "signal": SignalConfig, "weather": WeatherConfig,
                "tof": TofConfig, "glass": GlassConfig, "timing": TimingConfig, "foliage": FoliageConfig}

    @classmethod
    def from_spec(cls, sections: Mapping[str, Any], origin: str) -> "EffectsConfig":
        """From a sensor file's sections (missing ones: defaults); errors name `origin: section.key`."""
        return cls(**{name: kind.from_dict(sections.get(name), f"{origin}: {name}") for name, kind in cls.SECTIONS.items()})
