"""Compiled loops of the frame's glints (facet_glints.py): a first cut of the curved plates that may face this
frame's sensor and the pick of each surface's most nearly normal plate per azimuth (curved_returns), the
point-in-plate test of the plates' feet (plate_returns), and the (scatterer, azimuth) pairs inside the
beam (facet_glints._pairs: the line of sight in each column frame, its angles and the beam's box, one
pass per candidate pair instead of eight numpy passes over all of them; atan2/asin from libm, so the
angles may differ from numpy's SIMD ones in the last bit: they only decide the box's edges). Three of its four
callers need only the pairs: for them the box is decided by |y| against x tan(w) and sin(e) against the
elevation's sines, with atan2/asin only within BOX_MARGIN of an edge (the same pairs; measured on the 1 M city's
curved plates, 99 k pairs: curved_returns 19.6 -> 16.5 ms, one core).

The cut:
No formula of its own: it repeats curved_returns' two per-frame tests (the normal's cone against the line of
sight to the frame's mean sensor position, then the tilt of that line towards each principal direction
against the plate's share of the bend) in one loop per plate, with every threshold widened by CULL_SLACK,
so it keeps every plate those tests keep and a few more; curved_returns then runs its own tests, unchanged,
on the survivors only. So the survivors are the same plates, in the same order, as the full tests gave,
whatever the last bits of the compiled cos/arcsin (libm) against numpy's (SIMD) ones.

Why: a terrain's curved plates (a 1 M-triangle world: 330 k candidates, 6 k facing) made these two tests
over every candidate, with their gathers, ~75 ms of a Navtech frame on one core; the loop reads each
candidate once (~2 ms).

The index (FacingIndex, built once per static candidate set): the tilt test of a bent direction p (unit
principal direction with bend b = |kappa| x extent >= STRAIGHT) keeps a plate at x only if
|p . (c - x)| <= r (3/4 b + cone_slack + 2 slack) + spread, r = |c - x|, c the sensor (|m| <= limit + slack
above, times r; r / max(r, 1e-6) <= 1). For a group of plates within rho of X whose p (signs made alike)
lie within delta of a unit q, |p . (c - x)| >= |q . (c - X)| - delta |c - X| - |p| rho and r <= |c - X| + rho
(triangle inequality, Cauchy-Schwarz), so a group with |q . (c - X)| - delta D - |p|max rho greater than
(D + rho)(3/4 b_max + cone_slack + 2 slack) + spread (D = |c - X|, plus 1e-9 of the lengths for rounding)
holds no plate _may_face keeps, and is skipped whole: the sensor lies off the planes that its plates'
bending directions are normal to. Plates close together (cells of FACING_CELL_M) that bend about nearly
the same axis (AXIS_BINS of its direction) form a group. Measured on that terrain, standing sensor: 8 % of
the candidates are then visited (4 ms against 15 ms), 39 k groups, built in 0.13 s (46 MiB at most).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...compiled import inlined, kernel

COS_HALF_PI = math.cos(0.5 * math.pi)  # 6.1e-17, as libm gives it
CULL_SLACK = 1e-9  # widening of each test: radians on the angle tests, a fraction of the range (+1 m) on the cone test


FACING_CELL_M = 2.0  # m: the index's cells (each axis); a group's plates lie within one
AXIS_BINS = 64  # bins of a bending axis's direction about the vertical (its sign made upward)
AXIS_TILT_BINS = 2  # bins of its elevation (0 .. 90 degrees)


def may_face(candidates, centroid, normal, cone, principal, curvature, extent, centre, spread: float,
             cone_slack: float, straight: float, index: "FacingIndex | None" = None) -> np.ndarray:
    """The candidates (sorted plate indices) that may pass curved_returns' facing and tilt tests for a
    sensor at `centre` (frame mean) wandering `spread` metres about it (a superset of those that do).
    index: facing_index of these candidates and plates (the same `straight`): only its groups that may hold
    such plates are tested (the same plates come out)."""
    centre = np.asarray(centre, np.float64)
    candidates = np.ascontiguousarray(candidates, np.int64)
    if index is not None:
        if index.candidates is not candidates and not np.array_equal(index.candidates, candidates):
            raise ValueError("may_face: the index was built for other candidates")
        near = np.zeros(len(candidates), np.bool_)
        _near_groups(centre, float(spread), float(cone_slack), CULL_SLACK, index.centre, index.axis,
                     index.axis_spread, index.reach, index.axis_reach, index.bend, index.members, index.starts, near)
        candidates = candidates[near]
    keep = np.zeros(len(candidates), np.bool_)
    _may_face(candidates, centroid, normal, cone, principal, curvature, extent, centre, float(spread),
              float(cone_slack), float(straight), CULL_SLACK, keep)
    return candidates[keep]


@dataclass(frozen=True)
class FacingIndex:
    """The candidates in groups, each with the bound of the module docstring (G groups)."""
    candidates: np.ndarray  # the sorted plate indices grouped
    members: np.ndarray  # positions in candidates, group after group
    starts: np.ndarray  # (G + 1,) each group's first row of members
    centre: np.ndarray  # (G, 3) X: the mean of its plates' centroids
    axis: np.ndarray  # (G, 3) q: the unit mean of its plates' bending directions
    axis_spread: np.ndarray  # (G,) delta: the largest |p - q|
    reach: np.ndarray  # (G,) rho: the largest |x - X|
    axis_reach: np.ndarray  # (G,) the largest |p| x rho
    bend: np.ndarray  # (G,) the largest bend of its plates' bending directions (inf: never skipped)


def facing_index(candidates, centroid, principal, curvature, extent, straight: float) -> FacingIndex | None:
    """The groups of `candidates` for may_face. A plate's bending direction: of its directions with a bend
    >= straight, the less bent (a tighter bound; any gives a true one). Plates with none, or with a
    non-finite centroid or direction, form one group that is never skipped. None: a world too large for
    one integer key per group (may_face then tests every plate)."""
    candidates = np.ascontiguousarray(candidates, np.int64)
    n = len(candidates)
    if not n:
        none = np.zeros(0)
        return FacingIndex(candidates, np.zeros(0, np.int64), np.zeros(1, np.int64), np.zeros((0, 3)),
                           np.zeros((0, 3)), none, none, none, none)
    x = centroid[candidates]
    bend = np.abs(curvature[candidates]) * extent[candidates]  # as _may_face computes it
    bent = bend >= straight  # (NaN: not bent, as there)
    k = np.where(bent[:, 0] & bent[:, 1], np.argmin(np.where(bent, bend, np.inf), axis=1), np.argmax(bent, axis=1))
    p = principal[candidates, k]
    p[p[:, 2] < 0] *= -1.0  # a direction and its opposite bound alike: one sign
    b = bend[np.arange(n), k]
    del bend, k
    bounded = bent.any(axis=1) & np.isfinite(x).all(axis=1) & np.isfinite(p).all(axis=1)
    # the group key: (not bounded, cell, axis direction bin, axis elevation bin) as one integer where it fits
    cell = np.floor(x[bounded] / FACING_CELL_M).astype(np.int64)
    cell -= cell.min(axis=0) if len(cell) else 0
    around = np.minimum((np.arctan2(p[bounded, 1], p[bounded, 0]) + math.pi) * (AXIS_BINS / (2 * math.pi)),
                        AXIS_BINS - 1).astype(np.int64)
    tilt = np.minimum(np.arcsin(np.clip(p[bounded, 2], 0.0, 1.0)) * (AXIS_TILT_BINS / (0.5 * math.pi)),
                      AXIS_TILT_BINS - 1).astype(np.int64)
    sizes = [int(v) + 1 for v in cell.max(axis=0)] + [AXIS_BINS, AXIS_TILT_BINS] if len(cell) else [1] * 5
    if math.prod(sizes) >= 2**62:  # (a world of ~10^4 km across in FACING_CELL_M cells): no index, every plate tested
        return None
    key = np.full(n, math.prod(sizes), np.int64)  # the unbounded plates: one key past every other
    key[bounded] = np.ravel_multi_index((cell[:, 0], cell[:, 1], cell[:, 2], around, tilt), sizes)
    del cell, around, tilt
    members = np.argsort(key, kind="stable")  # (a group's members in candidate order)
    key = key[members]
    starts = np.append(np.flatnonzero(np.concatenate([[True], key[1:] != key[:-1]])), n).astype(np.int64)
    del key
    out = tuple(np.empty(len(starts) - 1) for _ in range(4)) + (np.empty((len(starts) - 1, 3)), np.empty((len(starts) - 1, 3)))
    _group_bounds(members, starts, x, p, b, bounded, *out)
    reach, axis_spread, axis_reach, group_bend, centre, axis = out
    return FacingIndex(candidates, members, starts, centre, axis, axis_spread, reach, axis_reach, group_bend)


@kernel
def _group_bounds(members, starts, x, p, b, bounded, reach, axis_spread, axis_reach, bend, centre, axis):
    """Each group's X (mean centroid), q (unit mean direction), rho, delta, |p|max rho and largest bend (inf if
    any member is unbounded)."""
    for g in range(starts.shape[0] - 1):
        lo, hi = starts[g], starts[g + 1]
        sx, sy, sz, qx, qy, qz = 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
        for j in range(lo, hi):
            i = members[j]
            sx, sy, sz = sx + x[i, 0], sy + x[i, 1], sz + x[i, 2]
            qx, qy, qz = qx + p[i, 0], qy + p[i, 1], qz + p[i, 2]
        count = hi - lo
        sx, sy, sz = sx / count, sy / count, sz / count
        length = max(math.sqrt(qx * qx + qy * qy + qz * qz), 1e-300)
        qx, qy, qz = qx / length, qy / length, qz / length
        rho, delta, top, largest, all_bounded = 0.0, 0.0, 0.0, 0.0, True
        for j in range(lo, hi):
            i = members[j]
            dx, dy, dz = x[i, 0] - sx, x[i, 1] - sy, x[i, 2] - sz
            rho = max(rho, math.sqrt(dx * dx + dy * dy + dz * dz))
            dx, dy, dz = p[i, 0] - qx, p[i, 1] - qy, p[i, 2] - qz
            delta = max(delta, math.sqrt(dx * dx + dy * dy + dz * dz))
            top = max(top, math.sqrt(p[i, 0] * p[i, 0] + p[i, 1] * p[i, 1] + p[i, 2] * p[i, 2]))
            largest = max(largest, b[i])
            all_bounded = all_bounded and bounded[i]
        centre[g, 0], centre[g, 1], centre[g, 2] = sx, sy, sz
        axis[g, 0], axis[g, 1], axis[g, 2] = qx, qy, qz
        reach[g], axis_spread[g], axis_reach[g] = rho, delta, top * rho
        bend[g] = largest if all_bounded else math.inf


@kernel
def _near_groups(centre, spread, cone_slack, slack, g_centre, g_axis, g_spread, g_reach, g_axis_reach, g_bend,
                 members, starts, near):
    """near[members of every group the bound does not rule out] = True (module docstring)."""
    for g in range(g_centre.shape[0]):
        dx, dy, dz = centre[0] - g_centre[g, 0], centre[1] - g_centre[g, 1], centre[2] - g_centre[g, 2]
        d = math.sqrt(dx * dx + dy * dy + dz * dz)
        along = abs(g_axis[g, 0] * dx + g_axis[g, 1] * dy + g_axis[g, 2] * dz)
        allowed = (d + g_reach[g]) * (0.75 * g_bend[g] + cone_slack + 2.0 * slack) + spread
        rounding = 1e-9 * (d + g_reach[g] + spread + 1.0)
        if along - g_spread[g] * d - g_axis_reach[g] > allowed + rounding:  # (False for NaN or inf: kept)
            continue
        for j in range(starts[g], starts[g + 1]):
            near[members[j]] = True


@kernel
def _may_face(candidates, centroid, normal, cone, principal, curvature, extent, centre, spread, cone_slack,
              straight, slack, keep):
    half_pi = 0.5 * math.pi
    for i in range(candidates.shape[0]):
        p = candidates[i]
        tx, ty, tz = centre[0] - centroid[p, 0], centre[1] - centroid[p, 1], centre[2] - centroid[p, 2]
        r = math.sqrt(tx * tx + ty * ty + tz * tz)
        angle = min(cone[p] + spread / max(r, 1e-6) + cone_slack, half_pi)
        facing = normal[p, 0] * tx + normal[p, 1] * ty + normal[p, 2] * tz
        margin = slack * (r + 1.0)
        if facing < (1.0 - 0.5 * angle * angle) * r - margin:  # cos x >= 1 - x^2 / 2: out without a cos
            continue
        # (a singly curved plate's cone is pi, so angle is pi / 2 for most of a terrain's: its cos without a call)
        if facing < (COS_HALF_PI if angle == half_pi else math.cos(angle)) * r - margin:
            continue
        inv = 1.0 / max(r, 1e-300)
        ux, uy, uz = tx * inv, ty * inv, tz * inv
        if normal[p, 0] * ux + normal[p, 1] * uy + normal[p, 2] * uz <= -0.1 - slack:
            continue
        wander = spread / max(r, 1e-6) + cone_slack
        near = True
        for k in range(2):
            bend = abs(curvature[p, k]) * extent[p, k]
            if bend < straight:
                continue
            m = principal[p, k, 0] * ux + principal[p, k, 1] * uy + principal[p, k, 2] * uz
            limit = 0.75 * bend + wander + slack
            if abs(m) > limit + slack:  # asin |m| >= |m|: out without the asin (most of a terrain's plates)
                near = False
                break
            tilt = abs(math.asin(min(max(m, -1.0), 1.0)))
            if tilt > limit:
                near = False
                break
        keep[i] = near


def feet_inside(pairs, plate, foot, tri_starts, tri) -> np.ndarray:
    """(len(plate),) bool: for each pair in `pairs`, whether the foot foot[pair] lies inside one of its plate's
    triangles tri[tri_starts[p]:tri_starts[p + 1]] (p = plate[pair]); False for the other pairs. The test of
    facet_glints._in_triangle (barycentric x, y >= 0, x + y < 1) with its float operations in its order, so
    the same feet are inside; a pair stops at its first triangle that holds the foot."""
    out = np.zeros(len(plate), np.bool_)
    _feet_inside(np.ascontiguousarray(pairs, np.int64), np.ascontiguousarray(plate, np.int64),
                 np.ascontiguousarray(foot, np.float64), np.ascontiguousarray(tri_starts, np.int64),
                 np.ascontiguousarray(tri, np.float64), out)
    return out


@inlined
def _barycentric(px, py, pz, tri, t):
    """(x, y) of facet_glints._in_triangle for the point p and triangle t: row sums of three products are
    ((x0 + x1) + x2), as numpy's sum over the last axis of length 3."""
    ax, ay, az = tri[t, 0, 0], tri[t, 0, 1], tri[t, 0, 2]
    v0x, v0y, v0z = tri[t, 2, 0] - ax, tri[t, 2, 1] - ay, tri[t, 2, 2] - az
    v1x, v1y, v1z = tri[t, 1, 0] - ax, tri[t, 1, 1] - ay, tri[t, 1, 2] - az
    v2x, v2y, v2z = px - ax, py - ay, pz - az
    d00 = v0x * v0x + v0y * v0y + v0z * v0z
    d01 = v0x * v1x + v0y * v1y + v0z * v1z
    d02 = v0x * v2x + v0y * v2y + v0z * v2z
    d11 = v1x * v1x + v1y * v1y + v1z * v1z
    d12 = v1x * v2x + v1y * v2y + v1z * v2z
    den = d00 * d11 - d01 * d01
    if not (den >= 1e-300 or den != den):  # np.maximum(den, 1e-300), NaN kept
        den = 1e-300
    inv = 1.0 / den
    return (d11 * d02 - d01 * d12) * inv, (d00 * d12 - d01 * d02) * inv


