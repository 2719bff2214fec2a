"""Rays with times: the Embree and the Warp backend (on Warp's CPU device, the kernel CUDA runs) trace each ray
against the entities whose twist moves them where they are at that ray's time (a spinning sensor's sweep sees a
passing car where it is at each firing), checked against answers written out by hand: a wall moving along its
normal, a plate turning about its pivot, a ball on a circle, a crowd posed at each time; entities without a
twist, and rays without times, are traced as before, to the bit."""
import math

import numpy as np
import pytest
import trimesh
from scipy.integrate import solve_ivp
from scipy.spatial.transform import Rotation

from radarays_ros.errors import TracingError
from radarays_ros.tracing import make_backend
from radarays_ros.tracing.embree import INSTANCE_MIN_TRIANGLES
from radarays_ros.world.mesh import TriMesh
from radarays_ros.world.scene import Scene
from radarays_ros.world.transforms import pose_to_matrix
from radarays_ros.world.twist_pose import poses_at

KINDS = ["merged mover", "instance", "static, then moved"]
BACKENDS = ["embree", "warp"]


def backend_of(name: str, scene: Scene, threads: int = 1):
    """The backend `name` on this scene: Embree with `threads`, Warp on its CPU device (skipped without warp)."""
    if name == "warp":
        pytest.importorskip("warp")
        return make_backend("warp", scene, device="cpu")
    return make_backend("embree", scene, threads=threads)


def wall_mesh(large: bool) -> TriMesh:
    """A 0.2 m thick wall in y-z (its face towards -x at x = -0.1 of its frame); subdivided past
    INSTANCE_MIN_TRIANGLES when `large` (then it gets its own BVH)."""
    box = trimesh.creation.box([0.2, 4.0, 4.0])
    while large and len(box.faces) < INSTANCE_MIN_TRIANGLES:
        box = box.subdivide()
    return TriMesh(box.vertices, box.faces)


def wall_scene(kind: str, x0: float, velocity, backend: str = "embree") -> tuple[Scene, int]:
    scene = Scene()
    ground = TriMesh([[-50, -50, -3], [50, -50, -3], [50, 50, -3], [-50, 50, -3]], [[0, 1, 2], [0, 2, 3]])
    scene.add_entity("ground", ground)
    wall = scene.add_entity("wall", wall_mesh(kind == "instance"), pose_to_matrix(x0, 0, 0),
                            static=kind == "static, then moved")
    if kind == "static, then moved":  # the backend exists first: the static copy is masked, the moved one traced
        made = backend_of(backend, scene)
        scene.set_poses([(wall, pose_to_matrix(x0, 0, 0))], twists=[(velocity, (0, 0, 0))])
        return scene, made
    scene.set_poses([(wall, pose_to_matrix(x0, 0, 0))], twists=[(velocity, (0, 0, 0))])
    return scene, backend_of(backend, scene)


def forward_rays(n: int):
    return np.zeros((n, 3), np.float32), np.tile(np.float32([1, 0, 0]), (n, 1))


@pytest.mark.parametrize("name", BACKENDS)
@pytest.mark.parametrize("kind", KINDS)
def test_a_wall_moving_along_its_normal_is_met_where_it_is_at_each_ray_time(kind, name):
    """Wall face at x0 - 0.1 + v t: each ray's distance is that, whatever the layer that holds the wall."""
    scene, backend = wall_scene(kind, 10.0, (-15.0, 0.0, 0.0), name)
    times = np.linspace(-0.1, 0.25, 8)
    o, d = forward_rays(len(times))
    hits = backend.trace(o, d, times=times)
    np.testing.assert_allclose(hits.distance, 9.9 - 15.0 * times, atol=2e-5)
    assert (hits.entity == scene.entity("wall").id).all()
    np.testing.assert_allclose(hits.normal, np.tile([-1.0, 0, 0], (len(times), 1)), atol=1e-6)
    still = backend.trace(o, d)  # no times: where the wall is now, for every ray
    np.testing.assert_allclose(still.distance, 9.9, atol=2e-5)


