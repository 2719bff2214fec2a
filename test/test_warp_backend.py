"""Warp backend on Warp's CPU device: analytic answers, Embree's answers, moving entities, errors.

The kernels are the ones a GPU runs; only the device string differs (see test_warp_cuda.py).
"""
import numpy as np
import pytest
import trimesh

from support.warp import assert_same_hits, disagreement, random_rays, require_warp

require_warp()

from radarays_ros.errors import TracingError  # noqa: E402
from radarays_ros.tracing import make_backend  # noqa: E402
from radarays_ros.tracing.backend import ALL, Rays  # noqa: E402
from radarays_ros.world.loader import load_world  # noqa: E402
from radarays_ros.world.mesh import TriMesh  # noqa: E402
from radarays_ros.world.scene import Scene  # noqa: E402
from radarays_ros.world.transforms import pose_to_matrix  # noqa: E402



def box_mesh(extents, subdivide=0):
    b = trimesh.creation.box(extents)
    for _ in range(subdivide):
        b = b.subdivide()
    return TriMesh(b.vertices, b.faces)


def warp(scene, **options):
    return make_backend("warp", scene, device="cpu", **options)


@pytest.fixture
def wall_scene():
    """A 1 m thick static wall whose near face is the plane x = 5 and a moving 1 m cube at x = 3."""
    scene = Scene()
    scene.add_entity("wall::link::visual", box_mesh([1, 20, 20]), pose_to_matrix(5.5, 0, 0), material="concrete")
    scene.add_entity("cube::link::visual", box_mesh([1, 1, 1]), pose_to_matrix(3.5, 5, 0), static=False, material="metal")
    return scene


def fan(n=64, spread=0.6, z=0.0):
    yaw = np.linspace(-spread, spread, n)
    d = np.stack([np.cos(yaw), np.sin(yaw), np.zeros(n)], axis=1)
    o = np.zeros((n, 3))
    o[:, 2] = z
    return o, d, yaw


def test_plane_distance_normal_and_material(wall_scene):
    o, d, yaw = fan()
    hits = warp(wall_scene).trace(o, d)
    wall = hits.entity == wall_scene.find("wall::link::visual")
    assert wall.sum() > 50
    np.testing.assert_allclose(hits.distance[wall], 5.0 / np.cos(yaw[wall]), rtol=1e-5)
    np.testing.assert_allclose(hits.normal[wall], np.tile([-1, 0, 0], (wall.sum(), 1)), atol=1e-6)
    np.testing.assert_allclose(hits.incidence_cosines(d)[wall], np.cos(yaw[wall]), atol=1e-6)
    assert np.all(hits.material[wall] == wall_scene.materials.id_of("concrete"))
    assert hits.distance.dtype == np.float32 and hits.entity.dtype == np.int32 and hits.normal.shape == (64, 3)


