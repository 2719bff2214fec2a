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
import numpy as xm  # the formulas' vocabulary (radarays_ros/twin.py)

ENTRY_POINT_GROUP = "radarays_ros.brdf"


@dataclass(frozen=True)
class BrdfSpec:
    """Parameter names of a BRDF with their allowed ranges (lo, hi) and defaults (None = required)."""

    params: dict
    function: Callable


# -- the formulas, once: numpy runs them over arrays on the host, Warp compiles them for the device
# (radarays_ros/twin.py; warp_frame_kernels.brdf_factor). ASCII only in their lines.
def radarays_brdf(theta: float, a: float, b: float, c: float) -> float:
    """A + B cos(theta)^C, RadaRays' back_reflection_shader."""
    cos = xm.maximum(xm.cos(theta), 0.0)
    return a + b * cos ** c


def paper_brdf(theta: float, a: float, b: float, c: float) -> float:
    """Eq. 5 of the paper: A + B cos(w) + S cos(w)^C, S = 1 - A - B, at least 0."""
    cos = xm.maximum(xm.cos(theta), 0.0)
    s = 1.0 - a - b
    return xm.maximum(a + b * cos + s * cos ** c, 0.0)


def cook_torrance_brdf(theta: float, diffuse: float, roughness: float, n: float) -> float:
    """Monostatic Cook-Torrance (Beckmann D, Schlick F, Cook-Torrance G) with a Lambertian part."""
    c = xm.clip(xm.cos(theta), 1e-6, 1.0)
    m2 = roughness ** 2.0
    tan2 = (1.0 - c * c) / (c * c)
    d = xm.exp(-tan2 / m2) / (xm.pi * m2 * c ** 4.0)
    f0 = ((n - 1.0) / (n + 1.0)) ** 2.0  # v.h = 1 when light and view coincide
    g = xm.minimum(1.0, 2.0 * c * c)
    specular = d * f0 * g / (4.0 * c * c)
    return (diffuse / xm.pi + (1.0 - diffuse) * specular) * c


# -- the host API: f(theta, params) with the parameter arrays aligned with theta
def radarays(theta: np.ndarray, p) -> np.ndarray:
    """A + B cos(theta)^C, RadaRays' back_reflection_shader."""
    return radarays_brdf(theta, p["A"], p["B"], p["C"])


def paper(theta: np.ndarray, p) -> np.ndarray:
    """Eq. 5 of the paper: A + B cos(w) + S cos(w)^C, S = 1 - A - B."""
    return paper_brdf(theta, p["A"], p["B"], p["C"])


def cook_torrance(theta: np.ndarray, p) -> np.ndarray:
    """Monostatic Cook-Torrance (Beckmann D, Schlick F, Cook-Torrance G) with a Lambertian part."""
    return cook_torrance_brdf(theta, p["diffuse"], p["roughness"], p["n"])


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
