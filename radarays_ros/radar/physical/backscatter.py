"""Backscatter coefficient sigma0(theta) per material class, from a table (dB vs incidence angle).

Distributed clutter: sigma = sigma0(theta) A, with A = the surface area a ray tube covers,
R^2 dOmega / cos(theta) (Ulaby, Moore & Fung, "Microwave Remote Sensing", Vol. II, Ch. 11: the radar
equation of distributed targets). Values interpolated linearly in dB between table angles. The table
(radarays_ros/data/radar/scatter/backscatter_77ghz.yaml) names its sources. A material of the scene library maps
to a class by the class's `names`, then by a class of the same name, else scatter.default_class;
materials that RadaRays makes invisible (wave velocity of air) stay invisible.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ... import resources
from ...config_file import read_yaml
from ...errors import ConfigError
from .roughness import normal_reflectivity

AIR_VELOCITY = 0.3


def table_path(name: str) -> Path:
    """A backscatter table: a YAML path, or the name of a shipped one."""
    path = Path(name)
    if path.suffix in (".yaml", ".yml"):
        return path
    return resources.data_path("radar", "scatter", f"{name}.yaml", must_exist=False)


@dataclass
class ScatterTable:
    """Per class: sigma0 table (linear), normal reflectivity and rms height; per scene material: class."""

    theta: np.ndarray  # (T,) radians
    sigma0: np.ndarray  # (K, T) linear
    gamma2: np.ndarray  # (K,)
    rms_height: np.ndarray  # (K,)
    classes: list[str]
    material_class: np.ndarray  # (M,) class index per scene material id, -1 = invisible

    FINE_STEPS = 20  # samples per degree of the lookup grid (the tables are linear in dB between their angles)

    def __post_init__(self):
        # sigma0 interpolated in dB once, on a 0.05 deg grid: per hit, two gathers and a linear blend in
        # linear units (off the dB interpolation by ~0.001 dB; 4x faster than a search and a power per hit)
        self._fine_scale = self.FINE_STEPS * 180.0 / np.pi
        grid = np.radians(np.arange(0, 90 * self.FINE_STEPS + 1) / self.FINE_STEPS)
        self._fine = np.stack([self._interpolated(np.full(len(grid), k), grid) for k in range(len(self.sigma0))])

    def _interpolated(self, cls: np.ndarray, theta: np.ndarray) -> np.ndarray:
        t = np.clip(theta, self.theta[0], self.theta[-1])
        i = np.clip(np.searchsorted(self.theta, t, side="right") - 1, 0, len(self.theta) - 2)
        f = (t - self.theta[i]) / (self.theta[i + 1] - self.theta[i])
        db = 10.0 * np.log10(self.sigma0)
        return 10.0 ** ((db[cls, i] * (1.0 - f) + db[cls, i + 1] * f) / 10.0)

    def sigma0_at(self, cls: np.ndarray, theta: np.ndarray) -> np.ndarray:
        """sigma0 (linear) of class indices cls at incidence theta (radians), interpolated in dB."""
        x = np.clip(np.asarray(theta, np.float64) * self._fine_scale, 0.0, self._fine.shape[1] - 1.000001)
        i = x.astype(np.int64)
        x -= i
        flat = self._fine.reshape(-1)
        at = cls * self._fine.shape[1] + i
        low = flat[at]
        return low + (flat[at + 1] - low) * x


def load_table(name: str, default_class: str, library) -> ScatterTable:
    """Read and check a table; map the library's materials (in id order) to classes."""
    path = table_path(name)
    if not path.is_file():
        raise ConfigError(f"scatter.table = {name!r}: no such file or shipped table ({path})")
    data = read_yaml(path, "backscatter table")
    where = f"backscatter table {path}"
    try:
        theta_deg = np.asarray(data["theta_deg"], np.float64)
        classes = dict(data["classes"])
    except (KeyError, TypeError, ValueError):
        raise ConfigError(f"{where}: needs theta_deg (list of angles) and classes (mapping)") from None
    if len(theta_deg) < 2 or theta_deg[0] != 0 or theta_deg[-1] != 90 or not np.all(np.diff(theta_deg) > 0):
        raise ConfigError(f"{where}: theta_deg must increase from 0 to 90 degrees")
    names, sigma0, gamma2, heights, by_name = [], [], [], [], {}
    for cls, entry in classes.items():
        try:
            values = np.asarray(entry["sigma0_db"], np.float64)
            eps = float(entry["eps_r"])
            height = float(entry["rms_height_m"])
        except (KeyError, TypeError, ValueError):
            raise ConfigError(f"{where}: class {cls} needs sigma0_db, eps_r and rms_height_m") from None
        if values.shape != theta_deg.shape or not np.isfinite(values).all() or not (eps >= 1.0) or not 0 <= height < 1:
            raise ConfigError(f"{where}: class {cls}: sigma0_db needs {len(theta_deg)} finite values, eps_r >= 1, "
                              "0 <= rms_height_m < 1")
        for material in entry.get("names", []) or []:
            by_name[str(material)] = len(names)
        by_name.setdefault(str(cls), len(names))
        names.append(str(cls))
        sigma0.append(10.0 ** (values / 10.0))
        gamma2.append(normal_reflectivity(eps))
        heights.append(height)
    if default_class not in names:
        raise ConfigError(f"scatter.default_class = {default_class!r}: not a class of {path}; classes: {', '.join(names)}")
    material_class = []
    for material in library.materials:
        radar = material.radar or {}
        invisible = float(radar.get("velocity", 0.0)) >= AIR_VELOCITY
        material_class.append(-1 if invisible else by_name.get(material.name, names.index(default_class)))
    return ScatterTable(np.radians(theta_deg), np.array(sigma0), np.array(gamma2), np.array(heights), names,
                        np.array(material_class + [-1], np.int64))


def wavelength(carrier_hz: float) -> float:
    return 299_792_458.0 / carrier_hz


__all__ = ["ScatterTable", "load_table", "table_path", "wavelength"]