@kernel
def _feet_inside(pairs, plate, foot, tri_starts, tri, out):
    for i in pairs:
        p = plate[i]
        for t in range(tri_starts[p], tri_starts[p + 1]):
            x, y = _barycentric(foot[i, 0], foot[i, 1], foot[i, 2], tri, t)
            if x >= 0 and y >= 0 and x + y < 1:
                out[i] = True
                break


@kernel
def barycentric(p, tri, x, y):
    """_barycentric of every point p[k] in triangle tri[k] (the tests compare it with _in_triangle's)."""
    for k in range(p.shape[0]):
        x[k], y[k] = _barycentric(p[k, 0], p[k, 1], p[k, 2], tri, k)


def most_normal(az, surface, cos_t) -> np.ndarray:
    """For az in increasing order: the index of the largest cos_t of each (azimuth, surface), the first of
    equal ones, in increasing (azimuth, surface) order: the picks of np.lexsort((-cos_t, surface, az)) and
    its first row per group (curved_returns), with a stable sort of each azimuth's surfaces only."""
    out = np.empty(len(az), np.int64)
    count = _most_normal(np.ascontiguousarray(az, np.int64), np.ascontiguousarray(surface, np.int64),
                         np.ascontiguousarray(cos_t, np.float64), out)
    return out[:count]