def test_sphere_from_inside_and_outside_normals_face_the_ray():
    sphere = trimesh.creation.icosphere(subdivisions=4, radius=2.0)
    scene = Scene()
    scene.add_entity("ball", TriMesh(sphere.vertices, sphere.faces))
    backend = warp(scene)
    rng = np.random.default_rng(1)
    d = rng.normal(size=(500, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    inside = backend.trace(np.zeros_like(d), d)
    assert np.all(inside.distance <= 2.0 + 1e-5) and np.all(inside.distance > 1.98)
    assert np.all(np.einsum("ij,ij->i", inside.normal, d) < 0)
    outside = backend.trace(-5 * d, d)
    np.testing.assert_allclose(outside.distance, 3.0, atol=0.02)
    assert np.all(np.einsum("ij,ij->i", outside.normal, d) < 0)
    assert_same_hits(outside, make_backend("embree", scene).trace(-5 * d, d), d)


def test_face_ids_are_the_mesh_files_own_order():
    # faces listed in a shuffled order with their original indices: the hit reports the original one
    b = trimesh.creation.box([1, 1, 1])
    perm = np.random.default_rng(3).permutation(len(b.faces))
    scene = Scene()
    scene.add_entity("box", TriMesh(b.vertices, b.faces[perm], face_ids=perm), pose_to_matrix(3, 0, 0))
    o, d = np.zeros((5, 3)), np.array([[1, y, z] for y, z in [(0, 0), (0.1, 0.05), (-0.1, 0.1), (0.05, -0.1), (0, 0.1)]], float)
    hits, ref = warp(scene).trace(o, d), make_backend("embree", scene).trace(o, d)
    assert hits.hit.all()
    np.testing.assert_array_equal(hits.face, ref.face)
    faces_facing_minus_x = {int(i) for i in np.flatnonzero(np.isclose(b.face_normals[:, 0], -1))}
    assert set(hits.face.tolist()) <= faces_facing_minus_x


@pytest.mark.parametrize("name", ["office", "street", "hall", "gz_radarays_demo"])
def test_demo_worlds_give_embrees_answers(name):
    scene = load_world(name)
    o, d = random_rays(scene, 20_000, seed=11)
    ours, ref = warp(scene).trace(o, d), make_backend("embree", scene, threads=1).trace(o, d)
    assert ours.hit.mean() > 0.3
    assert_same_hits(ours, ref, d, scene=scene, origins=o)


def test_tmin_tmax_as_embree(wall_scene):
    o, d, _ = fan(64)
    backend, ref = warp(wall_scene), make_backend("embree", wall_scene, threads=1)
    for tmin, tmax in [(0.0, 5.5), (5.2, np.inf), (2.0, 6.0)]:
        ours, theirs = backend.trace(o, d, tmin, tmax), ref.trace(o, d, tmin, tmax)
        np.testing.assert_array_equal(ours.hit, theirs.hit)
        assert_same_hits(ours, theirs, d)
    assert not backend.trace(o, d, 0.0, 4.9).hit.any()
    with pytest.raises(TracingError, match="tmin"):
        backend.trace(o, d, 3.0, 2.0)


def moving_world(lift=0.01):
    """A static floor and walls, small movers, a large mover and a static box that will be moved.

    lift: height of the walls' and the crate's feet above the floor. The Embree backend looks through
    a masked entity by stepping 0.1 mm past its hit, which also steps over a face in the same plane
    (the floor under a removed wall's foot): with lift=0 it misses that floor, the Warp backend not
    (test_masked_entity_never_hides_a_coincident_face)."""
    scene = Scene()
    scene.add_entity("floor", box_mesh([40, 40, 0.2]), pose_to_matrix(0, 0, -0.1), material="asphalt")
    scene.add_entity("wall_n", box_mesh([40, 0.3, 4]), pose_to_matrix(0, 12, 2 + lift), material="brick")
    scene.add_entity("wall_e", box_mesh([0.3, 40, 4]), pose_to_matrix(12, 0, 2 + lift), material="concrete")
    scene.add_entity("crate", box_mesh([1, 1, 1]), pose_to_matrix(4, 0, 0.5 + lift), material="wood")  # static, moved later
    for k in range(6):
        scene.add_entity(f"cart{k}", box_mesh([0.8, 0.5, 0.6]), pose_to_matrix(-6 + 2 * k, -3, 0.3), static=False, material="metal")
    big = trimesh.creation.icosphere(subdivisions=4, radius=1.2)
    scene.add_entity("robot", TriMesh(big.vertices, big.faces), pose_to_matrix(-3, 4, 1.2), static=False, material="metal")
    return scene


def sensor_rays(n=6000, seed=2):
    rng = np.random.default_rng(seed)
    d = rng.normal(size=(n, 3))
    d[:, 2] = -np.abs(d[:, 2]) * 0.3
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    o = np.tile([[0.0, 0.0, 1.0]], (n, 1)) + rng.uniform(-2, 2, (n, 3)) * [1, 1, 0.1]
    return o.astype(np.float32), d.astype(np.float32)


def test_moving_entities_follow_the_scene_like_embree():
    scene = moving_world()
    backend, ref = warp(scene), make_backend("embree", scene, threads=1)
    o, d = sensor_rays()
    rng = np.random.default_rng(4)

    def check():
        ours = backend.trace(o, d)
        assert_same_hits(ours, ref.trace(o, d), d, scene=scene, origins=o)
        return ours

    check()
    assert backend.instance_builds == 7
    static_mesh = backend._static.mesh.id
    points_before = backend._static.points.numpy().copy()
    for step in range(3):  # many poses: rotations and translations of every mover at once
        ids = [scene.find(f"cart{k}") for k in range(6)] + [scene.find("robot")]
        poses = np.stack([pose_to_matrix(*rng.uniform(-5, 5, 2), rng.uniform(0.3, 1.0), *rng.uniform(-0.3, 0.3, 2),
                                         rng.uniform(-3, 3)) for _ in ids])
        scene.set_poses_array(ids, poses)
        check()
    crate = scene.find("crate")
    scene.set_pose("crate", pose_to_matrix(1.5, 1.0, 0.5, 0, 0, 0.7))  # a static entity moved: masked + instance
    hits = check()
    assert (hits.entity == crate).any()
    wall_e = scene.find("wall_e")
    assert (hits.entity == wall_e).any()
    scene.remove_entity("wall_e")  # a static entity removed: looked through
    hits = check()
    assert not (hits.entity == wall_e).any()
    scene.remove_entity("cart2")  # an instance removed
    new = scene.add_entity("barrel", box_mesh([0.6, 0.6, 1.0], subdivide=2), pose_to_matrix(2, -2, 0.5), material="metal")
    hits = check()  # an entity added at run time (static flag or not, it is an instance)
    assert (hits.entity == new).any()
    assert backend._static.mesh.id == static_mesh  # the same static BVH throughout
    changed = np.flatnonzero(np.any(backend._static.points.numpy() != points_before, axis=1))
    spans = [backend._static.vertex_spans[scene.find(name) if name != "wall_e" else wall_e] for name in ("crate", "wall_e")]
    assert set(changed) <= {i for a, b in spans for i in range(a, b)}  # only the masked entities' vertices
    assert backend.instance_builds == 9  # 7 movers + the moved crate + the barrel: built once each


def test_masked_entity_never_hides_a_coincident_face():
    """A removed wall and a moved crate stood on the floor (their feet in its plane): rays that met
    them at the floor now meet the floor, at the analytic distance."""
    scene = Scene()
    scene.add_entity("floor", box_mesh([40, 40, 0.2]), pose_to_matrix(0, 0, -0.1))
    scene.add_entity("wall_e", box_mesh([0.3, 40, 4]), pose_to_matrix(8, 0, 2))
    scene.add_entity("crate", box_mesh([1, 1, 1]), pose_to_matrix(4, 0, 0.5))
    backend = warp(scene)
    o, d = sensor_rays()
    assert (backend.trace(o, d).entity == scene.find("wall_e")).any()
    scene.remove_entity("wall_e")
    scene.set_pose("crate", pose_to_matrix(0, 15, 10))  # lifted above every ray
    hits = backend.trace(o, d)
    down = d[:, 2] < -0.01
    floor_t = -o[down, 2] / d[down, 2]  # the floor's top is the plane z = 0
    landing = o[down, :2] + floor_t[:, None] * d[down, :2]
    on_floor = np.all(np.abs(landing) < 19.9, axis=1)
    rows = np.flatnonzero(down)[on_floor]
    assert (landing[on_floor, 0] > 7.8).sum() > 20  # rays that landed where the wall stood
    np.testing.assert_allclose(hits.distance[rows], floor_t[on_floor], atol=1e-3)
    assert np.all(hits.entity[rows] == scene.find("floor"))


def test_a_pose_update_builds_nothing():
    scene = moving_world()
    backend = warp(scene)
    o, d = sensor_rays(500)
    backend.trace(o, d)
    builds, static_mesh = backend.instance_builds, backend._static.mesh.id
    instance_meshes = [backend._instances[i].mesh.id for i in sorted(backend._instances)]
    for k in range(5):
        scene.set_pose("robot", pose_to_matrix(k, 0, 1.2, 0, 0, 0.4 * k))
        hits = backend.trace(o, d)
    assert backend.instance_builds == builds and backend._static.mesh.id == static_mesh
    assert [backend._instances[i].mesh.id for i in sorted(backend._instances)] == instance_meshes
    assert (hits.entity == scene.find("robot")).any()


def test_forty_moving_entities_as_embree():
    scene = Scene()
    scene.add_entity("floor", box_mesh([60, 60, 0.2]), pose_to_matrix(0, 0, -0.1))
    rng = np.random.default_rng(9)
    for k in range(40):
        scene.add_entity(f"m{k}", box_mesh([0.5, 0.5, 1.0]), pose_to_matrix(*rng.uniform(-10, 10, 2), 0.51, 0, 0, rng.uniform(-3, 3)),
                         static=False)
    o, d = sensor_rays(4000, seed=5)
    backend, ref = warp(scene), make_backend("embree", scene, threads=1)
    assert_same_hits(backend.trace(o, d), ref.trace(o, d), d, scene=scene, origins=o)
    moved = [scene.find(f"m{k}") for k in range(40)]
    scene.set_poses_array(moved, np.stack([pose_to_matrix(*rng.uniform(-10, 10, 2), 0.51) for _ in moved]))
    hits = backend.trace(o, d)
    assert_same_hits(hits, ref.trace(o, d), d, scene=scene, origins=o)
    assert len(set(hits.entity[hits.entity > 0].tolist())) > 20


@pytest.mark.parametrize("top_level", ["bvh", "loop"])
def test_hundreds_of_moving_entities_as_embree(top_level):
    """The top level over the movers' boxes (a wp.Bvh, or the loop of old Warp) finds every mover Embree finds:
    300 crates, some rotated about every axis, moved and removed and added at run time."""
    import warp as wp

    from radarays_ros.tracing.warp import default_top_level

    if top_level == "bvh" and default_top_level(wp) == "loop":
        pytest.skip(f"Warp {wp.config.version}: bvh_query_ray misses boxes (NVIDIA/warp GH-288, fixed in 1.3.2)")
    scene = Scene()
    scene.add_entity("floor", box_mesh([80, 80, 0.2]), pose_to_matrix(0, 0, -0.1))
    rng = np.random.default_rng(21)

    def pose():
        x, y = rng.uniform(-30, 30, 2)
        return pose_to_matrix(x, y, rng.uniform(0.3, 3.0), *rng.uniform(-3, 3, 3))

    movers = [scene.add_entity(f"m{k}", box_mesh(rng.uniform(0.2, 1.5, 3)), pose(), static=False) for k in range(300)]
    rays = [sensor_rays(3000, seed=s) for s in (6, 7)]
    rays.append((np.tile([[0.0, 0.0, 1.5]], (2000, 1)), fan(2000, np.pi)[1]))  # horizontal: axis-aligned slabs
    backend, ref = warp(scene, top_level=top_level), make_backend("embree", scene, threads=1)
    assert backend.top_level == top_level
    for step in range(3):
        seen = set()
        for o, d in rays:
            hits = backend.trace(o, d)
            assert_same_hits(hits, ref.trace(o, d), d, scene=scene, origins=o)
            seen |= set(hits.entity[hits.entity > 0].tolist())
        assert len(seen) > 100, len(seen)
        scene.set_poses_array(movers, np.stack([pose() for _ in movers]))
        scene.remove_entity(movers.pop(step))
        movers.append(scene.add_entity(f"new{step}", box_mesh([1, 1, 1]), pose(), static=False))
    assert (backend._bvh is not None) == (top_level == "bvh")


def test_top_level_choice():
    from radarays_ros.tracing.warp import default_top_level

    class Old:
        class config:
            version = "1.0.2"

    class New:
        class config:
            version = "1.19.0"

    assert default_top_level(Old) == "loop" and default_top_level(New) == "bvh"
    with pytest.raises(TracingError, match="top_level 'tree': allowed bvh, loop"):
        warp(Scene(), top_level="tree")


def test_empty_scene_and_empty_batch():
    backend = warp(Scene())
    hits = backend.trace(np.zeros((3, 3)), np.eye(3))
    assert not hits.hit.any() and np.all(hits.entity == -1) and np.all(hits.normal == 0)
    assert len(backend.trace(np.zeros((0, 3)), np.zeros((0, 3)))) == 0


def test_only_moving_entities():
    scene = Scene()
    scene.add_entity("cube", box_mesh([1, 1, 1]), pose_to_matrix(3, 0, 0), static=False)
    hits = warp(scene).trace(np.zeros((1, 3)), np.array([[1.0, 0, 0]]))
    assert hits.distance[0] == pytest.approx(2.5, abs=1e-5) and hits.entity[0] == 0


def test_a_rays_result_does_not_depend_on_its_batch(wall_scene):
    backend = warp(wall_scene)
    o, d, _ = fan(32)
    alone = backend.trace(o, d)
    mixed = backend.trace(np.vstack([o, [[0, 0, 0]]]), np.vstack([d, [[3.0, 0, 0]]]))  # one non-unit direction
    np.testing.assert_array_equal(alone.distance, mixed.distance[:32])
    assert mixed.distance[32] == pytest.approx(5.0)


@pytest.mark.parametrize("want", [{"distance"}, {"ids"}, {"normal", "incidence"}, ALL])
def test_trusted_rays_spans_and_wanted_attributes(wall_scene, want):
    backend = warp(wall_scene)
    o, d, _ = fan(40)
    o32, d32 = o.astype(np.float32), d.astype(np.float32)
    whole = backend.trace_rays(Rays.trusted(o32, d32), want=want)
    full = backend.trace(o, d)  # every attribute, whatever was wanted
    part = whole.span(10, 20)
    np.testing.assert_array_equal(part.entity, full.entity[10:20])
    np.testing.assert_array_equal(part.normal, full.normal[10:20])
    np.testing.assert_array_equal(part.incidence_cosines(d32[10:20]), full.incidence_cosines(d32)[10:20])
    np.testing.assert_array_equal(whole.material, full.material)
    with pytest.raises(TracingError, match="float32"):
        Rays.trusted(o, d)
    with pytest.raises(TracingError, match="unknown hit attribute"):
        backend.trace(o, d, want={"colour"})


@pytest.mark.parametrize("origins, directions, message", [
    (np.zeros((2, 3)), np.zeros((2, 3)), "zero length"),
    (np.full((1, 3), np.nan), np.ones((1, 3)), "NaN"),
    (np.zeros((2, 2)), np.zeros((2, 2)), r"\(N, 3\)"),
])
def test_bad_rays_raise_one_clear_error(wall_scene, origins, directions, message):
    with pytest.raises(TracingError, match=message):
        warp(wall_scene).trace(origins, directions)


def test_device_names_are_checked(wall_scene):
    with pytest.raises(TracingError, match="allowed 'cpu', 'cuda'"):
        make_backend("warp", wall_scene, device="tpu")
    from radarays_ros.tracing.warp import cuda_devices

    if cuda_devices() == 0:
        with pytest.raises(TracingError, match="use device 'cpu'"):
            make_backend("warp", wall_scene, device="cuda")
        assert make_backend("warp", wall_scene).device == "cpu"  # auto: the CPU where there is no CUDA


def test_close_unsubscribes(wall_scene):
    backend = warp(wall_scene)
    backend.close()
    wall_scene.set_pose("cube::link::visual", pose_to_matrix(0, 0, 9))  # no listener left to tell
    assert backend not in wall_scene._listeners


def test_hits_outlive_later_traces(wall_scene):
    backend = warp(wall_scene)
    o, d, _ = fan(16)
    first = backend.trace(o, d)
    kept = first.distance.copy()
    backend.trace(o + [0, 0, 100], d)
    np.testing.assert_array_equal(first.distance, kept)
    np.testing.assert_array_equal(first.entity, backend.trace(o, d).entity)


def test_disagreement_helper_is_strict():
    scene = moving_world()
    o, d = sensor_rays(300)
    a = warp(scene).trace(o, d)
    scene.set_pose("robot", pose_to_matrix(0.5, 0, 1.2))  # the robot now covers the sensor: answers change
    b = warp(scene).trace(o, d)
    assert disagreement(a, b).sum() > 3


def test_trace_on_device_leaves_the_hits_on_the_device(wall_scene):
    import warp as wp

    backend = warp(wall_scene)
    o, d, _ = fan(32)
    host = backend.trace(o, d)
    out = backend.trace_on_device(wp.array(o.astype(np.float32), dtype=wp.vec3, device="cpu"),
                                  wp.array(d.astype(np.float32), dtype=wp.vec3, device="cpu"))
    assert isinstance(out["distance"], wp.array)
    np.testing.assert_array_equal(out["distance"].numpy(), host.distance)
    np.testing.assert_array_equal(out["entity"].numpy(), host.entity)
    with pytest.raises(TracingError, match="wp.vec3"):
        backend.trace_on_device(o, d)


def test_disagreement_counts_grazers_and_far_apart_hits():
    from radarays_ros.tracing.backend import Hits

    def hits(distance):
        n = len(distance)
        distance = np.array(distance, np.float32)
        hit = np.isfinite(distance)
        ids = np.where(hit, 0, -1).astype(np.int32)
        return Hits(distance, np.zeros((n, 3), np.float32), ids, ids, ids)

    a = hits([1.0, np.inf, 2.0, 3.0])
    b = hits([1.0005, 4.0, 2.01, np.inf])
    np.testing.assert_array_equal(disagreement(a, b), [False, True, True, True])
