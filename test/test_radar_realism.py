"""The physical radar stage (sensor.model: physical) against analytic and statistical answers."""
from __future__ import annotations

import math
import threading

import numpy as np
import pytest
from scipy import stats

from radarays_ros.radar import RadarConfig, RadarSimulator
from radarays_ros.radar.physical import antenna, detector, doppler, radar_equation, range_response, speckle, stc
from radarays_ros.radar.physical.backscatter import wavelength
from radarays_ros.radar.physical.geometry import Clutter, Glints
from radarays_ros.radar.physical.stage import run_stage
from radarays_ros.radar.physical.thermal_noise import noise_power_w
from radarays_ros.world.materials import MaterialLibrary
from radarays_ros.world.mesh import TriMesh
from radarays_ros.world.scene import Scene
from radarays_ros.world.trajectory import Trajectory
from radarays_ros.world.transforms import pose_to_matrix
from support.radar_scenes import box

from support.radar_physical import EYE, LIB, NAMES, QUIET, ground, physical, plate, scene, trihedral  # noqa: F401


# -- 1. coherent summation and speckle ---------------------------------------------------------
def test_rough_ground_intensity_is_exponential_and_specular_plate_does_not_fade():
    cfg = physical(azimuth={"count": 64, "step_deg": -5.0}, scatter={"azimuth_correlation": False})
    world = scene(ground())
    speckled = RadarSimulator(cfg, world).simulate(EYE)
    expected = RadarSimulator(cfg.with_overrides({"scatter.speckle": False}), world).simulate(EYE)
    p, e = speckled.energy.astype(np.float64), expected.energy.astype(np.float64)
    band = slice(int(4.0 / 0.02), int(20.0 / 0.02))
    ratio = (p[:, band] / e[:, band])[e[:, band] > 0]
    # range-window neighbours are correlated: test every 8th bin (beyond the main lobe), K-S against Exp(1)
    sample = (p[:, band][:, ::8] / e[:, band][:, ::8]).ravel()
    assert stats.kstest(sample, "expon").pvalue > 0.01
    assert abs(ratio.mean() - 1.0) < 0.05
    assert np.mean(ratio < 0.1) == pytest.approx(1 - math.exp(-0.1), abs=0.02)  # deep fades as for Exp(1)
    # a metal plate at normal incidence: one coherent glint; the same level frame after frame
    sim = RadarSimulator(physical(azimuth={"count": 1}), scene(plate(15.0, 1.0)))
    peaks = np.array([sim.simulate(EYE).energy.max() for _ in range(12)])
    assert peaks.std() / peaks.mean() < 0.2  # fully developed speckle would give 1


def test_speckle_field_statistics_and_azimuth_correlation():
    rng = np.random.default_rng(1)
    z = speckle.unit_field(rng, (4000, 64), 0.6)
    intensity = np.abs(z) ** 2
    assert intensity.mean() == pytest.approx(1.0, abs=0.02)
    corr = np.corrcoef(intensity[:-1].ravel(), intensity[1:].ravel())[0, 1]
    assert corr == pytest.approx(0.36, abs=0.03)  # intensity correlation of a circular Gaussian = rho^2
    # overlap of two Gaussian two-way field patterns g(x) = exp(-4 ln2 x^2 / w^2): exp(-2 ln2 step^2 / w^2)
    w, step = math.radians(1.8), math.radians(0.9)
    assert antenna.field_correlation(step, w, "gaussian") == pytest.approx(math.exp(-2 * math.log(2) * (step / w) ** 2), rel=1e-3)


# -- 2. receiver chain -------------------------------------------------------------------------
def test_noise_only_image_is_ktbf_exponential_and_reads_in_half_db_counts():
    cfg = physical(azimuth={"count": 200}, receiver={"noise_dbm": None, "zero_dbm": -170.0})
    far = box((0.1, 0.1, 0.1), (500, 0, 0))
    img = RadarSimulator(cfg, scene((*far, "concrete"))).simulate(EYE)
    n = noise_power_w(cfg.receiver, cfg.fmcw)
    assert n == pytest.approx(1.380649e-23 * 290 * 10 ** 1.2 / 6e-4, rel=1e-9)
    p = img.energy.astype(np.float64)
    assert p.mean() == pytest.approx(n, rel=0.02)
    # bins 16 apart: the Hann main lobe spans +-2 resolutions = +-15 bins of 0.02 m; 8 apart the intensities
    # still correlate by 0.39 (measured), which breaks the K-S test's independence (p < 0.01 for ~1 seed in 6)
    assert stats.kstest((p[:, ::16] / n).ravel(), "expon").pvalue > 0.01
    median_counts = 2.0 * (10 * math.log10(n * math.log(2) * 1e3) + 170.0)
    assert np.median(img.image_f32) == pytest.approx(median_counts, abs=0.3)


def test_detector_units_saturation_and_stc():
    p = np.array([1e-3 * 10 ** (-14), 1e-3 * 10 ** (-13.95), 1.0], np.float32)  # -140 dBm, -139.5 dBm, +30 dBm
    c = detector.counts_float(p, -140.0, 0.5)
    assert c[0] == pytest.approx(0.0, abs=1e-3) and c[1] == pytest.approx(1.0, abs=1e-3)
    assert list(detector.quantise(c)) == [0, 1, 255]
    att = stc.attenuation_db(np.array([1.0, 5.0, 10.0, 20.0]), 10.0, 30.0)
    assert att == pytest.approx([30.0, 40 * math.log10(2), 0.0, 0.0])


