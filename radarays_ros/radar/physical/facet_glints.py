"""Coherent glints of one frame, deterministic per scatterer: plates, curved surfaces, corners.

Every scatterer of the scene (scatterers.py) is looked at from every azimuth whose beam holds it (its
reference point within the sampled beam: +-azimuth_extent widths, the elevation fan): its RCS for that line
of sight by its own formula (facet_po.py for plates, curved_rcs.py for curved surfaces, corner_rcs.py for
dihedrals and trihedrals), the two-way pattern at its direction, the radar equation at its range and the
coherent reflectivity of its faces (roughness.py, once per bounce), with the phase of its two-way path.
One ray per visible return tests that the way to it is free (binary: a partly hidden plate is all there or
not at all; through foliage it is weakened by the crown's extinction, foliage.py). No ray sampling is involved, so a small plate, a pole or a corner has the same strength in
every frame and whatever the beam's sampling. With scatter.mirror_ghosts every scatterer is also looked at
from the radar's image in each large vertical face (mirror_ghosts.py): its ghost behind the face.
"""
from __future__ import annotations

import math

import numpy as np

from ...tracing.backend import at_times
from ...world.twist_pose import poses_at
from . import antenna, corner_rcs, curved_rcs, facet_po, foliage, glint_cull, mirror_ghosts, roughness, scatterers
from .scatterers import STRAIGHT_BEND as STRAIGHT

SKIP = 5e-3  # m: the occlusion ray stops this short of the scatterer


def _rows(array: np.ndarray, index: np.ndarray) -> np.ndarray:
    """array[index] along the first axis (the same copy): np.take, as numpy's fancy indexing of a 2-D or 3-D array
    is slower per row (measured: 6 k of the 1 M city's 657 k plates, (P, 3) centroids: 0.85 -> 0.47 ms cold, 0.22 ->
    0.12 ms warm)."""
    return np.take(array, index, axis=0)


def _unit(v):
    n = np.linalg.norm(v, axis=-1)
    return v / np.maximum(n, 1e-300)[..., None], n


def _pairs(points: np.ndarray, origins: np.ndarray, column_rot: np.ndarray, beam, angles: bool = True,
           normals=None) -> tuple:
    """(item, azimuth, beta, e, distance) of every scatterer reference point inside an azimuth's beam.
    angles False: (item, azimuth, None, None, None), for callers that need only the pairs (the angles are then
    formed only near the beam box's edges: glint_cull.beam_pairs). normals (one per point, with angles False):
    (item, azimuth, u, r0, cos_t) of the pairs whose point faces the sensor (glint_cull.facing_pairs' values)."""
    if not len(points):
        z = np.zeros(0, np.int64)
        if normals is not None:
            return z, z, np.zeros((0, 3)), np.zeros(0), np.zeros(0)
        return (z, z, np.zeros(0), np.zeros(0), np.zeros(0)) if angles else (z, z, None, None, None)
    centre = origins.mean(axis=0)
    bearing = np.arctan2(points[:, 1] - centre[1], points[:, 0] - centre[0])
    boresight = np.arctan2(column_rot[:, 1, 0], column_rot[:, 0, 0])
    reach = beam["azimuth"] + math.radians(2.0)
    order = np.argsort(bearing, kind="stable")
    sorted_bearing = bearing[order]
    centres = (boresight[None, :] + np.array([-2 * math.pi, 0.0, 2 * math.pi])[:, None]).reshape(-1)  # the +-pi seam
    lo = np.searchsorted(sorted_bearing, centres - reach)
    hi = np.searchsorted(sorted_bearing, centres + reach)
    counts = np.maximum(hi - lo, 0)
    if not counts.sum():
        return _pairs(points[:0], origins, column_rot, beam, angles, normals)
    return glint_cull.beam_pairs(order, lo, hi, points, origins, column_rot, beam["azimuth"], beam["e_lo"],
                                 beam["e_hi"], beam["max_range"], angles, normals)


def beam_limits(antenna_cfg, max_range: float) -> dict:
    """The angular box the geometry samples (geometry.sample_beam) and the range it traces."""
    w_az, w_el = math.radians(antenna_cfg.azimuth_width_deg), math.radians(antenna_cfg.elevation_width_deg)
    tilt = math.radians(antenna_cfg.elevation_tilt_deg)
    lo, hi = tilt - antenna_cfg.elevation_extent * w_el, tilt + antenna_cfg.elevation_extent * w_el
    if antenna_cfg.cosec2:
        lo = min(lo, math.radians(-60.0))
    return {"azimuth": antenna_cfg.azimuth_extent * w_az, "e_lo": max(lo, math.radians(-89.0)),
            "e_hi": min(hi, math.radians(89.0)), "max_range": max_range}


def _rho(table, material, cos_t, lam):
    cls = table.material_class[material]
    visible = cls >= 0
    c = np.where(visible, cls, 0)
    return np.where(visible, roughness.coherent_reflectivity(table.gamma2[c], table.rms_height[c], np.clip(cos_t, 0, 1), lam), 0.0)


