"""Compiled loops of a geometry pass (geometry.py, _trace_block): the same float operations, in the same order,
as the numpy code they replace, so the frame's bytes do not change (compiled.py: no fastmath, no fused
multiply-adds). No formula of their own: each docstring names the lines whose arithmetic it repeats.

Why: after each trace a pass gathered its kept rays' nine arrays, widened and normalised the normals, and
formed hit points, paths, incidence cosines and the mirror children's rays, each a numpy pass with its
temporaries (measured on a Navtech frame of a 1 M-triangle world, one core: ~30 ms a frame); a loop per ray
does them in one pass.
"""
from __future__ import annotations

import math

import numpy as np

from ...compiled import kernel


def kept_hits(keep, o, d, dist, normal, cls, idx, path, rho, straight) -> tuple:
    """The rays keep of a pass, at their hits: (d, dist, cls, idx, rho, straight) gathered, the normal n widened
    to float64 and normalised (n / max(|n|, 1e-12)), hit = o + d dist, path + dist, cos_t = clip(-d . n, 0, 1)
    (dot products ((x0 y0 + x1 y1) + x2 y2), as geometry._dot). Returns (d, dist, cls, idx, rho, straight, n,
    hit, path, cos_t)."""
    k = len(keep)
    out = (np.empty((k, 3)), np.empty(k), np.empty(k, cls.dtype), np.empty(k, idx.dtype), np.empty(k),
           np.empty(k, np.bool_), np.empty((k, 3)), np.empty((k, 3)), np.empty(k), np.empty(k))
    _kept_hits(np.ascontiguousarray(keep, np.int64), o, d, dist, np.asarray(normal), cls, idx, path, rho, straight, *out)
    return out


@kernel
def _kept_hits(keep, o, d, dist, normal, cls, idx, path, rho, straight,
               d_out, dist_out, cls_out, idx_out, rho_out, straight_out, n_out, hit_out, path_out, cos_out):
    for j in range(keep.shape[0]):
        i = keep[j]
        t = dist[i]
        dist_out[j], cls_out[j], idx_out[j], rho_out[j], straight_out[j] = t, cls[i], idx[i], rho[i], straight[i]
        nx, ny, nz = np.float64(normal[i, 0]), np.float64(normal[i, 1]), np.float64(normal[i, 2])
        length = math.sqrt(nx * nx + ny * ny + nz * nz)
        if not (length >= 1e-12 or length != length):  # np.maximum(length, 1e-12), NaN kept
            length = 1e-12
        nx, ny, nz = nx / length, ny / length, nz / length
        dx, dy, dz = d[i, 0], d[i, 1], d[i, 2]
        d_out[j, 0], d_out[j, 1], d_out[j, 2] = dx, dy, dz
        n_out[j, 0], n_out[j, 1], n_out[j, 2] = nx, ny, nz
        hit_out[j, 0], hit_out[j, 1], hit_out[j, 2] = o[i, 0] + dx * t, o[i, 1] + dy * t, o[i, 2] + dz * t
        path_out[j] = path[i] + t
        c = -(dx * nx + dy * ny + dz * nz)
        if c < 0.0:  # np.clip(c, 0, 1): NaN and -0.0 kept
            c = 0.0
        elif c > 1.0:
            c = 1.0
        cos_out[j] = c


def mirror_children(rho, rho_c, min_rho: float, hit, d, cos_t, n, idx, path, skip: float) -> tuple:
    """The mirror rays of the hits whose reflectivity rho x rho_c > min_rho (the children, in order): mirror =
    d + (2 cos_t) n, starting at hit + mirror x skip, direction mirror / |mirror|; their tube index, path + skip and
    rho x rho_c. Returns (o_next, d_next, idx_next, path_next, rho_next) ((k, 3) float64, k children).
    Why the selection and gathers here: np.flatnonzero(rho * rho_c > min_rho) and the three gathers were 1.2 ms of
    a ras6 frame (one core), a few passes over the rays with their temporaries."""
    m = len(rho)
    o_next, d_next = np.empty((m, 3)), np.empty((m, 3))
    idx_next, path_next, rho_next = np.empty(m, np.asarray(idx).dtype), np.empty(m), np.empty(m)
    k = _mirror_children(rho, rho_c, float(min_rho), hit, d, cos_t, n, idx, path, float(skip), o_next, d_next, idx_next,
                         path_next, rho_next)
    return o_next[:k], d_next[:k], idx_next[:k], path_next[:k], rho_next[:k]