def test_level_follows_radar_equation_and_not_the_ray_count():
    world = scene(ground("brick"))  # surface clutter (vegetation scatters from its volume: test_radar_glints)
    levels = []
    for n_az, n_el in [(8, 24), (32, 96)]:
        cfg = physical(azimuth={"count": 32, "step_deg": -11.25}, antenna={"samples_azimuth": n_az, "samples_elevation": n_el},
                       scatter={"speckle": False})
        img = RadarSimulator(cfg, world).simulate(EYE)
        levels.append(img.energy[:, int(5 / 0.02):int(25 / 0.02)].astype(np.float64).mean())
    assert 10 * math.log10(levels[1] / levels[0]) == pytest.approx(0.0, abs=0.5)


def test_trihedral_is_as_strong_as_its_geometry():
    # far field (R >> 2 D^2 / lambda ~ 60 m), a beam much wider than the corner: sigma = 4 pi a^4 / (3 lambda^2)
    edge, distance = 0.3, 150.0
    cfg = physical(azimuth={"count": 1}, range={"resolution": 0.01875, "bins": 8300},
                   antenna={"azimuth_width_deg": 1.0, "elevation_width_deg": 1.0, "samples_azimuth": 160,
                            "samples_elevation": 160},
                   scatter={"specular_bounces": 3, "speckle": False})
    img = RadarSimulator(cfg, scene(trihedral(distance, edge))).simulate(EYE)
    lam = wavelength(cfg.fmcw.carrier_hz)
    sigma = 4 * math.pi * edge ** 4 / (3 * lam ** 2)  # triangular trihedral (Knott Table 7.1)
    expected = radar_equation.constant(cfg.receiver, cfg.antenna, lam) * sigma / distance ** 4
    peak = float(img.energy.max())
    assert 10 * math.log10(peak / expected) == pytest.approx(0.0, abs=2.0)


def test_plate_at_45_degrees_returns_nothing_directly():
    cfg = physical(azimuth={"count": 1}, scatter={"speckle": False, "specular_bounces": 0})
    facing = RadarSimulator(cfg, scene(plate(10.0, 1.0))).simulate(EYE).energy.max()
    turned = RadarSimulator(cfg, scene(plate(10.0, 1.0, yaw=math.radians(45)))).simulate(EYE).energy.max()
    assert 10 * math.log10(facing / turned) > 40.0


# -- 3. FMCW range response --------------------------------------------------------------------
@pytest.mark.parametrize("window", ["rectangular", "hann", "hamming", "blackman"])
def test_point_response_width_in_metres_and_symmetry(window):
    cfg = physical(azimuth={"count": 1}, range={"resolution": 0.005, "bins": 4000}, fmcw={"window": window})
    at = 10.0025  # a bin centre
    glint = Glints(np.array([0]), np.array([at]), np.array([1e-6 + 0j]), np.zeros(1))
    empty = Clutter(np.zeros(0, np.int64), *([np.zeros(0)] * 4))
    out = run_stage(empty, glint, cfg, np.random.default_rng(0))
    p = out.power_w[0].astype(np.float64)
    centres = (np.arange(len(p)) + 0.5) * 0.005
    peak = int(np.argmax(p))
    assert centres[peak] == pytest.approx(at, abs=0.005)
    above = centres[p >= 0.5 * p.max()]
    width = above[-1] - above[0] + 0.005
    expected = range_response.HALF_POWER_WIDTH[window] * range_response.resolution(1e9)
    assert width == pytest.approx(expected, rel=0.05)
    k = 60  # symmetric about the target
    left, right = p[peak - k:peak][::-1], p[peak + 1:peak + 1 + k]
    assert np.allclose(left, right, rtol=0.2, atol=1e-5 * p.max())  # noise sits 60 dB under the peak


# -- 4. antenna --------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", ["gaussian", "sinc"])
def test_thin_pole_azimuth_width_is_the_two_way_pattern(shape):
    step = 0.05
    cfg = physical(azimuth={"count": 161, "start_deg": 4.0, "step_deg": -step},
                   antenna={"azimuth_pattern": shape, "samples_azimuth": 96, "samples_elevation": 8},
                   scatter={"speckle": False})
    pole = box((0.04, 0.04, 6.0), (20.0, 0, 0))
    sim = RadarSimulator(cfg, scene((*pole, "vegetation")))
    frames = [sim.simulate(EYE) for _ in range(8)]  # a 4 cm pole against 0.1-0.3 deg strata: average the draws
    img = frames[0]
    profile = np.mean([f.energy[:, int(19.9 / 0.02):int(20.2 / 0.02)].sum(axis=1) for f in frames], axis=0)
    az = np.degrees(img.azimuth_rad)
    above = az[profile >= 0.5 * profile.max()]
    measured = above.max() - above.min() + step
    assert measured == pytest.approx(antenna.two_way_width(1.8, shape), rel=0.1)
    assert antenna.two_way_width(1.8, "gaussian") == pytest.approx(1.8 / math.sqrt(2), rel=1e-4)


