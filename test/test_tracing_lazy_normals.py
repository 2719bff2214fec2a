"""Hits.normals_at: the normals of selected rays only (a lidar beam's dominant sub-ray), bit for bit the
rows of the eager normals; the default trace is unchanged."""
import numpy as np
import pytest

from radarays_ros.tracing import make_backend
from radarays_ros.tracing.backend import Rays
from support.tracing import sphere_rays

WANTS = frozenset({"distance", "ids", "incidence"})  # the lidar's first trace: normals not asked for


def _sphere_rays(n=30_000, seed=7):
    return sphere_rays(n, seed, spread=5.0)  # some rays start outside and miss


@pytest.mark.parametrize("threads", [1, 2])
def test_selected_normals_equal_the_eager_rows_bit_for_bit(threads):
    scene, o, d = _sphere_rays()
    backend = make_backend("embree", scene, threads=threads)
    eager = backend.trace(o, d, 0.1, 100.0)
    lazy = backend.trace_rays(Rays.trusted(o, d), 0.1, 100.0, want=WANTS)
    rows = np.random.default_rng(1).integers(0, len(o), 9_000)  # unsorted, repeated, across spans
    rows = np.concatenate([rows, [0, len(o) - 1]])
    picked = lazy.normals_at(rows)
    assert lazy._ids["normal"] is None  # only the rows were computed
    assert picked.dtype == np.float32 and picked.shape == (len(rows), 3)
    assert picked.tobytes() == eager.normal[rows].tobytes()
    assert (~np.isfinite(lazy.distance[rows])).any() and np.isfinite(lazy.distance[rows]).any()
    assert lazy.normal.tobytes() == eager.normal.tobytes()  # the default access is unchanged
    assert lazy.normals_at(rows).tobytes() == picked.tobytes()  # resolved normals: a plain gather
    assert eager.normals_at(rows).tobytes() == picked.tobytes()


def test_span_rows_are_relative_and_checked():
    scene, o, d = _sphere_rays(8_000)
    backend = make_backend("embree", scene, threads=2)
    eager = backend.trace(o, d, 0.1, 100.0)
    part = backend.trace_rays(Rays.trusted(o, d), 0.1, 100.0, want=WANTS).span(3_000, 7_000)
    rows = np.arange(0, 4_000, 3)
    assert part.normals_at(rows).tobytes() == eager.normal[3_000 + rows].tobytes()
    with pytest.raises(IndexError):
        part.normals_at(np.array([4_000]))


def test_lidar_echo_normals_from_selected_rows_equal_the_gathered_ones():
    """A beam's echo normal (beam_returns.hits_of_echo) computed from the picked rows only is the gather
    of all sub-rays' normals, zero where the beam has no echo."""
    from lidar_ros.physics.beam_returns import picked_normals, _echo_normals
    from lidar_ros.physics.interaction import LidarHits, _FirstNormals
    scene, o, d = _sphere_rays(8_000)
    lazy = make_backend("embree", scene, threads=2).trace_rays(Rays.trusted(o, d), 0.1, 100.0, want=WANTS)
    eager_normal = make_backend("embree", scene, threads=1).trace(o, d, 0.1, 100.0).normal
    rng = np.random.default_rng(3)
    pick = np.arange(0, 8_000, 4) + rng.integers(0, 4, 2_000)
    present = rng.random(2_000) < 0.7
    hits = LidarHits.misses(8_000)
    hits.normal = _FirstNormals(lazy)
    got = _echo_normals(hits, pick, present)
    assert lazy._ids["normal"] is None
    assert got.tobytes() == picked_normals(eager_normal, pick, present).tobytes()
    assert not got[~present].any() and np.signbit(got[~present]).sum() == 0


@pytest.mark.parametrize("threads", [1, 2])
def test_selected_ids_equal_the_resolved_rows(threads):
    """Hits.ids_at: the entity, face and material ids of some rays only (a lidar follows a few rays past
    crowns and glass), the values of the whole arrays' rows, misses -1; a span's rows are relative and checked."""
    scene, o, d = _sphere_rays()
    backend = make_backend("embree", scene, threads=threads)
    whole = backend.trace(o, d, 0.1, 100.0)
    lazy = backend.trace_rays(Rays.trusted(o, d), 0.1, 100.0, want=WANTS)
    rows = np.concatenate([np.random.default_rng(2).integers(0, len(o), 9_000), [0, len(o) - 1]])
    for name in ("entity", "face", "material"):
        picked = lazy.ids_at(name, rows)
        assert lazy._ids[name] is None  # only the rows were looked up
        np.testing.assert_array_equal(picked, getattr(whole, name)[rows])
    assert (lazy.ids_at("entity", rows) == -1).any() and (lazy.ids_at("entity", rows) >= 0).any()
    part = backend.trace_rays(Rays.trusted(o, d), 0.1, 100.0, want=WANTS).span(3_000, 7_000)
    np.testing.assert_array_equal(part.ids_at("entity", np.arange(0, 4_000, 3)), whole.entity[3_000:7_000:3])
    with pytest.raises(IndexError):
        part.ids_at("entity", np.array([4_000]))
