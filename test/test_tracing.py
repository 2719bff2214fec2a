"""Embree backend against analytic geometry: distances, normals, ids, moving/adding/removing entities."""
import numpy as np
import pytest
import trimesh

from radarays_ros.errors import ConfigError, TracingError
from radarays_ros.tracing import make_backend
from radarays_ros.tracing.backend import ALL, Hits, Rays
from radarays_ros.world.materials import MaterialLibrary
from radarays_ros.world.mesh import TriMesh
from radarays_ros.world.scene import Scene
from radarays_ros.world.transforms import pose_to_matrix
from support.tracing import sphere_rays


def box_mesh(extents):
    b = trimesh.creation.box(extents)
    return TriMesh(b.vertices, b.faces)


@pytest.fixture
def wall_scene():
    """A 1 m thick wall whose near face is the plane x = 5 (static) and a dynamic 1 m cube at x = 3."""
    scene = Scene()
    scene.add_entity("wall::link::visual", box_mesh([1, 20, 20]), pose_to_matrix(5.5, 0, 0), material="concrete")
    scene.add_entity("cube::link::visual", box_mesh([1, 1, 1]), pose_to_matrix(3.5, 5, 0), static=False, material="metal")
    return scene


def fan(n=64, spread=0.6):
    """Rays from the origin in the x-forward half space with known angles."""
    yaw = np.linspace(-spread, spread, n)
    d = np.stack([np.cos(yaw), np.sin(yaw), np.zeros(n)], axis=1)
    return np.zeros((n, 3)), d, yaw


def test_plane_distance_is_d_over_cos(wall_scene):
    backend = make_backend("embree", wall_scene, threads=1)
    o, d, yaw = fan()
    hits = backend.trace(o, d)
    wall = hits.entity == wall_scene.find("wall::link::visual")
    assert wall.sum() > 50
    np.testing.assert_allclose(hits.distance[wall], 5.0 / np.cos(yaw[wall]), rtol=1e-5)
    np.testing.assert_allclose(hits.normal[wall], np.tile([-1, 0, 0], (wall.sum(), 1)), atol=1e-6)
    assert np.all(hits.material[wall] == wall_scene.materials.id_of("concrete"))