# -- 7. Doppler ----------------------------------------------------------------------------------
def test_alternating_chirps_shift_a_moving_target_by_v_fc_t_over_b():
    cfg = physical(azimuth={"count": 4}, range={"resolution": 0.005, "bins": 4000},
                   fmcw={"chirp": "alternating", "doppler": True, "velocity_channel": True})
    v = 10.0
    glints = Glints(np.arange(4), np.full(4, 10.0), np.full(4, 1e-6 + 0j), np.full(4, v))
    empty = Clutter(np.zeros(0, np.int64), *([np.zeros(0)] * 4))
    out = run_stage(empty, glints, cfg, np.random.default_rng(0))
    shift = v * cfg.fmcw.carrier_hz * cfg.fmcw.chirp_time_s / cfg.fmcw.bandwidth_hz
    peaks = (np.argmax(out.power_w, axis=1) + 0.5) * 0.005
    assert list(out.chirp_up) == [True, False, True, False]
    assert peaks == pytest.approx([10 + shift, 10 - shift, 10 + shift, 10 - shift], abs=0.005)
    assert doppler.range_shift(np.array([v]), np.array([1.0]), 76.5e9, 6e-4, 1e9)[0] == pytest.approx(0.459, abs=1e-3)


def test_ego_motion_gives_radial_velocity_channel():
    cfg = physical(azimuth={"count": 1}, fmcw={"velocity_channel": True}, scatter={"speckle": False})
    traj = Trajectory(np.array([0, 10**9], np.int64), np.stack([pose_to_matrix(0, 0, 0), pose_to_matrix(5, 0, 0)]))
    img = RadarSimulator(cfg, scene(plate(15.0, 1.0))).simulate(traj, t0_ns=500_000_000)
    cell = np.unravel_index(np.argmax(img.energy), img.energy.shape)
    assert img.velocity[cell] == pytest.approx(-5.0, abs=0.2)  # closing at 5 m/s


def test_compat_presets_keep_the_radarays_stage():
    for name in ("radarays_default", "mulran", "navtech_cir204"):
        from radarays_ros.radar.config import resolve_radar_config
        assert resolve_radar_config(name).sensor.model == "radarays"
    for name in ("navtech_ras6", "navtech_cts350x", "navtech_cir204_realistic"):
        from radarays_ros.radar.config import resolve_radar_config
        assert resolve_radar_config(name).sensor.model == "physical"


def test_mirror_ghost_and_bistatic_return_weighted_by_the_receive_pattern():
    # a metal mirror at 45 deg 5 m ahead sends the beam to a rough wall 5 m to the right of it (y = -5):
    # back along the mirror path the wall appears at 10 m (a ghost, full two-way gain); straight back
    # from the wall it arrives 45 deg off boresight, at (10 + 7.07) / 2 = 8.54 m, suppressed by g_rx
    mirror = plate(5.0, 1.5, yaw=math.radians(45))
    wall_mesh, wall_pose = box((12.0, 0.2, 6.0), (5.0, -5.1, 0))
    cfg = physical(azimuth={"count": 1}, scatter={"speckle": False, "specular_bounces": 1, "multipath": True},
                   antenna={"elevation_width_deg": 10.0})
    img = RadarSimulator(cfg, scene(mirror, (wall_mesh, wall_pose, "vegetation"))).simulate(EYE)
    p = img.energy[0].astype(np.float64)
    ghost = p[int(9.8 / 0.02):int(10.6 / 0.02)].max()
    direct = p[int(8.4 / 0.02):int(8.8 / 0.02)].max()
    noise = 10 ** ((cfg.receiver.noise_dbm - 30) / 10)
    assert ghost > 1e3 * noise
    sidelobe = antenna.one_way(math.radians(45), math.radians(1.8), "sinc")  # receive gain 45 deg off
    assert direct < max(100 * sidelobe * ghost, 10 * noise)


def test_same_seed_same_bytes_and_frames_differ():
    world = scene(ground())
    cfg = physical(azimuth={"count": 8})
    a, b = RadarSimulator(cfg, world), RadarSimulator(cfg, world)
    first_a, first_b = a.simulate(EYE), b.simulate(EYE)
    assert first_a.image.tobytes() == first_b.image.tobytes()
    assert a.simulate(EYE).image.tobytes() != first_a.image.tobytes()  # speckle and samples redrawn per frame


def test_moving_entity_radial_velocity_and_chirp_shift():
    world = Scene(LIB)
    mesh, pose = box((0.01, 1.0, 1.0), (20.005, 0, 0))
    plate_id = world.add_entity("car", mesh, pose, material="metal", static=False)
    cfg = physical(azimuth={"count": 2, "step_deg": -0.1}, range={"resolution": 0.005, "bins": 5000},
                   fmcw={"velocity_channel": True, "doppler": True, "chirp": "alternating"}, scatter={"speckle": False})
    sim = RadarSimulator(cfg, world)
    sim.simulate(EYE, t0_ns=0)
    world.set_pose(plate_id, pose_to_matrix(20.005 - 2.5, 0, 0))  # 10 m/s towards the radar over 0.25 s
    img = sim.simulate(EYE, t0_ns=250_000_000)
    peaks = (np.argmax(img.energy, axis=1) + 0.5) * 0.005
    shift = -10.0 * cfg.fmcw.carrier_hz * cfg.fmcw.chirp_time_s / cfg.fmcw.bandwidth_hz  # closing: v = -10 m/s
    assert peaks == pytest.approx([17.5 + shift, 17.5 - shift], abs=0.01)
    cell = (0, int(np.argmax(img.energy[0])))
    assert img.velocity[cell] == pytest.approx(-10.0, abs=0.1)


