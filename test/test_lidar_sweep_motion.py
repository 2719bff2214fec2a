"""`timing.moving_entities: sweep`: a spinning lidar meets a moving entity where its twist has taken it by each
column's firing time, as a real sensor's sweep does (a passing car stretched or squeezed), checked against the
wall's position written out by hand; `frame` (the default) keeps every ray at the frame's start."""
import numpy as np
import pytest
import trimesh

from lidar_ros import LidarSimulator, load_sensor
from radarays_ros.errors import ConfigError
from radarays_ros.tracing import make_backend
from radarays_ros.world.mesh import TriMesh
from radarays_ros.world.scene import Scene
from radarays_ros.world.transforms import pose_to_matrix

SPEED = -20.0  # m/s along x: the wall comes towards the sensor
FACE_X = 9.9  # the wall's face at the frame's start (a 0.2 m thick wall centred at x = 10)


def approaching_wall() -> tuple[Scene, int]:
    scene = Scene()
    box = trimesh.creation.box([0.2, 30.0, 20.0])
    wall = scene.add_entity("wall", TriMesh(box.vertices, box.faces), pose_to_matrix(10, 0, 0), static=False,
                            material="concrete")
    scene.set_poses([(wall, pose_to_matrix(10, 0, 0))], twists=[((SPEED, 0.0, 0.0), (0.0, 0.0, 0.0))])
    return scene, wall


def wall_points(mode: str, overrides=None, backend: str = "embree"):
    """(x of every return on the wall, its column's firing time) of one VLP-16 frame at the origin."""
    scene, _ = approaching_wall()
    exact = {"noise.sigma": 0.0, "noise.resolution": 0.0}  # the geometry alone
    cfg = load_sensor("VLP-16", {"timing.moving_entities": mode, **exact, **(overrides or {})})
    tracer = make_backend("warp", scene, device="cpu") if backend == "warp" else make_backend("embree", scene, threads=2)
    sim = LidarSimulator(cfg, scene, tracer, seed=1)
    scan = sim.simulate(pose_to_matrix(0, 0, 0))
    hit = scan.hit
    times = np.broadcast_to(np.asarray(cfg.column_times)[cfg.pixel_column], hit.shape)
    return scan.xyz[hit][:, 0].astype(np.float64), times[hit], cfg


def test_a_sweep_meets_the_approaching_wall_where_it_is_at_each_firing():
    x, t, cfg = wall_points("sweep")
    assert len(x) > 1000 and np.ptp(t) > 0.2 / cfg.rate_hz  # the wall spans a good part of the sweep
    np.testing.assert_allclose(x, FACE_X + SPEED * t, atol=2e-3)  # float32 points at up to ~12 m
    assert np.ptp(x) > 1.0  # metres of motion over the sweep, not noise


def test_frame_mode_keeps_the_wall_where_it_is_at_the_frame_start():
    x, _, _ = wall_points("frame")
    np.testing.assert_allclose(x, FACE_X, atol=2e-3)


def test_sub_rays_and_echoes_follow_the_firing_time_too():
    """With a footprint of sub-rays each traced at its beam's firing time, the echo is still on the wall there
    (within the footprint's own range spread at oblique incidence: r x 1.5 mrad x tan(incidence), ~2 cm)."""
    x, t, _ = wall_points("sweep", {"beam.divergence_mrad": 3.0, "beam.sub_rays": 4})
    error = np.abs(x - (FACE_X + SPEED * t))
    assert np.median(error) < 3e-3 and error.max() < 0.03  # the wall moves 1.5 m over these firings


def test_the_warp_backend_meets_the_wall_at_each_firing_too():
    """On the Warp backend (its CPU device, the kernel CUDA runs) a sweeping lidar meets the wall where it is at
    each firing, as on Embree (float32 poses on the device: within the same 2 mm); frame mode where it stood."""
    pytest.importorskip("warp")
    x, t, _ = wall_points("sweep", backend="warp")
    assert len(x) > 1000 and np.ptp(x) > 1.0
    np.testing.assert_allclose(x, FACE_X + SPEED * t, atol=2e-3)
    x, _, _ = wall_points("frame", backend="warp")
    np.testing.assert_allclose(x, FACE_X, atol=2e-3)


def test_a_bad_mode_is_refused_with_the_allowed_values():
    with pytest.raises(ConfigError, match="moving_entities.*frame.*sweep"):
        load_sensor("VLP-16", {"timing.moving_entities": "always"})


def test_the_realistic_profile_sweeps():
    assert load_sensor("VLP-16", realistic=True).effects.timing.moving_entities == "sweep"


def test_a_sweep_frame_is_the_same_on_any_number_of_threads():
    scene, _ = approaching_wall()
    cfg = load_sensor("VLP-16", {"timing.moving_entities": "sweep"}, realistic=True)
    frames = [LidarSimulator(cfg, scene, make_backend("embree", scene, threads=k), seed=3).simulate(pose_to_matrix(0, 0, 0))
              for k in (1, 2)]
    assert frames[0].xyz.tobytes() == frames[1].xyz.tobytes()
    assert frames[0].intensity.tobytes() == frames[1].intensity.tobytes()