def test_sphere_distance_and_normal_facing_ray_from_inside_and_outside():
    sphere = trimesh.creation.icosphere(subdivisions=5, radius=2.0)
    scene = Scene()
    scene.add_entity("ball", TriMesh(sphere.vertices, sphere.faces), pose_to_matrix(0, 0, 0))
    backend = make_backend("embree", scene)
    rng = np.random.default_rng(1)
    d = rng.normal(size=(500, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    inside = backend.trace(np.zeros_like(d), d)
    # a tessellated sphere of radius 2: vertices on the sphere, faces slightly inside
    assert np.all(inside.distance <= 2.0 + 1e-5) and np.all(inside.distance > 1.99)
    assert np.all(np.einsum("ij,ij->i", inside.normal, d) < 0)  # normal faces the ray, i.e. inward here
    outside = backend.trace(-5 * d, d)
    np.testing.assert_allclose(outside.distance, 3.0, atol=0.01)
    assert np.all(np.einsum("ij,ij->i", outside.normal, d) < 0)


def test_misses_are_unambiguous(wall_scene):
    backend = make_backend("embree", wall_scene)
    hits = backend.trace(np.zeros((2, 3)), np.array([[-1.0, 0, 0], [0, 0, 1.0]]))
    assert not hits.hit.any()
    assert np.all(np.isinf(hits.distance))
    assert np.all(hits.entity == -1) and np.all(hits.face == -1) and np.all(hits.material == -1)


def test_tmin_and_tmax_window(wall_scene):
    backend = make_backend("embree", wall_scene)
    o, d = np.zeros((1, 3)), np.array([[1.0, 0, 0]])
    assert backend.trace(o, d, tmax=4.9).hit[0] == False  # noqa: E712 - numpy bool
    far_face = backend.trace(o, d, tmin=5.2)
    assert far_face.distance[0] == pytest.approx(6.0, abs=1e-5)  # the wall's back face x = 6
    assert far_face.normal[0] @ d[0] < 0


def test_face_index_is_the_source_mesh_order():
    # two triangles in a known order: face 0 covers y < 0, face 1 covers y > 0 (plane x = 2)
    v = np.array([[2, -1, -1], [2, 0, 1], [2, -1, 1], [2, 1, -1], [2, 1, 1], [2, 0, 1]], float)
    f = np.array([[0, 1, 2], [3, 4, 5]])
    scene = Scene()
    scene.add_entity("tri", TriMesh(v, f, face_ids=[7, 3]))
    hits = make_backend("embree", scene).trace(np.zeros((2, 3)), np.array([[1, -0.3, 0.3], [1, 0.3, 0.3]]))
    assert list(hits.face) == [7, 3]


def test_dynamic_entity_moves_its_hits(wall_scene):
    backend = make_backend("embree", wall_scene)
    o, d = np.zeros((1, 3)), np.array([[1.0, 0, 0]])
    cube = wall_scene.find("cube::link::visual")
    assert backend.trace(o, d).entity[0] == wall_scene.find("wall::link::visual")
    wall_scene.set_pose(cube, pose_to_matrix(2.5, 0, 0))
    hits = backend.trace(o, d)
    assert hits.entity[0] == cube and hits.distance[0] == pytest.approx(2.0, abs=1e-5)
    wall_scene.set_pose(cube, pose_to_matrix(2.5, 0, 0, 0, 0, np.pi / 4))  # rotated: corner towards the ray
    hits = backend.trace(o, d)
    assert hits.distance[0] == pytest.approx(2.5 - np.sqrt(0.5), abs=1e-5)
    assert backend.static_rebuilds == 0


def test_moving_a_static_entity_does_not_rebuild_the_static_world(wall_scene):
    backend = make_backend("embree", wall_scene)
    static_bvh = backend._static.scene
    wall = wall_scene.find("wall::link::visual")
    wall_scene.set_pose(wall, pose_to_matrix(-7.5, 0, 0))
    o, d = np.zeros((2, 3)), np.array([[1.0, 0, 0], [-1.0, 0, 0]])
    hits = backend.trace(o, d)
    assert not hits.hit[0]  # the old place is empty
    assert hits.entity[1] == wall and hits.distance[1] == pytest.approx(7.0, abs=1e-5)
    assert backend._static.scene is static_bvh and backend.static_rebuilds == 0


def test_moving_a_low_static_entity_still_sees_the_static_entities_after_it():
    """Found on a 16-core GPU machine: the mask of moved static entities is only as long as the highest
    moved id, and a ray hitting a later static entity indexed past its end (IndexError)."""
    scene = Scene()
    first = scene.add_entity("first", box_mesh([1, 1, 1]), pose_to_matrix(0, 5, 0))
    later = scene.add_entity("later", box_mesh([1, 20, 20]), pose_to_matrix(5.5, 0, 0))
    backend = make_backend("embree", scene)
    scene.set_pose(first, pose_to_matrix(0, -5, 0))  # masks `first` only
    hits = backend.trace(np.zeros((2, 3)), np.array([[1.0, 0, 0], [0, -1.0, 0]]))
    assert hits.entity[0] == later and hits.distance[0] == pytest.approx(5.0, abs=1e-5)
    assert hits.entity[1] == first and hits.distance[1] == pytest.approx(4.5, abs=1e-5)


def test_added_and_removed_entities(wall_scene):
    backend = make_backend("embree", wall_scene)
    o, d = np.zeros((1, 3)), np.array([[0.0, 0, 1.0]])
    assert not backend.trace(o, d).hit[0]
    lid = wall_scene.add_entity("lid", box_mesh([2, 2, 0.2]), pose_to_matrix(0, 0, 3.1))
    hits = backend.trace(o, d)
    assert hits.entity[0] == lid and hits.distance[0] == pytest.approx(3.0, abs=1e-5)
    wall_scene.remove_entity("lid")
    wall_scene.remove_entity("wall::link::visual")
    hits = backend.trace(np.zeros((2, 3)), np.array([[0.0, 0, 1.0], [1.0, 0, 0]]))
    assert not hits.hit.any()


def test_two_threads_give_identical_results():
    scene = Scene()
    sphere = trimesh.creation.icosphere(subdivisions=4, radius=3.0)
    scene.add_entity("s", TriMesh(sphere.vertices, sphere.faces))
    rng = np.random.default_rng(3)
    d = rng.normal(size=(40_000, 3))
    o = rng.uniform(-1, 1, size=(40_000, 3))
    one = make_backend("embree", scene, threads=1).trace(o, d)
    two = make_backend("embree", scene, threads=2).trace(o, d)
    np.testing.assert_array_equal(one.distance, two.distance)
    np.testing.assert_array_equal(one.face, two.face)


def test_span_post_processing_gives_the_bits_of_the_numpy_formulas():
    """The backend shifts rays to tmin and turns Embree's output into distances and unit normals in a
    compiled loop: bit for bit the float32 numpy passes of the same formulas (o + d·tmin; distance + tmin;
    s = copysign(1/sqrt(|Ng|² + 1e-30), -(Ng·d)); normal = s·Ng; cos = |Ng·d|·|s|), eager and lazy normals."""
    scene = Scene()
    sphere = trimesh.creation.icosphere(subdivisions=4, radius=3.0)
    scene.add_entity("s", TriMesh(sphere.vertices, sphere.faces))
    rng = np.random.default_rng(4)
    d = rng.normal(size=(40_000, 3))
    d = (d / np.linalg.norm(d, axis=1, keepdims=True)).astype(np.float32)
    o = rng.uniform(-1, 1, size=(40_000, 3)).astype(np.float32)
    backend = make_backend("embree", scene, threads=1)
    eager = backend.trace(o, d, 0.5, 100.0)
    lazy = backend.trace_rays(Rays.trusted(o, d), 0.5, 100.0, want=frozenset({"distance", "ids", "incidence"}))

    tmin = np.float32(0.5)
    shifted = d * tmin + o
    out = backend._static.scene.run(shifted, d, dists=np.full(len(o), np.float32(99.5)), output=1)
    hit = out["primID"] >= 0
    distance = np.where(hit, out["tfar"] + tmin, np.float32(np.inf))
    ng = out["Ng"]
    square = ng[:, 0] * ng[:, 0]
    square += ng[:, 1] * ng[:, 1]
    square += ng[:, 2] * ng[:, 2]
    dot = ng[:, 0] * d[:, 0]
    dot += ng[:, 1] * d[:, 1]
    dot += ng[:, 2] * d[:, 2]
    scale = np.copysign(np.float32(1) / np.sqrt(square + np.float32(1e-30)), -dot)
    normal = ng * scale[:, None]
    cosine = -dot * scale
    for hits in (eager, lazy):
        assert hits.distance.tobytes() == distance.tobytes()
        assert hits.normal.tobytes() == normal.tobytes()
    assert lazy.incidence_cosines(d).tobytes() == cosine.tobytes()
    assert hit.mean() > 0.5 and np.allclose(np.linalg.norm(normal[hit], axis=1), 1, atol=1e-6)


def test_cosines_of_incidence_are_an_array_of_each_callers_own():
    """The cosines of incidence written with the trace are handed out without a copy the first time their rows
    are asked for, and copied for a caller whose rows overlap rows handed out before: writing into one's array
    never changes another's, and every one holds the same bits."""
    scene, o, d = sphere_rays(5000, 6, 5.0)
    backend = make_backend("embree", scene, threads=1)
    hits = backend.trace_rays(Rays.trusted(o, d), 0.0, 100.0, want=frozenset({"distance", "ids", "incidence"}))
    expected = np.abs(np.einsum("ij,ij->i", hits.normal.astype(np.float64), d.astype(np.float64)))
    first, second = hits.span(0, 2500).incidence_cosines(d[:2500]), hits.span(2500, 5000).incidence_cosines(d[2500:])
    assert not np.shares_memory(first, second)
    again = hits.span(2000, 3000).incidence_cosines(d[2000:3000])  # overlaps both
    whole = hits.incidence_cosines(d)
    assert whole.tobytes() == np.concatenate([first, second]).tobytes() and again.tobytes() == whole[2000:3000].tobytes()
    for a, b in ((first, second), (first, again), (second, again), (whole, first), (whole, second), (whole, again)):
        assert not np.shares_memory(a, b)
    np.testing.assert_allclose(whole, expected, atol=2e-6)
    first[:] = -1.0
    assert (whole[:2500] >= 0).all() and (again >= 0).all()


def test_id_lookup_takes_rows_as_numpy_take_wrap():
    """The backend's id lookup (a compiled gather) reads table[id mod len] as np.take(mode="wrap"): id -1 is the
    table's last row (the miss row), ids past the table wrap around; table dtypes kept; the lazy trace's material
    ids are the per-triangle table's rows of Embree's primitive ids."""
    from radarays_ros.tracing.embree import _wrapped_take

    table = np.array([10, 11, 12, 13, -1], np.int32)
    ids = np.array([0, 3, -1, 4, 5, 12, -6, -7], np.int32)
    assert _wrapped_take(table, ids).tolist() == [10, 13, -1, -1, 10, 12, -1, 13]
    for dtype in (np.int16, np.int64):
        taken = _wrapped_take(table.astype(dtype), ids)
        assert taken.dtype == dtype and taken.tolist() == [10, 13, -1, -1, 10, 12, -1, 13]
    scene, o, d = sphere_rays(2000, 5, 5.0)  # some rays miss
    backend = make_backend("embree", scene, threads=1)
    lazy = backend.trace_rays(Rays.trusted(o, d), 0.0, 100.0, want=frozenset({"distance", "ids", "incidence"}))
    static = backend._static
    prim = static.scene.run(o, d, dists=np.full(len(o), np.float32(100.0)), output=1)["primID"]
    assert lazy.material.tobytes() == np.take(static.prim_material, prim, mode="wrap").tobytes()
    assert lazy.entity.tobytes() == np.take(static.prim_entity, prim, mode="wrap").tobytes()
    assert 0 < (prim < 0).sum() < len(prim)


def test_face_materials_follow_library_rules():
    lib = MaterialLibrary.load().merged(MaterialLibrary.from_dict({"assign": [{"object": "pillar", "material": "metal"}]}))
    v = np.array([[2, -1, -1], [2, 0, 1], [2, -1, 1], [2, 1, -1], [2, 1, 1], [2, 0, 1]], float)
    mesh = TriMesh(v, [[0, 1, 2], [3, 4, 5]], face_parts=[0, 1], part_names=["room", "pillar"])
    scene = Scene(materials=lib)
    scene.add_entity("map", mesh)
    hits = make_backend("embree", scene).trace(np.zeros((2, 3)), np.array([[1, -0.3, 0.3], [1, 0.3, 0.3]]))
    assert hits.material[0] == lib.id_of("default") and hits.material[1] == lib.id_of("metal")


def test_empty_scene_gives_misses():
    hits = make_backend("embree", Scene()).trace(np.zeros((3, 3)), np.eye(3))
    assert not hits.hit.any()


@pytest.mark.parametrize(
    "origins, directions, message",
    [
        (np.zeros((2, 3)), np.zeros((3, 3)), "must both be"),
        (np.zeros((1, 3)), np.array([[np.nan, 0, 1]]), "NaN"),
        (np.zeros((1, 3)), np.zeros((1, 3)), "zero length"),
    ],
)
def test_bad_rays_are_rejected(wall_scene, origins, directions, message):
    with pytest.raises(TracingError, match=message):
        make_backend("embree", wall_scene).trace(origins, directions)


def test_bad_pose_and_unknown_backend(wall_scene):
    with pytest.raises(ConfigError, match="NaN or inf"):
        wall_scene.set_pose("cube::link::visual", np.full((4, 4), np.nan))
    with pytest.raises(TracingError, match="available: embree, optix"):
        make_backend("nope", wall_scene)


def test_gpu_backend_without_cuda_says_what_is_missing(wall_scene):
    with pytest.raises(TracingError, match="backend 'optix' is not available: .*use backend 'embree'"):
        make_backend("optix", wall_scene)


def test_large_moving_mesh_is_an_instance_moved_without_rebuild():
    """A moving mesh above INSTANCE_MIN_TRIANGLES keeps its own BVH: moves transform rays, not triangles."""
    from radarays_ros.tracing.embree import INSTANCE_MIN_TRIANGLES

    sphere = trimesh.creation.icosphere(subdivisions=4, radius=1.0)  # 5120 faces
    assert len(sphere.faces) >= INSTANCE_MIN_TRIANGLES
    scene = Scene()
    ball = scene.add_entity("ball", TriMesh(sphere.vertices, sphere.faces), pose_to_matrix(5, 0, 0), static=False, material="metal")
    backend = make_backend("embree", scene)
    o, d = np.zeros((2, 3)), np.array([[1.0, 0, 0], [0, 1.0, 0]])
    hits = backend.trace(o, d)
    assert hits.distance[0] == pytest.approx(4.0, abs=2e-3) and hits.entity[0] == ball and not hits.hit[1]
    rebuilds = backend.dynamic_rebuilds
    scene.set_pose(ball, pose_to_matrix(0, 3, 0, 0.3, -0.2, 1.0))  # rotated: the sphere looks the same
    hits = backend.trace(o, d)
    assert not hits.hit[0]
    assert hits.distance[1] == pytest.approx(2.0, abs=2e-3) and hits.entity[1] == ball
    np.testing.assert_allclose(hits.normal[1], [0, -1, 0], atol=0.02)  # world frame, facing the ray
    assert hits.material[1] == scene.materials.id_of("metal") and 0 <= hits.face[1] < len(sphere.faces)
    assert backend.dynamic_rebuilds == rebuilds and backend.instance_builds == 1


def test_instance_rotation_moves_an_asymmetric_mesh_where_the_matrix_says():
    # a 4 m long bar made of many triangles, rotated 90 deg about z: it now lies along y
    bar = trimesh.creation.box([4, 0.2, 0.2]).subdivide().subdivide().subdivide()
    scene = Scene()
    scene.add_entity("bar", TriMesh(bar.vertices, bar.faces), pose_to_matrix(0, 0, 2), static=False)
    backend = make_backend("embree", scene)
    assert backend.trace(np.array([[1.5, 0, 0]]), np.array([[0, 0, 1.0]])).distance[0] == pytest.approx(1.9, abs=1e-5)
    scene.set_pose("bar", pose_to_matrix(0, 0, 2, 0, 0, np.pi / 2))
    hits = backend.trace(np.array([[1.5, 0, 0], [0, 1.5, 0]]), np.array([[0, 0, 1.0], [0, 0, 1.0]]))
    assert not hits.hit[0] and hits.distance[1] == pytest.approx(1.9, abs=1e-5)


def test_set_poses_array_moves_all_or_nothing(wall_scene):
    backend = make_backend("embree", wall_scene)
    cube, wall = wall_scene.find("cube::link::visual"), wall_scene.find("wall::link::visual")
    poses = np.stack([pose_to_matrix(2.5, 0, 0), pose_to_matrix(9.5, 0, 0)])
    wall_scene.set_poses_array([cube, wall], poses)
    hits = backend.trace(np.array([[0, 0, 0], [0, 0, 0.6]]), np.array([[1.0, 0, 0], [1.0, 0, 0]]))  # 2nd passes over the cube
    assert hits.entity[0] == cube and hits.distance[1] == pytest.approx(9.0, abs=1e-5)
    bad = poses.copy()
    bad[1, 0, 3] = np.nan
    with pytest.raises(ConfigError, match="wall::link::visual"):
        wall_scene.set_poses_array([cube, wall], bad)
    np.testing.assert_allclose(wall_scene.entity(cube).pose, poses[0])  # unchanged by the rejected batch
    rotated_too_far = poses.copy()
    rotated_too_far[0, :3, :3] *= 1.1  # scaled: not a rotation
    with pytest.raises(ConfigError, match="cube::link::visual"):
        wall_scene.set_poses_array([cube, wall], rotated_too_far)


def test_material_library_version_changes_when_a_material_is_replaced():
    from radarays_ros.world.materials import Material

    lib = MaterialLibrary.load()
    before, count = lib.version, len(lib)
    lib.add(Material("metal", {"velocity": 0.0}, {}, "test"))
    assert len(lib) == count and lib.version > before


def test_a_rays_result_does_not_depend_on_its_batch(wall_scene):
    backend = make_backend("embree", wall_scene)
    o, d, _ = fan(32)
    d = d.astype(np.float32)
    alone = backend.trace(o, d)
    mixed = backend.trace(np.vstack([o, [[0, 0, 0]]]), np.vstack([d, [[3.0, 0, 0]]]))  # one non-unit direction
    np.testing.assert_array_equal(alone.distance, mixed.distance[:32])
    assert mixed.distance[32] == pytest.approx(5.0)  # distances are along the unit direction


def test_vectorised_quaternions_match_the_scalar_conversion():
    from radarays_ros.world.transforms import matrix_to_quaternion, quaternions_to_matrices, rpy_to_matrix

    rng = np.random.default_rng(5)
    rotations = [rpy_to_matrix(*rng.uniform(-3, 3, 3)) for _ in range(20)]
    q = np.array([matrix_to_quaternion(r) for r in rotations])
    np.testing.assert_allclose(quaternions_to_matrices(q), rotations, atol=1e-12)


def _sphere_rays(n=40_000, seed=5):
    """Unit float32 rays from inside a sphere of radius 3 (every ray hits), plus the scene."""
    return sphere_rays(n, seed, spread=1.0)


@pytest.mark.parametrize("threads", [1, 2])
def test_trusted_rays_and_unwanted_normals_match_the_checked_trace(threads):
    scene, o, d = _sphere_rays()
    backend = make_backend("embree", scene, threads=threads)
    full = backend.trace(o, d, 0.1, 50.0)
    fast = backend.trace_rays(Rays.trusted(o, d), 0.1, 50.0, want={"distance", "ids", "incidence"})
    np.testing.assert_array_equal(fast.distance, full.distance)
    np.testing.assert_array_equal(fast.face, full.face)
    np.testing.assert_array_equal(fast.normal, full.normal)  # computed on first access, same values
    cos = fast.incidence_cosines(d)
    np.testing.assert_allclose(cos, np.abs(np.einsum("ij,ij->i", d, full.normal)), atol=2e-6)
    assert cos.dtype == np.float32 and np.all((cos > 0) & (cos <= 1 + 1e-6))


@pytest.mark.parametrize("threads", [1, 2])
def test_given_ray_starts_are_read_at_their_tmin_only(threads):
    """Rays.starts: the caller's d·tmin + o (float32, ray_start) give the hits the backend's own shift gives, bit
    for bit; Embree reads them (starts moved 1 m back give ranges 1 m longer); at another tmin they are ignored."""
    scene, o, d = _sphere_rays()
    backend = make_backend("embree", scene, threads=threads)
    tmin = 0.1
    own = backend.trace_rays(Rays.trusted(o, d), tmin, 50.0)
    starts = d * np.float32(tmin) + o
    given = backend.trace_rays(Rays.trusted(o, d, starts=(tmin, starts)), tmin, 50.0)
    assert given.distance.tobytes() == own.distance.tobytes() and given.normal.tobytes() == own.normal.tobytes()
    np.testing.assert_array_equal(given.face, own.face)
    back = backend.trace_rays(Rays.trusted(o, d, starts=(tmin, starts - d)), tmin, 50.0)
    np.testing.assert_allclose(back.distance, own.distance + 1.0, atol=1e-4)
    other = backend.trace_rays(Rays.trusted(o, d, starts=(0.2, starts - d)), tmin, 50.0)
    assert other.distance.tobytes() == own.distance.tobytes()
    with pytest.raises(TracingError, match="ray starts"):
        Rays.trusted(o, d, starts=(tmin, starts[:10]))
    with pytest.raises(TracingError, match="ray starts"):
        Rays.trusted(o, d, starts=starts)


def test_incidence_cosine_of_a_plane_is_cos_of_the_ray_angle(wall_scene):
    backend = make_backend("embree", wall_scene, threads=1)
    o, d, yaw = fan()
    hits = backend.trace(o, d, want={"incidence"})
    wall = hits.entity == wall_scene.find("wall::link::visual")
    np.testing.assert_allclose(hits.incidence_cosines(d)[wall], np.cos(yaw[wall]), atol=1e-6)
    assert np.all(hits.incidence_cosines(d)[~hits.hit] == 0)
    np.testing.assert_allclose(hits.normal[wall], np.tile([-1, 0, 0], (wall.sum(), 1)), atol=1e-6)
    misses = hits.take(~hits.hit)  # a taken Hits keeps the cosines
    assert np.all(misses.incidence_cosines(None) == 0)


def test_trusted_rays_still_reject_wrong_layouts():
    o, d, _ = fan(8)
    with pytest.raises(TracingError, match="float32"):
        Rays.trusted(o, d)  # float64
    o32, d32 = o.astype(np.float32), d.astype(np.float32)
    with pytest.raises(TracingError, match="C-contiguous"):
        Rays.trusted(np.asfortranarray(o32), d32)
    with pytest.raises(TracingError, match=r"\(N, 3\)"):
        Rays.trusted(o32, d32[:4])


def test_checked_rays_are_validated_once_and_normalised():
    rays = Rays(np.zeros((2, 3)), np.array([[2.0, 0, 0], [0, 0, 1.0]]))
    assert rays.origins.dtype == np.float32 and rays.origins.flags.c_contiguous and len(rays) == 2
    np.testing.assert_array_equal(rays.directions, [[1, 0, 0], [0, 0, 1]])
    with pytest.raises(TracingError, match="NaN or inf"):
        Rays(np.array([[np.nan, 0, 0]]), np.array([[1.0, 0, 0]]))


def test_unknown_attributes_and_bad_spans_are_refused(wall_scene):
    backend = make_backend("embree", wall_scene, threads=1)
    o, d, _ = fan(4)
    with pytest.raises(TracingError, match="unknown hit attribute.*normals.*allowed: distance, ids, incidence, normal"):
        backend.trace(o, d, want={"normals"})
    with pytest.raises(TracingError, match="tmin < tmax"):
        backend.trace(o, d, 5.0, 1.0)


@pytest.mark.parametrize("want", [{"distance"}, {"normal"}, {"ids"}, {"incidence"}, ALL])
def test_results_never_depend_on_what_is_wanted(wall_scene, want):
    """`want` only moves cost: every attribute reads the same whatever was asked for."""
    backend = make_backend("embree", wall_scene, threads=2)
    o, d, _ = fan(64)
    full, asked = backend.trace(o, d), backend.trace(o, d, want=want)
    for name in ("distance", "normal", "entity", "face", "material"):
        np.testing.assert_array_equal(getattr(asked, name), getattr(full, name))
    np.testing.assert_array_equal(asked.incidence_cosines(d), full.incidence_cosines(d))


def test_a_span_of_hits_is_the_same_rays_lazily(wall_scene):
    backend = make_backend("embree", wall_scene, threads=2)
    o, d, _ = fan(64)
    for want in (ALL, {"ids"}):
        hits = backend.trace(o, d, want=want)
        part = hits.span(10, 40)  # before anything else was read: the span resolves its own rows
        np.testing.assert_array_equal(part.material, hits.material[10:40])
        np.testing.assert_array_equal(part.entity, hits.entity[10:40])
        np.testing.assert_array_equal(part.normal, hits.normal[10:40])
        np.testing.assert_array_equal(part.incidence_cosines(None), hits.incidence_cosines(None)[10:40])
        np.testing.assert_array_equal(part.distance, hits.distance[10:40])
    plain = Hits.misses(5)  # arrays only: a span is views of them
    assert plain.span(1, 3).distance.shape == (2,) and np.all(plain.span(1, 3).incidence_cosines(np.ones((2, 3))) == 0)


def test_check_rays_normalises_only_the_rows_that_need_it_bit_for_bit():
    """check_rays (a compiled loop) divides by |d| exactly the rows whose float32 |d|² is off 1 by more than
    1e-6, as the numpy formula d / sqrt(d·d) does; the other rows and the caller's array stay untouched."""
    from radarays_ros.tracing.backend import check_rays

    rng = np.random.default_rng(12)
    d = rng.normal(size=(5000, 3)).astype(np.float32)
    d[::2] /= np.linalg.norm(d[::2], axis=1, keepdims=True)  # half of them unit already (within rounding)
    given = d.copy()
    o, unit = check_rays(rng.normal(size=(5000, 3)), d)
    norm2 = d[:, 0] * d[:, 0] + d[:, 1] * d[:, 1] + d[:, 2] * d[:, 2]
    off = np.abs(norm2 - np.float32(1)) > np.float32(1e-6)
    want = d.copy()
    want[off] /= np.sqrt(norm2[off])[:, None]
    assert 1000 < off.sum() < 5000
    assert unit.tobytes() == want.tobytes() and d.tobytes() == given.tobytes() and o.dtype == np.float32