def test_bistatic_return_needs_a_free_way_back():
    # as the mirror test, with a blocker between the wall's lit spot and the radar: the straight return goes,
    # the ghost back along the mirror path stays
    mirror = plate(5.0, 1.5, yaw=math.radians(45))
    wall_mesh, wall_pose = box((12.0, 0.2, 6.0), (5.0, -5.1, 0))
    blocker_mesh, blocker_pose = box((3.2, 0.2, 6.0), (2.6, -2.5, 0))  # across every line of sight wall -> radar
    cfg = physical(azimuth={"count": 1}, scatter={"speckle": False, "specular_bounces": 1},
                   antenna={"elevation_width_deg": 10.0, "azimuth_pattern": "gaussian", "azimuth_width_deg": 20.0})
    items = [mirror, (wall_mesh, wall_pose, "vegetation")]
    open_way = RadarSimulator(cfg, scene(*items)).simulate(EYE).energy[0].astype(np.float64)
    blocked = RadarSimulator(cfg, scene(*items, (blocker_mesh, blocker_pose, "glass"))).simulate(EYE).energy[0].astype(np.float64)
    direct = slice(int(8.45 / 0.02), int(8.65 / 0.02))
    assert open_way[direct].max() > 30 * blocked[direct].max()
    ghost = slice(int(9.9 / 0.02), int(10.3 / 0.02))
    assert blocked[ghost].max() == pytest.approx(open_way[ghost].max(), rel=1e-6)
    free = RadarSimulator(cfg.with_overrides({"scatter.occlusion_test": False}), scene(*items, (blocker_mesh, blocker_pose, "glass")))
    assert free.simulate(EYE).energy[0][direct].max() > 30 * blocked[direct].max()


def test_radar_points_of_a_physical_image_find_the_plate():
    from radarays_ros.io.radar_image import radar_points

    cfg = physical(azimuth={"count": 4, "step_deg": -0.9}, receiver={"noise_dbm": None, "zero_dbm": -170.0})
    img = RadarSimulator(cfg, scene(plate(10.0, 1.0))).simulate(EYE)
    pts = radar_points(img, k=1, threshold=100.0)
    best = pts[np.argmax(pts["intensity"])]
    assert math.hypot(best["x"], best["y"]) == pytest.approx(10.0, abs=0.05)


def _turning_platform(omega: float, mount_xyz, seconds: float = 0.4, rate_hz: float = 200.0) -> Trajectory:
    """The sensor's trajectory (base x mount, sampled as the runner samples it) of a platform turning
    at omega rad/s about z through the world origin, with the sensor at lever arm mount_xyz."""
    times = np.arange(-0.1, seconds, 1.0 / rate_hz)
    mount = pose_to_matrix(*mount_xyz)
    return Trajectory(np.round(times * 1e9).astype(np.int64), np.stack([pose_to_matrix(0, 0, 0, 0, 0, omega * t) @ mount for t in times]))


@pytest.mark.parametrize("mount, azimuth_deg, expected", [
    ((0.0, 2.0, 0.0), 0.0, +2.0),  # lever arm 2 m to the left: v = omega x r = (-2, 0, 0): a wall ahead recedes at 2 m/s
    ((2.0, 0.0, 0.0), 0.0, 0.0),  # lever arm ahead: v = (0, 2, 0), across the beam: no Doppler
    ((2.0, 0.0, 0.0), 90.0, -2.0),  # ... and a wall to the left closes at 2 m/s
    ((0.0, 0.0, 0.0), 0.0, 0.0),  # a turn about the antenna itself changes no range
])
def test_platform_turn_moves_the_antenna_by_omega_cross_lever_arm(mount, azimuth_deg, expected):
    omega = 1.0
    cfg = physical(azimuth={"count": 1, "start_deg": azimuth_deg}, fmcw={"velocity_channel": True},
                   scatter={"speckle": False})
    heading = math.radians(azimuth_deg)  # at t0 = 0 the platform has not turned: the wall on that bearing
    centre = np.array(mount) + 15.0 * np.array([math.cos(heading), math.sin(heading), 0.0])
    wall = box((0.2, 4.0, 4.0), tuple(centre), heading)
    img = RadarSimulator(cfg, scene((*wall, "brick"))).simulate(_turning_platform(omega, mount), t0_ns=0)
    cell = np.unravel_index(np.argmax(img.energy), img.energy.shape)
    assert img.range_m[cell[1]] == pytest.approx(14.9, abs=0.1)
    assert img.velocity[cell] == pytest.approx(expected * omega, abs=0.05)


def test_sensor_velocity_holds_to_the_end_of_the_trajectory():
    from radarays_ros.radar.physical.motion import trajectory_velocity

    track = Trajectory([0, 10**9], np.stack([pose_to_matrix(0.0, 0, 0), pose_to_matrix(3.0, 0, 0)]))
    v = trajectory_velocity(track, np.array([0, 5 * 10**8, 10**9]))
    assert v == pytest.approx(np.array([[3.0, 0, 0]] * 3))  # not halved where the track ends


MS = 1_000_000  # ns


