"""The physical stage's compiled loops against the numpy code they replaced: the same bytes.

Each reference below is the numpy implementation as it stood before the loop replaced it (issue #22,
performance): the compiled loops must give the same floats, in every case, or the frame's bytes change.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from radarays_ros.radar.physical import detector, facet_glints, glint_cull, receiver_chain, stage, stage_loops


def _power_steps_numpy(azimuth, start_bin, end_bin, power, shape):
    a, b = shape
    lo, hi = np.clip(start_bin, 0, b), np.clip(end_bin, 0, b)
    ok = (hi > lo) & (power != 0)
    if not ok.any():
        return np.zeros((a, 1))
    density = power[ok] / np.maximum(end_bin[ok] - start_bin[ok], 1e-9)
    lo, hi = lo[ok], hi[ok]
    i0 = np.minimum(lo.astype(np.int64), b - 1)
    i1 = np.minimum(hi.astype(np.int64), b - 1)
    width = int(i1.max()) + 1
    row = azimuth[ok].astype(np.int64) * (width + 1)
    same = i0 == i1
    first = np.where(same, density * (hi - lo), density * (i0 + 1 - lo))
    last = np.where(same, 0.0, density * (hi - i1))
    inner = np.where(same, 0.0, density)
    steps = np.bincount(np.concatenate([row + i0, row + i0 + 1, row + i1, row + i1 + 1]),
                        np.concatenate([first, inner - first, last - inner, -last]), minlength=a * (width + 1))
    return steps.reshape(a, width + 1)


@pytest.mark.parametrize("seed", range(4))
def test_power_steps_loop_gives_the_numpy_bytes(seed):
    rng = np.random.default_rng(seed)
    a, b, n = 40, 700, 20000
    azimuth = rng.integers(0, a, n)
    start = rng.uniform(-20, b + 20, n)
    end = start + np.where(rng.random(n) < 0.3, rng.uniform(0, 1, n), rng.exponential(40.0, n))
    power = rng.lognormal(-20.0, 6.0, n) * np.where(rng.random(n) < 0.1, -1.0, 1.0)  # signed: power x velocity
    power[rng.random(n) < 0.05] = 0.0
    start[:50] = np.floor(start[:50])  # exact bin edges
    end[50:100] = start[50:100]  # empty extents
    start[100:110], end[110:120] = -np.inf, np.inf
    start[120:125] = np.nan
    want = _power_steps_numpy(azimuth, start, end, power, (a, b))
    got = stage.power_steps(azimuth, start, end, power, (a, b))
    assert got.shape == want.shape and got.tobytes() == want.tobytes()


def test_power_steps_of_nothing():
    empty = np.zeros(0)
    assert stage.power_steps(np.zeros(0, np.int64), empty, empty, empty, (5, 9)).tobytes() == np.zeros((5, 1)).tobytes()
    out = stage.power_steps(np.array([2]), np.array([3.0]), np.array([3.0]), np.array([1.0]), (5, 9))
    assert out.shape == (5, 1) and not out.any()


def test_one_return_spreads_its_power_over_its_extent():
    # a check of the formula itself (not only of the two codes agreeing): power 6 over [2.5, 5.5)
    power = stage.running_power(stage.power_steps(np.array([1]), np.array([2.5]), np.array([5.5]), np.array([6.0]), (3, 8)))
    assert np.allclose(power[1], [0, 0, 1, 2, 2, 1]) and not power[[0, 2]].any()


def _facing_numpy(sc, curved, centre, spread):
    """curved_returns' two per-frame tests over every candidate, as written before the compiled cut."""
    to_sensor = centre - sc.plate_centroid[curved]
    r_c = np.sqrt(np.einsum("ij,ij->i", to_sensor, to_sensor))
    cone = np.cos(np.minimum(sc.plate_cone[curved] + spread / np.maximum(r_c, 1e-6) + facet_glints.CONE_SLACK, np.pi / 2))
    facing = np.einsum("ij,ij->i", sc.plate_normal[curved], to_sensor) >= cone * r_c
    curved = curved[facing]
    u0, r_c = facet_glints._unit(to_sensor[facing])
    wander = spread / np.maximum(r_c, 1e-6) + facet_glints.CONE_SLACK
    m0 = np.einsum("nkj,nj->nk", sc.principal[curved], u0)
    bend0 = np.abs(sc.curvature[curved]) * sc.extent[curved]
    near = np.all((bend0 < facet_glints.STRAIGHT) | (np.abs(np.arcsin(np.clip(m0, -1, 1))) <= 0.75 * bend0 + wander[:, None]), axis=1)
    return curved[near & (np.einsum("ij,ij->i", sc.plate_normal[curved], u0) > -0.1)]


