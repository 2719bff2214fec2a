"""Radar cross-section of dihedral and trihedral corner reflectors (effective-area method).

    sigma = 4 pi A_eff^2 / lambda^2

with A_eff the projected area (on the plane normal to the line of sight) of the rays that bounce on
every face and leave straight back; all those rays travel the same path, so they add in phase
(Knott, Shaeffer & Tuley, "Radar Cross Section", 2nd ed., Sec. 7.3, Eq. 7.13-7.16 and Table 7.1;
Robertson, "Targets for microwave radar navigation", Bell Syst. Tech. J. 26, 1947).

* Right dihedral, faces a1, a2 wide (from the fold) and b long, line of sight at angle phi to face 1 in
  the cross-section plane and psi out of it: the double bounce 1 -> 2 and 2 -> 1 each cover
  min(a1 sin phi, a2 cos phi), so A_eff = 2 min(a1 sin phi, a2 cos phi) b cos psi, and along the fold the
  corner is a flat mirror: x sinc(k b sin psi). a1 = a2 = a at phi = 45 deg: sigma = 8 pi a^2 b^2 / lambda^2.
* Right trihedral: a ray entering at point x of the aperture leaves at its point reflection through the
  apex, so A_eff = area(P and -P), P the aperture (the faces' outline projected along the line of sight,
  apex at the origin). Triangular faces of edge a on the symmetry axis: P is an equilateral triangle of
  area sqrt(3)/2 a^2, P and -P a hexagon of 2/3 of it: A_eff = a^2 / sqrt(3), sigma = 4 pi a^4 / (3 lambda^2);
  square faces: sigma = 12 pi a^4 / lambda^2.

Near range the same Fresnel-zone limit as a flat plate applies to each aperture dimension
(facet_po.py): no more than sqrt(lambda R / 2) of it adds in phase.
"""
from __future__ import annotations

import numpy as np


def dihedral_aperture(a1, a2, b, phi, psi, wavelength: float, fresnel_length):
    """A_eff (m^2) of a right dihedral; fresnel_length = sqrt(lambda R / 2) caps each dimension."""
    k = 2.0 * np.pi / wavelength
    width = 2.0 * np.maximum(np.minimum(a1 * np.sin(phi), a2 * np.cos(phi)), 0.0)
    along = b * np.abs(np.sinc(k * b * np.sin(psi) / np.pi))
    return np.minimum(width, fresnel_length) * np.minimum(along, fresnel_length) * np.abs(np.cos(psi))


def _clip(subject: np.ndarray, clip: np.ndarray) -> np.ndarray:
    """Sutherland-Hodgman: the convex polygon subject (N, 2) cut by the convex polygon clip (M, 2), both
    counter-clockwise."""
    out = subject
    for i in range(len(clip)):
        if not len(out):
            break
        a, b = clip[i], clip[(i + 1) % len(clip)]
        edge = b - a
        side = edge[0] * (out[:, 1] - a[1]) - edge[1] * (out[:, 0] - a[0])  # >= 0: inside (left)
        nxt = []
        for j in range(len(out)):
            p, q = out[j], out[(j + 1) % len(out)]
            sp, sq = side[j], side[(j + 1) % len(out)]
            if sp >= 0:
                nxt.append(p)
            if (sp >= 0) != (sq >= 0):
                nxt.append(p + (q - p) * (sp / (sp - sq)))
        out = np.array(nxt).reshape(-1, 2)
    return out


def _cross2(a, b) -> float:
    return float(a[0] * b[1] - a[1] * b[0])


def _hull(points: np.ndarray) -> np.ndarray:
    """Convex hull (counter-clockwise) of 2-D points (monotone chain)."""
    pts = np.unique(np.round(points, 12), axis=0)
    if len(pts) < 3:
        return pts

    def half(seq):
        h = []
        for p in seq:
            while len(h) >= 2 and _cross2(h[-1] - h[-2], p - h[-2]) <= 0:
                h.pop()
            h.append(p)
        return h

    lower, upper = half(pts), half(pts[::-1])
    return np.array(lower[:-1] + upper[:-1])


def polygon_area(poly: np.ndarray) -> float:
    if len(poly) < 3:
        return 0.0
    x, y = poly[:, 0], poly[:, 1]
    return 0.5 * float(abs(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1))))


def trihedral_aperture(outline: np.ndarray) -> float:
    """A_eff (m^2) of a right trihedral: outline (N, 2) = its faces' vertices projected along the line of
    sight, apex at the origin."""
    p = _hull(outline)
    if len(p) < 3:
        return 0.0
    return polygon_area(_clip(p, _hull(-outline)))