@pytest.mark.parametrize("name", BACKENDS)
@pytest.mark.parametrize("kind", KINDS)
def test_a_wall_moving_across_the_rays_leaves_and_enters_them(kind, name):
    """Moving along y at 8 m/s: a ray at y = 3 meets the 4 m wide wall only once its edge (y = 2 + 8 t)
    has passed 3, i.e. from t = 0.125 s on; before, the ground behind it."""
    scene, backend = wall_scene(kind, 10.0, (0.0, 8.0, 0.0), name)
    times = np.array([0.0, 0.1, 0.124, 0.126, 0.2, 0.5, 0.624, 0.626])  # the far edge (y = -2 + 8 t) passes 3 at 0.625
    o = np.tile(np.float32([0, 3, 0]), (len(times), 1))
    d = np.tile(np.float32([1, 0, -0.1]), (len(times), 1))  # the ground at x = 30
    hits = backend.trace(o, d, times=times)
    on_wall = (times > 0.125) & (times < 0.625)
    assert ((hits.entity == scene.entity("wall").id) == on_wall).all()
    assert (hits.entity[~on_wall] == scene.entity("ground").id).all()


@pytest.mark.parametrize("name", BACKENDS)
def test_a_turning_plate_is_met_where_it_has_turned_to(name):
    """A plate through its pivot (5, 0, 0) along y, turning about z at w: at angle a = w t its points are
    (5 - s sin a, s cos a), so the ray along x at y = 1 meets it at x = 5 - tan a, normal (-cos a, -sin a, 0)."""
    scene = Scene()
    plate = trimesh.creation.box([0.0001, 6.0, 2.0])
    pid = scene.add_entity("plate", TriMesh(plate.vertices, plate.faces), pose_to_matrix(5, 0, 0), static=False)
    w = 2.0
    scene.set_poses([(pid, pose_to_matrix(5, 0, 0))], twists=[((0, 0, 0), (0, 0, w))])
    backend = backend_of(name, scene)
    times = np.linspace(-0.3, 0.3, 7)
    o = np.tile(np.float32([0, 1, 0]), (len(times), 1))
    hits = backend.trace(o, np.tile(np.float32([1, 0, 0]), (len(times), 1)), times=times)
    angle = w * times
    np.testing.assert_allclose(hits.distance, 5 - np.tan(angle) - 0.00005 / np.cos(angle), atol=5e-5)
    np.testing.assert_allclose(hits.normal[:, :2], -np.column_stack([np.cos(angle), np.sin(angle)]), atol=1e-5)


def test_entities_without_twist_and_rays_without_times_are_traced_as_before_to_the_bit():
    """A still mover beside a swept one, and every ray of a frame without times: the same bytes as a
    backend that never saw a time (the merged layer without the swept entity holds the still one)."""
    rng = np.random.default_rng(3)
    scene = Scene()
    scene.add_entity("ground", TriMesh([[-50, -50, -1], [50, -50, -1], [50, 50, -1], [-50, 50, -1]], [[0, 1, 2], [0, 2, 3]]))
    box = trimesh.creation.box([1.0, 1.0, 1.0])
    ids = [scene.add_entity(f"b{i}", TriMesh(box.vertices, box.faces), pose_to_matrix(*rng.uniform(-8, 8, 2), 0),
                            static=False) for i in range(12)]
    d = rng.normal(size=(30000, 3))
    d[:, 2] = -np.abs(d[:, 2]) * 0.2
    o = np.zeros_like(d)
    before = make_backend("embree", scene, threads=2).trace(o, d)
    backend = make_backend("embree", scene, threads=2)
    plain = backend.trace(o, d, times=np.linspace(0, 0.1, len(d)))  # no twist anywhere: as before
    assert plain.distance.tobytes() == before.distance.tobytes() and plain.entity.tobytes() == before.entity.tobytes()
    scene.set_twists([ids[0]], [(0.0, 0.0, 0.0)], [(0.0, 0.0, 0.0)])  # a zero twist moves nothing
    assert backend.trace(o, d, times=np.linspace(0, 0.1, len(d))).distance.tobytes() == before.distance.tobytes()
    scene.set_twists([ids[0]], [(0.0, 30.0, 0.0)], [(0.0, 0.0, 0.0)])
    swept = backend.trace(o, d, times=np.linspace(0, 0.1, len(d)))
    untouched = (swept.entity != ids[0]) & (before.entity != ids[0])
    assert untouched.mean() > 0.9  # every ray that meets neither copy of the swept box: the same hit
    assert swept.distance[untouched].tobytes() == before.distance[untouched].tobytes()
    assert swept.entity[untouched].tobytes() == before.entity[untouched].tobytes()
    assert backend.trace(o, d).distance.tobytes() == before.distance.tobytes()  # without times: the poses as they are
    one = make_backend("embree", scene, threads=1).trace(o, d, times=np.linspace(0, 0.1, len(d)))
    assert one.distance.tobytes() == swept.distance.tobytes()  # any thread count, the same bytes


