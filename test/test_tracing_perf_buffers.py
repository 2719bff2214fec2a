"""The Embree backend's build and mover paths that write straight into Embree's buffers give the very
layers (id tables, bounds, hits) of the concatenate-then-cast path they replace, and a batch of poses
moves exactly the entities it names."""
import numpy as np
import pytest
import trimesh
from embreex import rtcore

from radarays_ros.errors import WorldError
from radarays_ros.tracing import embree, embree_upload
from radarays_ros.world.mesh import TriMesh
from radarays_ros.world.scene import Scene
from radarays_ros.world.transforms import pose_to_matrix

SHAPES = [trimesh.creation.box([0.5, 0.5, 0.5]), trimesh.creation.icosphere(1, 0.4),
          trimesh.creation.cylinder(0.3, 1.2, sections=7), trimesh.creation.box([1.5, 0.4, 0.8])]


def random_pose(rng) -> np.ndarray:
    return pose_to_matrix(*rng.uniform(-12, 12, 2), rng.uniform(0.2, 2.0), *rng.uniform(-np.pi, np.pi, 3))


def shapes_scene(count: int, static: bool, seed: int = 0) -> tuple[Scene, list[int]]:
    rng = np.random.default_rng(seed)
    scene = Scene()
    ground = TriMesh([[-50, -50, 0], [50, -50, 0], [50, 50, 0], [-50, 50, 0]], [[0, 1, 2], [0, 2, 3]])
    scene.add_entity("ground", ground, material="asphalt")
    scene.add_entity("empty", TriMesh(np.zeros((0, 3)), np.zeros((0, 3), int)))  # no faces: left out
    ids = [scene.add_entity(f"m{i}", TriMesh(SHAPES[i % len(SHAPES)].vertices, SHAPES[i % len(SHAPES)].faces),
                            random_pose(rng), static=static, material="metal" if i % 3 else None)
           for i in range(count)]
    return scene, ids


