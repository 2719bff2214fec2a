"""Physical-optics RCS of a flat facet (a plane polygon of any shape), tilt pattern included.

    sigma = (4 pi / lambda^2) |cos(theta) I(p)|^2,   I(p) = integral over the facet of exp(j p . r) dA,
    p = 2 k u_t  (u_t: the in-plane part of the unit vector towards the radar, k = 2 pi / lambda)

(Knott, Shaeffer & Tuley, "Radar Cross Section", 2nd ed., Sec. 5.3, Eq. 5.24-5.26: the PO integral of a
perfectly conducting flat plate; at normal incidence sigma = 4 pi A^2 / lambda^2, a rectangle a x b
tilted by theta about side b gives 4 pi A^2 / lambda^2 cos^2(theta) sinc^2(k a sin(theta)).)

I(p) over a triangle (any polygon: the sum over its triangles) in closed form by the divergence theorem
(Gordon, "Far-field approximations to the Kirchhoff-Helmholtz representations of scattered fields",
IEEE Trans. AP-23, 1975): exp(j p.r) = div(-j p / |p|^2 exp(j p.r)) in the plane, so

    I(p) = sum over edges m of  -j (p . nu_m) / |p|^2  L_m exp(j p . r_m) sinc(p . t_m L_m / 2)

(nu_m outward in-plane edge normal, t_m edge direction, L_m length, r_m midpoint, sinc x = sin x / x);
for |p| L << 1, I = A exp(j p . centroid).

Fresnel-zone limit: the far-field integral holds for R > 2 D^2 / lambda. Nearer, a plate returns at most
what an infinite plane does (the radar's mirror image, sigma = pi R^2, Knott Sec. 5.3): the effective
aperture |cos(theta) I| is capped at the first Fresnel zone, lambda R / 2 (4 pi (lambda R / 2)^2 /
lambda^2 = pi R^2). When the foot of the perpendicular from the radar lies on the facet the facet holds
the radar's image: the aperture is at least min(A, lambda h / 2) (h: the radar's height above the plane),
so a large plate seen near normal incidence at short range reads pi h^2 however it is tilted.
"""
from __future__ import annotations

import math

import numpy as np

from ...compiled import inlined, kernel

SMALL_PHASE = 1e-3  # |p| x size below which the series I = A exp(j p.c) is used (relative error ~1e-7)


def triangle_integral(p: np.ndarray, tri: np.ndarray) -> np.ndarray:
    """I(p) (complex, m^2) of triangles tri (N, 3, 3) for in-plane phase gradients p (N, 3) (rad/m), with
    r measured from the origin of tri's coordinates."""
    a, b, c = tri[:, 0], tri[:, 1], tri[:, 2]
    normal = np.cross(b - a, c - a)
    double_area = np.linalg.norm(normal, axis=1)
    n_hat = normal / np.maximum(double_area, 1e-300)[:, None]
    p2 = np.einsum("ij,ij->i", p, p)
    size = np.sqrt(double_area)
    centroid = (a + b + c) / 3.0
    small = np.sqrt(p2) * size < SMALL_PHASE
    out = 0.5 * double_area * np.exp(1j * np.einsum("ij,ij->i", p, centroid))
    big = np.flatnonzero(~small)
    if len(big):
        total = np.zeros(len(big), np.complex128)
        pb, nb = p[big], n_hat[big]
        for v0, v1 in ((a, b), (b, c), (c, a)):
            edge = (v1 - v0)[big]
            length = np.linalg.norm(edge, axis=1)
            t = edge / np.maximum(length, 1e-300)[:, None]
            nu = np.cross(t, nb)  # outward for a counter-clockwise triangle about its normal
            mid = 0.5 * (v0 + v1)[big]
            half = 0.5 * np.einsum("ij,ij->i", pb, t) * length
            total += (-1j * np.einsum("ij,ij->i", pb, nu) / p2[big] * length
                      * np.exp(1j * np.einsum("ij,ij->i", pb, mid)) * np.sinc(half / np.pi))
        out[big] = total
    return out


def edge_terms(p: np.ndarray, start: np.ndarray, end: np.ndarray, normal: np.ndarray) -> np.ndarray:
    """The edge terms of I(p) (complex, m^2) for outline edges start -> end (N, 3), counter-clockwise about
    the plate normal (N, 3), r from the plate's reference point; their sum over a plate's outline is I(p)
    (|p| must not be near 0: use the area there)."""
    out = np.empty(len(p), np.complex128)
    _edge_terms(*(np.ascontiguousarray(v, np.float64) for v in (p, start, end, normal)), out)
    return out


