"""BRDFs: how much of a reflected wave's energy comes back toward the sensor.

Each BRDF is a function f(theta, params) -> factor (>= 0), vectorised over theta. theta is the angle
RadaRays hands its shader: for back-path returns the incidence angle to the normal (monostatic), for
multipath returns the angle between the mirror direction and the direction to the sensor (Mock et al., RadaRays, RA-L 2025).
The return strength is f(theta) * E_reflected.

* radarays      - as coded in every released RadaRays path: A + B cos(theta)^C (no clamp, no 1/pi).
* paper         - the paper's Eq. 5: A + B cos(w) + S cos(w)^C with S = 1 - A - B, cos < 0 -> 0, >= 0.
* cook_torrance - diffuse/pi + (1 - diffuse) * D F G / (4 cos^2) times cos(theta) (monostatic: the half
                  vector is the direction to the sensor), Beckmann D with `roughness`, Schlick F from
                  the refraction coefficient `n`, Cook-Torrance G. `transmittance` is the fraction of
                  energy kept per metre travelled inside the material (the paper's Cook-Torrance run; RadaRays' RadarCPUFlex).

User BRDFs: a package registers `name = module:function` in the entry point group `radarays_ros.brdf`;
the function is called as f(theta: ndarray, params: dict[str, ndarray]) -> ndarray, the parameter
arrays aligned with theta (one value per return, from the material it hit). Materials then say
`brdf: name` and any numeric parameters the function reads.
"""
from __future__ import annotations

from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Callable

import numpy as np

ENTRY_POINT_GROUP = "radarays_ros.brdf"


@dataclass(frozen=True)
class BrdfSpec:
    """Parameter names of a BRDF with their allowed ranges (lo, hi) and defaults (None = required)."""

    params: dict
    function: Callable


def radarays(theta: np.ndarray, p) -> np.ndarray:
    """A + B cos(theta)^C, RadaRays' back_reflection_shader."""
    c = np.maximum(np.cos(theta), 0.0)
    return p["A"] + p["B"] * c ** p["C"]


def paper(theta: np.ndarray, p) -> np.ndarray:
    """Eq. 5 of the paper: A + B cos(w) + S cos(w)^C, S = 1 - A - B."""
    c = np.maximum(np.cos(theta), 0.0)
    s = 1.0 - p["A"] - p["B"]
    return np.maximum(p["A"] + p["B"] * c + s * c ** p["C"], 0.0)


def cook_torrance(theta: np.ndarray, p) -> np.ndarray:
    """Monostatic Cook-Torrance (Beckmann D, Schlick F, Cook-Torrance G) with a Lambertian part."""
    c = np.clip(np.cos(theta), 1e-6, 1.0)
    m2 = p["roughness"] ** 2
    tan2 = (1.0 - c * c) / (c * c)
    d = np.exp(-tan2 / m2) / (np.pi * m2 * c ** 4)
    f0 = ((p["n"] - 1.0) / (p["n"] + 1.0)) ** 2  # v.h = 1 when light and view coincide
    g = np.minimum(1.0, 2.0 * c * c)
    specular = d * f0 * g / (4.0 * c * c)
    return (p["diffuse"] / np.pi + (1.0 - p["diffuse"]) * specular) * c


BUILTIN: dict[str, BrdfSpec] = {
    "radarays": BrdfSpec({"A": (0.0, 1e6, None), "B": (0.0, 1e6, None), "C": (0.0, 1e7, None)}, radarays),
    "paper": BrdfSpec({"A": (0.0, 1.0, None), "B": (0.0, 1.0, None), "C": (0.0, 1e7, None)}, paper),
    "cook_torrance": BrdfSpec({"diffuse": (0.0, 1.0, None), "roughness": (1e-6, 10.0, None), "n": (1e-6, 1e6, None),
                               "transmittance": (0.0, 1.0, 1.0)}, cook_torrance),
}


def plugin_brdfs() -> dict[str, Callable]:
    """User BRDFs registered in the `radarays_ros.brdf` entry point group (loaded lazily)."""
    found = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        found[ep.name] = ep
    return found


def resolve(name: str) -> BrdfSpec | None:
    """The BrdfSpec of a built-in or plugin BRDF name; None if unknown. Plugins take any numeric params."""
    if name in BUILTIN:
        return BUILTIN[name]
    ep = plugin_brdfs().get(name)
    if ep is None:
        return None
    return BrdfSpec({}, ep.load())


def known_names() -> list[str]:
    return sorted(set(BUILTIN) | set(plugin_brdfs()))
