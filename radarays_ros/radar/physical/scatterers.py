"""The coherent scatterers of a mesh: flat plates, curved surfaces and corner reflectors.

A triangle mesh is read once into the parts that return a glint, each evaluated in every frame by its own
formula (facet_glints.py), so a small target never depends on which rays happened to hit it:

* plates: edge-connected coplanar triangles of one material (facet_po.py, any polygon);
* curved surfaces: plates joined by gentle folds (SMOOTH_FOLD_DEG), at least CURVED_MIN_PLATES of them (a
  faceted cylinder or sphere); each plate of such a surface carries the surface's principal curvatures
  there, fitted from its neighbours' normals (curved_rcs.py);
* corners: pairs of plates at right angles facing each other across a shared fold (dihedrals) and triples
  meeting at one apex (trihedrals) (corner_rcs.py). Found among plates of the same mesh or world.

Curvature: a plate i with neighbours j has dn = n_j - n_i ~ S dc (dc = c_j - c_i, both in the plate's
tangent plane), S the symmetric 2 x 2 shape operator; least squares over the neighbours with the
minimum-norm solution (pinv), so a direction no neighbour spans (along a cylinder) reads zero curvature.
Its eigenvalues are the principal curvatures 1 / r (Do Carmo, "Differential Geometry of Curves and
Surfaces", Sec. 3.2; the discrete fit as in Taubin, "Estimating the tensor of curvature of a surface from
a polyhedral approximation", ICCV 1995).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from typing import Iterable

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

COPLANAR_DEG = 0.5  # neighbouring triangles closer than this in normal are one plate
SMOOTH_FOLD_DEG = 30.0  # plates folded by less than this join into one curved surface
CURVED_MIN_PLATES = 3  # a curved surface has at least this many plates (a bent sheet of two is two plates)
RIGHT_ANGLE_TOL_DEG = 2.0  # corner faces within this of perpendicular
MIN_CORNER_AREA = 1e-4  # m^2: smaller faces are not searched for corners (sigma < 0.01 m^2 at 77 GHz)
MAX_CORNER_PLATES = 4000  # corners are searched among at most this many plates (the largest)
STRAIGHT_BEND = 1e-3  # rad: a principal direction bending less than this across its plate is straight
SOLVE_CHUNK = 65536  # plates per batched curvature solve
BUILD_CHUNK = 65536  # triangles (or plate pairs) per element-wise step of the build (bounds its temporaries)
MERGE_M = 1e-6  # vertices closer than this are one (meshes written with a vertex per face)


@dataclass
class Scatterers:
    """Everything in one frame (entity or world). Arrays per item; `entity` = scene entity id."""
    # plates (P) and their triangles (T)
    tri: np.ndarray  # (T, 3, 3) vertices
    tri_plate: np.ndarray  # (T,) plate index (triangles sorted by plate)
    edge_from: np.ndarray  # (E, 3) the plates' outline edges, counter-clockwise about their normal
    edge_to: np.ndarray  # (E, 3)
    edge_plate: np.ndarray  # (E,) plate index (sorted)
    plate_normal: np.ndarray  # (P, 3) unit
    plate_centroid: np.ndarray  # (P, 3)
    plate_area: np.ndarray  # (P,)
    plate_radius: np.ndarray  # (P,) largest distance of its vertices from its centroid
    plate_material: np.ndarray  # (P,) scene material id
    plate_entity: np.ndarray  # (P,)
    plate_curved: np.ndarray  # (P,) bool: part of a curved surface (evaluated by curvature, not as a plate)
    plate_surface: np.ndarray  # (P,) curved surface id, -1 for flat plates
    curvature: np.ndarray  # (P, 2) principal curvatures (1/m; 0 = straight)
    principal: np.ndarray  # (P, 2, 3) their unit directions
    extent: np.ndarray  # (P, 2) the plate's length along them
    plate_cone: np.ndarray  # (P,) rad: the line of sight within this of the normal can meet the curved surface
                            # here (3/4 of the largest bend |kappa| extent; pi with a straight direction)
    # dihedrals (D)
    dih_point: np.ndarray  # (D, 3) mid point of the fold
    dih_axis: np.ndarray  # (D, 3) unit fold direction
    dih_normals: np.ndarray  # (D, 2, 3) the faces' normals (pointing into the corner)
    dih_width: np.ndarray  # (D, 2) each face's width from the fold
    dih_length: np.ndarray  # (D,) length of the common fold
    dih_material: np.ndarray  # (D, 2)
    dih_entity: np.ndarray  # (D,)
    # trihedrals (C)
    tri_apex: np.ndarray  # (C, 3)
    tri_normals: np.ndarray  # (C, 3, 3)
    tri_outline: np.ndarray  # (C, V, 3) the faces' vertices (repeated to the longest)
    tri_material: np.ndarray  # (C, 3)
    tri_min_area: np.ndarray  # (C,) area of its smallest face (every triple-bounce ray crosses each face once:
                              # the aperture is no larger)
    tri_entity: np.ndarray  # (C,)

    def transformed(self, pose: np.ndarray) -> "Scatterers":
        """The same scatterers moved by the 4x4 pose (world <- frame)."""
        r, t = pose[:3, :3], pose[:3, 3]
        pt = lambda v: v @ r.T + t  # noqa: E731
        dr = lambda v: v @ r.T  # noqa: E731
        return replace(self, tri=pt(self.tri), edge_from=pt(self.edge_from), edge_to=pt(self.edge_to), plate_normal=dr(self.plate_normal), plate_centroid=pt(self.plate_centroid),
                       principal=dr(self.principal), dih_point=pt(self.dih_point), dih_axis=dr(self.dih_axis),
                       dih_normals=dr(self.dih_normals), tri_apex=pt(self.tri_apex), tri_normals=dr(self.tri_normals),
                       tri_outline=pt(self.tri_outline))

    @property
    def empty(self) -> bool:
        return not (len(self.plate_area) or len(self.dih_length) or len(self.tri_apex))


def concatenate(parts: Iterable[Scatterers | None]) -> Scatterers:
    """One Scatterers of several (plate indices of triangles and surface ids renumbered). Field by field, each
    part's arrays let go once joined: given a generator (no other reference to the parts), the parts and
    the whole are not held at once (the world's static parts are ~120 MB on a 1M-triangle city)."""
    parts = [p for p in parts if p is not None]
    if not parts:
        return from_mesh(np.zeros((0, 3)), np.zeros((0, 3), np.int64), np.zeros(0, np.int64), 0)
    if len(parts) == 1:
        return parts[0]
    out = {}
    plate_off = np.cumsum([0] + [len(p.plate_area) for p in parts])[:-1]
    surf_off = np.cumsum([0] + [int(p.plate_surface.max(initial=-1)) + 1 for p in parts])[:-1]
    parts = [{f.name: getattr(p, f.name) for f in fields(Scatterers)} for p in parts]  # (the objects go here)
    for f in fields(Scatterers):
        items = [p.pop(f.name) for p in parts]
        if f.name in ("tri_plate", "edge_plate"):
            items = [v + o for v, o in zip(items, plate_off)]
        elif f.name == "plate_surface":
            items = [np.where(v >= 0, v + o, -1) for v, o in zip(items, surf_off)]
        elif f.name == "tri_outline":
            width = max(v.shape[1] for v in items)
            items = [np.concatenate([v, np.repeat(v[:, -1:], width - v.shape[1], axis=1)], axis=1) if v.shape[1] < width
                     else v for v in items]
        out[f.name] = np.concatenate(items)
        del items
    return Scatterers(**out)


def _components(n: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if n == 0:
        return np.zeros(0, np.int64)
    graph = coo_matrix((np.ones(len(a)), (a, b)), shape=(n, n))
    return connected_components(graph, directed=False)[1].astype(np.int64)


def _chunks(n: int, size: int):
    """(lo, hi) spans of at most `size` items covering range(n)."""
    return ((lo, min(lo + size, n)) for lo in range(0, n, size))


def _triangles(vertices: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """(T, 3, 3) corners of the faces (a gather: the same numbers whichever faces are asked together)."""
    return vertices[faces.reshape(-1)].reshape(-1, 3, 3)


def _row_dots(a: np.ndarray, b: np.ndarray, ia: np.ndarray, ib: np.ndarray) -> np.ndarray:
    """a[ia] . b[ib] per row, gathered a chunk at a time (not two (pairs, 3) copies at once)."""
    out = np.empty(len(ia))
    for lo, hi in _chunks(len(ia), BUILD_CHUNK):
        out[lo:hi] = np.einsum("ij,ij->i", a[ia[lo:hi]], b[ib[lo:hi]])
    return out


def _face_pairs(faces: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pairs of faces sharing an edge (each pair once)."""
    if not len(faces):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    n = len(faces)
    # edge k of face f is entry k * n + f (edges 01, 12, 20), keyed by its (low, high) vertex pair
    a = np.concatenate([faces[:, 0], faces[:, 1], faces[:, 2]])
    b = np.concatenate([faces[:, 1], faces[:, 2], faces[:, 0]])
    key = np.minimum(a, b)
    key *= int(faces.max()) + 1
    key += np.maximum(a, b)
    del a, b
    order = np.argsort(key, kind="stable")
    key = key[order]
    same = np.flatnonzero(key[1:] == key[:-1])
    del key
    return order[same] % n, order[same + 1] % n


def from_mesh(vertices: np.ndarray, faces: np.ndarray, materials: np.ndarray, entity: int, corners: bool = True) -> Scatterers:
    """The scatterers of one triangle mesh (vertices (V, 3) in its frame, faces (F, 3), material id per face);
    corners=False: plates and curved surfaces only (with_corners adds them, e.g. over several meshes).

    Memory: per-triangle work runs BUILD_CHUNK triangles (or pairs) at a time and each array is dropped when
    no longer needed (a 1M-triangle terrain kept ~0.4 GB of temporaries alive at once); only element-wise
    steps and gathers are chunked, every sum runs over the whole array as before, so the numbers are the same."""
    vertices = np.asarray(vertices, np.float64)
    faces = np.asarray(faces, np.int64)
    materials = np.asarray(materials, np.int64)
    if len(faces):
        _, first, merged = np.unique(np.round(vertices / MERGE_M), axis=0, return_index=True, return_inverse=True)
        del _
        vertices, faces = vertices[first], merged.reshape(-1)[faces]
        del first, merged
    else:
        faces = faces.reshape(0, 3)
    normal = np.empty((len(faces), 3))  # the cross product, made unit below
    double_area = np.empty(len(faces))
    for lo, hi in _chunks(len(faces), BUILD_CHUNK):
        tri = _triangles(vertices, faces[lo:hi])
        normal[lo:hi] = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
        double_area[lo:hi] = np.linalg.norm(normal[lo:hi], axis=1)
    good = double_area > 1e-12
    normal, double_area, faces, materials = normal[good], double_area[good], faces[good], materials[good]
    del good
    normal /= np.maximum(double_area, 1e-300)[:, None]
    # plates: edge neighbours with the same normal and material
    fa, fb = _face_pairs(faces)
    flat = (_row_dots(normal, normal, fa, fb) > math.cos(math.radians(COPLANAR_DEG))) & (materials[fa] == materials[fb])
    plate = _components(len(faces), fa[flat], fb[flat])
    del flat
    n_plates = int(plate.max(initial=-1)) + 1
    weighted = lambda w: np.bincount(plate, w, minlength=n_plates).astype(np.float64)  # noqa: E731 (float when empty)
    area = weighted(0.5 * double_area)
    corner_mean = np.empty((3, len(faces)))  # area-weighted corner mean per axis
    for lo, hi in _chunks(len(faces), BUILD_CHUNK):
        tri = _triangles(vertices, faces[lo:hi])
        for i in range(3):
            corner_mean[i, lo:hi] = 0.5 * double_area[lo:hi] * tri[:, :, i].mean(axis=1)
    centroid = np.stack([weighted(corner_mean[i]) for i in range(3)], axis=1).reshape(-1, 3)
    del corner_mean
    centroid /= np.maximum(area, 1e-300)[:, None]
    pn = np.stack([weighted(0.5 * double_area * normal[:, i]) for i in range(3)], axis=1).reshape(-1, 3)
    del normal, double_area
    pn /= np.maximum(np.linalg.norm(pn, axis=1), 1e-300)[:, None]
    p_mat = np.zeros(n_plates, np.int64)
    p_mat[plate] = materials
    del materials
    # curved surfaces: plates joined by gentle folds
    pa, pb = plate[fa], plate[fb]
    del fa, fb
    cross_plates = pa != pb
    pa, pb = pa[cross_plates], pb[cross_plates]
    del cross_plates
    if len(pa):
        pairs = np.unique(np.sort(np.stack([pa, pb], axis=1), axis=1), axis=0)
        pa, pb = pairs[:, 0], pairs[:, 1]
        del pairs  # (pa, pb are its views)
    smooth = (_row_dots(pn, pn, pa, pb) > math.cos(math.radians(SMOOTH_FOLD_DEG))) & (p_mat[pa] == p_mat[pb])
    pa, pb = pa[smooth], pb[smooth]
    del smooth
    surface = _components(n_plates, pa, pb)
    size = np.bincount(surface, minlength=int(surface.max(initial=-1)) + 1)
    curved = size[surface] >= CURVED_MIN_PLATES if n_plates else np.zeros(0, bool)
    del size
    keep = curved[pa] & curved[pb]
    pa, pb = pa[keep], pb[keep]
    del keep
    curvature, principal = _shape_operator(pn, centroid, pa, pb)
    del pa, pb
    extent, radius = _extent_and_radius(vertices, faces, plate, principal, centroid, n_plates)
    surface_id = np.where(curved, surface, -1)
    del surface
    bend = np.abs(curvature) * extent
    cone = np.where(bend.min(axis=1, initial=np.inf) < STRAIGHT_BEND, np.pi, 0.75 * bend.max(axis=1, initial=0.0))
    del bend
    # triangles and outlines are kept for the flat plates only (curved ones are evaluated by curvature):
    # a 1M-triangle terrain keeps none of its own
    flat_face = np.flatnonzero(~curved[plate]) if n_plates else np.zeros(0, np.int64)
    order = flat_face[np.argsort(plate[flat_face], kind="stable")]
    e_from, e_to, e_plate = _outline(faces[flat_face], plate[flat_face], vertices)
    out = Scatterers(
        tri=_triangles(vertices, faces[order]), tri_plate=plate[order], edge_from=e_from, edge_to=e_to, edge_plate=e_plate, plate_normal=pn, plate_centroid=centroid, plate_area=area, plate_radius=radius,
        plate_material=p_mat, plate_entity=np.full(n_plates, entity, np.int64), plate_curved=curved,
        plate_surface=surface_id, curvature=curvature, principal=principal, extent=extent, plate_cone=cone, **_corners(None))
    return with_corners(out) if corners else out


def with_corners(sc: Scatterers) -> Scatterers:
    """sc with the dihedral and trihedral corners among its flat plates (those it had are replaced)."""
    return replace(sc, **_corners(sc))


def _outline(faces, plate, vertices):
    """The directed edges (from, to, plate) of each plate's outline: its triangles' edges whose reverse is not
    in the same plate (interior edges cancel in the PO edge sum, facet_po.py), sorted by plate."""
    if not len(faces):
        return np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0, np.int64)
    a = np.concatenate([faces[:, 0], faces[:, 1], faces[:, 2]])
    b = np.concatenate([faces[:, 1], faces[:, 2], faces[:, 0]])
    owner = np.tile(plate, 3)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    by_key = np.lexsort((hi, lo, owner))
    same = (owner[by_key][1:] == owner[by_key][:-1]) & (lo[by_key][1:] == lo[by_key][:-1]) & (hi[by_key][1:] == hi[by_key][:-1])
    shared = np.zeros(len(a), bool)  # an edge twice in one plate is inside it
    shared[by_key[1:][same]] = True
    shared[by_key[:-1][same]] = True
    single = ~shared
    order = np.flatnonzero(single)[np.argsort(owner[single], kind="stable")]
    return vertices[a[order]], vertices[b[order]], owner[order]


def _tangent_basis(n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    helper = np.where(np.abs(n[:, [0]]) < 0.9, np.array([[1.0, 0, 0]]), np.array([[0, 1.0, 0]]))
    e1 = np.cross(n, helper)
    e1 /= np.linalg.norm(e1, axis=1)[:, None]
    return e1, np.cross(n, e1)


def _shape_operator(n: np.ndarray, c: np.ndarray, pa: np.ndarray, pb: np.ndarray):
    """(P, 2) principal curvatures and (P, 2, 3) directions from the neighbour pairs (pa, pb)."""
    p = len(n)
    e1, e2 = _tangent_basis(n) if p else (np.zeros((0, 3)), np.zeros((0, 3)))
    # normal equations of the rows [dx, dy, 0] . s = gx and [0, dx, dy] . s = gy, s = (s11, s12, s22),
    # summed per plate entry by entry (no (pairs, 3, 3) temporaries: a 1M-triangle terrain has 1.3M pairs)
    sums = {key: np.zeros(p) for key in ("xx", "xy", "yy", "xgx", "ygx_xgy", "ygy")}
    for i, j in ((pa, pb), (pb, pa)):
        dx, dy, gx, gy = (np.empty(len(i)) for _ in range(4))
        for lo, hi in _chunks(len(i), BUILD_CHUNK):  # the (pairs, 3) differences a chunk at a time
            ic, jc = i[lo:hi], j[lo:hi]
            dc, dn = c[jc] - c[ic], n[jc] - n[ic]
            dx[lo:hi], dy[lo:hi] = np.einsum("ij,ij->i", dc, e1[ic]), np.einsum("ij,ij->i", dc, e2[ic])
            gx[lo:hi], gy[lo:hi] = np.einsum("ij,ij->i", dn, e1[ic]), np.einsum("ij,ij->i", dn, e2[ic])
        # one product alive at a time
        sums["xx"] += np.bincount(i, dx * dx, minlength=p)
        sums["xy"] += np.bincount(i, dx * dy, minlength=p)
        sums["yy"] += np.bincount(i, dy * dy, minlength=p)
        sums["xgx"] += np.bincount(i, dx * gx, minlength=p)
        sums["ygx_xgy"] += np.bincount(i, dy * gx + dx * gy, minlength=p)
        sums["ygy"] += np.bincount(i, dy * gy, minlength=p)
        del dx, dy, gx, gy
    kappa, directions = np.zeros((p, 2)), np.zeros((p, 2, 3))
    for lo in range(0, p, SOLVE_CHUNK):  # in chunks: the batched pinv's temporaries stay small
        hi = min(lo + SOLVE_CHUNK, p)
        xx, xy, yy = sums["xx"][lo:hi], sums["xy"][lo:hi], sums["yy"][lo:hi]
        m = np.zeros((hi - lo, 3, 3))
        m[:, 0, 0], m[:, 0, 1], m[:, 1, 0] = xx, xy, xy
        m[:, 1, 1], m[:, 1, 2], m[:, 2, 1], m[:, 2, 2] = xx + yy, xy, xy, yy
        rhs = np.stack([sums["xgx"][lo:hi], sums["ygx_xgy"][lo:hi], sums["ygy"][lo:hi]], axis=1)
        s = np.einsum("nij,nj->ni", np.linalg.pinv(m, rcond=1e-9, hermitian=True), rhs)
        shape = np.stack([np.stack([s[:, 0], s[:, 1]], 1), np.stack([s[:, 1], s[:, 2]], 1)], 1)
        kappa[lo:hi], vec = np.linalg.eigh(shape)
        for k in range(2):
            directions[lo:hi, k] = vec[:, 0, k, None] * e1[lo:hi] + vec[:, 1, k, None] * e2[lo:hi]
    return kappa, directions


def _extent_and_radius(vertices, faces, plate, principal, centroid, n_plates):
    """(P, 2) length of each plate along its principal directions and (P,) largest distance of its vertices
    from its centroid, BUILD_CHUNK triangles at a time (min and max do not depend on the order)."""
    lo = np.full((2, n_plates), np.inf)
    hi = np.full((2, n_plates), -np.inf)
    radius = np.zeros(n_plates)
    for start, stop in _chunks(len(faces), BUILD_CHUNK):
        tri, own = _triangles(vertices, faces[start:stop]), plate[start:stop]
        for k in range(2):
            proj = np.einsum("tvi,ti->tv", tri, principal[own, k])
            np.minimum.at(lo[k], own, proj.min(axis=1))
            np.maximum.at(hi[k], own, proj.max(axis=1))
        np.maximum.at(radius, own, np.linalg.norm(tri - centroid[own][:, None, :], axis=2).max(axis=1))
    out = np.zeros((n_plates, 2))
    for k in range(2):
        out[:, k] = np.where(np.isfinite(hi[k] - lo[k]), hi[k] - lo[k], 0.0)
    return out, radius


def _corners(sc: Scatterers | None) -> dict:
    """Dihedral and trihedral corners among the flat plates of area >= MIN_CORNER_AREA (the Scatterers fields
    of the corners; none for sc None). A corner belongs to the entity of its first plate."""
    if sc is None or not len(sc.plate_area):
        return dict(dih_point=np.zeros((0, 3)), dih_axis=np.zeros((0, 3)), dih_normals=np.zeros((0, 2, 3)),
                    dih_width=np.zeros((0, 2)), dih_length=np.zeros(0), dih_material=np.zeros((0, 2), np.int64),
                    dih_entity=np.zeros(0, np.int64), tri_apex=np.zeros((0, 3)), tri_normals=np.zeros((0, 3, 3)),
                    tri_outline=np.zeros((0, 1, 3)), tri_material=np.zeros((0, 3), np.int64), tri_min_area=np.zeros(0), tri_entity=np.zeros(0, np.int64))
    tri, plate, normal, centroid, area, material, curved = (sc.tri, sc.tri_plate, sc.plate_normal, sc.plate_centroid,
                                                           sc.plate_area, sc.plate_material, sc.plate_curved)
    cand = np.flatnonzero(~curved & (area >= MIN_CORNER_AREA))
    if len(cand) > MAX_CORNER_PLATES:  # the largest plates (a mesh of many small flat pieces holds no big corner)
        cand = np.sort(cand[np.argsort(-area[cand], kind="stable")[:MAX_CORNER_PLATES]])
    dih, tri3 = [], []
    sin_tol = math.sin(math.radians(RIGHT_ANGLE_TOL_DEG))
    # bounding boxes of the candidates only (row k: plate cand[k]; a world has ~1M plates, a few thousand candidates)
    slot = np.full(len(area), -1)
    slot[cand] = np.arange(len(cand))
    own = slot[plate]
    lo = np.full((len(cand), 3), np.inf)
    hi = np.full((len(cand), 3), -np.inf)
    np.minimum.at(lo, own[own >= 0], tri[own >= 0].min(axis=1))
    np.maximum.at(hi, own[own >= 0], tri[own >= 0].max(axis=1))
    del slot, own
    partners: dict[int, list[int]] = {int(p): [] for p in cand}
    verts: dict[int, np.ndarray] = {}
    by_plate = np.argsort(plate, kind="stable")
    starts = np.searchsorted(plate[by_plate], np.arange(len(area) + 1))
    for ai, a in enumerate(cand):
        b = cand[ai + 1:]
        tol = 0.02 * np.sqrt(np.minimum(area[a], area[b])) + 1e-3
        ok = ((np.abs(normal[b] @ normal[a]) <= sin_tol) & np.all(lo[ai] <= hi[ai + 1:] + tol[:, None], axis=1)
              & np.all(lo[ai + 1:] <= hi[ai] + tol[:, None], axis=1)
              & ((centroid[b] - centroid[a]) @ normal[a] > 0) & (np.einsum("ij,ij->i", centroid[a] - centroid[b], normal[b]) > 0))
        for b_, tol_ in zip(b[ok], tol[ok]):  # facing each other (not a convex edge), boxes touching
            a_, b_ = int(a), int(b_)
            for q in (a_, b_):
                if q not in verts:
                    verts[q] = tri[by_plate[starts[q]:starts[q + 1]]].reshape(-1, 3)
            found = _dihedral(verts[a_], verts[b_], normal[a_], normal[b_], float(tol_))
            if found is None:
                continue
            partners[a_].append(b_)
            partners[b_].append(a_)
            dih.append((*found, (material[a_], material[b_]), sc.plate_entity[a_]))
    for a in partners:
        for b in partners[a]:
            if b <= a:
                continue
            for c in partners[b]:
                if c <= b or c not in partners[a]:
                    continue
                found = _trihedral([verts[a], verts[b], verts[c]], normal[[a, b, c]])
                if found is not None:
                    tri3.append((*found, (material[a], material[b], material[c]), sc.plate_entity[a],
                                 float(min(area[a], area[b], area[c]))))
    width = max((len(t[2]) for t in tri3), default=1)
    return dict(
        dih_point=np.array([d[0] for d in dih]).reshape(-1, 3), dih_axis=np.array([d[1] for d in dih]).reshape(-1, 3),
        dih_normals=np.array([d[2] for d in dih]).reshape(-1, 2, 3), dih_width=np.array([d[3] for d in dih]).reshape(-1, 2),
        dih_length=np.array([d[4] for d in dih], np.float64).reshape(-1),
        dih_material=np.array([d[5] for d in dih], np.int64).reshape(-1, 2),
        tri_apex=np.array([t[0] for t in tri3]).reshape(-1, 3), tri_normals=np.array([t[1] for t in tri3]).reshape(-1, 3, 3),
        tri_outline=np.array([np.concatenate([t[2], np.repeat(t[2][-1:], width - len(t[2]), axis=0)]) for t in tri3]).reshape(-1, width, 3),
        tri_material=np.array([t[3] for t in tri3], np.int64).reshape(-1, 3),
        tri_min_area=np.array([t[5] for t in tri3], np.float64).reshape(-1),
        dih_entity=np.array([d[6] for d in dih], np.int64).reshape(-1), tri_entity=np.array([t[4] for t in tri3], np.int64).reshape(-1))


def _dihedral(va, vb, na, nb, tol):
    """(mid point, axis, normals, widths, length) of the right dihedral of two plates, or None when they do
    not share a fold (each must reach the line where their planes meet)."""
    axis = np.cross(na, nb)
    axis /= np.linalg.norm(axis)
    # a point on both planes: n_a . x = d_a, n_b . x = d_b, axis . x = 0
    m = np.stack([na, nb, axis])
    x0 = np.linalg.solve(m, np.array([na @ va[0], nb @ vb[0], 0.0]))
    # distance of each plate's vertices from the fold, in the plate (along the other's normal)
    da, db = (va - x0) @ nb, (vb - x0) @ na
    if da.min() > tol or db.min() > tol or da.max() <= tol or db.max() <= tol:
        return None
    ta, tb = (va - x0) @ axis, (vb - x0) @ axis
    lo, hi = max(ta.min(), tb.min()), min(ta.max(), tb.max())
    if hi - lo <= tol:
        return None
    return x0 + axis * 0.5 * (lo + hi), axis, np.stack([na, nb]), (float(da.max()), float(db.max())), float(hi - lo)


def _trihedral(verts, normals):
    """(apex, normals, outline vertices) of a right trihedral of three plates meeting at one point, or None."""
    d = np.array([normals[i] @ verts[i][0] for i in range(3)])
    apex = np.linalg.solve(normals, d)
    for v in verts:
        size = np.linalg.norm(v - v.mean(axis=0), axis=1).max()
        if np.linalg.norm(v - apex, axis=1).min() > 0.02 * size + 1e-3:
            return None
    return apex, normals, np.unique(np.concatenate(verts), axis=0)  # (each vertex once: the hull's input)