def outline_integrals(pairs, plate, edge_starts, edge_from, edge_to, centroid, normal, p) -> np.ndarray:
    """(len(pairs),) complex I(p[k]) of plate[k] for each k in pairs: the sum of the edge terms over its outline
    edge_from/edge_to[edge_starts[plate[k]]:edge_starts[plate[k] + 1]], r from centroid[k], in edge order
    (one loop, no per-edge arrays: a city's plates have ~10^5 edge terms a frame)."""
    out = np.empty(len(pairs), np.complex128)
    _outline_integrals(np.ascontiguousarray(pairs, np.int64), np.ascontiguousarray(plate, np.int64),
                       np.ascontiguousarray(edge_starts, np.int64),
                       *(np.ascontiguousarray(v, np.float64) for v in (edge_from, edge_to, centroid, normal, p)), out)
    return out


@inlined
def _edge_term(px, py, pz, sx, sy, sz, ex, ey, ez, nx, ny, nz):
    """-j (p . nu) / |p|^2 L exp(j p . r_mid) sinc(p . t L / 2), as (re, im): the edge term above."""
    dx, dy, dz = ex - sx, ey - sy, ez - sz
    length = math.sqrt(dx * dx + dy * dy + dz * dz)
    inv = 1.0 / max(length, 1e-300)
    tx, ty, tz = dx * inv, dy * inv, dz * inv
    nux, nuy, nuz = ty * nz - tz * ny, tz * nx - tx * nz, tx * ny - ty * nx  # t x n: outward in-plane normal
    p2 = max(px * px + py * py + pz * pz, 1e-300)
    half = 0.5 * (px * tx + py * ty + pz * tz) * length
    phase = px * 0.5 * (sx + ex) + py * 0.5 * (sy + ey) + pz * 0.5 * (sz + ez)
    sinc = 1.0 if half == 0.0 else math.sin(half) / half
    scale = (px * nux + py * nuy + pz * nuz) / p2 * length * sinc  # -j scale exp(j phase)
    return scale * math.sin(phase), -scale * math.cos(phase)


@kernel
def _edge_terms(p, start, end, normal, out):
    for i in range(p.shape[0]):
        out[i] = complex(*_edge_term(p[i, 0], p[i, 1], p[i, 2], start[i, 0], start[i, 1], start[i, 2],
                                     end[i, 0], end[i, 1], end[i, 2], normal[i, 0], normal[i, 1], normal[i, 2]))


@kernel
def _outline_integrals(pairs, plate, edge_starts, edge_from, edge_to, centroid, normal, p, out):
    for k in range(pairs.shape[0]):
        i = pairs[k]
        cx, cy, cz = centroid[i, 0], centroid[i, 1], centroid[i, 2]
        re, im = 0.0, 0.0
        for m in range(edge_starts[plate[i]], edge_starts[plate[i] + 1]):
            r, j = _edge_term(p[i, 0], p[i, 1], p[i, 2], edge_from[m, 0] - cx, edge_from[m, 1] - cy,
                              edge_from[m, 2] - cz, edge_to[m, 0] - cx, edge_to[m, 1] - cy, edge_to[m, 2] - cz,
                              normal[i, 0], normal[i, 1], normal[i, 2])
            re += r
            im += j
        out[k] = complex(re, im)


def effective_aperture(integral_abs: np.ndarray, cos_theta: np.ndarray, area: np.ndarray, foot_inside: np.ndarray,
                       height: np.ndarray, distance: np.ndarray, wavelength: float) -> np.ndarray:
    """|cos(theta) I| limited by the Fresnel zone (m^2): sqrt(sigma) = sqrt(4 pi) / lambda x this."""
    far = np.minimum(cos_theta * integral_abs, 0.5 * wavelength * distance)
    image = np.where(foot_inside, np.minimum(area, 0.5 * wavelength * height), 0.0)
    return np.maximum(far, image)


def sigma(aperture: np.ndarray, wavelength: float) -> np.ndarray:
    """sigma = 4 pi A_eff^2 / lambda^2 (m^2)."""
    return 4.0 * np.pi * aperture ** 2 / wavelength ** 2
