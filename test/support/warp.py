"""Plumbing of the Warp tests (support.warp, imported by the Warp tests): skip policy and Embree comparison.

Warp is in the `test` extra, so CI has it: under CI=true a missing Warp fails instead of skipping.
CUDA tests skip without a CUDA device, and fail only where one was expected (RADARAYS_EXPECT_CUDA=1).
"""
import os

import numpy as np
import pytest

from radarays_ros.tracing.backend import ALL, Rays

GRAZER_FRACTION = 1e-4  # rays allowed to disagree (edge grazers), from issue #16
DISTANCE_TOL = 1e-3  # metres


def require_warp():
    """The warp module, or a skip (a failure under CI=true, where the test extra installs it)."""
    try:
        import warp  # noqa: F401
    except ImportError as exc:
        if os.environ.get("CI", "").lower() == "true":
            raise AssertionError(f"CI=true but warp-lang is not importable ({exc}); it is in the test extra") from None
        pytest.skip("warp-lang is not installed", allow_module_level=True)
    return warp


def require_cuda():
    """Skips unless Warp sees a CUDA device; fails instead where RADARAYS_EXPECT_CUDA=1 says one is there."""
    from radarays_ros.tracing.warp import cuda_devices

    if cuda_devices() < 1:
        if os.environ.get("RADARAYS_EXPECT_CUDA") == "1":
            raise AssertionError("RADARAYS_EXPECT_CUDA=1 but Warp sees no CUDA device")
        pytest.skip("no CUDA device visible to Warp")


def disagreement(a, b) -> np.ndarray:
    """(N,) bool: rays whose hit/miss differs, or that hit both but more than DISTANCE_TOL apart
    (the other surface of an edge a ray grazes)."""
    ha, hb = a.hit, b.hit
    both = ha & hb
    far = np.zeros(len(ha), bool)
    far[both] = np.abs(a.distance[both] - b.distance[both]) > DISTANCE_TOL
    return (ha != hb) | far


def triangle_distance(scene, entity_id, face_id, origin, direction):
    """Distance along a ray to a face (entity id, face id in its mesh file: a polygon of the file may
    be several triangles), inf if it misses (Moller-Trumbore in float64, a little slack at the edges)."""
    e = scene.entity(int(entity_id))
    best = np.inf
    for row in np.flatnonzero(e.mesh.face_ids == face_id):
        p = e.mesh.vertices[e.mesh.faces[row]] @ e.pose[:3, :3].T + e.pose[:3, 3]
        e1, e2 = p[1] - p[0], p[2] - p[0]
        q = np.cross(direction, e2)
        det = float(e1 @ q)
        if abs(det) < 1e-15:
            continue
        s = origin - p[0]
        u = float(s @ q) / det
        r = np.cross(s, e1)
        v = float(direction @ r) / det
        slack = 1e-5
        if u < -slack or v < -slack or u + v > 1 + slack:
            continue
        best = min(best, float(e2 @ r) / det)
    return best


def tied(scene, origins, directions, a, b, rays) -> np.ndarray:
    """(len(rays),) bool: the two answers name different triangles that the ray meets at the same
    distance (coincident faces, e.g. a wall's foot inside the floor plane): either is a correct first hit."""
    out = np.zeros(len(rays), bool)
    for k, i in enumerate(rays):
        o, d = np.asarray(origins[i], float), np.asarray(directions[i], float)
        d = d / np.linalg.norm(d)
        ta = triangle_distance(scene, a.entity[i], a.face[i], o, d)
        tb = triangle_distance(scene, b.entity[i], b.face[i], o, d)
        out[k] = abs(ta - a.distance[i]) < 1e-4 and abs(tb - b.distance[i]) < 1e-4 and abs(ta - tb) < 1e-4
    return out


