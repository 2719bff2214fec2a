"""Radar physics against analytic answers: bins, Fresnel, reflectors, ghosts, refraction, motion."""
from __future__ import annotations

import math

import numpy as np
import pytest

from radarays_ros.radar import RadarSimulator
from radarays_ros.radar.fresnel import fresnel_split
from radarays_ros.world.trajectory import Trajectory
from radarays_ros.world.transforms import pose_to_matrix
from support.radar_scenes import config, library, scene_with, wall_x

from support.frames_paths import frames, radar_on  # noqa: F401  (frames: the host/device fixture)

EYE = np.eye(4)


def on_path(frames: str, cfg, scene):
    """The simulator of a frame path (frames_paths.py) for the image-only tests: returns.keep off (device
    frames keep no raw returns; the image is the same, test_skipping_waves_beyond_the_last_bin...)."""
    return radar_on(frames, cfg.with_overrides({"returns.keep": False}), scene, "embree")


def returns_of(img, column=0, bounce=None):
    r = img.returns
    sel = r["azimuth"] == column
    if bounce is not None:
        sel &= r["bounce"] == bounce
    return r[sel]


@pytest.mark.parametrize("distance", [1.26, 3.01, 7.53])
@pytest.mark.parametrize("kernel", ["none", "triangular"])
def test_wall_peaks_in_bin_floor_d_over_res(distance, kernel, frames):
    cfg = config(kernel={"type": kernel, "width": 20, "mode": 0.35}, range={"resolution": 0.05, "bins": 400})
    img = on_path(frames, cfg, scene_with(wall_x(distance))).simulate(EYE)
    assert int(np.argmax(img.image_f32[0])) == math.floor(distance / 0.05)
    # the strongest return of the column maps to energy_max * signal_max (per-column normalisation)
    assert img.image_f32[0].max() == pytest.approx(cfg.output.energy_max * cfg.output.signal_max, rel=1e-5)


def test_fresnel_by_hand_normal_and_oblique():
    d = np.array([[1.0, 0.0, 0.0]])
    n = np.array([[-1.0, 0.0, 0.0]])
    r, cos_i, r_dir, t_dir, refracts = fresnel_split(d, n, np.array([0.3]), np.array([0.05]), 0.5)
    assert r[0] == pytest.approx(((0.05 - 0.3) / 0.35) ** 2, rel=1e-9)  # 0.5102
    assert r[0] == pytest.approx(0.51, abs=0.001)
    assert refracts[0] and np.allclose(t_dir[0], [1, 0, 0]) and np.allclose(r_dir[0], [-1, 0, 0])
    # 40 degrees, textbook Fresnel with refractive indices n = c / v (n1 = 1, n2 = 6)
    ti = math.radians(40.0)
    d = np.array([[math.cos(ti), math.sin(ti), 0.0]])
    r, *_ , t_dir, _ = fresnel_split(d, n, np.array([0.3]), np.array([0.05]), 0.5)
    n1, n2 = 1.0, 6.0
    tt = math.asin(n1 / n2 * math.sin(ti))
    rs = (n1 * math.cos(ti) - n2 * math.cos(tt)) / (n1 * math.cos(ti) + n2 * math.cos(tt))
    rp = (n2 * math.cos(ti) - n1 * math.cos(tt)) / (n2 * math.cos(ti) + n1 * math.cos(tt))
    assert r[0] == pytest.approx(0.5 * rs * rs + 0.5 * rp * rp, rel=1e-9)
    assert math.asin(t_dir[0, 1]) == pytest.approx(tt, rel=1e-9)  # Snell with velocities


def test_total_internal_reflection_and_perfect_reflector():
    n = np.array([[-1.0, 0.0, 0.0]] * 2)
    angles = np.radians([5.0, 30.0])  # critical angle from v 0.05 into air: asin(0.05/0.3) = 9.6 deg
    d = np.stack([np.cos(angles), np.sin(angles), np.zeros(2)], axis=1)
    r, *_, refracts = fresnel_split(d, n, np.full(2, 0.05), np.full(2, 0.3), 0.5)
    assert refracts[0] and r[0] < 1.0
    assert not refracts[1] and r[1] == 1.0
    many = np.radians(np.linspace(0, 89, 30))
    d = np.stack([np.cos(many), np.sin(many), np.zeros(30)], axis=1)
    r, *_, refracts = fresnel_split(d, np.tile([-1.0, 0, 0], (30, 1)), np.full(30, 0.3), np.zeros(30), 0.5)
    assert np.all(r == 1.0) and not refracts.any()  # velocity 0: everything reflected at every angle


