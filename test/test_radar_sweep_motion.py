"""`scatter.moving_entities: sweep` (the physical presets): a spinning radar sees a moving entity where its twist
has taken it by each azimuth's time. Over a Navtech sweep of 250 ms a car at 20 m/s moves 5 m, so a wall coming
towards the radar reads nearer in the azimuths that look at it later. Checked against the wall's position
written out by hand, in the whole image (clutter and glints) and in the glints alone."""
import math

import numpy as np
import pytest
import trimesh

from radarays_ros.errors import ConfigError
from radarays_ros.radar import RadarConfig, RadarSimulator
from radarays_ros.radar.physical import backscatter, facet_glints, radar_equation
from radarays_ros.radar.physical.geometry import trace_physical
from radarays_ros.radar.physical.motion import EntityMotion
from radarays_ros.radar.physical.simulate import entity_motion, scatter_table, scene_scatterers
from radarays_ros.tracing import make_backend
from radarays_ros.world.mesh import TriMesh
from radarays_ros.world.scene import Scene
from radarays_ros.world.transforms import pose_to_matrix
from radarays_ros.resources import data_path
from radarays_ros.world.twist_pose import poses_at
from support.radar_physical import trihedral_facing

SPEED = -20.0  # m/s along x: towards the radar
FACE_X = 29.9  # the wall's face at the frame's start (0.2 m thick, centred at x = 30)


def preset(**scatter) -> RadarConfig:
    cfg = RadarConfig.from_yaml(data_path("radar/navtech_ras6.yaml"))
    # x (azimuth 0) half-way through the sweep, so its azimuths fire 125 ms after the frame's start
    # no range-Doppler coupling: at 20 m/s it moves the wall +-1.1 m between up and down chirps (doppler.py)
    return cfg.with_overrides({"azimuth.start_deg": 180.0, "fmcw.doppler": False,
                               **{f"scatter.{k}": v for k, v in scatter.items()}})


def approaching_wall(speed: float = SPEED) -> Scene:
    scene = Scene()
    box = trimesh.creation.box([0.2, 12.0, 6.0])
    wall = scene.add_entity("wall", TriMesh(box.vertices, box.faces), pose_to_matrix(30, 0, 0), static=False,
                            material="metal")
    scene.set_poses([(wall, pose_to_matrix(30, 0, 0))], twists=[((speed, 0.0, 0.0), (0.0, 0.0, 0.0))])
    return scene


def wall_ranges(cfg, scene, backend=None) -> tuple[np.ndarray, np.ndarray]:
    """(range of the strongest bin between 15 and 40 m, seconds after the frame's start) of the azimuths
    within 5 degrees of x (the wall's face square to them)."""
    sim = RadarSimulator(cfg, scene) if backend is None else RadarSimulator(cfg, scene, backend=backend)
    img = sim.simulate(pose_to_matrix(0, 0, 0), t0_ns=2_000_000_000)
    facing = np.flatnonzero(np.abs(np.angle(np.exp(1j * img.azimuth_rad))) < math.radians(5))
    window = np.flatnonzero((img.range_m > 15) & (img.range_m < 40))
    peak = img.range_m[window[np.argmax(img.energy[facing][:, window], axis=1)]]
    return peak, (img.azimuth_time_ns[facing] - img.t0_ns) * 1e-9


def test_the_image_shows_the_wall_where_it_is_at_each_azimuth_time():
    ranges, t = wall_ranges(preset(), approaching_wall())
    assert preset().scatter.moving_entities == "sweep"  # the shipped preset
    assert 0.1 < t.min() and t.max() < 0.15  # half-way through the sweep
    expected = FACE_X + SPEED * t
    # the peak of a speckled return within the range response (a few 4.4 cm bins); the motion is 2.5 m
    assert np.median(np.abs(ranges - expected)) < 0.05 and np.abs(ranges - expected).max() < 0.2
    frame = wall_ranges(preset(moving_entities="frame"), approaching_wall())[0]
    assert np.median(np.abs(frame - FACE_X)) < 0.05 and np.abs(frame - FACE_X).max() < 0.2  # where it stood at the start