def plate_returns(sc, origins, column_rot, beam, table, lam, only=None):
    """(azimuth, sigma x rho, range, reference point, beta, e, entity) of the flat plates (only: of these plate
    indices, None: all)."""
    flat = np.flatnonzero(~sc.plate_curved)
    if only is not None:
        flat = flat[np.isin(flat, only)]
    # each plate is looked for where it returns most: the foot of the perpendicular from the radar (the
    # frame's mean position) when that lies on it (a long wall beside the road: abeam, not at its middle)
    c_all, n_all = _rows(sc.plate_centroid, flat), _rows(sc.plate_normal, flat)
    centre = origins.mean(axis=0)
    foot0 = centre - n_all * np.einsum("ij,ij->i", centre - c_all, n_all)[:, None]
    on = np.linalg.norm(foot0 - c_all, axis=1) <= sc.plate_radius[flat]
    item, az = _pairs(np.where(on[:, None], foot0, c_all), origins, column_rot, beam, angles=False)[:2]
    plate = flat[item]
    s = origins[az]
    n, c = _rows(sc.plate_normal, plate), _rows(sc.plate_centroid, plate)
    u, r0 = _unit(s - c)
    cos_t = np.einsum("ij,ij->i", n, u)
    rho = _rho(table, sc.plate_material[plate], cos_t, lam)
    front = np.flatnonzero((cos_t > 1e-6) & (rho > 1e-9))
    plate, az, u, r0, cos_t, rho, s, n, c = plate[front], az[front], u[front], r0[front], cos_t[front], rho[front], s[front], n[front], c[front]
    # the PO integral over each plate, about its centroid: the sum over its outline's edges
    k = 2.0 * np.pi / lam
    p_vec = 2.0 * k * (u - n * cos_t[:, None])
    size = np.sqrt(sc.plate_area[plate])
    small = np.sqrt(np.einsum("ij,ij->i", p_vec, p_vec)) * size < facet_po.SMALL_PHASE
    integral = sc.plate_area[plate].astype(np.complex128)  # |p| size << 1: I = A
    big = np.flatnonzero(~small)  # the sum of the edge terms over each outline, compiled (facet_po.py)
    integral[big] = facet_po.outline_integrals(big, plate, _starts(sc, "edge_plate"), sc.edge_from, sc.edge_to, c, n,
                                               p_vec)
    # the foot of the perpendicular from the radar: on the plate? (triangles tested only within reach)
    height = np.einsum("ij,ij->i", s - c, n)
    foot = s - n * height[:, None]
    inside = np.zeros(len(plate), bool)
    tri_starts = _starts(sc, "tri_plate")
    near = np.flatnonzero(np.linalg.norm(foot - c, axis=1) <= sc.plate_radius[plate])
    if len(near):  # _in_triangle over each near pair's triangles, compiled (glint_cull.feet_inside)
        inside = glint_cull.feet_inside(near, plate, foot, tri_starts, sc.tri)
    aperture = facet_po.effective_aperture(np.abs(integral), cos_t, sc.plate_area[plate], inside, height, r0, lam)
    image = inside & (aperture > cos_t * np.abs(integral) + 1e-300)
    rng_m = np.where(image, height, r0)
    phase = np.where(image, 1.0, integral / np.maximum(np.abs(integral), 1e-300))
    point = np.where(inside[:, None], foot, c) + n * SKIP
    return az, facet_po.sigma(aperture, lam) * rho, rng_m, phase, point, sc.plate_entity[plate]


def _starts(sc, name: str) -> np.ndarray:
    """(P + 1,) where each plate's rows of the sorted plate index sc.<name> start (edges or triangles), kept
    on the scatterers (a static world's are read once: 25 ms a frame for a 1 M-triangle world)."""
    cache = sc.__dict__.setdefault("_starts", {})
    if name not in cache:
        cache[name] = np.searchsorted(getattr(sc, name), np.arange(len(sc.plate_area) + 1))
    return cache[name]


def _in_triangle(p, tri):
    a, b, c = tri[:, 0], tri[:, 1], tri[:, 2]
    v0, v1, v2 = c - a, b - a, p - a
    d00, d01, d02 = (v0 * v0).sum(1), (v0 * v1).sum(1), (v0 * v2).sum(1)
    d11, d12 = (v1 * v1).sum(1), (v1 * v2).sum(1)
    inv = 1.0 / np.maximum(d00 * d11 - d01 * d01, 1e-300)
    x = (d11 * d02 - d01 * d12) * inv
    y = (d00 * d12 - d01 * d02) * inv
    return ((x >= 0) & (y >= 0) & (x + y < 1)).astype(np.float64)


LEVEL_MARGIN = math.radians(5.0)  # the sensor's tilt from level up to which the static cut below holds
CONE_SLACK = 0.01  # rad added to a plate's normal cone in the first cut (the final test needs none: 1/2 the bend x 1.5)


def _curved_candidates(sc, beam, column_rot, table, lam) -> np.ndarray:
    """The curved plates whose normal can face a sensor within LEVEL_MARGIN of level, through the beam's
    elevation fan: the line of sight from the plate to the sensor rises at -e for a beam elevation e, so
    the normal's elevation must lie within [-e_hi, -e_lo] widened by the plate's cone. Cached per beam on
    the scatterers (the static world's are read once; a terrain's 600k plates drop out here). Surfaces
    without a mirror part (foliage, rough walls) never glint and are left out first."""
    tilt = float(np.arccos(np.clip(column_rot[:, 2, 2], -1.0, 1.0)).max()) if len(column_rot) else 0.0
    cache = sc.__dict__.setdefault("_candidates", {})
    key = (beam["e_lo"], beam["e_hi"], id(table), lam, tilt > LEVEL_MARGIN)
    if key in cache:
        return cache[key]
    curved = np.flatnonzero(sc.plate_curved)
    curved = curved[_rho(table, sc.plate_material[curved], np.ones(len(curved)), lam) > 1e-9]
    if tilt > LEVEL_MARGIN:
        cache[key] = curved
    else:
        elevation = np.arcsin(np.clip(sc.plate_normal[curved, 2], -1.0, 1.0))
        cone = sc.plate_cone[curved] + LEVEL_MARGIN  # (a tilt of t moves the fan by at most t)
        cache[key] = curved[(elevation >= -beam["e_hi"] - cone) & (elevation <= -beam["e_lo"] + cone)]
    return cache[key]


def _facing_index(sc, curved):
    """glint_cull.facing_index of these candidates (_curved_candidates' cached array), kept on the scatterers
    from their second frame on: a static world's are read once (the cut then visits 8 % of a terrain's
    candidates); the scatterers of a world with moving entities are new every frame and never build one."""
    cache = sc.__dict__.setdefault("_facing_index", {})
    entry = cache.get(id(curved))
    if entry is None or entry[0] is not curved:  # first seen: remembered (the array is kept, so its id stays its own)
        cache[id(curved)] = (curved, False)
        return None
    if entry[1] is False:  # seen again: built (None where facing_index declines)
        cache[id(curved)] = (curved, glint_cull.facing_index(curved, sc.plate_centroid, sc.principal, sc.curvature,
                                                             sc.extent, STRAIGHT))
    return cache[id(curved)][1]