def flow(point, v, w, origin, t):
    """Where the velocity field v + w x (x - origin) carries `point` in t seconds: its ODE integrated (scipy)."""
    if t == 0:
        return np.asarray(point, float)
    done = solve_ivp(lambda _, x: v + np.cross(w, x - origin), (0.0, t), point, rtol=1e-12, atol=1e-12)
    return done.y[:, -1]


def test_pose_after_a_twist_is_the_flow_of_its_velocity_field():
    """The rotation against scipy's rotation vectors; every point of the body (its origin and another) where the
    twist's velocity field v + w x (x - p0) carries it, integrated numerically: a helix, not a straight line; the
    same motion whichever of its points is the reference; without a turn, the straight path and the very bits."""
    pose = pose_to_matrix(1.0, -2.0, 0.5, 0.3, -0.2, 1.1)
    v, w = np.array([3.0, -1.0, 0.5]), np.array([0.2, -0.4, 1.5])
    t = np.array([-0.2, 0.0, 0.05, 0.3])
    rot, pos = poses_at(pose, v, w, t)
    np.testing.assert_allclose(rot, Rotation.from_rotvec(t[:, None] * w).as_matrix() @ pose[:3, :3], atol=1e-12)
    local = np.array([0.7, 0.2, -0.4])
    point = pose[:3, :3] @ local + pose[:3, 3]
    for k, tk in enumerate(t):
        np.testing.assert_allclose(pos[k], flow(pose[:3, 3], v, w, pose[:3, 3], tk), atol=1e-9)
        np.testing.assert_allclose(rot[k] @ local + pos[k], flow(point, v, w, pose[:3, 3], tk), atol=1e-9)
    other = pose.copy()  # the same body described from another of its points
    other[:3, 3] = point
    rot2, pos2 = poses_at(other, v + np.cross(w, point - pose[:3, 3]), w, t)
    np.testing.assert_allclose(pos2, np.einsum("nij,j->ni", rot, local) + pos, atol=1e-12)
    still, straight = poses_at(pose, v, np.zeros(3), t)
    assert (still == pose[:3, :3]).all()
    np.testing.assert_allclose(straight, pose[:3, 3] + t[:, None] * v, atol=1e-15)
    _, slow = poses_at(pose, v, w * 1e-12, t)  # barely turning: no division blows up
    np.testing.assert_allclose(slow, pose[:3, 3] + t[:, None] * v, atol=1e-12)


@pytest.mark.parametrize("times, message", [(np.array([0.0, np.nan]), "NaN or inf"),
                                            (np.zeros(3), r"\(N,\) = \(2,\)")])
def test_bad_ray_times_are_refused(times, message):
    scene, backend = wall_scene("merged mover", 10.0, (1.0, 0, 0))
    with pytest.raises(TracingError, match=message):
        backend.trace(*forward_rays(2), times=times)


def test_a_backend_that_cannot_sweep_refuses_rays_with_times_while_something_sweeps():
    """A backend that traces every ray at the scene's poses (a registered plug-in without SWEEPS_ENTITIES, here
    Embree told so) refuses rays with times by the entity's name while a twist moves it; still, it traces them."""
    from radarays_ros.tracing.embree import EmbreeBackend

    class Unswept(EmbreeBackend):
        SWEEPS_ENTITIES = False

    scene, _ = wall_scene("merged mover", 10.0, (1.0, 0, 0))
    backend = Unswept(scene, threads=1)
    with pytest.raises(TracingError, match="cannot meet 'wall' .* use the embree backend"):
        backend.trace(*forward_rays(2), times=np.zeros(2))
    assert math.isclose(float(backend.trace(*forward_rays(2)).distance[0]), 9.9, abs_tol=1e-4)
    scene.set_twists([scene.entity("wall").id], [(0.0, 0.0, 0.0)], [(0.0, 0.0, 0.0)])  # still: times change nothing
    assert math.isclose(float(backend.trace(*forward_rays(2), times=np.zeros(2)).distance[0]), 9.9, abs_tol=1e-4)