def glints(cfg, scene, wall="wall"):
    """facet_glints.frame_glints of one sweep at the origin, its azimuths' times as trace_physical gets them:
    (azimuth, range, radial velocity) of each glint, and (seconds after the start, bearing) of each azimuth."""
    sim = RadarSimulator(cfg, scene)
    times, poses, theta, column_rot = sim.column_frames(pose_to_matrix(0, 0, 0), 0)
    azimuth_s = np.asarray(times, np.int64) * 1e-9
    moving = entity_motion(sim, 0)
    sweeping = cfg.scatter.moving_entities == "sweep"  # (frame: no times, as simulate_physical passes them)
    assert not sweeping or moving.swept[scene.entity(wall).id]
    lam = backscatter.wavelength(cfg.fmcw.carrier_hz)
    origins = np.ascontiguousarray(poses[:, :3, 3])
    az, rng_m, _, v_r = facet_glints.frame_glints(
        scene_scatterers(sim), sim.backend, origins, column_rot, np.zeros_like(origins), cfg, scatter_table(sim),
        radar_equation.constant(cfg.receiver, cfg.antenna, lam), lam, 100.0, 0.0, moving, True,
        azimuth_s if sweeping else None)
    return az, rng_m, v_r, azimuth_s, theta


@pytest.mark.parametrize("speed", [SPEED, -SPEED])
def test_glints_of_a_swept_entity_are_where_it_is_at_their_azimuth_time(speed):
    """facet_glints alone: the wall's specular glint (the foot of the perpendicular, at range x(t)) in every
    azimuth that holds it, against x(t) = 29.9 + v t; its radial velocity the wall's own. Receding, the glint
    lies behind where the wall stood at the start: its line of sight is traced at its time too."""
    cfg = preset()
    scene = approaching_wall(speed)
    az, rng_m, v_r, azimuth_s, _ = glints(cfg, scene)
    face = np.abs(rng_m - FACE_X) < 4.0
    assert face.sum() >= 3
    np.testing.assert_allclose(rng_m[face], FACE_X + speed * azimuth_s[az[face]], atol=1e-6)
    np.testing.assert_allclose(v_r[face], speed, atol=1e-6)  # receding positive


def test_a_turning_entity_is_seen_turned_by_its_azimuth_time():
    """A wall turning about z (0.8 rad/s) through its own centre seen broadside: its glint's foot moves along it,
    the range stays the perpendicular distance from the radar to the turned face: 30 cos(a) - 0.1, a = w t."""
    scene = Scene()
    box = trimesh.creation.box([0.2, 40.0, 6.0])
    wall = scene.add_entity("wall", TriMesh(box.vertices, box.faces), pose_to_matrix(30, 0, 0), static=False,
                            material="metal")
    w = 0.8
    scene.set_poses([(wall, pose_to_matrix(30, 0, 0))], twists=[((0.0, 0.0, 0.0), (0.0, 0.0, w))])
    az, rng_m, _, azimuth_s, theta = glints(preset(), scene)
    a = w * azimuth_s[az]
    foot = (np.abs(rng_m - (30 * np.cos(a) - 0.1)) < 1e-6)
    assert foot.sum() >= 3
    bearing = np.arctan2(np.sin(theta[az[foot]]), np.cos(theta[az[foot]]))
    # the azimuths whose beam holds the foot are centred on its bearing, a (the face's normal turned by a)
    assert abs(bearing.mean() - a[foot].mean()) < math.radians(1)


def test_entities_without_twist_keep_the_frame_bytes():
    """No twist anywhere: a sweep frame is the frame of before, byte for byte."""
    scene = approaching_wall()
    scene.set_poses([("wall", pose_to_matrix(30, 0, 0))])  # no twist: unknown velocity
    sweep = RadarSimulator(preset(), scene).simulate(pose_to_matrix(0, 0, 0))
    frame = RadarSimulator(preset(moving_entities="frame"), scene).simulate(pose_to_matrix(0, 0, 0))
    assert sweep.image.tobytes() == frame.image.tobytes()


def test_the_warp_backend_shows_the_wall_where_it_is_at_each_azimuth_time_too():
    """The physical preset on the Warp backend (its CPU device, the kernel CUDA runs): the wall at each azimuth's
    time, as on Embree; with moving_entities frame, where it stood at the frame's start."""
    pytest.importorskip("warp")
    scene = approaching_wall()
    ranges, t = wall_ranges(preset(), scene, make_backend("warp", scene, device="cpu"))
    expected = FACE_X + SPEED * t
    assert np.median(np.abs(ranges - expected)) < 0.05 and np.abs(ranges - expected).max() < 0.2
    scene = approaching_wall()
    frame = wall_ranges(preset(moving_entities="frame"), scene, make_backend("warp", scene, device="cpu"))[0]
    assert np.median(np.abs(frame - FACE_X)) < 0.05 and np.abs(frame - FACE_X).max() < 0.2


