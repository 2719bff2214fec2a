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


def _clip(subject: list, clip: list) -> list:
    """Sutherland-Hodgman: the convex polygon subject cut by the convex polygon clip, both lists of (x, y)
    counter-clockwise (plain floats: these polygons have a handful of corners)."""
    out = subject
    for i in range(len(clip)):
        if not out:
            break
        ax, ay = clip[i]
        bx, by = clip[(i + 1) % len(clip)]
        ex, ey = bx - ax, by - ay
        side = [ex * (y - ay) - ey * (x - ax) for x, y in out]  # >= 0: inside (left of the edge)
        nxt = []
        for j in range(len(out)):
            k = (j + 1) % len(out)
            sp, sq = side[j], side[k]
            if sp >= 0:
                nxt.append(out[j])
            if (sp >= 0) != (sq >= 0):
                t = sp / (sp - sq)
                nxt.append((out[j][0] + (out[k][0] - out[j][0]) * t, out[j][1] + (out[k][1] - out[j][1]) * t))
        out = nxt
    return out


def _hull(points) -> list:
    """Convex hull (counter-clockwise list of (x, y)) of 2-D points (monotone chain)."""
    pts = sorted(set(map(tuple, points)))
    if len(pts) < 3:
        return pts

    def half(seq):
        h = []
        for p in seq:
            while len(h) >= 2 and ((h[-1][0] - h[-2][0]) * (p[1] - h[-2][1]) - (h[-1][1] - h[-2][1]) * (p[0] - h[-2][0])) <= 0:
                h.pop()
            h.append(p)
        return h

    lower, upper = half(pts), half(pts[::-1])
    return lower[:-1] + upper[:-1]


def polygon_area(poly) -> float:
    if len(poly) < 3:
        return 0.0
    return 0.5 * abs(sum(poly[i][0] * poly[(i + 1) % len(poly)][1] - poly[(i + 1) % len(poly)][0] * poly[i][1]
                         for i in range(len(poly))))


def trihedral_aperture(outline: np.ndarray) -> float:
    """A_eff (m^2) of a right trihedral: outline (N, 2) = its faces' vertices projected along the line of
    sight, apex at the origin."""
    p = _hull(np.asarray(outline, np.float64).tolist())
    if len(p) < 3:
        return 0.0
    return polygon_area(_clip(p, [(-x, -y) for x, y in p]))