def curved_returns(sc, origins, column_rot, beam, table, lam, only=None):
    """The specular point of each curved surface, per azimuth: the plate whose normal is nearest the line of
    sight, its principal radii (stationary phase across, PO along a straight direction). only: of these
    plate indices (None: all)."""
    curved = _curved_candidates(sc, beam, column_rot, table, lam)
    if only is not None:
        curved = curved[np.isin(curved, only)]
    # first the plates whose normal can point at the sensor at all this frame (a terrain's do not): one
    # dot product per plate against its normal's cone (3/4 of its bend, plus the sensor's wander), then
    # the finer test per principal direction on the few that remain. Both tests run first as one compiled
    # loop with widened thresholds (glint_cull.py: a superset), then exactly as written below on its survivors.
    centre = origins.mean(axis=0)
    spread = float(np.linalg.norm(origins - centre, axis=1).max())
    index = _facing_index(sc, curved) if only is None else None  # (groups of plates a bound may skip whole)
    curved = glint_cull.may_face(curved, sc.plate_centroid, sc.plate_normal, sc.plate_cone, sc.principal, sc.curvature,
                                 sc.extent, centre, spread, CONE_SLACK, STRAIGHT, index)
    to_sensor = centre - _rows(sc.plate_centroid, curved)
    r_c = np.sqrt(np.einsum("ij,ij->i", to_sensor, to_sensor))
    cone = np.cos(np.minimum(sc.plate_cone[curved] + spread / np.maximum(r_c, 1e-6) + CONE_SLACK, np.pi / 2))
    facing = np.einsum("ij,ij->i", _rows(sc.plate_normal, curved), to_sensor) >= cone * r_c
    curved = curved[facing]
    u0, r_c = _unit(to_sensor[facing])
    wander = spread / np.maximum(r_c, 1e-6) + CONE_SLACK  # rad
    m0 = np.einsum("nkj,nj->nk", _rows(sc.principal, curved), u0)
    bend0 = np.abs(_rows(sc.curvature, curved)) * _rows(sc.extent, curved)
    near = np.all((bend0 < STRAIGHT) | (np.abs(np.arcsin(np.clip(m0, -1, 1))) <= 0.75 * bend0 + wander[:, None]), axis=1)
    curved = curved[near & (np.einsum("ij,ij->i", _rows(sc.plate_normal, curved), u0) > -0.1)]
    # the pairs in the beam, and of them the plates in front: the line of sight u (distance r0) from each plate to
    # the sensor, cos_t = n . u > 0 (glint_cull.facing_pairs' values, in the same compiled pass)
    item, az, u, r0, cos_t = _pairs(_rows(sc.plate_centroid, curved), origins, column_rot, beam, angles=False,
                                    normals=_rows(sc.plate_normal, curved))
    plate = curved[item]
    # one plate per (surface, azimuth): the most nearly normal
    surface = sc.plate_surface[plate]
    if len(az) and np.all(az[1:] >= az[:-1]):  # (_pairs gives azimuth order) the same picks, compiled
        pick = glint_cull.most_normal(az, surface, cos_t)
    else:
        order = np.lexsort((-cos_t, surface, az))
        first = np.ones(len(order), bool)
        first[1:] = (surface[order][1:] != surface[order][:-1]) | (az[order][1:] != az[order][:-1])
        pick = order[first]
    plate, az, u, r0 = plate[pick], az[pick], u[pick], r0[pick]
    kappa, axes, ext = sc.curvature[plate], sc.principal[plate], sc.extent[plate]
    m = np.einsum("nkj,nj->nk", axes, u)  # line of sight's tilt towards each principal direction
    bend = np.abs(kappa) * ext
    straight = bend < STRAIGHT
    tilt = np.arcsin(np.clip(m, -1.0, 1.0))
    # on the surface: in each curved direction the tilt is within the plate's share of the bend
    on = np.all(straight | (np.abs(tilt) <= 0.5 * bend * 1.5 + 1e-9), axis=1)
    radius = curved_rcs.effective_radius(1.0 / np.maximum(np.abs(kappa), 1e-12), r0[:, None])
    both = ~straight[:, 0] & ~straight[:, 1]
    one = straight[:, 0] ^ straight[:, 1]
    s_i = np.where(straight[:, 0], 0, 1)  # the straight direction's index (one curved)
    rows = np.arange(len(plate))
    sigma = np.zeros(len(plate))
    sigma[both] = curved_rcs.doubly_curved(radius[both, 0], radius[both, 1])
    c_i = 1 - s_i
    # along the straight direction: the foot of the perpendicular from the radar on the plate = near field
    # (the radar sees the line's nearest point, sqrt(lambda R / 2) of it), else the far-field pattern
    t_dir = axes[rows, s_i]
    along = np.einsum("ij,ij->i", origins[az] - sc.plate_centroid[plate], t_dir)
    foot = np.abs(along) <= 0.5 * ext[rows, s_i]
    r_perp = np.sqrt(np.maximum(r0 ** 2 - along ** 2, 1e-12))
    fresnel = np.sqrt(0.5 * lam * np.where(foot, r_perp, r0))
    psi = np.where(foot, 0.0, tilt[rows, s_i])
    length = curved_rcs.effective_length(ext[rows, s_i], psi, fresnel, lam)
    sigma[one] = curved_rcs.singly_curved(radius[rows, c_i][one], length[one], psi[one], lam)
    r0 = np.where(one & foot, r_perp, r0)
    sigma = np.where(on, sigma, 0.0) * _rho(table, sc.plate_material[plate], np.ones(len(plate)), lam)
    shift = np.where(one, np.clip(along, -0.5 * ext[rows, s_i], 0.5 * ext[rows, s_i]), 0.0)  # to the line's nearest point
    point = sc.plate_centroid[plate] + t_dir * shift[:, None] + sc.plate_normal[plate] * SKIP
    return az, sigma, r0, np.ones(len(plate), np.complex128), point, sc.plate_entity[plate]


def dihedral_returns(sc, origins, column_rot, beam, table, lam, only=None):
    ids = np.arange(len(sc.dih_length)) if only is None else np.asarray(only, np.int64)
    centre = origins.mean(axis=0)  # looked for at the fold's point nearest the radar (a wall's foot: abeam)
    along0 = np.einsum("ij,ij->i", centre - sc.dih_point[ids], sc.dih_axis[ids])
    half0 = 0.5 * sc.dih_length[ids]
    nearest = sc.dih_point[ids] + sc.dih_axis[ids] * np.clip(along0, -half0, half0)[:, None]
    item, az = _pairs(nearest, origins, column_rot, beam, angles=False)[:2]
    item = ids[item]
    s = origins[az]
    axis, n = sc.dih_axis[item], sc.dih_normals[item]
    v = s - sc.dih_point[item]
    along = np.einsum("ij,ij->i", v, axis)
    half = 0.5 * sc.dih_length[item]
    foot_inside = np.abs(along) <= half
    q = sc.dih_point[item] + axis * np.clip(along, -half, half)[:, None]  # the fold point nearest the radar
    w, r = _unit(s - q)
    perp, r_fold = _unit(w - axis * np.einsum("ij,ij->i", w, axis)[:, None])
    psi = np.arcsin(np.clip(np.einsum("ij,ij->i", w, axis), -1.0, 1.0))
    sin_phi, cos_phi = np.einsum("ij,ij->i", perp, n[:, 0]), np.einsum("ij,ij->i", perp, n[:, 1])
    fresnel = np.sqrt(0.5 * lam * r)
    aperture = corner_rcs.dihedral_aperture(sc.dih_width[item, 0], sc.dih_width[item, 1], sc.dih_length[item],
                                            np.arctan2(sin_phi, cos_phi), np.where(foot_inside, 0.0, psi), lam, fresnel)
    aperture = np.where((sin_phi > 0) & (cos_phi > 0), aperture, 0.0)
    rho = (_rho(table, sc.dih_material[item, 0], np.einsum("ij,ij->i", w, n[:, 0]), lam)
           * _rho(table, sc.dih_material[item, 1], np.einsum("ij,ij->i", w, n[:, 1]), lam))
    point = q + (n[:, 0] + n[:, 1]) * SKIP
    return az, 4.0 * np.pi * aperture ** 2 / lam ** 2 * rho, r, np.ones(len(item), np.complex128), point, sc.dih_entity[item]