@pytest.mark.parametrize("speed, when", [(15.0, (0.0, 0.03, -0.05, 0.1)), (40.0, (0.0, 0.4, -0.6, 0.9))])
@pytest.mark.parametrize("name", BACKENDS)
def test_a_crowd_of_swept_movers_gives_each_ray_the_hit_of_the_world_posed_at_its_time(name, speed, when):
    """Random boxes that translate and turn, some large (their own BVH), rays from several origins at a few
    times: each ray's hit equals the hit of the same ray in a world built with every box posed at that ray's
    time (scipy's rotation vectors and the integrated flow, then a static scene: no sweep involved). The fast
    crowd over 1.5 s sweeps boxes longer than the first slots of Embree's swept layer hold (tracing/embree.py
    _Slots: made again further apart)."""
    rng = np.random.default_rng(7)
    scene = Scene()
    ground = TriMesh([[-60, -60, 0], [60, -60, 0], [60, 60, 0], [-60, 60, 0]], [[0, 1, 2], [0, 2, 3]])
    scene.add_entity("ground", ground)
    shapes = [trimesh.creation.box([1.0, 2.0, 1.5]), wall_mesh(True), trimesh.creation.icosphere(2, 0.8)]
    movers = []
    for i in range(24):
        shape = shapes[i % 3]
        start = pose_to_matrix(*rng.uniform(-15, 15, 2), rng.uniform(0.5, 2.5), 0, 0, rng.uniform(-np.pi, np.pi))
        twist = (rng.uniform(-speed, speed, 3) * [1, 1, 0.1], rng.uniform(-2, 2, 3))
        movers.append((scene.add_entity(f"m{i}", TriMesh(shape.vertices, shape.faces), start, static=False), start, twist))
    scene.set_poses([(i, start) for i, start, _ in movers], twists=[twist for *_, twist in movers])
    backend = backend_of(name, scene, threads=2)
    n = 20000
    origins = rng.uniform(-3, 3, (n, 3)) + [0, 0, 1.5]
    d = rng.normal(size=(n, 3)) * [1, 1, 0.3]
    times = rng.choice(when, n)
    hits = backend.trace(origins, d, 0.0, 80.0, times=times)
    for t in np.unique(times):
        posed = Scene()
        posed.add_entity("ground", ground)
        for i, start, (v, w) in movers:
            pose = np.eye(4)
            pose[:3, :3] = Rotation.from_rotvec(w * t).as_matrix() @ start[:3, :3]
            pose[:3, 3] = flow(start[:3, 3], v, w, start[:3, 3], t)
            posed.add_entity(f"m{i}", scene.entity(i).mesh, pose)
        rows = times == t
        want = make_backend("embree", posed, threads=1).trace(origins[rows], d[rows], 0.0, 80.0)
        assert (hits.entity[rows] == want.entity).all()
        same = hits.entity[rows] == want.entity
        # float32 both ways; the far-flung fast crowd (boxes up to 50 m out) grazed at a few rays: 0.6 mm
        close = 2e-4 if speed < 20 else 1e-3
        np.testing.assert_allclose(hits.distance[rows][same], want.distance[same], atol=close)
        np.testing.assert_allclose(hits.normal[rows][same], want.normal[same], atol=close)
    assert np.isin(hits.entity, [i for i, *_ in movers]).mean() > 0.05  # the crowd is met (13 %; 7 % when fast)


def test_the_box_pairs_pass_counts_past_its_room():
    """A crowd along the rays gives more (ray, box) pairs than the first buffers hold: the pass counts them
    all, so the caller can make room and run it again."""
    from radarays_ros.tracing.embree import _segments_meeting_boxes
    o = np.zeros((3, 3), np.float32)
    d = np.tile(np.float32([1, 0, 0]), (3, 1))
    boxes = np.array([[[x - 0.5, -1, -1], [x + 0.5, 1, 1]] for x in range(1, 41)], np.float32)
    small = np.empty(5, np.intp), np.empty(5, np.intp)
    assert _segments_meeting_boxes(o, d, np.full(3, 100, np.float32), boxes, 256, *small) == 120
    assert _segments_meeting_boxes(o, d, np.full(3, 9.6, np.float32), boxes, 256, *small) == 30  # boxes x = 1..10 (just in the last)