FEW_SURFACES = 16  # an azimuth with at most this many surfaces is picked by one scan; more: by a sort of its surfaces


@kernel
def _most_normal(az, surface, cos_t, out):
    n, count, start = az.shape[0], 0, 0
    seen = np.empty(FEW_SURFACES, np.int64)  # the azimuth's surfaces so far, and their best pair
    best_of = np.empty(FEW_SURFACES, np.int64)
    while start < n:
        end = start
        while end < n and az[end] == az[start]:
            end += 1
        # one scan in the pairs' order (a city's azimuth sees a few surfaces): each surface keeps its first largest
        # cos_t, as the stable sort below does; then its picks in increasing surface order
        few = 0
        scanned = True
        for i in range(start, end):
            k = 0
            while k < few and seen[k] != surface[i]:
                k += 1
            if k == few:
                if few == FEW_SURFACES:
                    scanned = False
                    break
                seen[few], best_of[few] = surface[i], i
                few += 1
            elif cos_t[i] > cos_t[best_of[k]]:  # (ties: the first stays)
                best_of[k] = i
        if scanned:
            for k in range(1, few):  # insertion sort of the few by surface (each surface once)
                s_k, b_k, m = seen[k], best_of[k], k - 1
                while m >= 0 and seen[m] > s_k:
                    seen[m + 1], best_of[m + 1] = seen[m], best_of[m]
                    m -= 1
                seen[m + 1], best_of[m + 1] = s_k, b_k
            for k in range(few):
                out[count] = best_of[k]
                count += 1
            start = end
            continue
        order = np.argsort(surface[start:end], kind="mergesort") + start  # stable: original order within a surface
        best = order[0]
        for k in range(1, end - start):
            i = order[k]
            if surface[i] != surface[best]:
                out[count] = best
                count += 1
                best = i
            elif cos_t[i] > cos_t[best]:  # (ties: the first stays, as the stable sort on -cos_t keeps it first)
                best = i
        out[count] = best
        count += 1
        start = end
    return count


