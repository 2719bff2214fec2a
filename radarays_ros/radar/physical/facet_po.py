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

import numpy as np

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
    edge = end - start
    length = np.linalg.norm(edge, axis=1)
    t = edge / np.maximum(length, 1e-300)[:, None]
    nu = np.cross(t, normal)
    p2 = np.einsum("ij,ij->i", p, p)
    half = 0.5 * np.einsum("ij,ij->i", p, t) * length
    mid = 0.5 * (start + end)
    return (-1j * np.einsum("ij,ij->i", p, nu) / np.maximum(p2, 1e-300) * length
            * np.exp(1j * np.einsum("ij,ij->i", p, mid)) * np.sinc(half / np.pi))


def effective_aperture(integral_abs: np.ndarray, cos_theta: np.ndarray, area: np.ndarray, foot_inside: np.ndarray,
                       height: np.ndarray, distance: np.ndarray, wavelength: float) -> np.ndarray:
    """|cos(theta) I| limited by the Fresnel zone (m^2): sqrt(sigma) = sqrt(4 pi) / lambda x this."""
    far = np.minimum(cos_theta * integral_abs, 0.5 * wavelength * distance)
    image = np.where(foot_inside, np.minimum(area, 0.5 * wavelength * height), 0.0)
    return np.maximum(far, image)


def sigma(aperture: np.ndarray, wavelength: float) -> np.ndarray:
    """sigma = 4 pi A_eff^2 / lambda^2 (m^2)."""
    return 4.0 * np.pi * aperture ** 2 / wavelength ** 2