def _curved_world():
    """A faceted sphere, a pole and a rolling terrain patch: curved surfaces of every kind."""
    import trimesh

    from radarays_ros.radar.physical import scatterers

    rng = np.random.default_rng(2)
    sphere = trimesh.creation.icosphere(subdivisions=3, radius=0.5)
    pole = trimesh.creation.cylinder(radius=0.1, height=4.0, sections=24)
    n = 60
    gx, gy = np.meshgrid(np.linspace(-20, 20, n), np.linspace(-20, 20, n), indexing="ij")
    gz = 0.3 * np.sin(gx / 3.0) * np.cos(gy / 4.0) + 0.05 * rng.standard_normal(gx.shape)
    idx = np.arange(n * n).reshape(n, n)
    a, b, c, d = idx[:-1, :-1].ravel(), idx[1:, :-1].ravel(), idx[1:, 1:].ravel(), idx[:-1, 1:].ravel()
    terrain = (np.stack([gx, gy, gz], -1).reshape(-1, 3), np.concatenate([np.stack([a, b, c], 1), np.stack([a, c, d], 1)]))
    parts = [scatterers.from_mesh(sphere.vertices + [5.0, 2.0, 1.0], sphere.faces, np.zeros(len(sphere.faces), np.int64), 1),
             scatterers.from_mesh(pole.vertices + [-3.0, 6.0, 2.0], pole.faces, np.zeros(len(pole.faces), np.int64), 2),
             scatterers.from_mesh(terrain[0], terrain[1], np.zeros(len(terrain[1]), np.int64), 3)]
    return scatterers.concatenate(parts)


def test_curved_cull_keeps_exactly_the_plates_the_full_tests_keep():
    sc = _curved_world()
    candidates = np.flatnonzero(sc.plate_curved)
    assert len(candidates) > 5000
    rng = np.random.default_rng(3)
    kept = 0
    for trial in range(40):
        centre = np.array([*rng.uniform(-15, 15, 2), rng.uniform(-0.5, 3.0)])
        spread = [0.0, 0.05, 0.5, 3.0][trial % 4]
        cut = glint_cull.may_face(candidates, sc.plate_centroid, sc.plate_normal, sc.plate_cone, sc.principal,
                                  sc.curvature, sc.extent, centre, spread, facet_glints.CONE_SLACK, facet_glints.STRAIGHT)
        full = _facing_numpy(sc, candidates, centre, spread)
        assert len(cut) < len(candidates)
        assert np.array_equal(_facing_numpy(sc, cut, centre, spread), full)
        kept += len(full)
    assert kept > 0  # some plates face the sensor: the equality above is not of two empty sets