def beam_pairs(order, lo, hi, points, origins, column_rot, half_width: float, e_lo: float, e_hi: float,
               max_range: float, angles: bool = True, normals=None) -> tuple:
    """(item, azimuth, beta, e, distance) of facet_glints._pairs: for azimuth a and seam copy c (lo, hi: (3 A,)
    bounds into `order`, copy-major), the points order[lo[c A + a]:hi[c A + a]] seen from origins[a] in the
    column frame column_rot[a] (R^T (p - o)), kept where |beta| <= half_width, e_lo <= e <= e_hi and
    1 mm < distance < max_range; in azimuth order, then copy, then position in `order`.
    angles False: (item, azimuth, None, None, None), the same pairs, the angles formed only where a bound does not
    decide the box (BOX_MARGIN).
    normals (one unit normal per point; angles False): (item, azimuth, u, r0, cos_t) of those pairs whose point
    faces its sensor position, as facing_pairs gives them (the same pass: curved_returns' 99 k pairs on the
    1 M city are not written out and read back)."""
    facing = normals is not None
    total = int(np.maximum(np.asarray(hi) - np.asarray(lo), 0).sum())
    item, az = np.empty(total, np.int64), np.empty(total, np.int64)
    size = total if angles else 0
    beta, e, dist = np.empty(size), np.empty(size), np.empty(size)
    size = total if facing else 0
    u, r0, cos_t = np.empty((size, 3)), np.empty(size), np.empty(size)
    count = _beam_pairs(np.ascontiguousarray(order, np.int64), np.ascontiguousarray(lo, np.int64),
                        np.ascontiguousarray(hi, np.int64), np.ascontiguousarray(points, np.float64),
                        np.ascontiguousarray(origins, np.float64), np.ascontiguousarray(column_rot, np.float64),
                        float(half_width), float(e_lo), float(e_hi), float(max_range), bool(angles) and not facing,
                        np.ascontiguousarray(normals if facing else np.zeros((0, 3)), np.float64), facing,
                        item, az, beta, e, dist, u, r0, cos_t)
    if facing:
        return item[:count], az[:count], u[:count], r0[:count], cos_t[:count]
    if not angles:
        return item[:count], az[:count], None, None, None
    return item[:count], az[:count], beta[:count], e[:count], dist[:count]