def trihedral_returns(sc, origins, column_rot, beam, table, lam, k_radar=1.0, floor_w=0.0, cfg_antenna=None, only=None,
                      accept=None):
    """accept(az, apex) -> bool mask (None: all): pairs to evaluate at all (the aperture's clipping is the cost)."""
    ids = np.arange(len(sc.tri_apex)) if only is None else np.asarray(only, np.int64)
    item, az, beta, e, dist = _pairs(sc.tri_apex[ids], origins, column_rot, beam)
    item = ids[item]
    s = origins[az]
    u, r = _unit(s - sc.tri_apex[item])
    n = sc.tri_normals[item]
    cos_n = np.einsum("nkj,nj->nk", n, u)
    rho = np.ones(len(item))
    for k in range(3):
        rho *= _rho(table, sc.tri_material[item, k], cos_n[:, k], lam)
    # the aperture is at most its smallest face (scatterers.py): a bound to skip corners that could not
    # reach floor_w before the polygon clipping (the costly part)
    rel = sc.tri_outline[item] - sc.tri_apex[item][:, None, :]
    bound = np.minimum(sc.tri_min_area[item], 0.5 * lam * r)
    g_bound = antenna.gain(beta, e, cfg_antenna) if cfg_antenna is not None else np.ones(len(item))
    strong = k_radar * g_bound ** 2 * 4.0 * np.pi * bound ** 2 / lam ** 2 * rho / np.maximum(r, 1e-6) ** 4 > floor_w
    inside = np.all(cos_n > 0, axis=1) & strong
    if accept is not None and inside.any():
        inside[inside] = accept(az[inside], sc.tri_apex[item[inside]])
    area = np.zeros(len(item))
    helper = np.where(np.abs(u[:, [0]]) < 0.9, np.array([[1.0, 0, 0]]), np.array([[0, 1.0, 0]]))
    e1, _ = _unit(np.cross(u, helper))
    e2 = np.cross(u, e1)
    flat = np.stack([np.einsum("nvj,nj->nv", rel, e1), np.einsum("nvj,nj->nv", rel, e2)], axis=2)
    todo = np.flatnonzero(inside)
    if len(todo):  # a radar standing still sees a corner alike from every azimuth: each distinct projection once
        _, first, again = np.unique(flat[todo].reshape(len(todo), -1), axis=0, return_index=True, return_inverse=True)
        once = np.array([corner_rcs.trihedral_aperture(flat[todo[i]]) for i in first])
        area[todo] = once[np.asarray(again).reshape(-1)]
    area = np.minimum(area, 0.5 * lam * r)
    point = sc.tri_apex[item] + n.sum(axis=1) * SKIP
    return az, 4.0 * np.pi * area ** 2 / lam ** 2 * rho, r, np.ones(len(item), np.complex128), point, sc.tri_entity[item]


FOLIAGE_LAYERS = 3  # crowns a glint's way may cross before it counts as hidden


def _transmission(backend, start, direction, length, table, times=None) -> np.ndarray:
    """One-way power transmission of each straight way (start, direction, length): 1 when free, 0 when a
    surface is in the way, exp(-kappa_e D) through D metres of foliage (foliage.py; up to FOLIAGE_LAYERS crowns).
    times: each way's time after the frame's start (swept entities where they are then), or None."""
    volume = np.array([table.classes.index(c) for c in foliage.VOLUME_CLASSES if c in table.classes], np.int64)
    kappa = foliage.extinction_np_per_m()
    out = np.ones(len(start))
    start, remaining = start.astype(np.float64).copy(), length.astype(np.float64).copy()
    d32 = direction.astype(np.float32)
    todo = np.flatnonzero(remaining > 0)
    for layer in range(FOLIAGE_LAYERS + 1):
        if not len(todo):
            break
        hits = backend.trace(start[todo].astype(np.float32), d32[todo], 0.0, float(remaining[todo].max()), want=("ids",),
                             **at_times(times, todo))
        t = np.asarray(hits.distance, np.float64)
        blocked = t < remaining[todo]
        cls = np.full(len(todo), -1, np.int64)
        cls[blocked] = table.material_class[np.asarray(hits.material)[blocked]]
        leafy = blocked & np.isin(cls, volume) & (layer < FOLIAGE_LAYERS)
        out[todo[blocked & ~leafy]] = 0.0
        crown = todo[leafy]
        if not len(crown):
            break
        entry = start[crown] + direction[crown] * (t[leafy] + SKIP)[:, None]
        through = backend.trace(entry.astype(np.float32), d32[crown], 0.0, foliage.MAX_DEPTH_M, want=(), **at_times(times, crown))
        depth = np.minimum(np.asarray(through.distance, np.float64), foliage.MAX_DEPTH_M)
        depth = np.minimum(depth, remaining[crown] - t[leafy] - SKIP)  # (the target inside the crown)
        out[crown] *= foliage.transmission(np.maximum(depth, 0.0), kappa)
        start[crown] = entry + direction[crown] * (depth + SKIP)[:, None]
        remaining[crown] -= t[leafy] + depth + 2 * SKIP
        todo = crown[remaining[crown] > 0]
    return out


def sweeps(entities, times) -> bool:
    """Whether frame_glints sees scatterers where swept entities are at each azimuth's time (else all at the start)."""
    return not (times is None or entities is None or entities.swept is None or not entities.swept.any())


def static_parts(kinds, sc, origins, column_rot, cfg, table, k_radar: float, lam: float, max_range: float,
                 floor_w: float) -> dict:
    """{kind: its part of a frame's scatterer returns} for kinds of KINDS, with the scatterers where they are at the
    frame's start (not sweeps): frame_glints(parts=...) joins them. Why apart: a frame can compute its kinds in
    tasks side by side (geometry.trace_physical: the curved plates, half the glints' time, beside the rest)."""
    beam = beam_limits(cfg.antenna, max_range)
    return {kind: _kind_returns(kind, sc, origins, column_rot, beam, table, lam, k_radar, floor_w, cfg.antenna, {})
            for kind in kinds}