def test_facing_index_skips_only_groups_without_a_kept_plate():
    sc = _curved_world()
    candidates = np.flatnonzero(sc.plate_curved)
    index = glint_cull.facing_index(candidates, sc.plate_centroid, sc.principal, sc.curvature, sc.extent,
                                    facet_glints.STRAIGHT)
    assert np.array_equal(np.sort(index.members), np.arange(len(candidates)))  # every candidate in one group
    bounded = np.isfinite(index.bend)  # a group lies in one cell
    assert bounded.sum() >= len(bounded) - 1 and (index.reach[bounded] <= math.sqrt(3) * glint_cull.FACING_CELL_M).all()
    rng = np.random.default_rng(4)
    visited, kept = 0, 0
    for trial in range(40):
        centre = np.array([*rng.uniform(-25, 25, 2), rng.uniform(-0.5, 6.0)])
        spread = [0.0, 0.05, 0.5, 3.0][trial % 4]
        args = (candidates, sc.plate_centroid, sc.plate_normal, sc.plate_cone, sc.principal, sc.curvature, sc.extent,
                centre, spread, facet_glints.CONE_SLACK, facet_glints.STRAIGHT)
        plain = glint_cull.may_face(*args)
        assert np.array_equal(glint_cull.may_face(*args, index=index), plain)
        near = np.zeros(len(candidates), bool)
        glint_cull._near_groups(centre, spread, facet_glints.CONE_SLACK, glint_cull.CULL_SLACK, index.centre, index.axis,
                                index.axis_spread, index.reach, index.axis_reach, index.bend, index.members,
                                index.starts, near)
        visited, kept = visited + near.sum(), kept + len(plain)
    assert kept > 0 and visited < 0.5 * 40 * len(candidates)  # the index skips most groups, none it must keep
    with pytest.raises(ValueError):
        glint_cull.may_face(*((candidates[1:],) + args[1:]), index=index)


def test_facing_index_of_no_candidates_and_of_unbent_plates():
    sc = _curved_world()
    args = (sc.plate_centroid, sc.plate_normal, sc.plate_cone, sc.principal, sc.curvature, sc.extent,
            np.array([1.0, 2.0, 1.5]), 0.5, facet_glints.CONE_SLACK)
    none = np.zeros(0, np.int64)
    empty = glint_cull.facing_index(none, sc.plate_centroid, sc.principal, sc.curvature, sc.extent, facet_glints.STRAIGHT)
    assert len(glint_cull.may_face(none, *args, facet_glints.STRAIGHT, index=empty)) == 0
    # a `straight` above every bend: no plate has a bending direction, one group never skipped
    candidates = np.flatnonzero(sc.plate_curved)
    index = glint_cull.facing_index(candidates, sc.plate_centroid, sc.principal, sc.curvature, sc.extent, 1e9)
    assert len(index.starts) == 2 and np.isinf(index.bend).all()
    assert np.array_equal(glint_cull.may_face(candidates, *args, 1e9, index=index),
                          glint_cull.may_face(candidates, *args, 1e9))
    # a world too large for one integer key per group: no index
    far = sc.plate_centroid.copy()
    far[candidates[::2]] *= 1e15
    assert glint_cull.facing_index(candidates, far, sc.principal, sc.curvature, sc.extent, facet_glints.STRAIGHT) is None


def test_facing_index_is_built_on_the_second_frame_of_the_same_candidates():
    sc = _curved_world()
    candidates = np.flatnonzero(sc.plate_curved)
    assert facet_glints._facing_index(sc, candidates) is None  # first seen: the plain cut
    index = facet_glints._facing_index(sc, candidates)
    assert isinstance(index, glint_cull.FacingIndex) and index.candidates is candidates
    assert facet_glints._facing_index(sc, candidates) is index  # kept
    assert facet_glints._facing_index(sc, candidates.copy()) is None  # another array (scatterers rebuilt): plain


def _barycentric_numpy(p, tri):
    """facet_glints._in_triangle's barycentric coordinates (x, y), its operations in its order."""
    a, b, c = tri[:, 0], tri[:, 1], tri[:, 2]
    v0, v1, v2 = c - a, b - a, p - a
    d00, d01, d02 = (v0 * v0).sum(1), (v0 * v1).sum(1), (v0 * v2).sum(1)
    d11, d12 = (v1 * v1).sum(1), (v1 * v2).sum(1)
    inv = 1.0 / np.maximum(d00 * d11 - d01 * d01, 1e-300)
    return (d11 * d02 - d01 * d12) * inv, (d00 * d12 - d01 * d02) * inv