BOX_MARGIN = 1e-9  # beam_pairs without angles: a tangent or sine this far (relative; absolute for the sine) inside or
# outside the box's edge decides the test without atan2/asin (libm's are within an ULP, ~1e-16); nearer: the angle


@kernel
def _beam_pairs(order, lo, hi, points, origins, column_rot, half_width, e_lo, e_hi, max_range, angles, normals, facing,
                item, az, beta, e, dist, u, r0, cos_t):
    n_az = origins.shape[0]
    count = 0
    # |atan2(y, x)| <= w for x > 0 is |y| <= x tan w (w < pi/2); asin(z) in [e_lo, e_hi] is z in [sin e_lo, sin e_hi]
    bound_az = not angles and half_width < 1.5
    tan_in, tan_out = math.tan(half_width) * (1.0 - BOX_MARGIN), math.tan(half_width) * (1.0 + BOX_MARGIN)
    sin_lo, sin_hi = math.sin(e_lo), math.sin(e_hi)
    for a in range(n_az):
        ox, oy, oz = origins[a, 0], origins[a, 1], origins[a, 2]
        for copy in range(3):
            for j in range(lo[copy * n_az + a], hi[copy * n_az + a]):
                p = order[j]
                rx, ry, rz = points[p, 0] - ox, points[p, 1] - oy, points[p, 2] - oz
                cx = column_rot[a, 0, 0] * rx + column_rot[a, 1, 0] * ry + column_rot[a, 2, 0] * rz
                cy = column_rot[a, 0, 1] * rx + column_rot[a, 1, 1] * ry + column_rot[a, 2, 1] * rz
                cz = column_rot[a, 0, 2] * rx + column_rot[a, 1, 2] * ry + column_rot[a, 2, 2] * rz
                d = math.sqrt(cx * cx + cy * cy + cz * cz)
                if not (d > 1e-3 and d < max_range):
                    continue
                z = min(max(cz / max(d, 1e-12), -1.0), 1.0)
                if angles:
                    b = math.atan2(cy, cx)
                    if not abs(b) <= half_width:
                        continue
                    el = math.asin(z)
                    if not (el >= e_lo and el <= e_hi):
                        continue
                    beta[count], e[count], dist[count] = b, el, d
                else:
                    side = abs(cy)
                    if bound_az and cx > 0.0 and side < cx * tan_in:
                        pass  # inside the azimuth box
                    elif bound_az and cx > 0.0 and side > cx * tan_out:
                        continue
                    elif not abs(math.atan2(cy, cx)) <= half_width:
                        continue
                    if z > sin_lo + BOX_MARGIN and z < sin_hi - BOX_MARGIN:
                        pass  # inside the elevation box
                    elif z < sin_lo - BOX_MARGIN or z > sin_hi + BOX_MARGIN:
                        continue
                    else:
                        el = math.asin(z)
                        if not (el >= e_lo and el <= e_hi):
                            continue
                if facing:
                    ux, uy, uz, r, c = _facing(ox - points[p, 0], oy - points[p, 1], oz - points[p, 2], normals[p, 0],
                                               normals[p, 1], normals[p, 2])
                    if not c > 0:
                        continue
                    u[count, 0], u[count, 1], u[count, 2], r0[count], cos_t[count] = ux, uy, uz, r, c
                item[count], az[count] = p, a
                count += 1
    return count