def test_a_bad_mode_names_the_allowed_values():
    with pytest.raises(ConfigError, match="moving_entities.*frame.*sweep"):
        preset(moving_entities="always")


def test_a_swept_point_moves_with_the_velocity_field_where_it_is_then():
    """A constant twist is a constant velocity field: EntityMotion.at (v + w x (x - o), o the origin at the start)
    at a point where the motion has carried it t later is that motion's derivative there (world/twist_pose.py)."""
    v, w, o = np.array([6.0, -2.0, 0.0]), np.array([0.0, 0.3, 0.9]), np.array([4.0, 1.0, 0.5])
    moving = EntityMotion(v[None], w[None], o[None], swept=np.array([True]))
    start = pose_to_matrix(*o)
    local = np.array([1.5, -0.7, 0.2])
    t, h = 0.2, 1e-6
    (r1, r0), (p1, p0) = poses_at(start, v, w, [t + h, t - h])
    numeric = (r1 @ local + p1 - r0 @ local - p0) / (2 * h)
    (rt,), (pt,) = poses_at(start, v, w, [t])
    np.testing.assert_allclose(moving.at(np.array([0]), (rt @ local + pt)[None])[0], numeric, atol=1e-6)


def test_clutter_of_a_swept_entity_starts_where_it_is_at_each_azimuth_time():
    """The geometry passes alone (no glints): in each azimuth square to the wall, its nearest footprint starts
    at the foot of the perpendicular, x(t) = 29.9 + v t (within the first-order footprint of the tube there,
    which reaches a few cm nearer; the wall moves 2.5 m by then)."""
    cfg = preset()
    scene = approaching_wall()
    sim = RadarSimulator(cfg, scene)
    times, poses, theta, column_rot = sim.column_frames(pose_to_matrix(0, 0, 0), 0)
    azimuth_s = np.asarray(times, np.int64) * 1e-9
    origins = np.ascontiguousarray(poses[:, :3, 3])
    clutter, _ = trace_physical(sim.backend, origins, column_rot, np.zeros_like(origins), cfg, scatter_table(sim),
                                np.random.default_rng(0), 100.0, entities=entity_motion(sim, 0), times=azimuth_s)
    facing = np.flatnonzero(np.abs(np.angle(np.exp(1j * theta))) < math.radians(3))
    nearest = np.array([clutter.near_m[clutter.azimuth == k].min() for k in facing])
    np.testing.assert_allclose(nearest, FACE_X + SPEED * azimuth_s[facing], atol=0.15)


def test_the_entities_of_one_rigid_body_are_looked_at_together_with_the_same_glints(monkeypatch):
    """Two walls of one turning and driving body (the same velocity field, each entity's twist at its own origin):
    their glints are found in one look (one set of azimuths near them), and are those each wall gives alone."""
    v, w = np.array([8.0, 3.0, 0.0]), np.array([0.0, 0.0, 0.4])

    def body(names):
        scene = Scene()
        box = trimesh.creation.box([0.2, 6.0, 3.0])
        for name, (x, y) in {"a": (30.0, 4.0), "b": (-25.0, -6.0)}.items():
            if name in names:
                origin = np.array([x, y, 0.0])
                entity = scene.add_entity(name, TriMesh(box.vertices, box.faces), pose_to_matrix(x, y, 0), static=False,
                                          material="metal")
                scene.set_poses([(entity, pose_to_matrix(x, y, 0))], twists=[(v + np.cross(w, origin), w)])
        return scene

    looks = []
    near = facet_glints._azimuths_near
    monkeypatch.setattr(facet_glints, "_azimuths_near", lambda *a: looks.append(1) or near(*a))
    both = glints(preset(), body("ab"), wall="a")
    assert len(looks) == 1
    alone = [glints(preset(), body(n), wall=n) for n in "ab"]
    key = lambda g: sorted(zip(g[0].tolist(), np.round(g[1], 9).tolist()))  # (azimuth, range) of each glint
    assert key(both) == sorted(key(alone[0]) + key(alone[1])) and len(key(both)) > 6


MIRROR_Y = 5.0  # a static wall's face, the plane y = 5 facing the radar at the origin: a mirror (mirror_ghosts.py)
CORNER_AT_START = np.array([30.0, 2.0, 0.0])  # a corner reflector in front of it, its axis on the radar's image
IMAGE_OF_RADAR = np.array([0.0, 2 * MIRROR_Y, 0.0])
CORNER_VELOCITY = np.array([-12.0, 0.0, 0.0])  # along the wall