def test_feet_inside_plates_as_the_numpy_triangle_test():
    rng = np.random.default_rng(5)
    n_tri = 30000
    tri = rng.standard_normal((n_tri, 3, 3)) * rng.lognormal(0, 2, (n_tri, 1, 1)) + rng.uniform(-50, 50, (n_tri, 1, 3))
    tri[:10, 2] = tri[:10, 1]  # degenerate triangles
    weights = rng.dirichlet([1, 1, 1], n_tri) * rng.uniform(0.8, 1.2, (n_tri, 1))  # on, in and just out
    p = np.einsum("nk,nkj->nj", weights, tri)
    x, y = np.empty(n_tri), np.empty(n_tri)
    glint_cull.barycentric(p, tri, x, y)
    want_x, want_y = _barycentric_numpy(p, tri)
    assert x.tobytes() == want_x.tobytes() and y.tobytes() == want_y.tobytes()
    # per plate: triangles sorted by plate, pairs (plate, foot) tested for any triangle holding the foot
    tri_plate = np.sort(rng.integers(0, 3000, n_tri))
    starts = np.searchsorted(tri_plate, np.arange(3001))
    plate = rng.integers(0, 3000, 8000)
    foot = np.einsum("nk,nkj->nj", rng.dirichlet([1, 1, 1], 8000) * 1.05, tri[starts[plate]])
    near = np.flatnonzero(rng.random(8000) < 0.7)
    counts = starts[plate[near] + 1] - starts[plate[near]]
    pair_of_tri = np.repeat(near, counts)
    tri_index = np.repeat(starts[plate[near]] - np.cumsum(counts) + counts, counts) + np.arange(int(counts.sum()))
    want = np.bincount(pair_of_tri, facet_glints._in_triangle(foot[pair_of_tri], tri[tri_index]), minlength=8000) > 0
    got = glint_cull.feet_inside(near, plate, foot, starts, tri)
    assert 0 < want.sum() < len(near) and np.array_equal(got, want)


@pytest.mark.parametrize("seed", range(3))
def test_most_normal_plate_per_surface_and_azimuth_as_lexsort(seed):
    rng = np.random.default_rng(seed)
    n = 20000
    az = np.sort(rng.integers(0, 400, n))
    surface = rng.integers(0, [60, 5, 17][seed % 3], n)  # many surfaces an azimuth (sorted), few (one scan), about the cut
    cos_t = np.round(rng.random(n), 2)  # many ties: the first of equal ones must win
    order = np.lexsort((-cos_t, surface, az))
    first = np.ones(n, bool)
    first[1:] = (surface[order][1:] != surface[order][:-1]) | (az[order][1:] != az[order][:-1])
    assert np.array_equal(glint_cull.most_normal(az, surface, cos_t), order[first])
    assert len(glint_cull.most_normal(az[:0], surface[:0], cos_t[:0])) == 0


@pytest.mark.parametrize("post_rows, scaled_points", [(None, False), (1, False), (1, True), (25, True)])
def test_finish_rows_gives_the_numpy_bytes(post_rows, scaled_points):
    # stage._speckled_frame's block end as numpy did it: planes x post, np.add.at of the points, re^2 + im^2
    rng = np.random.default_rng(6)
    rows, n, b, half = 25, 1200, 1000, 37
    full = rng.standard_normal((2, rows, n)).astype(np.float32) * np.float32(1e-6)
    post = None if post_rows is None else rng.lognormal(0, 1, (post_rows, b)).astype(np.float32)
    p_rows, p_cols = np.sort(rng.integers(0, rows, 400)), rng.integers(0, b, 400)
    p_cols[:40] = p_cols[40:80]  # repeated cells: summed in order
    p_rows[:40] = p_rows[40:80]
    values = (rng.standard_normal(400) + 1j * rng.standard_normal(400)).astype(np.complex64) * np.complex64(1e-6)
    if scaled_points:  # the chain's per-row factor (float64) makes the values complex128
        values = values * rng.uniform(0.5, 1.0, rows)[p_rows]
    want_re, want_im = full[0].copy()[:, half:half + b], full[1].copy()[:, half:half + b]
    if post is not None:
        want_re *= post
        want_im *= post
    np.add.at(want_re, (p_rows, p_cols), values.real)
    np.add.at(want_im, (p_rows, p_cols), values.imag)
    want = np.square(want_re)
    want += np.square(want_im, out=want_im)
    got = np.empty((rows, b), np.float32)
    stage_loops.finish_rows(full[0], full[1], post, p_rows, p_cols, values.real, values.imag, got, first=half)
    assert got.tobytes() == want.tobytes()


