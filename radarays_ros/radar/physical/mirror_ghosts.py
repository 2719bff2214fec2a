"""Multipath ghosts by the image method: a scatterer seen by way of a large flat face (a building's wall).

A flat face large against its first Fresnel zone acts as a mirror: the wave that reaches a scatterer T by
way of the face, and comes back the same way, is the wave of the radar's image S' (S mirrored in the
face's plane) reaching T directly (image theory; Born & Wolf, "Principles of Optics", Sec. 3.2; for radar
multipath, Skolnik, "Radar Handbook", 3rd ed., Ch. 26 "multipath", and Knott, "Radar Cross Section",
Sec. 2.5). So the radar sees T's image T' behind the face:

    range |T - S'| = |T' - S|,  bearing of T' from S,  sigma_ghost = sigma_T(seen from S') rho_M^2,
    P = K g(T')^2 sigma_ghost / |T' - S|^4

with rho_M the face's coherent power reflectivity (roughness.py: Fresnel |Gamma|^2 x the Rayleigh roughness
factor) at the incidence angle at the specular point X, where the line S' -> T crosses the plane; the path
exists only when X lies on the face and S -> X and X -> T are free. The mixed paths S -> T -> X -> S
(bistatic, range (|T - S| + |T - S'|) / 2) are not modelled here.

This file holds the geometry: which faces are mirrors, the reflection, the plane crossing, and which
scatterers can have an image in a face this frame (facet_glints.frame_glints evaluates them from S').
"""
from __future__ import annotations

import math

import numpy as np

MIRROR_MIN_AREA_M2 = 4.0  # a face this large holds the first Fresnel zone (sqrt(lambda R / 2) ~ 0.2 m at 20 m) many times
MIRROR_MAX_TILT = math.radians(10.0)  # vertical faces only (walls, windows): the ground's image is another item
MIN_HEIGHT_M = 0.05  # the radar and the scatterer must stand at least this far in front of the face
OBJECT_RADIUS_M = 10.0  # curved surfaces larger than this (terrain, hills) are not ghost targets
BEAM_WIDTHS = 2.0  # images are looked for within +- this many azimuth beam widths (the two-way sinc: -37 dB there)


def mirror_faces(sc) -> np.ndarray:
    """Indices of the flat plates that act as mirrors: vertical within MIRROR_MAX_TILT, area >= MIRROR_MIN_AREA_M2."""
    flat = ~sc.plate_curved
    vertical = np.abs(sc.plate_normal[:, 2]) <= math.sin(MIRROR_MAX_TILT)
    return np.flatnonzero(flat & vertical & (sc.plate_area >= MIRROR_MIN_AREA_M2))


def reflection(normal: np.ndarray) -> np.ndarray:
    """H = I - 2 n n^T (a 3 x 3 reflection: H = H^T = H^-1)."""
    n = np.asarray(normal, np.float64)
    return np.eye(3) - 2.0 * np.outer(n, n)


def reflect(points: np.ndarray, centroid: np.ndarray, normal: np.ndarray) -> np.ndarray:
    """Points mirrored in the plane through centroid with unit normal."""
    h = (points - centroid) @ normal
    return points - 2.0 * h[..., None] * normal


def reflect_rows(points: np.ndarray, centroids: np.ndarray, normals: np.ndarray) -> np.ndarray:
    """reflect with a plane of its own for each row (N, 3): a moving face's plane at each azimuth's time."""
    h = np.einsum("ij,ij->i", points - centroids, normals)
    return points - 2.0 * h[:, None] * normals


def image_velocity(points: np.ndarray, velocities: np.ndarray, centroids: np.ndarray, normals: np.ndarray,
                   plane_velocities: np.ndarray, angular: np.ndarray) -> np.ndarray:
    """d/dt of the image S' = S - 2 h n, h = (S - c) . n, of points S (N, 3) moving with `velocities`, in planes
    (centroid c, unit normal n) moving rigidly: c with `plane_velocities`, the plane turning at `angular` (dn/dt =
    w x n). The time derivative of reflect_rows term by term:
        dS'/dt = v_S - 2 (dh/dt) n - 2 h dn/dt,  dh/dt = (v_S - v_c) . n + (S - c) . dn/dt,
    so a still plane gives H v_S, and a plane translating along its normal at speed a adds 2 a n."""
    n_dot = np.cross(angular, normals)
    rel = points - centroids
    h = np.einsum("ij,ij->i", rel, normals)
    h_dot = np.einsum("ij,ij->i", velocities - plane_velocities, normals) + np.einsum("ij,ij->i", rel, n_dot)
    return velocities - 2.0 * h_dot[:, None] * normals - 2.0 * h[:, None] * n_dot