def test_velocity_and_twists_share_one_end_rule_the_derivative_of_the_held_pose():
    # Trajectory.at holds the pose past its ends, so the velocity there is zero; inside the span the central
    # difference over +-5 ms is clipped to it (one-sided at the ends, not halved). A track at (3, -1, 0.5) m/s
    # from t = 1 s to 3 s: every velocity by hand.
    from radarays_ros.radar.physical.motion import trajectory_twists, trajectory_velocity

    v = np.array([3.0, -1.0, 0.5])
    t = np.array([1000, 2000, 3000], np.int64) * MS
    track = Trajectory(t, np.stack([pose_to_matrix(*(v * (k - 1.0)), 0.0, 0.0, 0.3) for k in (1, 2, 3)]))
    expected = {0: 0, 1000 * MS - 1: 0,  # before the start: held
                1000 * MS: v, 1002 * MS: v, 2000 * MS: v, 2998 * MS: v, 3000 * MS: v,  # the ends: one-sided
                3000 * MS + 1: 0, 3004 * MS: 0, 5000 * MS: 0}  # past the end: held (not extended)
    times = np.array(list(expected), np.int64)
    got = trajectory_velocity(track, times)
    for k, (when, want) in enumerate(expected.items()):
        np.testing.assert_allclose(got[k], np.broadcast_to(want, 3), rtol=0, atol=1e-9, err_msg=f"t = {when} ns")
        (velocity, angular), = trajectory_twists(track, [np.eye(4)], int(when))
        np.testing.assert_array_equal(velocity, got[k])  # the same rule, the same numbers
        np.testing.assert_allclose(angular, 0.0, atol=1e-12)  # constant heading
    # a kink at 1 s (2 m/s, then 4 m/s along x): the window straddles it inside, is clipped at the end
    kinked = Trajectory(np.array([0, 1000, 2000], np.int64) * MS,
                        np.stack([pose_to_matrix(x, 0.0, 0.0) for x in (0.0, 2.0, 6.0)]))
    at = np.array([1000, 1998, 2000], np.int64) * MS
    # 1 s: (4 * 5 mm + 2 * 5 mm) / 10 ms = 3; 1.998 s: over [1.993, 2.0] s, 4 (a difference reaching past the end
    # into the held pose would give 4 * 7 / 10 = 2.8); 2 s: 4
    np.testing.assert_allclose(trajectory_velocity(kinked, at)[:, 0], [3.0, 4.0, 4.0], rtol=0, atol=1e-9)
    for when, want in zip(at, [3.0, 4.0, 4.0]):
        assert trajectory_twists(kinked, [np.eye(4)], int(when))[0][0][0] == pytest.approx(want, abs=1e-9)
    still = Trajectory([5], pose_to_matrix(1.0, 2.0, 3.0)[None])  # one pose: never moving
    assert not trajectory_velocity(still, np.array([0, 5, 10], np.int64)).any()


def test_velocity_and_twists_agree_on_a_turning_track():
    from radarays_ros.radar.physical.motion import trajectory_twists, trajectory_velocity

    rng = np.random.default_rng(7)
    t = np.cumsum(rng.integers(3 * MS, 40 * MS, 12))
    track = Trajectory(t, np.stack([pose_to_matrix(*rng.normal(size=3), 0.0, 0.0, y) for y in rng.normal(size=12)]))
    times = np.concatenate([t, rng.integers(t[0] - 20 * MS, t[-1] + 20 * MS, 50)])
    velocities = trajectory_velocity(track, times)
    for when, velocity in zip(times, velocities):
        np.testing.assert_array_equal(trajectory_twists(track, [np.eye(4)], int(when))[0][0], velocity)


def _door():
    """(scene, the door's id, its pivot pose, a one-azimuth physical radar with a velocity channel at the origin):
    a rough 10 m wall across the beam at x = 20 m, hinged 3 m to the beam's left, free to move."""
    world = Scene(LIB)
    mesh, _ = box((0.2, 10.0, 4.0), (0.0, 0.0, 0.0))
    pivot = pose_to_matrix(20.1, 3.0, 0.0)
    wall = world.add_entity("door", mesh, pivot, material="brick", static=False)
    cfg = physical(azimuth={"count": 1}, fmcw={"velocity_channel": True}, scatter={"speckle": False})
    return world, wall, pivot, RadarSimulator(cfg, world)


def test_turning_entity_radial_velocity_is_omega_cross_lever_arm():
    # a rough wall across the beam at x = 20 m, turning at omega about a vertical axis 3 m to the left of
    # the beam: the point straight ahead, p - o = (-0.1, -3, 0), moves at omega z x (p - o) = omega (3, -0.1, 0):
    # radial velocity +3 omega (receding)
    omega, dt = 0.5, 0.02
    world, wall, pivot, sim = _door()
    sim.simulate(EYE, t0_ns=0)
    world.set_pose(wall, pose_to_matrix(20.1, 3.0, 0.0, 0.0, 0.0, omega * dt))
    img = sim.simulate(EYE, t0_ns=int(dt * 1e9))
    cell = np.unravel_index(np.argmax(img.energy), img.energy.shape)
    assert img.range_m[cell[1]] == pytest.approx(20.0, abs=0.1)
    assert img.velocity[cell] == pytest.approx(3.0 * omega, abs=0.1)