def test_skirt_scales_give_the_numpy_bytes():
    rng = np.random.default_rng(7)
    rows, b = 25, 3000
    skirts = rng.lognormal(-30, 3, (rows, b)).astype(np.float32)
    gain32, floor32 = rng.lognormal(0, 2, b).astype(np.float32), rng.lognormal(-28, 1, b).astype(np.float32)
    distortion, g, reference = rng.lognormal(-32, 2, rows), rng.uniform(0.3, 1.0, rows), 1.3e-13
    root_gain32 = np.sqrt(gain32.astype(np.float64)).astype(np.float32)
    post = skirts.copy()
    post *= gain32
    post += floor32
    post += distortion.astype(np.float32)[:, None]
    post *= np.float32(1.0 / reference)
    np.sqrt(post, out=post)
    sig = np.multiply(root_gain32[None, :], np.sqrt(g).astype(np.float32)[:, None])
    sig /= post
    got_sig, got_post = stage_loops.skirt_scales(skirts.copy(), gain32, floor32, distortion.astype(np.float32),
                                                 np.float32(1.0 / reference), root_gain32, np.sqrt(g).astype(np.float32))
    assert got_post.tobytes() == post.tobytes() and got_sig.tobytes() == sig.tobytes()


@pytest.mark.parametrize("db_per_count", [0.5, 0.25])
def test_integer_detector_pass_gives_the_numpy_bytes(db_per_count):
    rng = np.random.default_rng(8)
    zero_dbm = -142.5
    step = 10.0 ** ((zero_dbm - 30.0) / 10.0)  # W of one integer step
    # from under one step to 100 dB over it (past the table), plus the table's edges and specials
    power = (step * 10.0 ** rng.uniform(-2.0, 10.0, (37, 211)) * rng.uniform(0.9, 1.1, (37, 211))).astype(np.float32)
    edges = np.array([0.0, -0.0, -2.5, 1e-45, 0.999, 1.0, 1.5, detector.TABLE_STEPS - 1, detector.TABLE_STEPS - 0.5,
                      detector.TABLE_STEPS, detector.TABLE_STEPS + 1], np.float32) * np.float32(step)
    power.reshape(-1)[:len(edges)] = edges
    power.reshape(-1)[-3:] = [np.inf, np.nan, 3e38]
    with np.errstate(invalid="ignore", over="ignore"):
        want = detector.counts_float(power, zero_dbm, db_per_count, integer=True)
        want_u8 = detector.quantise(want)
        counts, counts_u8 = np.empty_like(want), np.empty_like(want_u8)
        detector.detect_integer(power, zero_dbm, db_per_count, counts, counts_u8)
        beyond = np.floor(power * np.float32(1.0 / step)) >= detector.TABLE_STEPS
    assert 0.2 < beyond.mean() < 0.5  # both ways through: the table and past it
    assert counts.tobytes() == want.tobytes() and counts_u8.tobytes() == want_u8.tobytes()
    with pytest.raises(ValueError):
        detector.detect_integer(power[:, :10], zero_dbm, db_per_count, counts[:, :10], counts_u8[:, :10])
    wide = power.astype(np.float64) * 1.0000001  # not float32: rounded to float32 first, as counts_float does
    with np.errstate(invalid="ignore", over="ignore"):
        want = detector.counts_float(wide, zero_dbm, db_per_count, integer=True)
        want_u8 = detector.quantise(want)
        detector.detect_integer(wide, zero_dbm, db_per_count, counts, counts_u8)
    assert counts.tobytes() == want.tobytes() and counts_u8.tobytes() == want_u8.tobytes()