def test_metal_reflects_everything_and_hides_what_is_behind():
    scene = scene_with(("plate", (0.1, 1.0, 1.0), (3.05, 0, 0), "metal"), wall_x(6.0))
    sim = RadarSimulator(config(tracing={"passes": 3}), scene)
    img = sim.simulate(EYE)
    first = returns_of(img, bounce=0)
    assert len(first) == 20 and np.all(np.abs(first["range"] - 3.0) < 0.01)
    # reflected energy 1 (R = 1) times the metal BRDF A + B cos^C(theta_i), theta_i = angle to the plate normal
    cos_i = np.sort(sim.cone()[0][:, 0])
    np.testing.assert_allclose(np.sort(first["energy"] - 1.0), np.sort(cos_i ** 2000), rtol=1e-4, atol=1e-6)
    assert not np.any(np.abs(returns_of(img)["range"] - 6.0) < 0.5)  # nothing reaches the wall behind


def test_glass_splits_energy_by_fresnel():
    scene = scene_with(("pane", (0.1, 2.0, 2.0), (2.05, 0, 0), "glass"))
    img = RadarSimulator(config(), scene).simulate(EYE)
    first = returns_of(img, bounce=0)
    # normal incidence: n = c / v, air 0.3 m/ns -> n1 = 1, glass 0.05 m/ns -> n2 = 6; R = ((n1 - n2) / (n1 + n2))^2
    # = 25/49 for both polarisations, times the BRDF (A = 1, B = 0)
    n1, n2 = 0.3 / 0.3, 0.3 / 0.05
    assert np.allclose(first["energy"], ((n1 - n2) / (n1 + n2)) ** 2, atol=2e-3)


def test_air_velocity_objects_are_invisible():
    base = RadarSimulator(config(tracing={"passes": 3}), scene_with(wall_x(5.02))).simulate(EYE)
    cloaked_scene = scene_with(wall_x(5.02), ("cloak", (1.0, 2.0, 2.0), (2.5, 0, 0), "ghost"))
    cloaked = RadarSimulator(config(tracing={"passes": 3}), cloaked_scene).simulate(EYE)
    np.testing.assert_allclose(cloaked.image_f32, base.image_f32, atol=1e-4)
    assert not np.any(np.abs(returns_of(cloaked)["range"] - 2.0) < 0.1)


def test_mirror_ghost_at_total_path_length():
    # a metal mirror at x = 2 turned 45 degrees sends the beam to +y; a metal wall at y = 3 sends it back
    scene = scene_with(("mirror", (0.002, 1.0, 1.0), (2.0, 0, 0), "flat_metal", math.radians(-45.0)),
                       ("wall", (4.0, 0.2, 4.0), (2.0, 3.11, 0), "flat_metal"))
    cfg = config(tracing={"passes": 2}, range={"resolution": 0.05, "bins": 400})
    img = RadarSimulator(cfg, scene).simulate(EYE)
    first, ghost = returns_of(img, bounce=0), returns_of(img, bounce=1)
    assert np.allclose(first["range"], 2.0, atol=0.02)
    assert len(ghost) and np.allclose(ghost["range"], 2.0 + 3.01, atol=0.02)  # one-way path 2 + 3.01 m
    assert img.image_f32[0, 100] > 0 and img.image_f32[0, 40] > 0
    # without multi-reflection recording the ghost disappears
    cfg2 = config(tracing={"passes": 2}, range={"resolution": 0.05, "bins": 400}, returns={"multi_reflection": False})
    img2 = RadarSimulator(cfg2, scene).simulate(EYE)
    assert img2.image_f32[0, 100] == 0 and img2.image_f32[0, 40] > 0


def test_refraction_delays_echoes_inside_slow_media():
    # 0.3 m of v = 0.1 m/ns in front of a metal wall at 5 m: apparent range 5 + 0.3 (0.3/0.1 - 1) = 5.6 m
    scene = scene_with(("slab", (0.3, 2.0, 2.0), (3.15, 0, 0), "slow"), wall_x(5.0))
    img = RadarSimulator(config(tracing={"passes": 4}), scene).simulate(EYE)
    ranges = returns_of(img)["range"]
    assert np.any(np.abs(ranges - 5.6) < 0.01)
    assert not np.any(np.abs(ranges - 5.0) < 0.3)  # the wall never shows at its geometric distance
    assert np.any(np.abs(ranges - 3.0) < 0.01)  # the slab's own front face