def corner_before_a_wall(post_velocity=None) -> Scene:
    """post_velocity: also a 1 x 1 x 6 m post at (4.35, 2.5) at the frame's start, driving at that velocity (at 40 m/s
    along x it stands at (8.95, 2.5) 115 ms in: on the way radar -> X ~ (17.9, 5) of the corner's ghost then, whose
    azimuths fire 112 to 120 ms in; at the start it stands 0.8 m beside that way)."""
    scene = Scene()
    box = trimesh.creation.box([60.0, 0.2, 6.0])
    scene.add_entity("mirror", TriMesh(box.vertices, box.faces), pose_to_matrix(30, MIRROR_Y + 0.1, 0), material="metal")
    mesh, pose, _ = trihedral_facing(CORNER_AT_START, IMAGE_OF_RADAR)
    corner = scene.add_entity("corner", mesh, pose, static=False, material="metal")
    scene.set_poses([(corner, pose)], twists=[(CORNER_VELOCITY, (0.0, 0.0, 0.0))])  # its origin: the apex
    if post_velocity is not None:
        box = trimesh.creation.box([1.0, 1.0, 6.0])
        post = scene.add_entity("post", TriMesh(box.vertices, box.faces), pose_to_matrix(4.35, 2.5, 0), static=False,
                                material="metal")
        scene.set_poses([(post, pose_to_matrix(4.35, 2.5, 0))], twists=[(post_velocity, (0.0, 0.0, 0.0))])
    return scene


def ghost_apexes(mode, scene, corner_velocity=CORNER_VELOCITY, mirror_speed=0.0, swept="corner"):
    """(indices of the corner's ghost apex glints, azimuth, range, radial velocity, seconds after the start of each
    azimuth, P(t) and |S'(t) - P(t)| of each glint). mirror_speed: the mirror's face y = 5 + mirror_speed t, so
    S'(t) = (0, 2 (5 + mirror_speed t), 0), the radar (at the origin) mirrored in it."""
    az, rng_m, v_r, azimuth_s, theta = glints(preset(mirror_ghosts=True, moving_entities=mode), scene, wall=swept)
    t = azimuth_s[az] if mode == "sweep" else np.zeros(len(az))
    corner = CORNER_AT_START + np.asarray(corner_velocity) * t[:, None]
    image = np.zeros((len(t), 3))
    image[:, 1] = 2.0 * (MIRROR_Y + mirror_speed * t)
    expected = np.linalg.norm(corner - image, axis=1)
    # the ghost's bearing from the radar (15 degrees; the corner's direct return is at 4 degrees, 1 m nearer,
    # the wall's own glints beyond 60 degrees); in each azimuth its apex is the farthest of the corner's glints
    # (its three faces and three folds are nearer S')
    bearing = np.angle(np.exp(1j * theta[az]))
    looked = np.abs(bearing - math.atan2(IMAGE_OF_RADAR[1] - CORNER_AT_START[1], CORNER_AT_START[0])) < math.radians(8)
    near = np.flatnonzero(looked & (np.abs(rng_m - expected) < 0.3))
    apex = np.array([k for k in near if rng_m[k] == rng_m[near[az[near] == az[k]]].max()], np.int64)
    return apex, az, rng_m, v_r, azimuth_s, corner, expected


@pytest.mark.parametrize("mode", ["sweep", "frame"])
def test_the_ghost_of_a_swept_corner_is_where_the_corner_is_at_its_azimuth_time(mode):
    """A corner driving along a wall at 12 m/s: its ghost in the wall is seen from the radar's image S' = (0, 10, 0)
    at range |S' - P(t)|, P(t) = P0 + v t at each azimuth's time t (about 130 ms into the sweep: 1.6 m on), and its
    radial velocity is v . (P(t) - S') / |P(t) - S'| (receding positive). With moving_entities frame: P0 in every
    azimuth, the velocity the same field's."""
    apex, az, rng_m, v_r, azimuth_s, corner, expected = ghost_apexes(mode, corner_before_a_wall())
    assert len(apex) >= 3
    assert azimuth_s[az[apex]].min() > 0.1  # the corner has moved 1.2 m by then: the two modes' ghosts 1 m apart
    np.testing.assert_allclose(rng_m[apex], expected[apex], atol=1e-6)
    radial = np.einsum("ij,j->i", corner[apex] - IMAGE_OF_RADAR, CORNER_VELOCITY) / expected[apex]
    # the glint's point is the apex moved 9 mm along the corner's axis (facet_glints.SKIP): 1e-4 m/s off at 31 m
    np.testing.assert_allclose(v_r[apex], radial, atol=1e-3)