def frame_glints(sc, backend, origins, column_rot, sensor_velocity, cfg, table, k_radar: float, lam: float,
                 max_range: float, floor_w: float, entities=None, occlusion: bool = True, times=None, parts=None):
    """(azimuth, range_m, complex amplitude sqrt(W), radial velocity) of every scatterer in every beam that
    holds it, above floor_w (40 dB under the noise: invisible). times: (A,) seconds of each azimuth after the
    frame's start: the scatterers of the entities `entities.swept` where they are then, seen directly and in
    mirror faces (scatter.mirror_ghosts; a swept entity's own faces move with it too: _ghost_returns); None:
    all at the start. parts: static_parts of every kind, computed already (only where nothing sweeps)."""
    beam = beam_limits(cfg.antenna, max_range)
    bodies = []
    if not sweeps(entities, times):
        parts = ([parts[kind] for kind in KINDS] if parts is not None else
                 _scatterer_returns(sc, origins, column_rot, beam, table, lam, k_radar, floor_w, cfg.antenna))
        times = None
    else:
        if parts is not None:
            raise ValueError("frame_glints: parts are of scatterers at the frame's start; swept entities move them")
        bodies = _swept_bodies(sc, entities, times)
        parts = _swept_returns(sc, origins, column_rot, beam, table, lam, k_radar, floor_w, cfg.antenna, entities,
                               bodies)
    az, sigma, rng_m, phase, point, entity = (np.concatenate([p[i] for p in parts]) for i in range(6))
    rel = point - origins[az]
    col = np.einsum("nji,nj->ni", column_rot[az], rel)
    d, dist = _unit(rel)
    g = antenna.gain(np.arctan2(col[:, 1], col[:, 0]), np.arcsin(np.clip(col[:, 2] / np.maximum(dist, 1e-12), -1, 1)), cfg.antenna)
    power = k_radar * g * g * sigma / np.maximum(rng_m, 1e-6) ** 4
    keep = np.flatnonzero((power > floor_w) & (rng_m < max_range))
    if occlusion and len(keep):
        passed = _transmission(backend, origins[az[keep]], d[keep], dist[keep] - SKIP, table,
                               None if times is None else times[az[keep]])
        power[keep] *= passed ** 2  # (two-way)
        keep = keep[passed > 0]
    v_r = -np.einsum("ij,ij->i", sensor_velocity[az[keep]], d[keep])
    if entities is not None and len(keep):
        v_r = v_r + np.einsum("ij,ij->i", entities.at(entity[keep], point[keep]), d[keep])
    az, rng_m, power, phase = az[keep], rng_m[keep], power[keep], phase[keep]
    if getattr(cfg.scatter, "mirror_ghosts", False):
        ghosts = _ghost_returns(sc, backend, origins, column_rot, sensor_velocity, cfg, table, k_radar, lam, beam,
                                floor_w, entities, occlusion, times, bodies)
        az, rng_m, power, phase, v_r = (np.concatenate([a, b]) for a, b in zip((az, rng_m, power, phase, v_r), ghosts))
    order = np.lexsort((rng_m, az))
    az, rng_m, power, phase, v_r = az[order], rng_m[order], power[order], phase[order], v_r[order]
    amp = np.sqrt(power) * phase * np.exp(-2j * np.pi * np.mod(2.0 * rng_m, lam) / lam)
    return az, rng_m, amp, v_r


def _swept_returns(sc, origins, column_rot, beam, table, lam, k_radar, floor_w, cfg_antenna, entities, bodies) -> list:
    """_scatterer_returns with the scatterers of each swept entity where its twist takes it by each azimuth's
    time: each rigid body of them (bodies: _swept_bodies) seen from the radar moved back by its motion M_t^-1
    (origins and beam axes per azimuth): the same ranges, angles and aspect as the moved scatterers from the
    radar. Their points go to the world at their azimuth's time."""
    swept = np.flatnonzero(entities.swept)
    # the others as they are (the swept ones' returns there left out: cheaper than leaving them out of the
    # search, which then loses the static world's index of curved plates)
    parts = [tuple(v[keep] for v in part) for part in
             _scatterer_returns(sc, origins, column_rot, beam, table, lam, k_radar, floor_w, cfg_antenna)
             for keep in [~np.isin(part[5], swept)]]
    for body in bodies:
        seen_from, axes = body.moved_back(origins, column_rot)
        near = _azimuths_near(body.scatterers, seen_from, axes, beam["azimuth"])  # (a car: a few dozen of a sweep's)
        for az, sigma, rng_m, phase, point, owner in _scatterer_returns(body.scatterers, seen_from[near], axes[near],
                                                                         beam, table, lam, k_radar, floor_w, cfg_antenna):
            az = near[az]
            parts.append((az, sigma, rng_m, phase, body.to_world(az, point), owner))
    return parts


class SweptBody:
    """The swept entities of one rigid body (a model's visuals on one link: one velocity field, one motion) with
    their scatterers as they are at the frame's start. The body moves by M_t(x) = turn (x - origin) + shift
    (world/twist_pose.py; origin: one entity's origin at the frame's start), turn (A, 3, 3) and shift (A, 3) at
    each azimuth's time. members: its entities' ids."""

    def __init__(self, scatterers_, origin, turn, shift, members=()):
        self.scatterers, self.origin, self.turn, self.shift = scatterers_, origin, turn, shift
        self.members = tuple(members)

    def moved_back(self, origins, column_rot) -> tuple[np.ndarray, np.ndarray]:
        """Origins (A, 3) and beam axes (A, 3, 3) of every azimuth moved by M_t^-1: where the radar stands
        against the body as it was at the start, when the body is where M_t takes it."""
        return (np.einsum("aji,aj->ai", self.turn, origins - self.shift) + self.origin,
                np.swapaxes(self.turn, 1, 2) @ column_rot)

    def to_world(self, az, points) -> np.ndarray:
        """Points (N, 3) of the body at the start moved by M_t of their azimuths az (N,)."""
        return np.einsum("nij,nj->ni", self.turn[az], points - self.origin) + self.shift[az]

    def to_start(self, az, points) -> np.ndarray:
        """Points (N, 3) of the world at their azimuths' times az (N,) moved by M_t^-1: where they stand against
        the body as it was at the start."""
        return np.einsum("nji,nj->ni", self.turn[az], points - self.shift[az]) + self.origin

    def drift(self, points) -> np.ndarray:
        """(N,) how far static points move against the body over the sweep at most: |M_t^-1 p - p| =
        |(I - turn)(p - origin) + origin - shift| <= |shift - origin| + |turn - I| |p - origin|."""
        turned = float(np.linalg.norm(self.turn - np.eye(3), axis=(1, 2)).max())
        return (float(np.linalg.norm(self.shift - self.origin, axis=1).max())
                + turned * np.linalg.norm(points - self.origin, axis=1))