def test_multipath_range_gate_and_occlusion():
    # a 45-degree mirror at x = 3 sends the beam to +y; a diffuse wall at y = 2 returns straight to the sensor
    items = [("mirror", (0.002, 1.0, 1.0), (3.0, 0, 0), "flat_metal", math.radians(-45.0)),
             ("wall", (4.0, 0.2, 4.0), (3.0, 2.1, 0), "diffuse_half")]
    expected = (5.0 + math.hypot(3.0, 2.0)) / 2.0  # (c t + |h|) / 2
    cfg = config(tracing={"passes": 2}, returns={"multipath": True, "multi_reflection": False, "keep": True})
    img = RadarSimulator(cfg, scene_with(*items)).simulate(EYE)
    multi = returns_of(img, bounce=1)
    assert len(multi) and np.allclose(multi["range"], expected, atol=0.02)
    assert np.allclose(multi["energy"], 0.5, rtol=1e-6)  # BRDF A = 0.5, R = 1
    gated = config(tracing={"passes": 2}, returns={"multipath": True, "multi_reflection": False, "multipath_threshold": 0.6})
    assert len(returns_of(RadarSimulator(gated, scene_with(*items)).simulate(EYE), bounce=1)) == 0  # cos = 0.55
    blocker = ("blocker", (0.3, 0.3, 0.3), (1.5, 1.0, 0), "metal")
    open_cfg = config(tracing={"passes": 2}, returns={"multipath": True, "multi_reflection": False})
    occl_cfg = config(tracing={"passes": 2}, returns={"multipath": True, "multi_reflection": False, "occlusion_test": True})
    assert len(returns_of(RadarSimulator(open_cfg, scene_with(*items, blocker)).simulate(EYE), bounce=1))  # original: no test
    assert len(returns_of(RadarSimulator(occl_cfg, scene_with(*items, blocker)).simulate(EYE), bounce=1)) == 0


def test_empty_columns_are_finite_in_every_normalisation():
    for mode, ambient in [("radarays", "none"), ("radarays", "perlin"), ("gazebo", "perlin"), ("global", "uniform"), ("db", "none")]:
        cfg = config(output={"normalisation": mode}, noise={"ambient": ambient})
        img = RadarSimulator(cfg, scene_with(wall_x(3.0, span=1.0))).simulate(EYE)  # only column 0 sees it
        assert np.all(np.isfinite(img.image_f32)), mode
        if mode == "radarays" and ambient == "none":
            assert img.image[1:].max() == 0 and img.image[0].max() == 60


def test_seeded_runs_are_identical_and_seeds_differ():
    scene = scene_with(wall_x(4.0), ("post", (0.3, 0.3, 2.0), (2.0, 1.0, 0), "wall_stone"))
    cfg = config(beam={"width_deg": 8.0, "samples": 30, "redraw": "per_frame"}, tracing={"passes": 3},
                 noise={"ambient": "perlin"}, kernel={"type": "triangular", "width": 10})
    a = [RadarSimulator(cfg, scene).simulate(EYE) for _ in range(2)]
    sim = RadarSimulator(cfg, scene)
    b = [sim.simulate(EYE), sim.simulate(EYE)]
    np.testing.assert_array_equal(a[0].image_f32, a[1].image_f32)
    np.testing.assert_array_equal(a[0].image_f32, b[0].image_f32)
    assert not np.array_equal(b[0].image_f32, b[1].image_f32)  # per-frame cone and noise: frames differ
    other = RadarSimulator(cfg.with_overrides({"seed": 8}), scene).simulate(EYE)
    assert not np.array_equal(other.image_f32, a[0].image_f32)


def test_motion_distortion_from_a_trajectory(frames):
    scene = scene_with(wall_x(5.0), wall_x(-5.0, name="back"))
    cfg = config(azimuth={"count": 400, "step_deg": -0.9, "rate_hz": 4.0}, beam={"samples": 4})
    traj = Trajectory([0, 250_000_000], [pose_to_matrix(0, 0, 0), pose_to_matrix(2.5, 0, 0)])  # 10 m/s along +x
    img = on_path(frames, cfg, scene).simulate(traj)
    assert img.azimuth_time_ns[200] == 125_000_000
    assert int(np.argmax(img.image_f32[0])) == 100  # fired at t = 0 from x = 0
    assert int(np.argmax(img.image_f32[200])) == math.floor(6.25 / 0.05)  # facing -x from x = 1.25
    static = on_path(frames, cfg, scene).simulate(EYE)
    assert int(np.argmax(static.image_f32[200])) == 100


