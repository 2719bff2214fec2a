"""The Embree backend's moving entities and buffer upload: the batched mover layer and the one-copy
upload give the very buffers, BVH and hits of the per-entity, element-by-element path they replace."""
import numpy as np
import pytest
import trimesh
from embreex import mesh_construction, rtcore, rtcore_scene

from radarays_ros.tracing import embree, embree_upload, make_backend
from radarays_ros.world.mesh import TriMesh
from radarays_ros.world.scene import Scene
from radarays_ros.world.transforms import pose_to_matrix

SHAPES = [trimesh.creation.box([0.5, 0.5, 0.5]), trimesh.creation.icosphere(1, 0.4),  # 8 and 42 vertices
          trimesh.creation.cylinder(0.3, 1.2, sections=7), trimesh.creation.box([1.5, 0.4, 0.8]),
          trimesh.Trimesh([[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[0, 1, 2]], process=False)]  # 3 vertices


def mover_scene(count: int, seed: int = 0) -> tuple[Scene, list[int]]:
    rng = np.random.default_rng(seed)
    scene = Scene()
    ground = TriMesh([[-50, -50, 0], [50, -50, 0], [50, 50, 0], [-50, 50, 0]], [[0, 1, 2], [0, 2, 3]])
    scene.add_entity("ground", ground, material="asphalt")
    ids = [scene.add_entity(f"m{i}", TriMesh(SHAPES[i % len(SHAPES)].vertices, SHAPES[i % len(SHAPES)].faces),
                            random_pose(rng), static=False) for i in range(count)]
    return scene, ids


def random_pose(rng) -> np.ndarray:
    return pose_to_matrix(*rng.uniform(-12, 12, 2), rng.uniform(0.2, 2.0), *rng.uniform(-np.pi, np.pi, 3))


def rays(n: int, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    d = rng.normal(size=(n, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    return np.tile(np.float32([0, 0, 1.0]), (n, 1)), d.astype(np.float32)


def per_entity_vertices(entities) -> np.ndarray:
    """The float64 vertices as `_Layer` poses them: each entity on its own, then concatenated (and cast)."""
    return np.concatenate([e.mesh.vertices @ e.pose[:3, :3].T + e.pose[:3, 3] for e in entities])


def test_batched_mover_vertices_are_the_per_entity_transform_bit_for_bit():
    """np.matmul over a stack runs the same BLAS product per entity; a hand-written sum or einsum
    differs in the last float64 bit for most poses (BLAS fuses multiply-adds), which this test catches
    (compared before the float32 cast, where such a bit rarely survives)."""
    scene, ids = mover_scene(300)
    entities = [scene.entity(i) for i in ids]
    movers = embree._Movers(entities)
    assert len(movers.groups) == len({len(s.vertices) for s in SHAPES})  # vertex counts interleaved in entity order
    for step in range(3):
        rng = np.random.default_rng(step)
        scene.set_poses_array(ids, np.stack([random_pose(rng) for _ in ids]))
        poses = np.stack([e.pose for e in entities])
        got = movers.world_vertices(poses)
        assert got.dtype == np.float64 and got.tobytes() == per_entity_vertices(entities).tobytes()


def test_mover_layer_gives_the_hits_of_the_per_entity_layer():
    scene, ids = mover_scene(120)
    entities = [scene.entity(i) for i in ids]
    device = rtcore.EmbreeDevice()
    reference = embree._Layer(device, entities)
    layer = embree._Movers(entities).layer(device)
    for name in ("prim_entity", "prim_face", "prim_material", "bounds"):
        assert getattr(layer, name).tobytes() == getattr(reference, name).tobytes(), name
    o, d = rays(20000)
    far = np.full(len(o), 1e30, np.float32)
    got, want = layer.run(o, d, far.copy()), reference.run(o, d, far.copy())
    assert (want[1] >= 0).sum() > 1000  # the rays see many movers
    for a, b in zip(got, want):
        assert a.tobytes() == b.tobytes()


def test_upload_is_the_fast_path_here_and_builds_what_triangle_mesh_builds():
    """On Linux with the embreex wheel the layout check must hold (else builds silently get ~100x slower
    per triangle); the one-copy buffers give Embree the bytes TriangleMesh gives it: the same hits."""
    assert embree_upload.FAST
    sphere = trimesh.creation.icosphere(4, 3.0)
    rng = np.random.default_rng(3)
    extra = rng.uniform(-4, 4, (300, 3, 3))  # loose triangles, some crossing the sphere
    vertices = np.concatenate([sphere.vertices, extra.reshape(-1, 3)]).astype(np.float32)
    indices = np.concatenate([sphere.faces, len(sphere.vertices) + np.arange(900).reshape(-1, 3)]).astype(np.int32)
    device = rtcore.EmbreeDevice()
    fast, slow = rtcore_scene.EmbreeScene(device), rtcore_scene.EmbreeScene(device)
    embree_upload.upload(fast, vertices, indices)
    mesh_construction.TriangleMesh(slow, vertices, indices)
    o, d = rays(20000, seed=4)
    o = o * 0 + np.float32([0.3, -0.2, 0.1])
    a = fast.run(o, d, dists=np.full(len(o), 1e30, np.float32), output=1)
    b = slow.run(o, d, dists=np.full(len(o), 1e30, np.float32), output=1)
    assert (a["primID"] >= 0).all()  # from inside the sphere every ray hits something
    for key in ("tfar", "primID", "Ng", "u", "v"):
        assert a[key].tobytes() == b[key].tobytes(), key


def test_movers_that_did_not_move_keep_their_layer_and_a_move_is_seen():
    scene, ids = mover_scene(40)
    backend = make_backend("embree", scene, threads=1)
    o, d = rays(5000)
    first = backend.trace(o, d)
    rebuilds = backend.dynamic_rebuilds
    scene.set_poses_array(ids, np.stack([scene.entity(i).pose for i in ids]))  # a stream repeating still poses
    again = backend.trace(o, d)
    assert backend.dynamic_rebuilds == rebuilds
    assert again.distance.tobytes() == first.distance.tobytes()
    target = int(np.flatnonzero(np.isin(first.entity, ids))[0])  # a ray that hits a mover
    mover = int(first.entity[target])
    scene.set_pose(mover, pose_to_matrix(40, 40, -5))  # moved out of every ray's way
    moved = backend.trace(o, d)
    assert backend.dynamic_rebuilds == rebuilds + 1
    assert mover not in set(moved.entity.tolist()) and moved.entity[target] != mover


def test_adding_and_removing_movers_changes_the_layer():
    scene, ids = mover_scene(10)
    backend = make_backend("embree", scene, threads=1)
    o, d = np.float32([[0, 0, 5.0]]), np.float32([[0, 0, -1.0]])
    assert backend.trace(o, d).entity[0] == scene.find("ground")
    box = SHAPES[0]
    new = scene.add_entity("new", TriMesh(box.vertices, box.faces), pose_to_matrix(0, 0, 1), static=False)
    hits = backend.trace(o, d)
    assert hits.entity[0] == new and hits.distance[0] == pytest.approx(3.75, abs=1e-5)
    scene.remove_entity(new)
    assert backend.trace(o, d).entity[0] == scene.find("ground")


def test_movers_first_gives_the_hits_of_static_first_even_at_ties():
    """Tracing the movers' layer first (the static BVH then walked only up to a mover's hit) picks what
    tracing it second picks, ties included: boxes flush with a wall's face give rays that meet a static
    and a moving triangle at the very same float32 distance, and the mover wins both ways."""
    scene = Scene()
    wall = trimesh.creation.box([1.0, 40.0, 40.0])  # its near face is the plane x = 5
    scene.add_entity("wall", TriMesh(wall.vertices, wall.faces), pose_to_matrix(5.5, 0, 0), material="concrete")
    box = trimesh.creation.box([0.5, 0.5, 0.5])
    rng = np.random.default_rng(5)
    for i in range(60):  # front faces flush with the wall (x = 5.25 - 0.25 = 5), and loose ones before it
        x = 5.25 if i % 2 else rng.uniform(1.5, 4.0)
        scene.add_entity(f"b{i}", TriMesh(box.vertices, box.faces), pose_to_matrix(x, *rng.uniform(-6, 6, 2)), static=False)
    backend = make_backend("embree", scene, threads=1)
    movers, _, _, _ = backend._sync()
    n = 40000
    d = np.column_stack([np.ones(n), rng.uniform(-1.2, 1.2, (n, 2))]).astype(np.float32)
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    o = np.zeros((n, 3), np.float32)
    far = np.float32(1e30)
    static_only = backend._static.run(o, d, np.full(n, far, np.float32))
    movers_only = movers.run(o, d, np.full(n, far, np.float32))
    ties = (static_only[1] >= 0) & (movers_only[1] >= 0) & (static_only[0] == movers_only[0])
    assert ties.sum() > 20  # the case that needs tfar just below the mover's distance
    first, second = np.zeros(n, np.int16), np.zeros(n, np.int16)
    a = backend._movers_first(movers, o, d, far, first)
    b = backend._static_then_movers(movers, None, o, d, far, second)
    for x, y in zip(a, b):
        assert x.tobytes() == y.tobytes()
    assert first.tobytes() == second.tobytes() and (first[ties] == 1).all()  # the movers' layer won the ties
