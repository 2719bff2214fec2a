"""Configuration of the lidar surface model (detection limit, intensity scales) and of its noise.

Both are frozen dataclasses built from a YAML mapping with `from_dict`, which checks every key and
value and names the key and the allowed values when one is wrong. Everything is optional; the
defaults are a noise-free sensor that detects every surface it hits.

Example (a sensor file's `surface:` and `noise:` parts)::

    surface:
      model: root2                          # none | linear | root2 | root3 | root4 | log | blensor
      limits: [[0.10, 50.0], [0.80, 120.0]] # [reflectivity, range m] pairs (HDL-64E S2 datasheet)
      limits_probability: 0.5               # detection probability the pairs are quoted at (Ouster: 0.9)
    noise:
      bias_distribution: gaussian           # gaussian | laplace, one draw per laser for the run
      bias_sigma: 0.04                      # m (BlenSor: HDL-64E units 0.04-0.078)
      sigma: 0.01                           # m, per ray (BlenSor default)
      relative_sigma: 0.0                   # σ_rel·r^k per ray (Rmagine's relative Gaussian)
      relative_exponent: 1.0                # k
      dust_probability: 0.0                 # chance of an early return per hit
      dust_min_range: 0.0                   # m; dust lies uniformly in [dust_min_range, r]
      resolution: 0.0                       # m; range quantisation step, 0 = off
      angular_sigma: 0.0                    # rad; direction jitter per ray and axis
      snr_sigma: []                         # [[SNR, sigma m], [SNR, sigma m]]: per-ray sigma from the return's
                                            # SNR, floored at sigma (range_precision.py; Ouster [[12, 0.10], [100, 0.03]])
      snr_floor: null                       # m; the floor of the SNR law instead of sigma (null: sigma)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ._validate import CheckedConfig, choice, fail, number

DETECTION_MODELS = ("none", "linear", "root2", "root3", "root4", "log", "blensor")
BIAS_DISTRIBUTIONS = ("gaussian", "laplace")
HDL64E_LIMITS = ((0.10, 50.0), (0.80, 120.0))  # HDL-64E S2 datasheet (LiMOX §4.2, BlenSor §3.2)


@dataclass(frozen=True)
class SurfaceConfig(CheckedConfig):
    """Range–reflectivity detection limit (detection.py) and intensity scales (intensity.py).

    model: detection limit form; 'none' keeps every hit.
    limits: two (reflectivity, range m) datasheet pairs the limit curve passes through.
    limits_probability: the detection probability the datasheet quotes the pairs at; the limit curve is
        the ½ curve (detection_probability.median_limits moves pairs quoted at 0.9 out to it).
    signal_scale: Ouster-like signal photons of a white (ρ = 1) target at 1 m; falls as 1/r².
    texture_sigma, texture_length_m: spread of ln albedo over surfaces and its correlation length (texture.py); 0 = off.
    overlap_range_m: r₀ of the receiver's near-range overlap O(r) = 1 − exp(−(r/r₀)²) on the signal (overlap.py); 0 = off.
    retro_full_scale: reflectivity (× white) that maps to 255 on the calibrated reflectivity scale.
    ambient_level: mean ambient photons from a white surface in daylight; ambient_sky: from open sky.
    """

    model: str = "none"
    limits: tuple[tuple[float, float], tuple[float, float]] = HDL64E_LIMITS
    limits_probability: float = 0.5
    signal_scale: float = 2.0e5
    overlap_range_m: float = 0.0
    texture_sigma: float = 0.0
    texture_length_m: float = 0.3
    retro_full_scale: float = 100.0
    ambient_level: float = 300.0
    ambient_sky: float = 50.0

    RULES = dict(model=choice(*DETECTION_MODELS), limits_probability=number(0.5, 0.999), signal_scale=number(0.0, 1e12),
                 overlap_range_m=number(0.0, 1e4), texture_sigma=number(0.0, 3.0),
                 texture_length_m=number(0.0, 1e4, low_open=True),
                 retro_full_scale=number(1.0, 1e6, low_open=True), ambient_level=number(0.0, 65535.0),
                 ambient_sky=number(0.0, 65535.0))

    @classmethod
    def _more(cls, values: dict[str, Any], where: str) -> dict[str, Any]:
        return {**values, "limits": _limits(values["limits"], f"{where}.limits")}

    @classmethod
    def from_dict(cls, data, where: str = "surface") -> "SurfaceConfig":
        return super().from_dict(data, where)

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "limits": [list(p) for p in self.limits]}


@dataclass(frozen=True)
class NoiseConfig(CheckedConfig):
    """Range noise, all off by default (noise.py). Every σ is a standard deviation in metres (angular: rad)."""

    bias_distribution: str = "gaussian"
    bias_sigma: float = 0.0
    sigma: float = 0.0
    relative_sigma: float = 0.0
    relative_exponent: float = 1.0
    dust_probability: float = 0.0
    dust_min_range: float = 0.0
    resolution: float = 0.0
    angular_sigma: float = 0.0
    snr_sigma: tuple = ()
    snr_floor: float | None = None

    RULES = dict(bias_distribution=choice(*BIAS_DISTRIBUTIONS), bias_sigma=number(0.0, 10.0), sigma=number(0.0, 10.0),
                 relative_sigma=number(0.0, 1.0), relative_exponent=number(0.0, 4.0), dust_probability=number(0.0, 1.0),
                 dust_min_range=number(0.0, 1e4), resolution=number(0.0, 10.0), angular_sigma=number(0.0, 0.1))

    @classmethod
    def from_dict(cls, data, where: str = "noise") -> "NoiseConfig":
        return super().from_dict(data, where)

    @classmethod
    def _more(cls, values: dict[str, Any], where: str) -> dict[str, Any]:
        floor = values["snr_floor"]
        return {**values, "snr_sigma": _snr_sigma(values["snr_sigma"], f"{where}.snr_sigma"),
                "snr_floor": None if floor is None else number(0.0, 10.0).check(floor, f"{where}.snr_floor")}

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "snr_sigma": [list(p) for p in self.snr_sigma]}

    @property
    def enabled(self) -> bool:
        """True when any noise term is on."""
        return any((self.bias_sigma, self.sigma, self.relative_sigma, self.dust_probability, self.resolution,
                    self.angular_sigma, self.snr_sigma))


def _two_pairs(value: Any, where: str, names: tuple[str, str], highs: tuple[float, float],
               example: str) -> list[tuple[float, float]]:
    """Two (a, b) pairs, each number positive and at most its high, sorted by a."""
    shape_ok = isinstance(value, (list, tuple)) and len(value) == 2 and all(
        isinstance(p, (list, tuple)) and len(p) == 2 for p in value)
    if not shape_ok:
        fail(where, value, "not two pairs", f"two [{names[0]}, {names[1]}] pairs, e.g. {example}")
    return sorted((number(0.0, highs[0], low_open=True).check(p[0], f"{where}[{i}][0] ({names[0]})"),
                   number(0.0, highs[1], low_open=True).check(p[1], f"{where}[{i}][1] ({names[1]})"))
                  for i, p in enumerate(value))


def _snr_sigma(value: Any, where: str) -> tuple:
    """() or two (SNR, σ m) pairs where the higher SNR has the smaller σ."""
    if value is None or (isinstance(value, (list, tuple)) and len(value) == 0):
        return ()
    (s1, e1), (s2, e2) = _two_pairs(value, where, ("SNR", "sigma_m"), (1e6, 10.0), "[[12, 0.10], [100, 0.03]] (or [])")
    if not (s1 < s2 and e1 > e2):
        fail(where, value, "sigma does not fall as the SNR rises", "two pairs, the higher SNR with the smaller sigma")
    return (s1, e1), (s2, e2)


def _limits(value: Any, where: str) -> tuple[tuple[float, float], tuple[float, float]]:
    """Two (reflectivity, range m) pairs where the brighter target is seen farther."""
    (r1, d1), (r2, d2) = _two_pairs(value, where, ("reflectivity", "range_m"), (1e4, 1e5),
                                    "[[0.10, 50.0], [0.80, 120.0]]")
    if not (r1 < r2 and d1 < d2):
        fail(where, value, "the brighter target is not seen farther",
             "two pairs with reflectivity and range both strictly increasing")
    return (r1, d1), (r2, d2)