@pytest.mark.parametrize("doppler", [False, True])
def test_block_power_steps_loop_gives_the_numpy_bytes(doppler):
    """stage_loops.block_power_steps (gather, bins with the range-Doppler shift, spread: one pass) against
    power_steps of the numpy gather and clutter_bins_of."""
    from types import SimpleNamespace

    from radarays_ros.radar.physical import doppler as doppler_shift
    from radarays_ros.radar.physical.geometry import Clutter

    rng = np.random.default_rng(11)
    n, a, b = 5000, 400, 6848
    near = rng.uniform(-2.0, 320.0, n)  # some before the first bin and past the last
    power = rng.lognormal(-30, 3, n)
    power[:40] = 0.0
    clutter = Clutter(rng.integers(0, a, n), near, near + rng.uniform(0.0, 3.0, n), power, rng.normal(0.0, 20.0, n))
    signs = doppler_shift.chirp_signs(a, "alternating")
    cfg = SimpleNamespace(fmcw=SimpleNamespace(doppler=doppler, carrier_hz=76.5e9, chirp_time_s=0.00012, bandwidth_hz=8.0e8),
                          range=SimpleNamespace(resolution=0.0438, offset=0.3))
    k0 = 25
    in_block = np.flatnonzero((clutter.azimuth >= k0) & (clutter.azimuth < k0 + 25))
    for sel in (in_block, in_block[in_block < 40], in_block[:0]):  # the block's returns; only powerless ones; none
        got = stage_loops.block_power_steps(sel, k0, clutter, signs, cfg.fmcw, cfg.range.offset, cfg.range.resolution, (25, b))
        start, end = stage.clutter_bins_of(clutter, sel, cfg, signs)
        want = _power_steps_numpy(clutter.azimuth[sel] - k0, start, end, clutter.power_w[sel], (25, b))
        assert got.shape == want.shape and got.tobytes() == want.tobytes()
    assert len(in_block) > 200 and (in_block < 40).any()
    start, _ = stage.clutter_bins_of(clutter, np.arange(n), cfg, signs)
    assert doppler == (not np.array_equal(start, (near - 0.3) / 0.0438))  # the shift is there when asked
    # a per-azimuth set (the leakage plateau) read apart: the bytes of the set that joins it after the frame's returns
    plateau = Clutter(np.arange(a), np.full(a, 0.2), np.full(a, 1.2), np.full(a, 3e-6), np.zeros(a))
    joined = Clutter(*(np.concatenate([getattr(clutter, f), getattr(plateau, f)]) for f in
                       ("azimuth", "near_m", "far_m", "power_w", "velocity")))
    blocks = joined.azimuth // 25
    for sel in (in_block, in_block[:0]):
        got = stage_loops.block_power_steps(sel, k0, clutter, signs, cfg.fmcw, cfg.range.offset, cfg.range.resolution,
                                            (25, b), per_azimuth=plateau)
        both = np.concatenate([sel, n + np.arange(k0, k0 + 25)])  # a joined set's block, in its order
        assert np.array_equal(both, np.flatnonzero(blocks == 1)) or len(sel) == 0
        want = stage_loops.block_power_steps(both, k0, joined, signs, cfg.fmcw, cfg.range.offset, cfg.range.resolution,
                                             (25, b))
        assert got.shape == want.shape and got.tobytes() == want.tobytes()