@pytest.mark.parametrize("name", BACKENDS)
def test_a_body_on_a_circle_is_met_all_along_its_arc(name):
    """A 0.3 m ball 10 m from the z axis it turns about at 2 rad/s (its twist: v = w x r, 20 m/s): over +-0.15 s
    its path is an arc whose middle (10, 0) lies 0.45 m beyond the chord between its ends. Rays aimed at where
    the ball is at their time meet it 0.3 m short of its centre, from the axis at every time, and from outside
    the circle near the arc's middle, where a wall at x = 9.95 ends them before the chord's box is reached."""
    scene = Scene()
    scene.add_entity("wall", TriMesh(*_plate_at_x(9.95)))
    ball = trimesh.creation.icosphere(3, 0.3)
    start = pose_to_matrix(10.0, 0.0, 0.0)
    ball_id = scene.add_entity("ball", TriMesh(ball.vertices, ball.faces), start, static=False)
    w = np.array([0.0, 0.0, 2.0])
    scene.set_poses([(ball_id, start)], twists=[(np.cross(w, start[:3, 3]), w)])
    backend = backend_of(name, scene)
    times = np.linspace(-0.15, 0.15, 31)
    centres = np.column_stack([10 * np.cos(2 * times), 10 * np.sin(2 * times), np.zeros_like(times)])
    middle = np.abs(times) <= 0.02
    outside = centres[middle] + [10.0, 0.0, 0.0]  # one trace: the box is the whole arc's
    hits = backend.trace(np.vstack([np.zeros_like(centres), outside]),
                         np.vstack([centres, np.tile([-1.0, 0.0, 0.0], (middle.sum(), 1))]),
                         times=np.concatenate([times, times[middle]]))
    assert (hits.entity == ball_id).all()
    np.testing.assert_allclose(hits.distance, 9.7, atol=0.01)


def _plate_at_x(x: float):
    """(vertices, faces) of a 4 x 4 m square in the plane x = `x`."""
    return [[x, -2, -2], [x, 2, -2], [x, 2, 2], [x, -2, 2]], [[0, 1, 2], [0, 2, 3]]


def test_the_device_screw_motion_is_the_hosts_in_float32():
    """warp_kernels.pose_after (the kernel's form of twist_pose's formula) on Warp's CPU device against the host's
    float64 poses_after: random twists, turning or not, forwards and backwards in time, within float32 round-off."""
    wp = pytest.importorskip("warp")
    from radarays_ros.tracing import warp_kernels
    from radarays_ros.tracing.warp import load_warp
    from radarays_ros.world.twist_pose import poses_after

    load_warp()
    rng = np.random.default_rng(11)
    n = 64
    rotation = Rotation.random(n, random_state=rng).as_matrix()
    position, velocity, angular = rng.uniform(-30, 30, (n, 3)), rng.uniform(-20, 20, (n, 3)), rng.uniform(-3, 3, (n, 3))
    angular[::4] = 0.0  # bodies that do not turn
    times = rng.uniform(-0.2, 0.2, n)
    want_rot, want_pos = poses_after(rotation, position, velocity, angular, times)

    @wp.kernel
    def posed(rot: wp.array(dtype=wp.mat33), pos: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3),
              w: wp.array(dtype=wp.vec3), t: wp.array(dtype=float), out_rot: wp.array(dtype=wp.mat33),
              out_pos: wp.array(dtype=wp.vec3)):
        i = wp.tid()
        p = warp_kernels.pose_after(rot[i], pos[i], v[i], w[i], t[i])
        out_rot[i] = p.rot
        out_pos[i] = p.pos

    arrays = [wp.array(a.astype(np.float32), dtype=kind, device="cpu") for a, kind in
              ((rotation, wp.mat33), (position, wp.vec3), (velocity, wp.vec3), (angular, wp.vec3))]
    out_rot, out_pos = wp.zeros(n, dtype=wp.mat33, device="cpu"), wp.zeros(n, dtype=wp.vec3, device="cpu")
    wp.launch(posed, dim=n, inputs=[*arrays, wp.array(times.astype(np.float32), dtype=float, device="cpu"), out_rot,
                                    out_pos], device="cpu")
    np.testing.assert_allclose(out_rot.numpy(), want_rot, atol=2e-6)
    np.testing.assert_allclose(out_pos.numpy(), want_pos, atol=2e-5)  # metres at up to ~35 m