def test_a_twist_given_with_the_pose_is_the_entity_velocity_from_the_first_frame():
    # the turning door above, moved by a source that knows its motion (a scenario's trajectory: Scene.set_poses with
    # twists): its radial velocity is 3 omega in the first frame already; moved later without a twist (a pose
    # stream), the velocity is again the difference of its poses: here it stands still, so zero
    omega = 0.5
    world, wall, pivot, sim = _door()
    world.set_poses([(wall, pivot)], twists=[(np.zeros(3), np.array([0.0, 0.0, omega]))])
    img = sim.simulate(EYE, t0_ns=0)
    cell = np.unravel_index(np.argmax(img.energy), img.energy.shape)
    assert img.range_m[cell[1]] == pytest.approx(20.0, abs=0.1)
    assert img.velocity[cell] == pytest.approx(3.0 * omega, abs=0.1)
    world.set_poses([(wall, pivot)], twists=[(np.zeros(3), np.array([0.0, 0.0, omega]))])
    world.set_poses_array([wall], [pivot])  # a pose stream's batch: no twist, unknown again
    assert world.entity(wall).twist is None
    world.set_poses([(wall, pivot)], twists=[(np.zeros(3), np.array([0.0, 0.0, omega]))])
    world.set_pose(wall, pivot)  # one pose, no twist: unknown again
    assert world.entity(wall).twist is None
    img = sim.simulate(EYE, t0_ns=10**8)
    cell = np.unravel_index(np.argmax(img.energy), img.energy.shape)
    assert img.velocity[cell] == pytest.approx(0.0, abs=0.01)


def test_a_bad_twist_moves_nothing():
    from radarays_ros.errors import ConfigError

    world = Scene(LIB)
    mesh, _ = box((1.0, 1.0, 1.0), (0.0, 0.0, 0.0))
    crate = world.add_entity("crate", mesh, EYE, material="brick", static=False)
    for bad in ((np.zeros(3), np.array([0.0, np.nan, 0.0])), (np.zeros(2), np.zeros(3)), (np.zeros(3),)):
        with pytest.raises(ConfigError, match=r"twist of entity 'crate.*': expected finite"):
            world.set_poses([(crate, pose_to_matrix(1.0, 0.0, 0.0))], twists=[bad])
        assert np.array_equal(world.entity(crate).pose, EYE) and world.entity(crate).twist is None
    with pytest.raises(ConfigError, match=r"twist of entity 'crate.*': expected finite"):  # a pose stream's velocities
        world.set_twists([crate], np.zeros((1, 3)), np.full((1, 3), np.inf))
    assert np.array_equal(world.entity(crate).pose, EYE) and world.entity(crate).twist is None


def test_rotation_vectors_are_the_log_map_at_every_angle():
    # the closed form against scipy's Rotation on random rotations (stacked) and at chosen angles (one matrix):
    # none, tiny (where theta / sin(theta) -> 1), moderate, and near and at pi (the scipy branch)
    from scipy.spatial.transform import Rotation

    from radarays_ros.radar.physical.motion import rotation_vectors

    many = Rotation.random(500, random_state=3)
    np.testing.assert_allclose(rotation_vectors(many.as_matrix()), many.as_rotvec(), rtol=0, atol=1e-12)
    axis = np.array([0.3, -0.5, 0.8]) / np.linalg.norm([0.3, -0.5, 0.8])
    for angle in (0.0, 1e-9, 1e-4, 0.7, 2.5, 3.0, math.pi - 1e-7, math.pi):
        got = rotation_vectors(Rotation.from_rotvec(angle * axis).as_matrix())
        assert got.shape == (3,)
        want = angle * axis if angle < math.pi else Rotation.from_rotvec(angle * axis).as_rotvec()  # +-axis at pi
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


def test_trajectory_twists_are_the_rigid_motion_of_each_offset():
    # a trajectory driving +x at 10 m/s while turning at 0.5 rad/s (poses 1 s apart, slerped): a body 2 m along its
    # y axis moves at v + omega x r; the same at the trajectory's first and last instants (one-sided there, not halved)
    from radarays_ros.radar.physical.motion import trajectory_twists

    t = np.arange(3, dtype=np.int64) * 10**9
    track = Trajectory(t, np.stack([pose_to_matrix(10.0 * k, 0.0, 0.0, 0.0, 0.0, 0.5 * k) for k in range(3)]))
    offset = pose_to_matrix(0.0, 2.0, 0.0)
    for at in (0, 5 * 10**8, 10**9 + 3 * 10**8, 2 * 10**9):
        yaw = 0.5 * at * 1e-9
        lever = np.array([-2.0 * math.sin(yaw), 2.0 * math.cos(yaw), 0.0])  # R(yaw) (0, 2, 0)
        (v0, w0), (v, w) = trajectory_twists(track, [np.eye(4), offset], at)
        assert w0 == pytest.approx([0.0, 0.0, 0.5], abs=1e-9) and w == pytest.approx([0.0, 0.0, 0.5], abs=1e-9)
        assert v0 == pytest.approx([10.0, 0.0, 0.0], abs=1e-9)
        # to the one-sided difference's error at the start, omega^2 |r| h / 2 = 1.25 mm/s against |omega x r| = 1 m/s
        assert v == pytest.approx(np.array([10.0, 0.0, 0.0]) + np.cross([0.0, 0.0, 0.5], lever), abs=2e-3)
    still = Trajectory(t[:1], pose_to_matrix(1.0, 2.0, 3.0)[None])
    assert [np.abs(x).max() for x in trajectory_twists(still, [offset], 0)[0]] == [0.0, 0.0]