def rays(n: int, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    d = rng.normal(size=(n, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    return np.tile(np.float32([0, 0, 1.0]), (n, 1)), d.astype(np.float32)


def concatenated_layer(device, entities, local: bool = False) -> embree._Layer:
    """The layer as it was built before: every entity posed in float64, all concatenated, then cast."""
    entities = [e for e in entities if e.mesh.n_faces]
    verts = [e.mesh.vertices if local else e.mesh.vertices @ e.pose[:3, :3].T + e.pose[:3, 3] for e in entities]
    offsets = np.cumsum([0] + [len(v) for v in verts])
    faces = np.concatenate([(e.mesh.faces + o).astype(np.int32) for e, o in zip(entities, offsets)])
    miss = [np.full(1, -1, np.int32)]
    tables = [np.concatenate([np.full(e.mesh.n_faces, e.id, np.int32) for e in entities] + miss),
              np.concatenate([e.mesh.face_ids.astype(np.int32) for e in entities] + miss),
              np.concatenate([e.face_materials.astype(np.int32) for e in entities] + miss)]
    return embree._Layer.of_arrays(device, np.concatenate(verts).astype(np.float32), faces, *tables)


def assert_same_layer(got: embree._Layer, want: embree._Layer, n_rays: int = 20000) -> None:
    for name in ("prim_entity", "prim_face", "prim_material", "bounds"):
        assert getattr(got, name).dtype == getattr(want, name).dtype, name
        assert getattr(got, name).tobytes() == getattr(want, name).tobytes(), name
    o, d = rays(n_rays)
    far = np.full(len(o), 1e30, np.float32)
    a, b = got.run(o, d, far.copy()), want.run(o, d, far.copy())
    assert (b[1] >= 0).sum() > n_rays // 100  # the rays see the shapes
    for x, y in zip(a, b):
        assert x.tobytes() == y.tobytes()


@pytest.mark.parametrize("local", [False, True])
def test_layer_written_into_embree_buffers_is_the_concatenated_layer(local):
    scene, _ = shapes_scene(60, static=True)
    device = rtcore.EmbreeDevice()
    entities = scene.entities
    if local:  # an instance layer keeps one entity's own frame
        entities = [e for e in entities if e.mesh.n_faces > 50][:1]
    assert_same_layer(embree._Layer(device, entities, local=local), concatenated_layer(device, entities, local))


def test_mesh_buffers_without_the_fast_path_give_the_same_hits(monkeypatch):
    """Where embreex's layout check fails, the same filled buffers go through TriangleMesh instead."""
    scene, _ = shapes_scene(30, static=True)
    device = rtcore.EmbreeDevice()
    fast = embree._Layer(device, scene.entities)
    monkeypatch.setattr(embree_upload, "FAST", False)
    assert_same_layer(embree._Layer(device, scene.entities), fast)


def test_only_moved_movers_are_posed_again_and_the_layer_is_the_fresh_one():
    scene, ids = shapes_scene(200, static=False)
    entities = [scene.entity(i) for i in ids]
    device = rtcore.EmbreeDevice()
    movers = embree._Movers(entities)
    first = movers.layer(device)
    assert movers.layer(device, first) is first  # nothing moved: the same layer
    rng = np.random.default_rng(7)
    moved = rng.random(len(ids)) < 0.25
    scene.set_poses_array(np.array(ids)[moved], np.stack([random_pose(rng) for _ in range(moved.sum())]))
    sentinel = np.float32(1234.5)  # rows of entities that did not move must not be written again
    still = [k for k in range(len(ids)) if not moved[k]][:3]
    starts = np.concatenate([[0], np.cumsum([len(e.mesh.vertices) for e in movers.entities])])
    kept = {k: movers.vertices[starts[k]:starts[k + 1]].copy() for k in still}
    for k in still:
        movers.vertices[starts[k]] = sentinel
    layer = movers.layer(device, first)
    assert layer is not first
    for k in still:
        assert (movers.vertices[starts[k]] == sentinel).all()  # untouched
        movers.vertices[starts[k]] = kept[k][0]
    assert_same_layer(movers.layer(device), concatenated_layer(device, entities))
    # and the path that poses every mover (a new membership) gives the same buffers
    assert_same_layer(embree._Movers(entities).layer(device), concatenated_layer(device, entities))


def test_partial_posing_is_the_whole_stack_posing_bit_for_bit():
    scene, ids = shapes_scene(120, static=False)
    entities = [scene.entity(i) for i in ids]
    movers = embree._Movers(entities)
    rng = np.random.default_rng(3)
    poses = np.stack([random_pose(rng) for _ in ids])
    whole = movers.world_vertices(poses)
    part = np.zeros_like(whole)
    changed = rng.random(len(ids)) < 0.5
    movers._pose_into(part, poses, changed)
    movers._pose_into(part, poses, ~changed)
    assert part.tobytes() == whole.tobytes()


def test_set_poses_array_moves_exactly_the_named_entities_and_keeps_no_alias():
    scene, ids = shapes_scene(20, static=False)
    before = {i: scene.entity(i).pose.copy() for i in ids}
    rng = np.random.default_rng(11)
    picked = ids[3:9]
    poses = np.stack([random_pose(rng) for _ in picked])
    scene.set_poses_array(picked, poses)
    for k, i in enumerate(picked):
        assert np.array_equal(scene.entity(i).pose, poses[k])
    for i in set(ids) - set(picked):
        assert np.array_equal(scene.entity(i).pose, before[i])
    poses[:] = 0  # the caller's array is not the entities' poses
    assert scene.entity(picked[0]).pose[3, 3] == 1.0
    with pytest.raises(WorldError, match="no entity with id 999"):
        scene.set_poses_array([picked[0], 999], np.stack([np.eye(4), np.eye(4)]))
    assert not np.array_equal(scene.entity(picked[0]).pose, np.eye(4))  # nothing applied