def test_a_pair_ray_is_traced_only_inside_its_entitys_box_so_it_meets_no_other_slot():
    """Embree traces every swept entity in one BVH of slots (tracing/embree.py _Slots: entity k's mesh shifted by
    its slot's offset, slot 1 one spacing above slot 0 here). A ray falling onto entity 0 from that spacing above
    it starts, in slot space, right at entity 1: traced from its origin it would meet entity 1 at once; traced over
    its segment's part inside entity 0's swept box, as it must be, it meets entity 0's top."""
    from radarays_ros.tracing.embree import _SLOT_REACH

    scene = Scene()
    box = trimesh.creation.box([1.0, 1.0, 1.0])
    ids = [scene.add_entity(f"b{k}", TriMesh(box.vertices, box.faces), pose_to_matrix(100.0 * k, 0, 0), static=False)
           for k in range(2)]
    scene.set_poses([(i, pose_to_matrix(100.0 * k, 0, 0)) for k, i in enumerate(ids)],
                    twists=[((1e-3, 0.0, 0.0), (0.0, 0.0, 0.0))] * 2)
    backend = make_backend("embree", scene, threads=1)
    spacing = _SLOT_REACH + math.sqrt(0.75) + 1.0  # _Slots: reach + the largest radius + 1 m
    hits = backend.trace(np.float32([[0.0, 0.0, spacing]]), np.float32([[0.0, 0.0, -1.0]]), times=np.zeros(1))
    assert int(hits.entity[0]) == ids[0]
    assert math.isclose(float(hits.distance[0]), spacing - 0.5, abs_tol=1e-4)


def test_trusted_rays_check_their_times_shape_and_dtype_only():
    """Rays.trusted (a lidar's rotated table) takes float64 (N,) times as they are; another shape or dtype is one
    TracingError (their values come from a checked table: not scanned)."""
    from radarays_ros.tracing.backend import Rays

    o, d = forward_rays(3)
    times = np.array([0.0, 0.01, 0.02])
    assert Rays.trusted(o, d, times).times is times
    for bad in (times.astype(np.float32), times[:2], [0.0, 0.01, 0.02]):
        with pytest.raises(TracingError, match=r"trusted ray times must be a \(N,\) = \(3,\) float64"):
            Rays.trusted(o, d, bad)


def test_the_scenes_sweeping_ids_follow_every_way_a_twist_is_set_or_dropped():
    """Scene.sweeping_ids (what the backends ask every trace of rays with times) is always the set of entities
    whose twist moves them (Entity.sweeps), through set_twists, set_poses with and without twists,
    set_poses_array (twists dropped or kept), set_pose and remove_entity."""
    scene = Scene()
    box = trimesh.creation.box([1.0, 1.0, 1.0])
    ids = [scene.add_entity(f"b{k}", TriMesh(box.vertices, box.faces), pose_to_matrix(3.0 * k, 0, 0), static=False)
           for k in range(4)]

    def agrees(expected):
        assert scene.sweeping_ids() == {e.id for e in scene.entities if e.sweeps} == set(expected)

    agrees([])
    scene.set_twists(ids, [(1.0, 0, 0), (0, 0, 0), (0, 0, 0), (0, 0, 0)], [(0, 0, 0), (0, 0, 0), (0, 0, 2.0), (0, 0, 0)])
    agrees([ids[0], ids[2]])
    scene.set_twists([ids[0]], [(0.0, 0, 0)], [(0.0, 0, 0)])  # a zero twist moves nothing
    agrees([ids[2]])
    scene.set_poses([(ids[1], pose_to_matrix(3, 1, 0)), (ids[3], pose_to_matrix(9, 1, 0))],
                    twists=[((0, 2.0, 0), (0, 0, 0)), None])
    agrees([ids[1], ids[2]])
    scene.set_poses_array([ids[2]], pose_to_matrix(6, 1, 0)[None], keep_twists=True)
    agrees([ids[1], ids[2]])
    scene.set_poses_array([ids[2]], pose_to_matrix(6, 2, 0)[None])  # a pose without velocities: unknown
    agrees([ids[1]])
    scene.set_twists([ids[3]], [(0, 0, 1.0)], [(0, 0, 0)])
    scene.set_pose(ids[3], pose_to_matrix(9, 2, 0))
    agrees([ids[1]])
    scene.remove_entity(ids[1])
    agrees([])
