"""SDF primitive shapes as triangle meshes in their own frame (centred as SDF defines them).

Curved shapes are tessellated finely enough for sensors (a cylinder of radius r deviates at most
r·(1 − cos(π/SECTIONS)) from the true surface: 0.3 % with 40 sections). Meshes are cached per
parameter set, so a world of many equal boxes builds each shape once; callers must not modify them.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..errors import WorldError
from .mesh import TriMesh

MAX_SIZE_M = 2e7  # twice the largest coordinate a world may have (transforms.MAX_COORDINATE_M)
MIN_SIZE_M = 1e-9  # a nanometre: smaller is a typo, and squared areas would underflow float32

SECTIONS = 40  # around-axis segments of cylinders and capsules
SPHERE_SUBDIVISIONS = 3  # icosphere: 1280 faces, worst radial error 0.3 %


def _tri(vertices, faces, source: str) -> TriMesh:
    return TriMesh(np.asarray(vertices, float), np.asarray(faces, np.int64), source=source)


def box(size) -> TriMesh:
    """Axis-aligned box centred at the origin; size (x, y, z)."""
    return _box(*_positive(size, 3, "box size"))


@lru_cache(maxsize=256)
def _box(sx: float, sy: float, sz: float) -> TriMesh:
    import trimesh

    m = trimesh.creation.box(extents=(sx, sy, sz))
    return _tri(m.vertices, m.faces, f"box {sx} {sy} {sz}")


def cylinder(radius: float, length: float) -> TriMesh:
    """Cylinder along z, centred at the origin."""
    r, h = _positive((radius, length), 2, "cylinder radius/length")
    return _cylinder(r, h)


@lru_cache(maxsize=256)
def _cylinder(r: float, h: float) -> TriMesh:
    import trimesh

    m = trimesh.creation.cylinder(radius=r, height=h, sections=SECTIONS)
    return _tri(m.vertices, m.faces, f"cylinder r={r} l={h}")


def sphere(radius: float) -> TriMesh:
    (r,) = _positive((radius,), 1, "sphere radius")
    return _ellipsoid(r, r, r)


def ellipsoid(radii) -> TriMesh:
    return _ellipsoid(*_positive(radii, 3, "ellipsoid radii"))


@lru_cache(maxsize=256)
def _ellipsoid(rx: float, ry: float, rz: float) -> TriMesh:
    import trimesh

    m = trimesh.creation.icosphere(subdivisions=SPHERE_SUBDIVISIONS, radius=1.0)
    return _tri(np.asarray(m.vertices) * (rx, ry, rz), m.faces, f"ellipsoid {rx} {ry} {rz}")


def capsule(radius: float, length: float) -> TriMesh:
    """Cylinder of `length` along z with hemispherical caps (total length + 2·radius), centred."""
    r, h = _positive((radius, length), 2, "capsule radius/length")
    return _capsule(r, h)


@lru_cache(maxsize=256)
def _capsule(r: float, h: float) -> TriMesh:
    import trimesh

    m = trimesh.creation.capsule(height=h, radius=r, count=[SECTIONS, SECTIONS // 2])
    v = np.asarray(m.vertices, float)
    v[:, 2] -= (v[:, 2].max() + v[:, 2].min()) / 2  # centred whatever trimesh's convention
    return _tri(v, m.faces, f"capsule r={r} l={h}")


def plane(normal=(0.0, 0.0, 1.0), size=(1.0, 1.0)) -> TriMesh:
    """A finite rectangle of `size` (x, y before rotation) through the origin, facing `normal`."""
    n = np.asarray(normal, float)
    sx, sy = _positive(size, 2, "plane size")
    if n.shape != (3,) or not np.all(np.isfinite(n)) or np.linalg.norm(n) < 1e-12:
        raise WorldError(f"plane normal {normal}: expected three finite numbers, not all zero")
    return _plane(tuple(float(x) for x in n / np.linalg.norm(n)), sx, sy)


@lru_cache(maxsize=64)
def _plane(n: tuple, sx: float, sy: float) -> TriMesh:
    v = np.array([[-sx / 2, -sy / 2, 0], [sx / 2, -sy / 2, 0], [sx / 2, sy / 2, 0], [-sx / 2, sy / 2, 0]])
    r = _rotation_z_to(np.asarray(n))
    return _tri(v @ r.T, [[0, 1, 2], [0, 2, 3]], f"plane n={n} size={sx} {sy}")


def _rotation_z_to(n: np.ndarray) -> np.ndarray:
    """Smallest rotation taking +z to the unit vector n (as Gazebo orients planes)."""
    z = np.array([0.0, 0.0, 1.0])
    axis = np.cross(z, n)
    s, c = np.linalg.norm(axis), float(np.dot(z, n))
    if s < 1e-12:
        return np.eye(3) if c > 0 else np.diag([1.0, -1.0, -1.0])
    k = axis / s
    kx = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + s * kx + (1 - c) * kx @ kx


def polyline(polygons: list[np.ndarray], height: float) -> TriMesh:
    """Extrude closed 2-D polylines (lists of (x, y)) from z=0 to z=height: walls plus caps."""
    (h,) = _positive((height,), 1, "polyline height")
    verts, faces = [], []
    for pts in polygons:
        pts = np.asarray(pts, float).reshape(-1, 2)
        if len(pts) > 1 and np.allclose(pts[0], pts[-1]):
            pts = pts[:-1]
        if len(pts) < 3:
            raise WorldError(f"polyline: needs at least 3 distinct points, got {len(pts)}")
        if _signed_area(pts) < 0:
            pts = pts[::-1]
        n, base = len(pts), sum(len(v) for v in verts)
        bottom = np.column_stack([pts, np.zeros(n)])
        top = np.column_stack([pts, np.full(n, h)])
        verts += [bottom, top]
        for i in range(n):
            j = (i + 1) % n
            faces += [[base + i, base + j, base + n + j], [base + i, base + n + j, base + n + i]]
        for a, b, c in _ear_clip(pts):
            faces += [[base + a, base + c, base + b], [base + n + a, base + n + b, base + n + c]]
    return _tri(np.concatenate(verts), faces, f"polyline h={h}")


def _signed_area(p: np.ndarray) -> float:
    return 0.5 * float(np.sum(p[:, 0] * np.roll(p[:, 1], -1) - np.roll(p[:, 0], -1) * p[:, 1]))


def _ear_clip(p: np.ndarray) -> list[tuple[int, int, int]]:
    """Triangulate a simple counter-clockwise polygon by ear clipping (O(n²), polylines are small)."""
    idx = list(range(len(p)))
    out = []
    guard = 0
    while len(idx) > 3 and guard < 10 * len(p) ** 2:
        guard += 1
        for k in range(len(idx)):
            a, b, c = idx[k - 1], idx[k], idx[(k + 1) % len(idx)]
            if _cross(p[a], p[b], p[c]) <= 1e-15:
                continue  # reflex corner
            if any(_inside(p[o], p[a], p[b], p[c]) for o in idx if o not in (a, b, c)):
                continue
            out.append((a, b, c))
            idx.pop(k)
            break
        else:
            break  # degenerate polygon: fall back to a fan of what is left
    for k in range(1, len(idx) - 1):
        out.append((idx[0], idx[k], idx[k + 1]))
    return out


def _cross(a, b, c) -> float:
    return float((b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0]))


def _inside(p, a, b, c) -> bool:
    return _cross(a, b, p) >= 0 and _cross(b, c, p) >= 0 and _cross(c, a, p) >= 0


def _positive(values, n: int, what: str) -> tuple[float, ...]:
    try:
        arr = np.asarray(values, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        raise WorldError(f"{what} {values}: expected {n} positive numbers") from None
    if arr.shape != (n,) or not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise WorldError(f"{what} {list(np.atleast_1d(values))}: expected {n} finite positive number(s)")
    if np.any(arr > MAX_SIZE_M) or np.any(arr < MIN_SIZE_M):  # float32 vertices and the BVH need sane extents
        raise WorldError(f"{what} {arr.tolist()}: beyond the sizes a world may hold, allowed [{MIN_SIZE_M:g}, {MAX_SIZE_M:g}] m")
    return tuple(float(x) for x in arr)