def test_the_ghost_of_a_swept_corner_is_hidden_by_what_is_in_its_way_then():
    """A post driving at 40 m/s stands on the ghost's way radar -> X while its azimuths fire: the ghost is gone.
    Driving the other way from the same place at the frame's start, it is not in the way then: the ghost is seen."""
    assert len(ghost_apexes("sweep", corner_before_a_wall(post_velocity=(40.0, 0.0, 0.0)))[0]) == 0
    assert len(ghost_apexes("sweep", corner_before_a_wall(post_velocity=(-40.0, 0.0, 0.0)))[0]) >= 3


PLATE_SPEED = 6.0  # m/s along +y, the plate's normal: away from the radar (its face 0.8 m farther 130 ms in)


def corner_before_a_moving_plate(corner_speed: float) -> Scene:
    """The wall of corner_before_a_wall as a moving plate (60 x 6 m, a mirror face) driving away along its normal,
    the corner before it static (corner_speed 0) or driving with it (one rigid body)."""
    scene = Scene()
    box = trimesh.creation.box([60.0, 0.2, 6.0])
    pose = pose_to_matrix(30, MIRROR_Y + 0.1, 0)
    plate = scene.add_entity("mirror", TriMesh(box.vertices, box.faces), pose, static=False, material="metal")
    mesh, corner_pose, _ = trihedral_facing(CORNER_AT_START, IMAGE_OF_RADAR)
    corner = scene.add_entity("corner", mesh, corner_pose, static=corner_speed == 0.0, material="metal")
    scene.set_poses([(plate, pose)] + ([(corner, corner_pose)] if corner_speed else []),
                    twists=[((0.0, PLATE_SPEED, 0.0), (0.0, 0.0, 0.0))] * (1 + bool(corner_speed)))
    return scene


@pytest.mark.parametrize("mode", ["sweep", "frame"])
@pytest.mark.parametrize("corner_speed", [0.0, PLATE_SPEED])
def test_the_ghost_in_a_moving_face_is_seen_in_the_face_where_it_is_at_its_azimuth_time(mode, corner_speed):
    """A plate driving away along its normal at 6 m/s: its face is the plane y = 5 + v t at each azimuth's time t,
    the radar's image in it S'(t) = (0, 10 + 2 v t, 0) (1.6 m farther 130 ms in), and the ghost of the corner
    before it (static, or driving with the plate) at |S'(t) - P(t)| (0.4 m farther than from the start's S').
    With moving_entities frame: the plate and the corner where they stood at the start. The Doppler is the image's
    and the corner's: the rate of that range."""
    corner_velocity = (0.0, corner_speed, 0.0)
    apex, az, rng_m, v_r, azimuth_s, _, expected = ghost_apexes(
        mode, corner_before_a_moving_plate(corner_speed), corner_velocity, PLATE_SPEED, swept="mirror")
    # at the looked-at beam's edge (+-2 widths, mirror_ghosts.BEAM_WIDTHS) an azimuth may hold one face of the
    # corner alone, not its apex: the apexes are in the azimuths that hold the corner's faces and folds with them
    near = np.abs(rng_m - expected) < 0.3
    apex = np.array([k for k in apex if (near & (az == az[k])).sum() >= 3], np.int64)
    assert len(apex) >= 3
    assert azimuth_s[az[apex]].min() > 0.1
    np.testing.assert_allclose(rng_m[apex], expected[apex], atol=1e-6)
    # the Doppler is the rate of |P(t) - S'(t)|: the image S' recedes at 2 v along y (the face moving away along its
    # normal), the corner at its own velocity: u . (v_P - v_S'), u the unit vector from S' to P
    t = azimuth_s[az[apex]] if mode == "sweep" else np.zeros(len(apex))
    corner = CORNER_AT_START + np.outer(t, corner_velocity)
    image = np.zeros((len(apex), 3))
    image[:, 1] = 2.0 * (MIRROR_Y + PLATE_SPEED * t)
    u = (corner - image) / np.linalg.norm(corner - image, axis=1)[:, None]
    radial = u @ (np.array(corner_velocity) - np.array([0.0, 2.0 * PLATE_SPEED, 0.0]))
    assert np.abs(radial).min() > 1.0  # (the face's own motion shows: without it 0 or of the other sign)
    np.testing.assert_allclose(v_r[apex], radial, atol=1e-3)  # (the glint's point 9 mm off the apex, as above)