def facing_pairs(plate, az, origins, centroid, normal) -> tuple:
    """curved_returns' pairs in front: for each (plate, azimuth), u, r0 = facet_glints._unit(origins[az] -
    centroid[plate]) (|v| = sqrt((x0^2 + x1^2) + x2^2), v / max(|v|, 1e-300)) and cos_t = ((n0 u0 + n1 u1) + n2 u2);
    kept where cos_t > 0, in their order: (plate, az, u, r0, cos_t)."""
    k = len(plate)
    out = (np.empty(k, np.int64), np.empty(k, np.int64), np.empty((k, 3)), np.empty(k), np.empty(k))
    count = _facing_pairs(np.ascontiguousarray(plate, np.int64), np.ascontiguousarray(az, np.int64), origins, centroid,
                          normal, *out)
    return tuple(o[:count] for o in out)


@inlined
def _facing(vx, vy, vz, nx, ny, nz):
    """(u, r, cos_t) of v = sensor - point and the point's normal n: r = |v|, u = v / max(r, 1e-300), cos_t = n . u."""
    r = math.sqrt(vx * vx + vy * vy + vz * vz)
    inv = max(r, 1e-300)
    ux, uy, uz = vx / inv, vy / inv, vz / inv
    return ux, uy, uz, r, nx * ux + ny * uy + nz * uz


@kernel
def _facing_pairs(plate, az, origins, centroid, normal, plate_out, az_out, u_out, r_out, cos_out):
    count = 0
    for j in range(plate.shape[0]):
        p, a = plate[j], az[j]
        ux, uy, uz, r, c = _facing(origins[a, 0] - centroid[p, 0], origins[a, 1] - centroid[p, 1],
                                   origins[a, 2] - centroid[p, 2], normal[p, 0], normal[p, 1], normal[p, 2])
        if c > 0:
            plate_out[count], az_out[count], r_out[count], cos_out[count] = p, a, r, c
            u_out[count, 0], u_out[count, 1], u_out[count, 2] = ux, uy, uz
            count += 1
    return count