def test_scroll_single_azimuth_and_range_offset(frames):
    # 3.02 m: mid-bin, so float32 rounding of the box's face (3.1 - 0.1) cannot move the peak across a bin edge
    scene = scene_with(wall_x(3.02, span=1.0))
    img = on_path(frames, config(azimuth={"count": 8, "step_deg": -45.0, "scroll": 3}), scene).simulate(EYE)
    assert int(np.argmax(img.image.max(axis=1))) == 3 and img.azimuth_rad[3] == 0.0
    single = on_path(frames, config(azimuth={"count": 1, "start_deg": 0.0}), scene).simulate(EYE)
    assert single.image.shape == (1, 200) and int(np.argmax(single.image_f32[0])) == 60
    shifted = on_path(frames, config(range={"resolution": 0.05, "bins": 200, "offset": 1.0}), scene).simulate(EYE)
    assert int(np.argmax(shifted.image_f32[0])) == 40 and shifted.range_m[0] == 1.0


def test_radar_equation_and_db_scale(frames):
    scene = scene_with(("near", (0.1, 0.5, 0.5), (2.05, 0, 0), "flat_metal"), wall_x(4.0, material="flat_metal"))
    cfg = config(tracing={"passes": 1}, output={"normalisation": "global", "radar_equation": True})
    cols = on_path(frames, cfg.with_overrides({"azimuth.count": 1}), scene).simulate(EYE)
    assert cols.image_f32[0, 40] > 0  # only the near plate is in the beam of column 0
    far = on_path(frames, cfg.with_overrides({"azimuth.count": 1}), scene_with(wall_x(4.0, material="flat_metal"))).simulate(EYE)
    energy_near = cols.energy[0].max()
    energy_far = far.energy[0].max()
    assert energy_near / energy_far == pytest.approx(16.0, rel=0.02)  # (4/2)^4
    db = config(output={"normalisation": "db", "db_reference": 1.0, "db_range": 60.0})
    img = on_path(frames, db, scene_with(wall_x(3.0, material="flat_metal"))).simulate(EYE)
    assert img.image_f32[0].max() == pytest.approx(255.0, rel=1e-6)  # E = E0 = 1 maps to 255


