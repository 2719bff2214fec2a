"""Backend.blocked, the occlusion test of segments: whether each ray's first hit is closer than its own reach.
Against a wall at a distance known by hand, and against its definition (the first hit of a plain trace compared
with the reach) on every layer Embree traces (static, a static entity moved away and masked, merged movers, a large
moving instance, swept entities) and in a world of static entities only (Embree's occlusion query), with reaches on
the hits' own distances and their float neighbours: Embree walks each ray only up to its own reach (backend._blocked),
the base class traces once up to the longest."""
import numpy as np
import pytest
import trimesh

from radarays_ros.errors import TracingError
from radarays_ros.tracing import embree, make_backend
from radarays_ros.tracing.backend import Backend, Rays
from radarays_ros.tracing.embree import INSTANCE_MIN_TRIANGLES
from radarays_ros.world.mesh import TriMesh
from radarays_ros.world.scene import Scene
from radarays_ros.world.transforms import pose_to_matrix


def box(size, subdivide: int = 0) -> TriMesh:
    mesh = trimesh.creation.box(size)
    for _ in range(subdivide):
        mesh = mesh.subdivide()
    return TriMesh(mesh.vertices, mesh.faces)


def test_a_wall_5_m_away_blocks_a_segment_longer_than_5_m_only():
    scene = Scene()
    scene.add_entity("wall", box([0.2, 10.0, 10.0]), pose_to_matrix(5.1, 0, 0))  # its face at x = 5
    backend = make_backend("embree", scene)
    n = 6
    o, d = np.zeros((n, 3)), np.tile([1.0, 0.0, 0.0], (n, 1))
    reach = [0.0, 4.9, 4.999, 5.001, 5.1, np.inf]
    np.testing.assert_array_equal(backend.blocked(o, d, reach), [False, False, False, True, True, True])
    d[:, 0] = -1.0  # away from the wall: nothing on any segment
    assert not backend.blocked(o, d, reach).any()
    assert not backend.blocked(o, -d, np.zeros(n)).any()  # no distance is under 0 (no trace at all)
    assert backend.blocked(o[:0], d[:0], []).shape == (0,)
    backend.close()


def crowded_scene(static_only: bool = False) -> Scene:
    """A ground, static boxes (one moved away: masked in the static BVH), small movers, a large moving box (an
    instance) and a swept box (a twist): every layer of the Embree backend. static_only: the ground and the static
    boxes where they were made (Embree's occlusion query answers there)."""
    rng = np.random.default_rng(3)
    scene = Scene()
    ground = TriMesh([[-60, -60, 0], [60, -60, 0], [60, 60, 0], [-60, 60, 0]], [[0, 1, 2], [0, 2, 3]])
    scene.add_entity("ground", ground)
    for i in range(30):
        scene.add_entity(f"s{i}", box(rng.uniform(0.5, 4, 3)), pose_to_matrix(*rng.uniform(-25, 25, 2), 1.0, 0, 0,
                                                                              rng.uniform(0, np.pi)))
    if static_only:
        return scene
    scene.set_pose("s0", pose_to_matrix(3.0, 3.0, 0.5))  # a static entity moved: masked, looked through
    for i in range(8):
        scene.add_entity(f"m{i}", box([0.8, 0.8, 0.8]), pose_to_matrix(*rng.uniform(-15, 15, 2), 0.6), static=False)
    large = box([3.0, 3.0, 3.0], subdivide=1)
    while large.n_faces < INSTANCE_MIN_TRIANGLES:
        large = box([3.0, 3.0, 3.0], subdivide=int(np.log2(INSTANCE_MIN_TRIANGLES) // 2) + 1)
    scene.add_entity("big", large, pose_to_matrix(-8, 6, 1.5), static=False)
    swept = scene.add_entity("car", box([4.0, 1.8, 1.5]), pose_to_matrix(6, -6, 0.8), static=False)
    scene.set_twists([swept], np.array([[8.0, 0.0, 0.0]]), np.array([[0.0, 0.0, 0.5]]))
    return scene


@pytest.mark.parametrize("world, with_times", [("every layer", False), ("every layer", True), ("static only", False)])
def test_blocked_is_the_first_hit_closer_than_the_reach_on_every_layer(world, with_times, monkeypatch):
    scene = crowded_scene(static_only=world == "static only")
    backend = make_backend("embree", scene, threads=2)
    queries = []  # Embree's occlusion queries: the static-only world's way
    occluded = embree._Layer.occluded
    monkeypatch.setattr(embree._Layer, "occluded", lambda layer, *args: queries.append(1) or occluded(layer, *args))
    rng = np.random.default_rng(7)
    n = 6000
    o = np.column_stack([rng.uniform(-20, 20, (n, 2)), rng.uniform(0.3, 3.0, n)])
    d = rng.normal(size=(n, 3))
    d[:, 2] = -np.abs(d[:, 2]) * 0.3
    times = rng.uniform(0.0, 0.25, n) if with_times else None
    when = {} if times is None else {"times": times}
    first = backend.trace(o, d, want=(), **when).distance.astype(np.float64)  # the definition's first hits
    hit = np.isfinite(first)
    assert hit.mean() > 0.5
    # reaches around every hit's own distance (its float32 and float64 neighbours), and random ones
    t = np.where(hit, first, 30.0)
    t32 = t.astype(np.float32)
    reaches = [t, np.nextafter(t, 0), np.nextafter(t, np.inf), np.nextafter(t32, np.float32(0)).astype(np.float64),
               np.nextafter(t32, np.float32(np.inf)).astype(np.float64), rng.uniform(0, 60, n),
               t * rng.uniform(0.5, 1.5, n)]
    for reach in reaches:
        ours = backend.blocked(o, d, reach, **when)
        np.testing.assert_array_equal(ours, first < reach)
        np.testing.assert_array_equal(ours, Backend._blocked(backend, Rays(o, d, times), reach))  # the base class's
    assert 0.2 < np.mean(backend.blocked(o, d, reaches[5], **when)) < 0.9
    assert bool(queries) == (world == "static only")
    backend.close()


@pytest.mark.parametrize("reach, message", [(np.ones(3), r"\(N,\) = \(4,\)"), ([1, 2, -1, 3], ">= 0"),
                                            ([1, np.nan, 1, 1], ">= 0")])
def test_a_bad_reach_is_refused_naming_it(reach, message):
    scene = Scene()
    scene.add_entity("wall", box([0.2, 10.0, 10.0]), pose_to_matrix(5.1, 0, 0))
    backend = make_backend("embree", scene)
    with pytest.raises(TracingError, match="reach") as caught:
        backend.blocked(np.zeros((4, 3)), np.tile([1.0, 0, 0], (4, 1)), reach)
    assert caught.match(message)
    backend.close()