def _swept_bodies(sc, entities, times) -> list[SweptBody]:
    """The rigid bodies of the entities `entities.swept` that have scatterers (each moving entity's own:
    sc.by_entity, simulate.scene_scatterers): the entities of one velocity field go together, looked at once."""
    by_entity = getattr(sc, "by_entity", {})
    groups: dict[bytes, tuple[int, list, list]] = {}
    for e in np.flatnonzero(entities.swept).tolist():
        own = by_entity.get(e)
        if own is not None and not own.empty:
            o, v, w = entities.origin[e], entities.velocity[e], entities.angular[e]
            field = np.round(np.concatenate([v - np.cross(w, o), w]), 9).tobytes()  # v(x) = v0 + w x x
            group = groups.setdefault(field, (e, [], []))
            group[1].append(own)
            group[2].append(e)
    bodies = []
    for e, members, ids in groups.values():
        o = entities.origin[e]
        turn, shift = poses_at(_at_point(o), entities.velocity[e], entities.angular[e], times)  # M_t = turn (x - o) + shift
        bodies.append(SweptBody(scatterers.concatenate(members), o, turn, shift, ids))
    return bodies


def _azimuths_near(sc, origins, column_rot, half_width: float) -> np.ndarray:
    """The azimuths whose beam (+-half_width about its boresight) may hold some of sc's plates (every corner is
    made of them): those whose boresight is within half_width plus the angle of their bounding sphere."""
    if not len(sc.plate_area):
        return np.arange(len(origins))
    centre, radius = _plates_sphere(sc)
    col = np.einsum("aji,aj->ai", column_rot, centre - origins)
    dist = np.linalg.norm(col, axis=1)
    bearing = np.abs(np.arctan2(col[:, 1], col[:, 0]))
    spread = np.arcsin(np.minimum(1.0, radius / np.maximum(dist, 1e-9)))
    return np.flatnonzero((dist <= radius) | (bearing <= half_width + spread + 1e-3))


def _plates_sphere(sc) -> tuple[np.ndarray, float]:
    """(centre, radius) of a sphere round all of sc's plates (every corner is made of them): their centroids'
    mean and the farthest plate's reach from it."""
    centre = sc.plate_centroid.mean(axis=0)
    return centre, float((np.linalg.norm(sc.plate_centroid - centre, axis=1) + sc.plate_radius).max())


def _at_point(origin) -> np.ndarray:
    """The 4x4 pose with no turn at `origin`."""
    pose = np.eye(4)
    pose[:3, 3] = origin
    return pose


def _scatterer_returns(sc, origins, column_rot, beam, table, lam, k_radar, floor_w, cfg_antenna, only=None,
                       accept=None) -> list:
    """Each kind's (azimuth, sigma x rho, range, phase, point, entity); only: {kind: indices} (None: all);
    accept: trihedral_returns' pre-selection of (azimuth, apex) pairs."""
    return [_kind_returns(kind, sc, origins, column_rot, beam, table, lam, k_radar, floor_w, cfg_antenna, only or {},
                          accept) for kind in KINDS]


KINDS = ("plates", "curved", "dihedrals", "trihedrals")  # the parts of _scatterer_returns, in their order


def _kind_returns(kind, sc, origins, column_rot, beam, table, lam, k_radar, floor_w, cfg_antenna, only: dict,
                  accept=None) -> tuple:
    """_scatterer_returns' part of one of KINDS (the curved plates are of only's "plates" too)."""
    pick = only.get("plates" if kind == "curved" else kind, None if not only else ())
    if kind == "trihedrals":
        return trihedral_returns(sc, origins, column_rot, beam, table, lam, k_radar, floor_w, cfg_antenna, only=pick,
                                 accept=accept)
    return {"plates": plate_returns, "curved": curved_returns, "dihedrals": dihedral_returns}[kind](
        sc, origins, column_rot, beam, table, lam, only=pick)


def _ghost_kinds(sc, beam, column_rot, table, lam) -> dict:
    """{kind: (indices or None: all, reference points, sizes: half extents, entities)} of the scatterers whose
    ghosts are looked for: flat plates with a mirror part smaller than a mirror face (objects: a car's panels,
    signs; facades and roofs, ghosts of each other, are left out: their count times the faces' was the cost,
    60 s a frame in the 1M-triangle city), curved ones whose normal can face the radar and of objects
    (mirror_ghosts.object_surfaces: not a terrain's or a hill's), every corner."""
    flat = np.flatnonzero(~sc.plate_curved & (sc.plate_area < mirror_ghosts.MIRROR_MIN_AREA_M2))
    flat = flat[_rho(table, sc.plate_material[flat], np.ones(len(flat)), lam) > 1e-9]
    curved = _curved_candidates(sc, beam, column_rot, table, lam)
    pool = np.union1d(flat, curved[mirror_ghosts.object_surfaces(sc)[sc.plate_surface[curved]]])
    return {"plates": (pool, sc.plate_centroid[pool], sc.plate_radius[pool], sc.plate_entity[pool]),
            "dihedrals": (None, sc.dih_point, 0.5 * sc.dih_length + sc.dih_width.max(axis=1) if len(sc.dih_length)
                          else np.zeros(0), sc.dih_entity),
            "trihedrals": (None, sc.tri_apex, np.linalg.norm(sc.tri_outline - sc.tri_apex[:, None, :], axis=2)
                           .max(axis=1) if len(sc.tri_apex) else np.zeros(0), sc.tri_entity)}


def _body_reach(body: SweptBody) -> tuple[np.ndarray, float, float]:
    """(centre, radius) of the sphere round the body's plates at the frame's start (every corner is made of
    them), and how far any point of that sphere goes during the sweep: |shift - origin| + |turn - I| r, r the
    sphere's farthest reach from the origin (the Frobenius norm bounds the turn's)."""
    centre, radius = _plates_sphere(body.scatterers)
    arm = float(np.linalg.norm(centre - body.origin)) + radius
    turned = np.linalg.norm(body.turn - np.eye(3), axis=(1, 2))
    return centre, radius, float((np.linalg.norm(body.shift - body.origin, axis=1) + turned * arm).max())


def _moving_image(entities, face_entity: int, origins, sensor_velocity, c, n, mover, normal_t):
    """(whether the face's entity moves, az -> (len(az), 3) velocity of the radar's image in the face at those
    azimuths' times): the face's plane where it is then (on a swept body M_t's: centroid M_t c, normal_t), moving
    with its entity's twist (motion.EntityMotion; a constant twist is a constant velocity field)."""
    if entities is None or not 0 <= face_entity < len(entities.velocity):
        return False, None
    velocity, angular = entities.velocity[face_entity], entities.angular[face_entity]
    if not (velocity.any() or angular.any()):
        return False, None

    def image_velocity(az):
        centroids = np.broadcast_to(c, (len(az), 3)) if mover is None else mover.to_world(az, np.broadcast_to(c, (len(az), 3)))
        normals = np.broadcast_to(n, (len(az), 3)) if mover is None else normal_t[az]
        plane_velocities = entities.at(np.full(len(az), face_entity), centroids)
        return mirror_ghosts.image_velocity(origins[az], sensor_velocity[az], centroids, normals, plane_velocities,
                                            np.broadcast_to(angular, (len(az), 3)))
    return True, image_velocity