def test_stage_bytes_do_not_depend_on_the_thread_count(monkeypatch):
    # row blocks draw from their own seeded generators: a pool of threads or one thread, the same image
    from radarays_ros.radar.physical import stage

    world = scene(ground(), plate(12.0, 1.0))
    cfg = physical(azimuth={"count": 60, "step_deg": -0.9}, receiver={"noise_dbm": None, "zero_dbm": -170.0})
    pooled = RadarSimulator(cfg, world).simulate(EYE)
    monkeypatch.setattr(stage, "_parallel", lambda task, items, workers=None: [task(item) for item in items])
    serial = RadarSimulator(cfg, world).simulate(EYE)
    assert pooled.image.tobytes() == serial.image.tobytes()
    assert pooled.energy.tobytes() == serial.energy.tobytes()
    assert len(range(0, 60, stage.ROWS_PER_SEED)) > 1  # (more than one block)


def test_the_stage_uses_as_many_threads_as_the_tracing(monkeypatch):
    # `radarays batch --threads 1` runs many frames side by side: their stages must not each start a
    # pool the size of the machine. The stage's pool follows the backend's threads; same image either way.
    from radarays_ros import threads
    from radarays_ros.radar.physical import stage
    from radarays_ros.tracing import make_backend

    world = scene(ground(), plate(12.0, 1.0))
    cfg = physical(azimuth={"count": 60, "step_deg": -0.9})
    sizes = []
    real = stage._parallel
    monkeypatch.setattr(stage, "_parallel", lambda task, items, workers=None: sizes.append(workers) or real(task, items, workers))
    one = RadarSimulator(cfg, world, backend=make_backend("embree", world, threads=1)).simulate(EYE)
    assert set(sizes) == {1}
    sizes.clear()
    three = RadarSimulator(cfg, world, backend=make_backend("embree", world, threads=3)).simulate(EYE)
    assert set(sizes) == {3} and threads.kept("frame", 3) is not None
    assert one.image.tobytes() == three.image.tobytes()


def test_sensors_with_other_thread_counts_run_side_by_side():
    # a rig runs its sensors on their own threads: one sensor's stage pool must not be replaced under another
    from concurrent.futures import ThreadPoolExecutor

    from radarays_ros import threads
    from radarays_ros.tracing import make_backend

    world = scene(ground(), plate(12.0, 1.0))
    cfg = physical(azimuth={"count": 60, "step_deg": -0.9})

    def sims():
        return [RadarSimulator(cfg, world, backend=make_backend("embree", world, threads=t)) for t in (2, 3)]

    def frames(sim):  # each frame draws from its own stream: four different images
        return [sim.simulate(EYE).image.tobytes() for _ in range(4)]

    want = [frames(sim) for sim in sims()]  # one after the other
    with ThreadPoolExecutor(2) as pool:
        runs = [pool.submit(frames, sim) for sim in sims()]
        got = [run.result(timeout=120) for run in runs]
    assert got == want and want[0] == want[1] and len(set(want[0])) == 4
    two, three = sims()
    two.simulate(EYE)
    in_use = threads.kept("frame", 2)
    three.simulate(EYE)  # another size: a pool of its own, the first one still takes work
    assert threads.kept("frame", 3) is not in_use
    assert threads.kept("frame", 2) is in_use and in_use.submit(int).result(timeout=10) == 0


def test_geometry_blocks_give_the_returns_of_one_block(monkeypatch):
    # the frame's passes run as AZIMUTH_BLOCKS tasks; joined pass by pass they are the same rays, in the
    # same order, as one block's (mirror bounces, bistatic returns and occlusion traces included): same image
    from radarays_ros.radar.physical import geometry

    world = scene(ground(), plate(12.0, 3.0, yaw=0.3), plate(8.0, 2.0, yaw=-0.5, material="glass"))
    cfg = physical(azimuth={"count": 60, "step_deg": -6.0}, scatter={"specular_bounces": 2, "multipath": True})
    runs = []
    for blocks in (4, 1):
        monkeypatch.setattr(geometry, "AZIMUTH_BLOCKS", blocks)
        sim = RadarSimulator(cfg, world)
        sim.ray_log = []
        runs.append((sim.simulate(EYE), sim.ray_log))
    (blocked, blocked_rays), (single, single_rays) = runs
    assert len(blocked_rays) == len(single_rays) > 3  # first hits, bounces and occlusion traces
    for pass_b, pass_s in zip(blocked_rays, single_rays):  # origins, directions (and an occlusion pass's reach)
        assert len(pass_b) == len(pass_s) and all(b.tobytes() == s.tobytes() for b, s in zip(pass_b, pass_s))
    assert any(len(p) == 3 for p in single_rays)  # an occlusion pass logs its reach
    assert blocked.energy.tobytes() == single.energy.tobytes()
    assert blocked.image.tobytes() == single.image.tobytes()


def test_a_failing_row_block_fails_the_frame_and_frees_the_blocks_after_it(monkeypatch):
    # row blocks wait for the one before (the azimuth correlation): an error in one must end the frame, not hang it
    from radarays_ros.radar.physical import stage

    calls = []

    def failing_parts(rng, shape):
        calls.append(shape)
        if len(calls) == 3:
            raise MemoryError("block 2")
        return speckle_unit_parts(rng, shape)

    speckle_unit_parts = stage.speckle.unit_parts
    monkeypatch.setattr(stage.speckle, "unit_parts", failing_parts)
    cfg = physical(azimuth={"count": 100, "step_deg": -0.9})
    world = scene(ground(), plate(12.0, 1.0))
    with pytest.raises(MemoryError, match="block 2"):
        RadarSimulator(cfg, world).simulate(EYE)
    # no pool thread is left waiting: the next frame, on the same pool, completes
    frames = []
    after = threading.Thread(target=lambda: frames.append(RadarSimulator(cfg, world).simulate(EYE)), daemon=True)
    after.start()
    after.join(timeout=120)
    assert not after.is_alive() and len(frames) == 1