@kernel
def _mirror_children(rho, rho_c, min_rho, hit, d, cos_t, n, idx, path, skip, o_next, d_next, idx_next, path_next,
                     rho_next):
    j = 0
    for i in range(rho.shape[0]):
        r = rho[i] * rho_c[i]
        if not r > min_rho:
            continue
        twice = 2.0 * cos_t[i]
        mx, my, mz = d[i, 0] + twice * n[i, 0], d[i, 1] + twice * n[i, 1], d[i, 2] + twice * n[i, 2]
        o_next[j, 0], o_next[j, 1], o_next[j, 2] = hit[i, 0] + mx * skip, hit[i, 1] + my * skip, hit[i, 2] + mz * skip
        length = math.sqrt(mx * mx + my * my + mz * mz)
        d_next[j, 0], d_next[j, 1], d_next[j, 2] = mx / length, my / length, mz / length
        idx_next[j], path_next[j], rho_next[j] = idx[i], path[i] + skip, r
        j += 1
    return j


def occlusion_rays(power, hit, u, back_len, skip: float) -> tuple:
    """geometry._unoccluded's rays: the returns with power > 0 (test, in order), each from hit + u skip (rounded to
    float32) along u (float32), to reach = max(back_len - 2 skip, 0). Returns (test, start, direction, reach)."""
    test = np.flatnonzero(power > 0)
    k = len(test)
    start, direction, reach = np.empty((k, 3), np.float32), np.empty((k, 3), np.float32), np.empty(k)
    _occlusion_rays(test, hit, u, back_len, float(skip), start, direction, reach)
    return test, start, direction, reach


@kernel
def _occlusion_rays(test, hit, u, back_len, skip, start, direction, reach):
    for j in range(test.shape[0]):
        i = test[j]
        for c in range(3):
            start[j, c] = np.float32(hit[i, c] + u[i, c] * skip)
            direction[j, c] = np.float32(u[i, c])
        r = back_len[i] - 2 * skip
        reach[j] = r if (r >= 0.0 or r != r) else 0.0  # np.maximum(r, 0.0), NaN kept


def traced_hits(distance, material, reach, material_class, near: float) -> tuple:
    """_trace_block's reading of a trace: dist = distance as float64; a ray is kept where dist is finite, < reach,
    >= near (-inf: any) and its material has a class (material_class[material] >= 0); cls = that class, -1 for the
    others. Returns (keep, dist, cls)."""
    n = len(reach)
    dist, cls, keep = np.empty(n), np.empty(n, np.int64), np.empty(n, np.int64)
    count = _traced_hits(np.asarray(distance), np.asarray(material), reach, np.asarray(material_class), float(near),
                         dist, cls, keep)
    return keep[:count], dist, cls


@kernel
def _traced_hits(distance, material, reach, material_class, near, dist, cls, keep):
    count = 0
    for i in range(reach.shape[0]):
        t = np.float64(distance[i])
        dist[i] = t
        c = -1
        if math.isfinite(t) and t < reach[i] and t >= near:
            c = np.int64(material_class[material[i]])
        cls[i] = c
        if c >= 0:
            keep[count] = i
            count += 1
    return count


def merge_by_tube(first: tuple, second: tuple) -> tuple:
    """The next pass's rays (o, d, idx, path, rho, straight) of two sets (mirror children, then rays on through
    foliage), each in tube order (idx non-decreasing), merged into tube order, the first set's ray first on a
    tie: the rows np.argsort(concatenated idx, kind="stable") puts in order. A set not in tube order is an error
    (_trace_block's sets are subsets of its rays in their order)."""
    idx_a, idx_b = first[2], second[2]
    if np.any(idx_a[1:] < idx_a[:-1]) or np.any(idx_b[1:] < idx_b[:-1]):
        raise ValueError("merge_by_tube merges sets in tube order (idx non-decreasing) only")
    k = len(idx_a) + len(idx_b)
    out = (np.empty((k, 3)), np.empty((k, 3)), np.empty(k, np.result_type(idx_a, idx_b)), np.empty(k), np.empty(k),
           np.empty(k, np.bool_))
    _merge_by_tube(*(np.ascontiguousarray(v) for v in first), *(np.ascontiguousarray(v) for v in second), *out)
    return out


@kernel
def _merge_by_tube(o_a, d_a, idx_a, path_a, rho_a, straight_a, o_b, d_b, idx_b, path_b, rho_b, straight_b,
                   o, d, idx, path, rho, straight):
    i, j = 0, 0
    n_a, n_b = idx_a.shape[0], idx_b.shape[0]
    for k in range(n_a + n_b):
        if j >= n_b or (i < n_a and idx_a[i] <= idx_b[j]):
            for c in range(3):
                o[k, c], d[k, c] = o_a[i, c], d_a[i, c]
            idx[k], path[k], rho[k], straight[k] = idx_a[i], path_a[i], rho_a[i], straight_a[i]
            i += 1
        else:
            for c in range(3):
                o[k, c], d[k, c] = o_b[j, c], d_b[j, c]
            idx[k], path[k], rho[k], straight[k] = idx_b[j], path_b[j], rho_b[j], straight_b[j]
            j += 1