@pytest.mark.parametrize("seed, a, revisit", [(0, 25, False), (1, 25, False), (2, 25, False), (3, 7, True), (4, 3, False)])
def test_running_sum_with_cell_sums_gives_the_numpy_bytes(seed, a, revisit):
    """receiver_chain.Skirts.running_cells: the running power of a difference array (np.cumsum, then np.maximum(., 0))
    and its sums per skirt cell (np.add.at in column order) in one pass. Rows in groups of four and the rest
    (a = 25, 7, 3); revisit: cells whose bins come back after other cells' (the loop holds one cell's sum at a time)."""
    rng = np.random.default_rng(seed)
    b = 900
    azimuth = rng.integers(0, a, 5000)
    start = rng.uniform(-5, b - 100, 5000)
    end = start + rng.exponential(30.0, 5000)
    power = rng.lognormal(-20.0, 6.0, 5000)
    steps = stage.power_steps(azimuth, start, end, power, (a, b))
    j = steps.shape[1] - 1
    cell_of_bin = np.minimum(np.arange(b) // 7, 120)  # monotone, as the skirts' coarse cells
    if revisit:
        cell_of_bin = (np.arange(b) // 7) % 40
    want_rows = np.maximum(np.cumsum(steps, axis=1), 0.0)[:, :-1]
    want_cells = np.zeros((a, 121))
    rows, cols = np.divmod(np.arange(a * j), j)
    np.add.at(want_cells, (rows, cell_of_bin[cols]), want_rows.reshape(-1))
    skirts = receiver_chain.Skirts(np.zeros((121, 121)), cell_of_bin, None, None, None)
    got_rows, got_cells = skirts.running_cells(steps.copy())
    assert got_rows.tobytes() == np.ascontiguousarray(want_rows).tobytes()
    assert got_cells.tobytes() == want_cells.tobytes()
    assert got_cells.tobytes() == skirts.cells(want_rows).tobytes()  # the two-pass form it replaces
    assert (want_rows > 0).sum() > 1000 and (steps < 0).any()  # a test with something in it: powers and falling edges


def test_skirt_power_adds_the_sources_in_cell_order():
    """stage_loops.skirt_power (sources swept four at a time) against the plain sum: each bin's skirt adds its source
    cells one by one in cell order (float64), then the interpolation to the bins, rounded to float32: the same bytes.
    Rows with 0 to 33 sources, so the sweeps of four and the rest after them are both there (and rows interpolated four
    at a time and the two after them); powers of alike size, so a
    sum in another order would round otherwise."""
    rng = np.random.default_rng(5)
    rows, cells, bins = 34, 60, 700
    power = np.zeros((rows, cells))
    for r in range(rows):
        power[r, rng.choice(cells, r, replace=False)] = rng.lognormal(-20, 0.5, r)
    kernel = rng.lognormal(-12, 0.5, (cells, cells))
    position = np.clip(np.linspace(-0.5, cells - 0.5, bins), 0, cells - 1)
    lo = np.minimum(position.astype(np.int64), cells - 1)
    hi, weight = np.minimum(lo + 1, cells - 1), position - lo
    want = np.empty((rows, bins), np.float32)
    for r in range(rows):
        s = np.zeros(cells)
        for i in np.flatnonzero(power[r]):
            s = s + power[r, i] * kernel[i]
        want[r] = (1.0 - weight) * s[lo] + weight * s[hi]
    got = stage_loops.skirt_power(power, kernel, lo, hi, weight)
    assert got.tobytes() == want.tobytes()
    assert not got[0].any() and got[31].all()
    # a sum whose order shows in float32: 1 + 2^-24 (half-way between two float32) plus four terms each under half a
    # float64 ULP of it: added one by one each is lost and float32 rounds the tie to even (1.0); added in pairs
    # first they would lift it over the half (1 + 2^-23)
    kernel = np.zeros((8, 8))
    kernel[0] = 1.0 + 2.0**-24
    kernel[4:] = 0.7 * 2.0**-53
    power = np.ones((1, 8))
    got = stage_loops.skirt_power(power, kernel, np.arange(8), np.arange(8), np.zeros(8))
    assert np.array_equal(got, np.ones((1, 8), np.float32))


@pytest.mark.parametrize("count, azimuths", [(0, 400), (1, 400), (30000, 400), (5000, 7), (3000, 2**16 * 25)])
def test_returns_by_block_as_the_stable_argsort(count, azimuths):
    rng = np.random.default_rng(count)
    azimuth = rng.integers(0, azimuths, count)
    n_blocks = (azimuths + stage.ROWS_PER_SEED - 1) // stage.ROWS_PER_SEED
    blocks = azimuth // stage.ROWS_PER_SEED
    order = np.argsort(blocks, kind="stable")  # the numpy it replaced (there on int16 or int32 keys)
    bounds = np.searchsorted(blocks[order], np.arange(n_blocks + 1))
    got_order, got_bounds = stage_loops.stable_by_block(azimuth, stage.ROWS_PER_SEED, n_blocks)
    assert got_order.tolist() == order.tolist() and got_bounds.tolist() == bounds.tolist()


@pytest.mark.parametrize("azimuth", [-1, 400])
def test_returns_by_block_refuse_an_azimuth_outside_the_frame(azimuth):
    with pytest.raises(ValueError, match="clutter azimuth outside 0 .. 399"):
        stage_loops.stable_by_block(np.array([3, azimuth]), stage.ROWS_PER_SEED, 16)