def test_row_block_clutter_steps_are_the_whole_frame_rows():
    # each row block sums its own returns' difference array: the same floats as the frame's rows
    from radarays_ros.radar.physical import stage

    rng = np.random.default_rng(4)
    a, b, n = 60, 500, 5000
    azimuth = rng.integers(0, a, n)
    start = rng.uniform(-5, b + 5, n)
    end = start + rng.exponential(20.0, n)
    power = rng.lognormal(0.0, 3.0, n)
    whole = stage.running_power(stage.power_steps(azimuth, start, end, power, (a, b)))
    rows = stage._rows_of(azimuth, a, lambda sel, k0, k1: stage.power_steps(
        azimuth[sel] - k0, start[sel], end[sel], power[sel], (k1 - k0, b)))
    for k0 in range(0, a, stage.ROWS_PER_SEED):
        k1 = min(k0 + stage.ROWS_PER_SEED, a)
        block = stage.running_power(rows(k0, k1))
        assert block.shape[1] <= whole.shape[1]
        assert block.tobytes() == np.ascontiguousarray(whole[k0:k1, :block.shape[1]]).tobytes()
        assert not whole[k0:k1, block.shape[1]:].any()


@pytest.mark.parametrize("bin_m", [0.02, 0.1498])  # bins finer than c/2B (zero padding), and bins of c/2B
def test_noise_drawn_in_the_range_spectrum_has_the_windowed_noise_statistics(bin_m):
    # thermal noise only: N per bin after the window, exponential intensity, and the range correlation of
    # white noise through the window: |sum_j K_j K_(j+l)|^2 / (sum_j K_j^2)^2 for the intensity at lag l
    from radarays_ros.radar.physical.range_response import range_kernel

    cfg = physical(azimuth={"count": 400}, range={"resolution": bin_m, "bins": 1024},
                   receiver={"noise_dbm": -100.0}, seed=5)
    empty = Clutter(np.zeros(0, np.int64), *([np.zeros(0)] * 4))
    glints = Glints(np.zeros(0, np.int64), np.zeros(0), np.zeros(0, np.complex128), np.zeros(0))
    p = run_stage(empty, glints, cfg, np.random.default_rng(0)).power_w.astype(np.float64) / 1e-13
    assert p.mean() == pytest.approx(1.0, abs=0.01)
    taps = range_kernel("hann", 1e9, bin_m, cfg.fmcw.response_half_width).taps
    for lag in (1, 2, 4):
        expected = (np.sum(taps[:-lag] * taps[lag:]) / np.sum(taps ** 2)) ** 2
        measured = np.corrcoef(p[:, :-lag].ravel(), p[:, lag:].ravel())[0, 1]
        assert measured == pytest.approx(expected, abs=0.02)
    spaced = p[:, ::int(np.ceil(4 * 0.15 / bin_m))]  # two main lobes apart
    assert stats.kstest(spaced.ravel(), "expon").pvalue > 0.01


def test_a_forked_process_gets_its_own_stage_pool():
    # batch workers fork after the parent may have run a frame: the child makes its own pool and draws the same bytes
    import multiprocessing

    from radarays_ros import threads
    from radarays_ros.radar.physical import stage

    cfg = physical(azimuth={"count": 60}, range={"bins": 300})
    here = np.frombuffer(_physical_frame_bytes(cfg), np.uint8)  # the parent's pool exists now
    assert threads.kept("frame", 2) is not None and len(range(0, 60, stage.ROWS_PER_SEED)) > 1
    with multiprocessing.get_context("fork").Pool(1) as pool:
        there = pool.apply_async(_physical_frame_bytes, (cfg,)).get(timeout=120)
    assert there == here.tobytes()


def _physical_frame_bytes(cfg) -> bytes:
    from radarays_ros.tracing import make_backend

    world = scene(plate(3.0, 1.0))  # two tracing threads, so the stage runs on a pool whatever the cores
    return RadarSimulator(cfg, world, backend=make_backend("embree", world, threads=2)).simulate(EYE).image.tobytes()


def test_a_firing_time_jittered_out_of_the_frame_keeps_the_moving_sensors_velocity():
    # the runner and nodes pose a sweep by a trajectory over the frame [t0, t0 + period] only; an azimuth whose
    # jittered time falls before t0 (half the first azimuths of a realistic preset) is still moving at 5 m/s
    from radarays_ros.radar.physical.simulate import sensor_velocities

    window = Trajectory(np.array([0, 250], np.int64) * MS, np.stack([pose_to_matrix(0.0, 0, 0), pose_to_matrix(1.25, 0, 0)]))
    got = sensor_velocities(window, np.array([-20_000, 0, 125 * MS, 250 * MS + 20_000]), 0, 250 * MS)
    np.testing.assert_allclose(got, [[5.0, 0, 0]] * 4, rtol=0, atol=1e-9)
    # a trajectory that really ends inside the frame holds its pose there: the sensor stands still
    ends = Trajectory(np.array([0, 100], np.int64) * MS, np.stack([pose_to_matrix(0.0, 0, 0), pose_to_matrix(0.5, 0, 0)]))
    np.testing.assert_allclose(sensor_velocities(ends, np.array([50, 200]) * MS, 0, 250 * MS),
                               [[5.0, 0, 0], [0.0, 0, 0]], rtol=0, atol=1e-9)