def crossing(image: np.ndarray, target: np.ndarray, centroid: np.ndarray, normal: np.ndarray) -> np.ndarray:
    """X: where the segment image -> target (image behind the plane, target in front) crosses the plane."""
    h_i = (image - centroid) @ normal
    h_t = (target - centroid) @ normal
    t = -h_i / np.maximum(h_t - h_i, 1e-12)
    return image + (target - image) * t[..., None]


def face_axes(normal: np.ndarray) -> np.ndarray:
    """(2, 3): two unit directions in the face's plane (horizontal, then up the face for a vertical face)."""
    along = np.cross([0.0, 0.0, 1.0], normal)
    if np.linalg.norm(along) < 1e-9:
        along = np.cross([1.0, 0.0, 0.0], normal)
    along /= np.linalg.norm(along)
    return np.stack([along, np.cross(normal, along)])


def candidates(points: np.ndarray, sizes: np.ndarray, sensor: np.ndarray, centroid: np.ndarray, normal: np.ndarray,
               vertices: np.ndarray, wander: float, max_range: float) -> np.ndarray:
    """Indices of the scatterers (reference points, sizes: their half extent, m) that can have an image in a
    face (centroid, unit normal facing the sensor, its vertices) for a sensor near `sensor` (within `wander`
    m this frame): in front of the face, their crossing within the face's outline box (in its plane) grown
    by their size and the wander, their image path within max_range."""
    h = (points - centroid) @ normal
    front = np.flatnonzero(h > MIN_HEIGHT_M)
    if not len(front):
        return front
    image = reflect(sensor, centroid, normal)
    x = crossing(image[None, :], points[front], centroid, normal)
    axes = face_axes(normal)
    box = (vertices - centroid) @ axes.T  # (V, 2) the outline in the plane
    at = (x - centroid) @ axes.T
    slack = (sizes[front] + wander)[:, None]  # X moves by at most the scatterer's extent and the sensor's wander
    near = np.all((at >= box.min(axis=0) - slack) & (at <= box.max(axis=0) + slack), axis=1)
    reach = np.linalg.norm(points[front] - image, axis=1) - sizes[front] < max_range
    return front[near & reach]


def facing_azimuths(vertices: np.ndarray, sensor: np.ndarray, boresight: np.ndarray, reach: float) -> np.ndarray:
    """(A,) bool: the azimuths (boresight bearings, rad) within `reach` of the face's bearing span from the
    sensor (its vertices' bearings; the image of anything in the face is seen through the face)."""
    rel = vertices[:, :2] - sensor[:2]
    mid = math.atan2(float(rel[:, 1].mean()), float(rel[:, 0].mean()))
    spread = np.angle(np.exp(1j * (np.arctan2(rel[:, 1], rel[:, 0]) - mid)))
    if float(np.min(np.linalg.norm(rel, axis=1))) < 1e-6 or np.ptp(spread) > math.pi:
        return np.ones(len(boresight), bool)  # the sensor at (or beside) the face: no cut
    off = np.angle(np.exp(1j * (boresight - mid)))
    return (off >= spread.min() - reach) & (off <= spread.max() + reach)


def object_surfaces(sc) -> np.ndarray:
    """(S,) bool per curved surface id: an object (its plates within OBJECT_RADIUS_M of their mean), cached on sc."""
    cached = sc.__dict__.get("_ghost_objects")
    if cached is not None:
        return cached
    surface = sc.plate_surface
    curved = np.flatnonzero(surface >= 0)
    count = int(surface.max()) + 1 if len(curved) else 0
    out = np.zeros(count, bool)
    if count:
        ids = surface[curved]
        n = np.bincount(ids, minlength=count).astype(np.float64)
        mean = np.stack([np.bincount(ids, sc.plate_centroid[curved, k], minlength=count) for k in range(3)], axis=1)
        mean /= np.maximum(n, 1.0)[:, None]
        spread = np.zeros(count)
        np.maximum.at(spread, ids, np.linalg.norm(sc.plate_centroid[curved] - mean[ids], axis=1) + sc.plate_radius[curved])
        out = (n > 0) & (spread <= OBJECT_RADIUS_M)
    sc.__dict__["_ghost_objects"] = out
    return out