def test_cosine_fresnel_equals_radarays_angle_forms():
    """RadaRays writes rs = -sin(ti - tt)/sin(ti + tt), rp = tan(ti - tt)/tan(ti + tt); we use cosines."""
    rng = np.random.default_rng(0)
    ti = rng.uniform(0.01, 1.5, 500)
    v1 = rng.choice([0.3, 0.05, 0.1], 500)
    v2 = rng.choice([0.3, 0.001, 0.05, 0.12], 500)
    d = np.stack([np.cos(ti), np.sin(ti), np.zeros(500)], axis=1)
    n = np.tile([-1.0, 0.0, 0.0], (500, 1))
    r, *_, refracts = fresnel_split(d, n, v1, v2, 0.3)
    sin_t = v2 / v1 * np.sin(ti)
    ok = sin_t <= 1.0
    assert np.array_equal(refracts, ok)
    tt = np.arcsin(np.minimum(sin_t, 1.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        rs = -np.sin(ti - tt) / np.sin(ti + tt)
        rp = np.tan(ti - tt) / np.tan(ti + tt)
    expected = np.where(ok, 0.3 * rs ** 2 + 0.7 * rp ** 2, 1.0)
    same = np.isfinite(expected)
    np.testing.assert_allclose(r[same], expected[same], rtol=1e-7, atol=1e-12)


def test_elliptic_beam_sees_up_but_not_sideways():
    # 5 m ahead: a box 1 m above boresight (11 deg elevation) and one 1 m to the side (11 deg azimuth)
    above = ("above", (0.2, 0.4, 0.4), (5.1, 0, 1.0), "flat_metal")
    beside = ("beside", (0.2, 0.4, 0.4), (5.1, 1.0, 0), "flat_metal")
    beam = {"width_h_deg": 1.8, "width_v_deg": 25.0, "samples": 400, "p_in_cone": 0.95}
    cfg = config(azimuth={"count": 1}, beam=beam)
    assert len(RadarSimulator(cfg, scene_with(above)).simulate(EYE).returns) > 0
    assert len(RadarSimulator(cfg, scene_with(beside)).simulate(EYE).returns) == 0
    turned = config(azimuth={"count": 1}, beam={**beam, "width_h_deg": 25.0, "width_v_deg": 1.8})
    assert len(RadarSimulator(turned, scene_with(above)).simulate(EYE).returns) == 0
    assert len(RadarSimulator(turned, scene_with(beside)).simulate(EYE).returns) > 0


def test_antenna_gain_weights_scale_sample_energy():
    cfg = config(azimuth={"count": 1}, beam={"width_deg": 8.0, "samples": 200, "gain_weighting": True})
    sim = RadarSimulator(cfg, scene_with(wall_x(3.0, material="flat_metal")))
    img = sim.simulate(EYE)
    directions, weights, alpha, beta = sim.cone()
    assert weights is not None and weights.mean() == pytest.approx(1.0)
    # R = 1 and BRDF 1 on metal: each return carries its sample's weight, largest on boresight
    # (samples weighted below the energy threshold 0.001 are dropped, as every wave is)
    kept = np.sort(weights[weights > 0.001]).astype(np.float32)
    np.testing.assert_allclose(np.sort(img.returns["energy"]), kept, rtol=1e-6)
    off_axis = np.hypot(alpha, beta)
    assert weights[np.argmin(off_axis)] == weights.max()


# -- audit of issue 4: every configurable part checked against an independent expectation ----------------
class CountingBackend:
    """The real Embree backend, counting trace calls (whole-frame batching: one call per pass)."""

    def __init__(self, scene):
        from radarays_ros.tracing import make_backend

        self.inner = make_backend("embree", scene)
        self.calls = []

    def trace(self, origins, directions, tmin=0.0, tmax=np.inf):
        self.calls.append(len(origins))
        return self.inner.trace(origins, directions, tmin, tmax)

    def close(self):
        self.inner.close()


def test_every_pass_is_one_trace_call_for_all_azimuths_and_samples():
    scene = scene_with(wall_x(3.0), wall_x(-3.0, name="back"))
    backend = CountingBackend(scene)
    cfg = config(azimuth={"count": 16, "step_deg": -22.5}, beam={"samples": 7}, tracing={"passes": 3})
    img = RadarSimulator(cfg, scene, backend=backend).simulate(EYE)
    assert backend.calls[0] == 16 * 7 and len(backend.calls) == 3  # first pass: all azimuths x samples
    assert set(img.returns["bounce"]) <= {0, 1, 2}
    single = CountingBackend(scene)
    first_only = RadarSimulator(config(tracing={"passes": 1}), scene, backend=single).simulate(EYE)
    assert len(single.calls) == 1 and set(first_only.returns["bounce"]) == {0}  # passes = 1: first hit only


def test_azimuth_start_and_step_direction(frames):
    # a post on -y (right of the sensor seen from above): with steps of -90 deg (clockwise) it is column 1
    scene = scene_with(("post", (0.4, 0.4, 2.0), (0, -3.2, 0), "metal"))
    img = on_path(frames, config(azimuth={"count": 4, "step_deg": -90.0}), scene).simulate(EYE)
    np.testing.assert_allclose(img.azimuth_rad, np.radians([0.0, -90.0, -180.0, -270.0]))
    assert img.image.max(axis=1).tolist().index(img.image.max()) == 1 and int(np.argmax(img.image_f32[1])) == 60
    ccw = on_path(frames, config(azimuth={"count": 4, "step_deg": 90.0}), scene).simulate(EYE)
    assert int(np.argmax(ccw.image.max(axis=1))) == 3  # counter-clockwise: -y is the last column
    started = on_path(frames, config(azimuth={"count": 1, "start_deg": -90.0}), scene).simulate(EYE)
    assert started.image.shape == (1, 200) and int(np.argmax(started.image_f32[0])) == 60  # a single azimuth


def test_max_range_sets_the_bins_and_drops_what_lies_beyond():
    cfg = config(range={"resolution": 0.05, "max_range": 5.0})
    assert cfg.n_bins == 100
    near = RadarSimulator(cfg, scene_with(wall_x(4.97))).simulate(EYE)
    assert near.image_f32.shape == (8, 100) and int(np.argmax(near.image_f32[0])) == 99  # last bin
    far = RadarSimulator(cfg, scene_with(wall_x(5.02))).simulate(EYE)
    assert len(far.returns) > 0 and far.image_f32.max() == 0.0  # returned, but beyond the last bin


def test_cached_cone_is_reused_and_per_frame_cone_is_redrawn_seeded():
    scene = scene_with(wall_x(3.0))
    cached = RadarSimulator(config(beam={"width_deg": 5.0, "redraw": "cached"}), scene)
    cached.simulate(EYE)
    first = cached.cone()[0]
    cached.simulate(EYE)
    assert cached.cone()[0] is first
    logs = []
    for _ in range(2):
        sim = RadarSimulator(config(beam={"width_deg": 5.0, "redraw": "per_frame"}), scene)
        sim.ray_log = []
        sim.simulate(EYE)
        sim.simulate(EYE)
        logs.append([d for _, d in sim.ray_log])
    assert not np.array_equal(logs[0][0], logs[0][1])  # a new cone in every frame
    np.testing.assert_array_equal(logs[0][0], logs[1][0])  # ... drawn from the seed: the same sequence
    np.testing.assert_array_equal(logs[0][1], logs[1][1])


def test_energy_threshold_drops_weak_reflections():
    pane = ("pane", (0.1, 2.0, 2.0), (2.05, 0, 0), "glass")  # R(0 deg) = 0.5102, BRDF 1
    kept = RadarSimulator(config(tracing={"energy_threshold": 0.5}), scene_with(pane)).simulate(EYE)
    assert len(returns_of(kept, bounce=0)) == 20
    dropped = RadarSimulator(config(tracing={"energy_threshold": 0.52}), scene_with(pane)).simulate(EYE)
    assert len(dropped.returns) == 0


def test_skip_distance_moves_new_waves_off_the_surface():
    sim = RadarSimulator(config(tracing={"passes": 2, "skip_distance": 0.25}), scene_with(wall_x(3.0)))
    sim.ray_log = []
    sim.simulate(EYE)
    (o0, d0), (o1, d1) = sim.ray_log
    assert len(o1) == 3 * 20  # azimuths 0 and +-45 deg hit the wall, and metal reflects every wave
    hit_x = 3.0
    np.testing.assert_allclose(o1[:, 0] - 0.25 * d1[:, 0], hit_x, atol=1e-5)  # origin = hit + skip * new dir
    assert np.all(d1[:, 0] < 0)  # mirrored back toward the sensor


def test_cook_torrance_transmittance_is_lost_per_metre_inside():
    # a 0.5 m slab (v 0.1 m/ns) in front of a metal wall: the back-path return is recorded where the wave
    # hits the wall, after one crossing of the slab, so it scales by transmittance^0.5 (the skip distance
    # stepped inside the slab counts as well: a wave loses energy for every metre it travels inside)
    def wall_echo(transmittance):
        slab = {"radar": {"velocity": 0.1, "brdf": "cook_torrance", "diffuse": 0.5, "roughness": 0.3, "n": 2.0,
                          "transmittance": transmittance}}
        scene = scene_with(("slab", (0.5, 2.0, 2.0), (2.25, 0, 0), "ct"), wall_x(4.0), lib=library({"ct": slab}))
        img = RadarSimulator(config(tracing={"passes": 3}), scene).simulate(EYE)
        echo = returns_of(img, bounce=2)
        return np.sort(echo["energy"])
    clear, lossy = wall_echo(1.0), wall_echo(0.25)
    assert len(clear) == 20 and len(lossy) == 20
    np.testing.assert_allclose(lossy / clear, 0.25 ** 0.5, rtol=1e-5)


def test_paper_brdf_in_the_simulator():
    lib = library({"paper_metal": {"radar": {"velocity": 0.0, "brdf": "paper", "A": 0.2, "B": 0.3, "C": 10}}})
    sim = RadarSimulator(config(azimuth={"count": 1}, beam={"width_deg": 20.0}), scene_with(wall_x(3.0, "paper_metal"), lib=lib))
    img = sim.simulate(EYE)
    c = np.sort(sim.cone()[0][:, 0])  # cos of the incidence angle on the wall x = 3 (normal -x)
    expected = 0.2 + 0.3 * c + 0.5 * c ** 10  # Eq. 5, S = 1 - A - B, times R = 1
    np.testing.assert_allclose(np.sort(img.returns["energy"]), expected, rtol=1e-5)


def test_system_noise_is_white_gaussian_in_output_units(frames):
    cfg = config(noise={"system_std": 4.0}, range={"resolution": 0.05, "bins": 500})
    img = on_path(frames, cfg, scene_with(wall_x(3.0, span=1.0))).simulate(EYE)
    empty = img.image_f32[1:].ravel()  # columns without returns: max(0, N(0, 4))
    assert np.mean(empty == 0) == pytest.approx(0.5, abs=0.03)
    assert empty[empty > 0].mean() == pytest.approx(4.0 * math.sqrt(2 / math.pi), rel=0.06)
    assert np.all(np.isfinite(img.image_f32)) and img.image_f32.min() >= 0


def test_skipping_waves_beyond_the_last_bin_does_not_change_the_image():
    # without returns.keep, returns past the last bin get no BRDF and waves past it are not traced further
    scene = scene_with(("mirror", (0.002, 1.0, 1.0), (2.0, 0, 0), "flat_metal", math.radians(-45.0)),
                       ("wall", (4.0, 0.2, 4.0), (2.0, 3.11, 0), "wall_stone"),
                       ("slab", (0.3, 2.0, 2.0), (-3.15, 0, 0), "slow"), wall_x(-5.0, name="back"),
                       ("pane", (0.1, 2.0, 2.0), (0, 2.05, 0), "glass"))
    for multipath in (False, True):
        cfg = config(azimuth={"count": 16, "step_deg": -22.5}, range={"resolution": 0.05, "bins": 80},
                     beam={"width_deg": 6.0, "samples": 30}, tracing={"passes": 4},
                     kernel={"type": "triangular", "width": 10},
                     returns={"multipath": multipath, "occlusion_test": multipath})
        everything = RadarSimulator(cfg, scene)  # config() keeps the raw returns: nothing is skipped
        everything.ray_log = []
        full = everything.simulate(EYE)
        lean = RadarSimulator(cfg.with_overrides({"returns.keep": False}), scene)
        lean.ray_log = []
        pruned = lean.simulate(EYE)
        assert sum(len(o) for o, _ in lean.ray_log) < sum(len(o) for o, _ in everything.ray_log)  # work skipped
        assert np.any(full.returns["range"] >= 4.0) and full.image_f32.max() > 0  # ... returns past 4 m
        np.testing.assert_array_equal(pruned.image_f32, full.image_f32)
        np.testing.assert_array_equal(pruned.energy, full.energy)


def test_perlin_ambient_noise_in_the_image_coherent_or_per_column():
    # a 6 x 6 m room: every column has a return (M > 0); beyond 4.3 m only noise, signal_max at_0 |p|
    room = [wall_x(3.0, span=8.0), wall_x(-3.0, name="back", span=8.0),
            ("left", (8.0, 0.2, 8.0), (0, 3.1, 0), "metal"), ("right", (8.0, 0.2, 8.0), (0, -3.1, 0), "metal")]
    noise = {"ambient": "perlin", "at_signal_0": 0.3, "at_signal_1": 0.03, "energy_max": 0.0, "energy_min": 0.0}

    def neighbour_correlation(coherent):
        cfg = config(azimuth={"count": 64, "step_deg": -360 / 64}, noise={**noise, "perlin_coherent": coherent})
        img = RadarSimulator(cfg, scene_with(*room)).simulate(EYE)
        far = img.image_f32[:, 100:].astype(np.float64)  # 5 .. 10 m
        assert far.max() <= 120 * 0.3 + 1e-3 and far.mean() > 0  # |p| <= 1 of the no-signal amplitude
        return np.mean([np.corrcoef(far[k], far[k + 1])[0, 1] for k in range(63)])

    assert neighbour_correlation(True) > 0.9  # one offset per frame: smooth across azimuth
    assert abs(neighbour_correlation(False)) < 0.25  # RadaRays: a new offset per column


def test_a_replaced_material_is_seen_by_the_next_frame():
    from radarays_ros.world.materials import Material

    scene = scene_with(wall_x(3.0, material="metal"))
    sim = RadarSimulator(config(), scene)
    assert len(sim.simulate(EYE).returns) > 0
    scene.materials.add(Material("metal", radar={"velocity": 0.3, "brdf": "radarays", "A": 1.0, "B": 0.0, "C": 1.0},
                                 lidar={}, origin="test"))  # same name, same library size: now invisible
    assert len(sim.simulate(EYE).returns) == 0