def _ghost_returns(sc, backend, origins, column_rot, sensor_velocity, cfg, table, k_radar, lam, beam, floor_w,
                   entities, occlusion, times=None, bodies=()):
    """(azimuth, range, power, phase, radial velocity) of every scatterer's image in every mirror face
    (mirror_ghosts.py): the scatterer evaluated from the radar's image S' (origins and beam axes mirrored),
    kept where the line S' -> scatterer crosses the face, weakened by the face's reflectivity twice.
    times (A,) and bodies (_swept_bodies), with scatter.moving_entities sweep: the scatterers of a swept body
    are where the body is at each azimuth's time: evaluated from S' moved back by the body's motion M_t^-1 (the
    two maps composed: the image in the face, then M_t^-1), their specular point X found with the point moved
    to the world at that time, both legs traced at that time (so are all legs then: swept entities in the way
    where they are) and the Doppler the velocity field's there. A face of a swept body moves with it: its plane at
    each azimuth's time is M_t of the start's (centroid M_t c, normal turn n), the image S' the radar's in that
    plane (beam axes mirrored in it per azimuth), X checked against the face's triangles at the start (moved
    back by M_t^-1, as the radar is: in that frame the face stands still), the legs traced at that time. The
    radial velocity is the rate of the range |T - S'|: the scatterer's velocity less the image's along T - S'; a
    face on a moving entity (swept or not) moves S' with it (mirror_ghosts.image_velocity: 2 (v_face . n) n more
    for a face translating along its normal), a still face mirrors the radar's velocity."""
    empty = (np.zeros(0, np.int64), np.zeros(0), np.zeros(0), np.zeros(0, np.complex128), np.zeros(0))
    faces = mirror_ghosts.mirror_faces(sc)
    if not len(faces) or not len(origins):
        return empty
    centre = origins.mean(axis=0)
    wander = float(np.linalg.norm(origins - centre, axis=1).max())
    kinds = _ghost_kinds(sc, beam, column_rot, table, lam)
    swept = np.flatnonzero(entities.swept) if times is not None else np.zeros(0, np.int64)
    movers = [(body, _ghost_kinds(body.scatterers, beam, column_rot, table, lam), *_body_reach(body))
              for body in bodies]
    reach_of = {id(body): reach for body, _, _, _, reach in movers}  # (a moving face's, below)
    ends = [int(np.argmin(times)), int(np.argmax(times))] if len(bodies) else []  # the sweep's first and last azimuths
    tri_starts = _starts(sc, "tri_plate")
    boresight = np.arctan2(column_rot[:, 1, 0], column_rot[:, 0, 0])
    reach_slack = math.radians(2.0)
    beam = dict(beam, azimuth=min(beam["azimuth"], mirror_ghosts.BEAM_WIDTHS * math.radians(cfg.antenna.azimuth_width_deg)))
    out = []
    on_body = {e: body for body in bodies for e in body.members}  # the swept body each swept entity is on
    for m in faces:
        c, n = sc.plate_centroid[m], sc.plate_normal[m]
        tris = sc.tri[tri_starts[m]:tri_starts[m + 1]]
        # a face on a swept body moves with it: M_t its plane at each azimuth's time. Everything is looked at in
        # the face's frame at the start (the radar moved back by M_t^-1: `sensor`), where its outline stands
        mover = on_body.get(int(sc.plate_entity[m]))
        if mover is None:
            h_s = float((centre - c) @ n)
            if h_s < mirror_ghosts.MIN_HEIGHT_M + wander or h_s > beam["max_range"]:
                continue  # the radar behind the face (or in it), or the face out of reach
            sensor, near_c, near_w, drift = origins, centre, wander, (lambda p_: 0.0)
        else:
            sensor, sensor_axes = mover.moved_back(origins, column_rot)
            heights = (sensor - c) @ n
            ahead = heights > mirror_ghosts.MIN_HEIGHT_M  # the azimuths whose radar is in front of the face then
            if not ahead.any() or heights.min() > beam["max_range"]:
                continue
            near_c = sensor.mean(axis=0)
            near_w = float(np.linalg.norm(sensor - near_c, axis=1).max())
            # static items move against the face by drift; its bearing from the radar (at least the plane's
            # least height away, moved by up to near_w) by up to widen = asin(near_w / height)
            drift, widen = mover.drift, math.asin(min(1.0, near_w / max(float(heights[ahead].min()), 1e-9)))
        only = {}
        for kind, (ids, points, sizes, owners) in kinds.items():
            found = mirror_ghosts.candidates(points, sizes + drift(points), near_c, c, n, tris.reshape(-1, 3), near_w,
                                             beam["max_range"])
            if len(swept):  # the swept bodies' items apart (below)
                found = found[~np.isin(owners[found], swept)]
            if ids is not None:
                found = ids[found]
            if kind == "plates":
                found = found[found != m]
            if len(found):
                only[kind] = found
        # a swept body whose sphere can have an image in the face at the sweep's first or last azimuth (grown by
        # its reach and the face's over the sweep): all its items, each kept below only where X is on the face then
        face_reach = 0.0 if mover is None else reach_of[id(mover)]
        # world points at azimuths' times <-> the face's frame at the start
        to_face, from_face = ((lambda az_, p_: p_),) * 2 if mover is None else (mover.to_start, mover.to_world)
        seen = [(body, {kind: np.arange(len(points)) if ids is None else ids
                        for kind, (ids, points, _, _) in own.items()})
                for body, own, middle, radius, reach in movers
                if any(len(mirror_ghosts.candidates(to_face([a], body.to_world([a], middle[None])),
                                                    np.array([radius + reach + face_reach]), near_c, c, n,
                                                    tris.reshape(-1, 3), near_w, beam["max_range"])) for a in ends)]
        if not only and not seen:
            continue
        # the image is seen through its specular point X on the face: only azimuths whose beam reaches the face
        if mover is None:
            sub = np.flatnonzero(mirror_ghosts.facing_azimuths(tris.reshape(-1, 3), centre, boresight,
                                                               beam["azimuth"] + reach_slack))
        else:
            bearing = np.arctan2(sensor_axes[:, 1, 0], sensor_axes[:, 0, 0])
            sub = np.flatnonzero(ahead & mirror_ghosts.facing_azimuths(tris.reshape(-1, 3), near_c, bearing,
                                                                       beam["azimuth"] + reach_slack + widen))
        if not len(sub):
            continue
        image_at_start = mirror_ghosts.reflect(sensor, c, n)  # S' in the face's frame at the start
        if mover is None:
            h = mirror_ghosts.reflection(n)
            images = image_at_start
            rot = np.einsum("ij,njk->nik", h, column_rot)  # the beam axes mirrored: directions from S' = directions to T' from S
        else:  # the plane where the face is at each azimuth's time: centroid M_t c, normal turn n
            normal_t = np.einsum("aij,j->ai", mover.turn, n)
            images = mirror_ghosts.reflect_rows(origins, mover.to_world(np.arange(len(origins)), c[None]), normal_t)
            rot = column_rot - 2.0 * np.einsum("ai,aj,ajk->aik", normal_t, normal_t, column_rot)  # (I - 2 n_t n_t^T) R

        face_moves, _image_velocity = _moving_image(entities, int(sc.plate_entity[m]), origins, sensor_velocity, c, n,
                                                    mover, None if mover is None else normal_t)
        axes = mirror_ghosts.face_axes(n)
        box = (tris.reshape(-1, 3) - c) @ axes.T
        lo_box, hi_box = box.min(axis=0) - 1e-6, box.max(axis=0) + 1e-6

        def on_face(az_, point_):  # the specular point X on the face (any of its triangles), in the face's frame
            x_ = mirror_ghosts.crossing(image_at_start[az_], to_face(az_, point_), c, n)
            q = (x_ - c) @ axes.T
            hit = np.all((q >= lo_box) & (q <= hi_box), axis=1)  # its outline's box first
            maybe = np.flatnonzero(hit)
            step = max(1, 200_000 // max(len(tris), 1))  # (points x triangles) pairs per chunk
            for k0 in range(0, len(maybe), step):
                part = maybe[k0:k0 + step]
                pairs_p = np.repeat(x_[part], len(tris), axis=0)
                pairs_t = np.broadcast_to(tris[None], (len(part),) + tris.shape).reshape(-1, 3, 3)
                hit[part] = (_in_triangle(pairs_p, pairs_t).reshape(len(part), len(tris)) > 0).any(axis=1)
            return hit

        rho_top = float(_rho(table, np.array([sc.plate_material[m]]), np.zeros(1), lam)[0])  # its largest (grazing)
        k_top = k_radar * max(rho_top, 1e-300) ** 2
        looks = []  # (azimuth, sigma, range, phase, world point, entity, swept) of each view of the face's images
        if only:
            parts = _scatterer_returns(sc, images[sub], rot[sub], beam, table, lam, k_top, floor_w, cfg.antenna, only,
                                       accept=lambda az_, p_: on_face(sub[az_], p_))
            az, sigma, rng_m, phase, point, entity = (np.concatenate([p[i] for p in parts]) for i in range(6))
            looks.append((sub[az], sigma, rng_m, phase, point, entity, False))
        for body, body_only in seen:
            seen_from, body_axes = body.moved_back(images, rot)  # S' (the image), then moved back by M_t^-1
            near = sub[_azimuths_near(body.scatterers, seen_from[sub], body_axes[sub], beam["azimuth"])]
            if not len(near):
                continue
            parts = _scatterer_returns(body.scatterers, seen_from[near], body_axes[near], beam, table, lam, k_top,
                                       floor_w, cfg.antenna, body_only,
                                       accept=lambda az_, p_: on_face(near[az_], body.to_world(near[az_], p_)))
            az, sigma, rng_m, phase, point, entity = (np.concatenate([p[i] for p in parts]) for i in range(6))
            az = near[az]
            looks.append((az, sigma, rng_m, phase, body.to_world(az, point), entity, True))
        for az, sigma, rng_m, phase, point, entity, moved in looks:
            if not len(az):
                continue
            on = on_face(az, point)
            if moved or mover is not None:  # (static items before a still face are in front: mirror_ghosts.candidates)
                on &= (to_face(az, point) - c) @ n > mirror_ghosts.MIN_HEIGHT_M
            az, sigma, rng_m, phase, point, entity = az[on], sigma[on], rng_m[on], phase[on], point[on], entity[on]
            when = None if times is None else times[az]
            x_face = mirror_ghosts.crossing(image_at_start[az], to_face(az, point), c, n)  # X in the face's frame
            x = from_face(az, x_face)
            to_sensor, r_x = _unit(origins[az] - x)
            rho_m = _rho(table, np.full(len(az), sc.plate_material[m]), np.abs(_unit(sensor[az] - x_face)[0] @ n), lam)
            rel = point - images[az]
            col = np.einsum("nji,nj->ni", rot[az], rel)
            u, dist = _unit(rel)
            g = antenna.gain(np.arctan2(col[:, 1], col[:, 0]), np.arcsin(np.clip(col[:, 2] / np.maximum(dist, 1e-12), -1, 1)),
                             cfg.antenna)
            power = k_radar * g * g * sigma * rho_m ** 2 / np.maximum(rng_m, 1e-6) ** 4
            keep = np.flatnonzero((power > floor_w) & (rng_m < beam["max_range"]))
            if occlusion and len(keep):  # the two legs: radar -> X and X -> scatterer (each both ways)
                leg1 = _transmission(backend, origins[az[keep]], -to_sensor[keep], r_x[keep] - SKIP, table,
                                     None if when is None else when[keep])
                to_point, r_p = _unit(point[keep] - x[keep])
                leg2 = _transmission(backend, from_face(az[keep], x_face[keep] + n * SKIP), to_point, r_p - 2 * SKIP,
                                     table, None if when is None else when[keep])
                passed = leg1 * leg2
                power[keep] *= passed ** 2
                keep = keep[passed > 0]
            if not len(keep):
                continue
            # the image's direction from the radar (H u for each row; a moving face's H of its azimuth's time)
            if face_moves:
                v_r = -np.einsum("ij,ij->i", _image_velocity(az[keep]), u[keep])
            else:  # the image's velocity H v_S along u is v_S along the image's direction H u
                ghost_dir = u[keep] @ h if mover is None else mirror_ghosts.reflect_rows(u[keep], 0.0, normal_t[az[keep]])
                v_r = -np.einsum("ij,ij->i", sensor_velocity[az[keep]], ghost_dir)
            if entities is not None:  # (a swept point where it is then: the velocity field is constant, motion.py)
                v_r = v_r + np.einsum("ij,ij->i", entities.at(entity[keep], point[keep]), u[keep])
            out.append((az[keep], rng_m[keep], power[keep], phase[keep], v_r))
    if not out:
        return empty
    return tuple(np.concatenate([o[i] for o in out]) for i in range(5))
