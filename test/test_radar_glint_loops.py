"""The glints' and the receiver skirts' compiled loops against the numpy code they replaced (issue #22, performance).

Unlike test_radar_stage_loops.py these loops may differ from numpy in the last bits: their cos, sin, atan2
and asin are libm's, numpy's are SIMD, and their sums run in another order. So each is checked against the
numpy reference (kept here as it stood) at float rounding, its selections exactly, one against an analytic
answer, and a whole frame through them for its bytes on 1 and 2 threads.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.sparse import csr_matrix

from radarays_ros.radar import RadarSimulator
from radarays_ros.radar.physical import facet_glints, facet_po, glint_cull, stage, stage_loops
from radarays_ros.tracing import make_backend
from support.radar_physical import EYE, ground, physical, plate, scene


def _edge_terms_numpy(p, start, end, normal):
    edge = end - start
    length = np.linalg.norm(edge, axis=1)
    t = edge / np.maximum(length, 1e-300)[:, None]
    nu = np.cross(t, normal)
    p2 = np.einsum("ij,ij->i", p, p)
    half = 0.5 * np.einsum("ij,ij->i", p, t) * length
    mid = 0.5 * (start + end)
    return (-1j * np.einsum("ij,ij->i", p, nu) / np.maximum(p2, 1e-300) * length
            * np.exp(1j * np.einsum("ij,ij->i", p, mid)) * np.sinc(half / np.pi))


def _random_edges(rng, n):
    normal = rng.normal(size=(n, 3))
    normal /= np.linalg.norm(normal, axis=1)[:, None]
    start, end = rng.uniform(-2, 2, (n, 3)), rng.uniform(-2, 2, (n, 3))
    start -= normal * np.einsum("ij,ij->i", start, normal)[:, None]  # in the plate's plane through 0
    end -= normal * np.einsum("ij,ij->i", end, normal)[:, None]
    p = rng.normal(size=(n, 3)) * rng.choice([1e-2, 1.0, 1e3, 4e3], n)[:, None]  # up to 2 k at 77 GHz
    p -= normal * np.einsum("ij,ij->i", p, normal)[:, None]
    return p, start, end, normal


@pytest.mark.parametrize("seed", range(3))
def test_edge_terms_loop_against_numpy(seed):
    rng = np.random.default_rng(seed)
    p, start, end, normal = _random_edges(rng, 5000)
    end[:20] = start[:20]  # zero-length edges: no term
    p[20:30] = np.cross(normal[20:30], end[20:30] - start[20:30])  # p across the edge: sinc(0) = 1
    want = _edge_terms_numpy(p, start, end, normal)
    got = facet_po.edge_terms(p, start, end, normal)
    # float rounding of a phase p . r up to ~10^4 rad: the error is that of the phase, |term| x 1e-12
    scale = np.abs(want) + np.linalg.norm(end - start, axis=1) ** 2 * 1e-3
    assert np.all(np.abs(got - want) <= 1e-11 * scale)
    assert not got[:20].any()


def test_outline_integrals_sum_the_edge_terms_of_each_plate():
    rng = np.random.default_rng(7)
    n_plates, pairs = 50, 400
    counts = rng.integers(3, 9, n_plates)
    starts = np.concatenate([[0], np.cumsum(counts)])
    p, e_from, e_to, _ = _random_edges(rng, int(starts[-1]))
    plate = rng.integers(0, n_plates, pairs)
    centroid, normal = rng.normal(size=(pairs, 3)), rng.normal(size=(pairs, 3))
    normal /= np.linalg.norm(normal, axis=1)[:, None]
    p_pair = rng.normal(size=(pairs, 3)) * 300.0
    chosen = np.sort(rng.choice(pairs, 300, replace=False))
    got = facet_po.outline_integrals(chosen, plate, starts, e_from, e_to, centroid, normal, p_pair)
    for k, i in enumerate(chosen):  # numpy reference per pair: the sum of its plate's edge terms, in edge order
        edges = slice(starts[plate[i]], starts[plate[i] + 1])
        m = edges.stop - edges.start
        terms = _edge_terms_numpy(np.repeat(p_pair[[i]], m, 0), e_from[edges] - centroid[i], e_to[edges] - centroid[i],
                                  np.repeat(normal[[i]], m, 0))
        assert abs(got[k] - terms.sum()) <= 1e-11 * (np.abs(terms).sum() + 1e-300)


def test_outline_integral_of_a_rectangle_is_its_sinc_pattern():
    # I(p) of an a x b rectangle about its centre: A sinc(p_x a / 2) sinc(p_y b / 2) (Knott Eq. 5.26)
    a, b = 0.6, 0.25
    corners = np.array([[-a / 2, -b / 2, 0], [a / 2, -b / 2, 0], [a / 2, b / 2, 0], [-a / 2, b / 2, 0]])
    e_from, e_to = corners, np.roll(corners, -1, axis=0)
    rng = np.random.default_rng(1)
    p = np.column_stack([rng.uniform(-400, 400, 200), rng.uniform(-400, 400, 200), np.zeros(200)])
    got = facet_po.outline_integrals(np.arange(200), np.zeros(200, np.int64), np.array([0, 4]), e_from, e_to,
                                     np.zeros((200, 3)), np.tile([0.0, 0.0, 1.0], (200, 1)), p)
    want = a * b * np.sinc(p[:, 0] * a / 2 / np.pi) * np.sinc(p[:, 1] * b / 2 / np.pi)
    assert np.allclose(got.real, want, atol=1e-9 * a * b) and np.allclose(got.imag, 0.0, atol=1e-9 * a * b)


def _pairs_numpy(points, origins, column_rot, beam):
    centre = origins.mean(axis=0)
    bearing = np.arctan2(points[:, 1] - centre[1], points[:, 0] - centre[0])
    boresight = np.arctan2(column_rot[:, 1, 0], column_rot[:, 0, 0])
    reach = beam["azimuth"] + math.radians(2.0)
    order = np.argsort(bearing, kind="stable")
    sorted_bearing = bearing[order]
    centres = (boresight[None, :] + np.array([-2 * math.pi, 0.0, 2 * math.pi])[:, None]).reshape(-1)
    lo = np.searchsorted(sorted_bearing, centres - reach)
    hi = np.searchsorted(sorted_bearing, centres + reach)
    counts = np.maximum(hi - lo, 0)
    total = int(counts.sum())
    az = np.repeat(np.tile(np.arange(len(boresight)), 3), counts)
    item = order[np.repeat(lo - np.cumsum(counts) + counts, counts) + np.arange(total)]
    by_az = np.argsort(az, kind="stable")
    item, az = item[by_az], az[by_az]
    col = np.einsum("nji,nj->ni", column_rot[az], points[item] - origins[az])
    dist = np.linalg.norm(col, axis=1)
    beta = np.arctan2(col[:, 1], col[:, 0])
    e = np.arcsin(np.clip(col[:, 2] / np.maximum(dist, 1e-12), -1.0, 1.0))
    ok = (np.abs(beta) <= beam["azimuth"]) & (e >= beam["e_lo"]) & (e <= beam["e_hi"]) & (dist > 1e-3) & (dist < beam["max_range"])
    return item[ok], az[ok], beta[ok], e[ok], dist[ok]


@pytest.mark.parametrize("seed", range(3))
def test_beam_pairs_loop_against_numpy(seed):
    rng = np.random.default_rng(seed)
    a = 400
    yaw = -np.arange(a) * math.radians(0.9) + rng.uniform(-np.pi, np.pi)
    rot = np.zeros((a, 3, 3))
    rot[:, 0, 0], rot[:, 0, 1], rot[:, 1, 0], rot[:, 1, 1], rot[:, 2, 2] = np.cos(yaw), -np.sin(yaw), np.sin(yaw), np.cos(yaw), 1
    origins = np.column_stack([np.linspace(0, 3, a), rng.normal(0, 0.1, a), np.full(a, 2.0)])  # a moving sensor
    points = np.column_stack([rng.uniform(-150, 150, (3000, 2)), rng.uniform(-1, 12, 3000)])
    points[:5] = origins[0]  # at the sensor: left out (1 mm)
    beam = {"azimuth": math.radians(2.7), "e_lo": math.radians(-20.0), "e_hi": math.radians(5.0), "max_range": 120.0}
    want = _pairs_numpy(points, origins, rot, beam)
    got = facet_glints._pairs(points, origins, rot, beam)
    assert len(want[0]) > 1000
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])  # the same pairs, in the same order
    for g, w in zip(got[2:], want[2:]):
        assert np.allclose(g, w, rtol=1e-14, atol=1e-14)


def test_beam_pairs_without_angles_are_the_same_pairs():
    """_pairs(angles=False) decides the beam box by bounds on tan and sin, atan2/asin only near its edges: the same
    pairs in the same order, also for points on the edges (within 1e-12 of them, both sides) and at the sensor."""
    rng = np.random.default_rng(7)
    a = 400
    yaw = -np.arange(a) * math.radians(0.9) + 0.3
    rot = np.zeros((a, 3, 3))
    rot[:, 0, 0], rot[:, 0, 1], rot[:, 1, 0], rot[:, 1, 1], rot[:, 2, 2] = np.cos(yaw), -np.sin(yaw), np.sin(yaw), np.cos(yaw), 1
    origins = np.column_stack([np.linspace(0, 3, a), rng.normal(0, 0.1, a), np.full(a, 2.0)])
    beam = {"azimuth": math.radians(2.7), "e_lo": math.radians(-20.0), "e_hi": math.radians(5.0), "max_range": 120.0}
    points = [np.column_stack([rng.uniform(-150, 150, (3000, 2)), rng.uniform(-1, 12, 3000)]), origins[:3]]
    own = []  # (point, azimuth) of the edge points
    for k in rng.integers(0, a, 60):  # on the box's edges as seen from azimuth k, a hair inside and outside
        for beta, e in ((beam["azimuth"], 0.0), (-beam["azimuth"], 0.0), (0.0, beam["e_lo"]), (0.0, beam["e_hi"])):
            for hair in (-1e-12, 0.0, 1e-12):
                b, el, r = beta * (1 + hair), e * (1 + hair), rng.uniform(5.0, 100.0)
                col = r * np.array([math.cos(el) * math.cos(b), math.cos(el) * math.sin(b), math.sin(el)])
                points.append((origins[k] + rot[k] @ col)[None, :])
                own.append((3003 + len(own), k))
    points = np.concatenate(points)
    with_angles = facet_glints._pairs(points, origins, rot, beam)
    item, az, *rest = facet_glints._pairs(points, origins, rot, beam, angles=False)
    assert np.array_equal(item, with_angles[0]) and np.array_equal(az, with_angles[1]) and rest == [None] * 3
    kept = set(zip(item.tolist(), az.tolist()))
    on_edge = [pair in kept for pair in own]
    assert len(item) > 1000 and 0 < sum(on_edge) < len(on_edge)  # edge points of both sides of the box
    empty = facet_glints._pairs(points[:0], origins, rot, beam, angles=False)
    assert len(empty[0]) == 0 and empty[2] is None
    # with the points' normals: the pairs in front, as facing_pairs gives them after the pairs (one pass)
    normals = rng.normal(size=points.shape)
    normals /= np.linalg.norm(normals, axis=1)[:, None]
    want = glint_cull.facing_pairs(item, az, origins, points, normals)
    got = facet_glints._pairs(points, origins, rot, beam, angles=False, normals=normals)
    assert all(g.dtype == w.dtype and g.tobytes() == w.tobytes() for g, w in zip(got, want))
    assert 0 < len(got[0]) < len(item)  # some pairs face away
    empty = facet_glints._pairs(points[:0], origins, rot, beam, angles=False, normals=normals[:0])
    assert len(empty[0]) == 0 and empty[2].shape == (0, 3)


def test_beam_pairs_of_nothing():
    item, az, beta, e, dist = glint_cull.beam_pairs(np.zeros(0, np.int64), np.zeros(3, np.int64), np.zeros(3, np.int64),
                                                    np.zeros((0, 3)), np.zeros((1, 3)), np.eye(3)[None], 0.1, -0.1, 0.1, 10.0)
    assert len(item) == len(az) == len(beta) == len(e) == len(dist) == 0


def test_skirt_loops_against_the_dense_and_sparse_products():
    rng = np.random.default_rng(3)
    rows, cells, bins = 25, 300, 6848
    power = rng.lognormal(-20, 4, (rows, cells)) * (rng.random((rows, cells)) < 0.3)
    kernel = rng.lognormal(-12, 3, (cells, cells))
    position = np.clip(np.linspace(-0.5, cells - 0.5, bins), 0, cells - 1)
    lo = np.minimum(position.astype(np.int64), cells - 1)
    hi, weight = np.minimum(lo + 1, cells - 1), position - lo
    used = np.flatnonzero(power.any(axis=0))
    s = np.einsum("ri,ij->rj", power[:, used], kernel[used])
    matrix = csr_matrix((np.stack([1.0 - weight, weight], 1).ravel(), (np.repeat(np.arange(bins), 2), np.stack([lo, hi], 1).ravel())),
                        shape=(bins, cells))
    want = np.ascontiguousarray((matrix @ s.T).T, dtype=np.float32)
    got = stage_loops.skirt_power(power, kernel, lo, hi, weight)
    assert got.dtype == np.float32 and np.allclose(got, want, rtol=2e-7, atol=0)
    bin_power = rng.lognormal(-20, 4, (rows, 5000))
    cell_of_bin = np.minimum(np.arange(5000) // 23, cells - 1)
    starts = np.flatnonzero(np.diff(np.concatenate([[-1], cell_of_bin])))
    want_cells = np.zeros((rows, cells))
    want_cells[:, cell_of_bin[starts]] = np.add.reduceat(bin_power, starts, axis=1)
    assert np.allclose(stage_loops.cell_sums(bin_power, cell_of_bin, cells), want_cells, rtol=1e-13, atol=0)


def test_a_chain_frame_with_skirts_and_glints_has_the_same_bytes_on_1_and_2_threads():
    # the loops above run inside the geometry and stage tasks of the frame pool: the bytes do not depend on it
    world = scene(ground(), plate(12.0, 1.0))
    cfg = physical(azimuth={"count": 60, "step_deg": -0.9},
                   receiver={"noise_dbm": None, "thermal_noise_at": "if", "phase_noise_dbc_hz": -93.0,
                             "phase_noise_targets": True, "highpass_range_m": 3.0, "full_scale_dbm": -40.0,
                             "zero_dbm": -170.0})
    one = RadarSimulator(cfg, world, backend=make_backend("embree", world, threads=1)).simulate(EYE)
    two = RadarSimulator(cfg, world, backend=make_backend("embree", world, threads=2)).simulate(EYE)
    assert one.image.tobytes() == two.image.tobytes() and one.energy.tobytes() == two.energy.tobytes()
    assert one.image.max() > one.image.min()  # (a frame with something in it)


def _running_power_numpy(steps, signed):
    np.cumsum(steps, axis=1, out=steps)
    if not signed:
        np.maximum(steps, 0.0, out=steps)
    return steps[:, :-1]


@pytest.mark.parametrize("signed", [False, True])
def test_running_sum_loop_gives_the_numpy_bytes(signed):
    # (unlike the loops above, these two repeat numpy's float operations in its order: the same bytes)
    rng = np.random.default_rng(11)
    steps = rng.normal(size=(25, 900)) * rng.lognormal(-20, 5, (25, 900))
    steps[:, 0] = -0.0  # a signed zero first: cumsum keeps it
    steps[3, 10:20] = np.nan
    steps[4] = -steps[4].cumsum()[::-1]  # running sums that cancel to round-off (~-1e-30)
    want = _running_power_numpy(steps.copy(), signed)
    got = stage.running_power(steps.copy(), signed)
    assert got.shape == want.shape and got.tobytes() == want.tobytes()


def in_layout(clutter: np.ndarray, layout: str) -> np.ndarray:
    """The clutter rows as the stage hands them (a view of the first J columns of their (rows, J + 1) difference
    array), as a C-contiguous array, or as a view that skips every other row (a layout copied before the loop)."""
    if layout == "contiguous":
        return clutter
    if layout == "difference view":
        steps = np.full((clutter.shape[0], clutter.shape[1] + 1), np.nan)
        steps[:, :-1] = clutter
        return steps[:, :-1]
    every_other = np.full((2 * clutter.shape[0], clutter.shape[1]), np.nan)
    every_other[::2] = clutter
    return every_other[::2]


LAYOUTS = ["contiguous", "difference view", "every other row"]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("rows_of_scale", [None, 1, 25])
def test_clutter_amplitude_loop_gives_the_numpy_bytes(rows_of_scale, layout):
    rng = np.random.default_rng(12)
    clutter = rng.lognormal(-25, 6, (25, 3000)) * (rng.random((25, 3000)) < 0.7)
    clutter[:, 2500:] = 0.0
    clutter[7, 2800] = 1e-3  # one row reaches further: the width is the widest row's
    clutter = in_layout(clutter, layout)
    floor = 1e-14
    scale = None if rows_of_scale is None else rng.uniform(0.1, 3.0, (rows_of_scale, 6848)).astype(np.float32)
    v = clutter if scale is None else clutter * np.square(scale[:, :clutter.shape[1]])
    above = np.flatnonzero((v > floor).any(axis=0))
    want = np.sqrt(v[:, :int(above[-1]) + 1], dtype=np.float32)
    got = stage_loops.clutter_amplitude(clutter, scale, floor)
    assert want.shape[1] == 2801 and got.shape == want.shape and got.tobytes() == want.tobytes()
    assert stage_loops.clutter_amplitude(np.zeros((3, 50)), None, floor).shape == (3, 0)


def _dot(a, b):
    return a[:, 0] * b[:, 0] + a[:, 1] * b[:, 1] + a[:, 2] * b[:, 2]


def test_geometry_pass_loops_give_the_numpy_bytes():
    # geometry._trace_block's lines after a trace, as they stood, against geometry_loops (same operations, same order)
    from radarays_ros.radar.physical import geometry_loops

    rng = np.random.default_rng(13)
    m = 5000
    o, d = rng.normal(size=(m, 3)) * 30.0, rng.normal(size=(m, 3))
    d /= np.sqrt(_dot(d, d))[:, None]
    dist = rng.exponential(40.0, m)
    normal = (rng.normal(size=(m, 3)) * rng.choice([1e-14, 1.0, 3.0], (m, 1))).astype(np.float32)  # some ~0
    normal[:10] = -d[:10].astype(np.float32)  # normal incidence: cos 1 (or a hair above before the clip)
    normal[10:20] = np.cross(d[10:20], [0.0, 0.0, 1.0]).astype(np.float32)  # grazing: cos ~ +-0
    normal[20] = np.nan
    cls, idx = rng.integers(0, 5, m), np.arange(m) * 3
    path, rho, straight = rng.uniform(0, 100, m), rng.uniform(0, 1, m), rng.random(m) < 0.5
    keep = np.flatnonzero(rng.random(m) < 0.8)
    want_n = normal[keep].astype(np.float64)
    want_n /= np.maximum(np.sqrt(_dot(want_n, want_n)), 1e-12)[:, None]
    want_d = d[keep]
    want_hit = o[keep] + want_d * dist[keep][:, None]
    want_cos = np.clip(-_dot(want_d, want_n), 0.0, 1.0)
    want = (want_d, dist[keep], cls[keep], idx[keep], rho[keep], straight[keep], want_n, want_hit, path[keep] + dist[keep], want_cos)
    got = geometry_loops.kept_hits(keep, o, d, dist, normal, cls, idx, path, rho, straight)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape and g.tobytes() == w.tobytes()
    d_k, idx_k, rho_k, n_k, hit_k, path_k, cos_k = got[0], got[3], got[4], got[6], got[7], got[8], got[9]
    rho_c = rng.uniform(0, 1, len(keep))
    rho_c[:2] = np.nan  # NaN: not a child, as np.flatnonzero(rho * rho_c > MIN_RHO) reads it
    child = np.flatnonzero(rho_k * rho_c > 0.3)
    mirror = d_k + 2.0 * cos_k[:, None] * n_k
    want_o = hit_k[child] + mirror[child] * 1e-3
    want_dn = mirror[child]
    want_dn /= np.sqrt(_dot(want_dn, want_dn))[:, None]
    want = (want_o, want_dn, idx_k[child], path_k[child] + 1e-3, (rho_k * rho_c)[child])
    got = geometry_loops.mirror_children(rho_k, rho_c, 0.3, hit_k, d_k, cos_k, n_k, idx_k, path_k, 1e-3)
    assert all(g.dtype == w.dtype and g.shape == w.shape and g.tobytes() == w.tobytes() for g, w in zip(got, want))
    assert 0 < len(child) < len(keep) // 2
    # _unoccluded's rays back to the sensor, as they stood
    power = np.where(rng.random(len(keep)) < 0.6, rng.lognormal(-30, 2, len(keep)), 0.0)
    power[:3] = [np.nan, -1.0, 1e-300]
    back_len = np.concatenate([[1e-3, 0.01, np.nan], rng.uniform(0, 200, len(keep) - 3)])
    test = np.flatnonzero(power > 0)
    want = (test, (hit_k[test] + n_k[test] * 5e-3).astype(np.float32), n_k[test].astype(np.float32),
            np.maximum(back_len[test] - 2 * 5e-3, 0.0))
    got = geometry_loops.occlusion_rays(power, hit_k, n_k, back_len, 5e-3)
    assert all(g.dtype == w.dtype and g.tobytes() == w.tobytes() for g, w in zip(got, want)) and 0 < len(test) < len(keep)


def test_trace_reading_and_tube_merge_loops_give_the_numpy_bytes():
    # geometry._trace_block's reading of a trace and its merge of the next pass's rays, as they stood
    from radarays_ros.radar.physical import geometry_loops

    rng = np.random.default_rng(19)
    m = 6000
    distance = rng.exponential(50.0, m).astype(np.float32)
    distance[rng.random(m) < 0.2] = np.inf
    distance[:3] = [np.nan, 5e-4, 1e-3]
    material = rng.integers(0, 7, m).astype(np.int32)
    material_class = np.array([0, 1, -1, 2, 3, -1, 1])
    reach = rng.uniform(0.0, 120.0, m)
    reach[3] = np.nan
    for near in (1e-3, -math.inf):
        dist = np.asarray(distance, np.float64)
        ok = np.isfinite(dist) & (dist < reach) & (dist >= near)
        cls = np.full(m, -1, np.int64)
        cls[ok] = material_class[material[ok]]
        want = (np.flatnonzero(ok & (cls >= 0)), dist, cls)
        got = geometry_loops.traced_hits(distance, material, reach, material_class, near)
        assert all(g.dtype == w.dtype and g.tobytes() == w.tobytes() for g, w in zip(got, want))
    assert 0 < len(want[0]) < m and (want[2][np.isfinite(dist) & (dist < reach)] == -1).any()

    def rays(k, start, tie_rows):
        idx = np.sort(np.concatenate([rng.integers(0, 500, k - len(tie_rows)), tie_rows]))
        return (rng.normal(size=(k, 3)) + start, rng.normal(size=(k, 3)), idx, rng.uniform(0, 99, k), rng.random(k),
                rng.random(k) < 0.5)

    def stable_sort(first, second):
        joined = [np.concatenate([a, b]) for a, b in zip(first, second)]
        order = np.argsort(joined[2], kind="stable")
        return tuple(v[order] for v in joined)

    first, second = rays(900, 0.0, np.arange(40)), rays(300, 10.0, np.arange(40))  # shared tubes: ties
    for a, b in ((first, second), (second, first)):
        got, want = geometry_loops.merge_by_tube(a, b), stable_sort(a, b)
        assert all(g.dtype == w.dtype and g.tobytes() == w.tobytes() for g, w in zip(got, want))
    unsorted = first[:2] + (first[2][::-1].copy(),) + first[3:]  # not in tube order: the caller's error
    with pytest.raises(ValueError, match="tube order"):
        geometry_loops.merge_by_tube(unsorted, second)
    empty = tuple(v[:0] for v in second)
    assert all(g.tobytes() == w.tobytes() for g, w in zip(geometry_loops.merge_by_tube(first, empty), first))


def _correlate_rows_beam_numpy(re, im, rhos, previous=None):
    """speckle.correlate_rows_beam as it stood (numpy passes per row)."""
    from radarays_ros.radar.physical.speckle import beam_autoregression

    phi1, phi2, s = beam_autoregression(*rhos)
    rho1 = float(rhos[0])
    before = list(previous or [])[-2:]
    k = 0
    carried = np.empty(re.shape[1], np.float32)
    while k < len(re) and len(before) < 2:
        if before:
            scale = np.float32(math.sqrt(max(1.0 - rho1 * rho1, 0.0)))
            for plane, last in zip((re, im), before[-1]):
                plane[k] *= scale
                plane[k] += np.multiply(np.float32(rho1), last, out=carried)
        before.append((re[k], im[k]))
        k += 1
    if k >= len(re):
        return
    re[k:] *= np.float32(s)
    im[k:] *= np.float32(s)
    f1, f2 = np.float32(phi1), np.float32(phi2)
    for row in range(k, len(re)):
        (re2, im2), (re1, im1) = before
        for plane, last1, last2 in ((re, re1, re2), (im, im1, im2)):
            plane[row] += np.multiply(f1, last1, out=carried)
            if phi2:
                plane[row] += np.multiply(f2, last2, out=carried)
        before = [before[1], (re[row], im[row])]


@pytest.mark.parametrize("rhos", [(0.6, 0.1), (0.3, 0.0), (0.9999999, 0.5)])  # AR(2), phi2 = 0, the AR(1) fallback
@pytest.mark.parametrize("before_rows", [0, 1, 2])
def test_beam_autoregression_loop_gives_the_numpy_bytes(rhos, before_rows):
    from radarays_ros.radar.physical import speckle

    rng = np.random.default_rng(before_rows)
    full_re, full_im = speckle.unit_parts(rng, (25, 700))
    prev = [speckle.unit_parts(rng, (1, 900)) for _ in range(before_rows)]
    # a column slice, as _correlate_rows_after passes (not contiguous), and every other column (a layout the loop
    # copies and writes back)
    for cols in (slice(None), slice(0, 300), slice(0, 600, 2)):
        previous = [(r[0, :700][cols], i[0, :700][cols]) for r, i in prev] or None
        want_re, want_im = full_re.copy(), full_im.copy()
        got_re, got_im = full_re.copy(), full_im.copy()
        _correlate_rows_beam_numpy(want_re[:, cols], want_im[:, cols], rhos, previous)
        speckle.correlate_rows_beam(got_re[:, cols], got_im[:, cols], rhos, previous)
        assert got_re.tobytes() == want_re.tobytes() and got_im.tobytes() == want_im.tobytes()


def test_facing_pairs_loop_against_numpy():
    # curved_returns' lines as they stood: u, r0 = _unit(s - c); cos_t = einsum(n, u); kept where cos_t > 0
    rng = np.random.default_rng(17)
    n_plates, a, m = 3000, 400, 40000
    centroid = rng.uniform(-80, 80, (n_plates, 3))
    normal = rng.normal(size=(n_plates, 3))
    normal /= np.linalg.norm(normal, axis=1)[:, None]
    origins = np.column_stack([np.linspace(0, 2, a), np.zeros(a), np.full(a, 2.0)])
    plate, az = rng.integers(0, n_plates, m), np.sort(rng.integers(0, a, m))
    centroid[plate[:3]] = origins[az[:3]]  # at the sensor: u = 0, cos 0: not in front
    u, r0 = facet_glints._unit(origins[az] - centroid[plate])
    cos_t = np.einsum("ij,ij->i", normal[plate], u)
    front = cos_t > 0
    want = (plate[front], az[front], u[front], r0[front], cos_t[front])
    got = glint_cull.facing_pairs(plate, az, origins, centroid, normal)
    assert 0.3 * m < len(got[0]) < 0.7 * m and not front[:3].any()
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    # u and cos_t: a few ulps of 1 (a cos near 0 is a difference of products: its relative error is larger);
    # r0: the same square root of the same sum
    assert np.abs(got[2] - want[2]).max() <= 4e-16 and np.abs(got[4] - want[4]).max() <= 4e-16
    assert np.allclose(got[3], want[3], rtol=4e-16, atol=0)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("rows_of_scale", [None, 1, 25])
def test_amplified_rows_are_the_planes_times_the_clutter_amplitude_zero_padded(rows_of_scale, layout):
    rng = np.random.default_rng(14)
    clutter = in_layout(rng.lognormal(-25, 6, (25, 3000)) * (rng.random((25, 3000)) < 0.7), layout)
    scale = None if rows_of_scale is None else rng.uniform(0.1, 3.0, (rows_of_scale, 6848)).astype(np.float32)
    amplitude = stage_loops.clutter_amplitude(clutter, scale, 1e-14)
    width = amplitude.shape[1]
    assert stage_loops.clutter_width(clutter, scale, 1e-14) == width
    re, im = (rng.normal(size=(25, width)).astype(np.float32) for _ in range(2))
    got_re, got_im = stage_loops.amplified_rows(re, im, clutter, scale, 3100)
    for got, plane in ((got_re, re), (got_im, im)):
        want = np.zeros((25, 3100), np.float32)
        want[:, :width] = plane * amplitude  # the numpy it replaced: plane *= amplitude, then rfft(plane, n) pads
        assert got.tobytes() == want.tobytes()
