"""Radar cross-section of a smooth curved surface at its specular point (stationary phase).

    doubly curved (principal radii r1, r2):  sigma = pi r1 r2                   (sphere: pi r^2)
    singly curved (radius a, straight length b, tilt psi from broadside):
                                             sigma = 2 pi a b^2 / lambda cos(psi) sinc^2(k b sin psi)

Near range (the foot of the perpendicular from the radar on the straight line lies on the surface) only
the Fresnel length sqrt(lambda R / 2) of the line adds in phase: L = min(b, sqrt(lambda R / 2)), psi = 0.

(Knott, Shaeffer & Tuley, "Radar Cross Section", 2nd ed., Table 5.1 / Sec. 5.2: geometrical optics
pi r1 r2 and the finite cylinder's broadside PO pattern; Ruck et al., "Radar Cross Section Handbook",
1970, Sec. 3.2 and 4.3.) Both are the PO integral over the surface by stationary phase: across a curved
direction of radius r the return comes from a strip sqrt(lambda r / 2) wide, along a straight one from
the whole length. A mesh approximates the surface with flat facets far larger than that strip (a 0.3 m
sphere at 77 GHz: sqrt(lambda r / 4) = 1.7 cm), so summing its facets as flat plates gives their flashes,
not pi r^2: the facets are joined into one surface and its curvature estimated from their normals.

Near range the wave front's own curvature adds: 1 / r_eff = 1 / r + 1 / R for a convex surface at range
R (the Fresnel-zone limit of a flat one, r -> infinity, r_eff = R: pi R^2 for a doubly flat mirror).
Concave surfaces use |r| (no caustic handling).
"""
from __future__ import annotations

import numpy as np


def effective_radius(radius: np.ndarray, distance: np.ndarray) -> np.ndarray:
    """r R / (r + R): the surface's radius of curvature combined with the incident front's (m)."""
    r = np.abs(radius)
    return r * distance / (r + distance)


def doubly_curved(r1: np.ndarray, r2: np.ndarray) -> np.ndarray:
    """sigma = pi r1 r2 (m^2), radii already effective (effective_radius)."""
    return np.pi * r1 * r2


def effective_length(length: np.ndarray, psi: np.ndarray, fresnel_length: np.ndarray, wavelength: float) -> np.ndarray:
    """|L sinc(k L sin psi)| of a straight length L at tilt psi, at most the Fresnel length sqrt(lambda R / 2)
    (near range only that much of it adds in phase)."""
    k = 2.0 * np.pi / wavelength
    return np.minimum(length * np.abs(np.sinc(k * length * np.sin(psi) / np.pi)), fresnel_length)


def singly_curved(a: np.ndarray, length_eff: np.ndarray, psi: np.ndarray, wavelength: float) -> np.ndarray:
    """sigma = 2 pi a L^2 / lambda cos(psi), L = b sinc(k b sin psi) from effective_length (m^2)."""
    return 2.0 * np.pi * a * length_eff ** 2 / wavelength * np.abs(np.cos(psi))