def assert_same_hits(a, b, directions=None, normal_tol=2e-3, scene=None, origins=None, max_ties=0.005):
    """Hit masks agree except grazers (<= GRAZER_FRACTION of rays); distances within 1 mm; identical
    ids and normals facing the ray where both hit. With scene and origins, rays whose answers name two
    different triangles are accepted where both triangles are met at the reported distance (ties of
    coincident faces, broken by BVH order in either tracer), up to a fraction max_ties of the rays;
    without them, ids must be identical. Returns the number of rays that differ (grazers and ties)."""
    bad = disagreement(a, b)
    allowed = int(GRAZER_FRACTION * len(bad))
    assert bad.sum() <= allowed, f"{int(bad.sum())} of {len(bad)} rays disagree (allowed {allowed})"
    same = a.hit & b.hit & ~bad
    assert same.sum() > 0
    np.testing.assert_allclose(a.distance[same], b.distance[same], atol=DISTANCE_TOL, rtol=0)
    other = np.flatnonzero(same & ((a.entity != b.entity) | (a.face != b.face)))
    if len(other) and scene is not None:
        ties = tied(scene, origins, directions, a, b, other)
        assert ties.all(), f"rays {other[~ties][:5].tolist()} name different triangles that are not tied"
        assert len(other) <= max(2, max_ties * len(bad)), f"{len(other)} ties of coincident faces in {len(bad)} rays"
        same[other] = False
    for name in ("entity", "face", "material"):
        np.testing.assert_array_equal(getattr(a, name)[same], getattr(b, name)[same], err_msg=name)
    assert np.all(~np.isfinite(a.distance[~a.hit])) and np.all(a.entity[~a.hit] == -1)
    assert np.all(a.face[~a.hit] == -1) and np.all(a.material[~a.hit] == -1)
    np.testing.assert_allclose(a.normal[same], b.normal[same], atol=normal_tol)
    if directions is not None:
        d = np.asarray(directions, np.float32)
        d = d / np.linalg.norm(d, axis=1, keepdims=True)
        assert np.all(np.einsum("ij,ij->i", a.normal[a.hit], d[a.hit]) <= 1e-6)  # facing the ray
        np.testing.assert_allclose(a.incidence_cosines(d)[same], b.incidence_cosines(d)[same], atol=normal_tol)
    return int(bad.sum()) + len(other)  # rays whose answers may lead a sensor model elsewhere


class CrossChecked:
    """A backend that traces with `backend` and checks every call against `reference` on the same rays
    (assert_same_hits, ties verified on `scene`); `diverging` counts the rays allowed to differ. Ties
    are bounded per frame by the caller: a later round of a lidar traces mostly rays inside glass panes,
    whose edges lie in their walls' planes."""

    def __init__(self, backend, reference, scene):
        self.backend, self.reference, self.scene = backend, reference, scene
        self.diverging = 0
        self.calls = 0

    def trace(self, origins, directions, tmin=0.0, tmax=np.inf, *, want=ALL):
        return self.trace_rays(Rays(origins, directions), tmin, tmax, want=want)

    def trace_rays(self, rays, tmin=0.0, tmax=np.inf, *, want=ALL):
        ours = self.backend.trace_rays(rays, tmin, tmax, want=want)
        theirs = self.reference.trace_rays(rays, tmin, tmax, want=want)
        if ours.hit.any() or theirs.hit.any():
            self.diverging += assert_same_hits(ours, theirs, rays.directions, scene=self.scene, origins=rays.origins,
                                               max_ties=1.0)
        self.calls += 1
        return ours

    def __getattr__(self, name):
        return getattr(self.backend, name)


def random_rays(scene, n, seed):
    """n rays from points inside the scene's bounds in uniformly random directions (float32)."""
    rng = np.random.default_rng(seed)
    lo, hi = scene.bounds()
    pad = 0.05 * (hi - lo)
    o = rng.uniform(lo + pad, hi - pad, size=(n, 3)).astype(np.float32)
    d = rng.normal(size=(n, 3))
    d = (d / np.linalg.norm(d, axis=1, keepdims=True)).astype(np.float32)
    return o, d


