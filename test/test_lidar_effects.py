"""Lidar effects against their analytic or statistical answers: beam footprint and echoes (mixed pixels,
dual returns), detection probability and dropouts, Poisson photon counts, fog/rain extinction and
backscatter, range backfolding. Real Embree tracing wherever a scene is involved."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import trimesh
from scipy.special import ndtr

from lidar_ros import LidarSimulator, load_sensor
from lidar_ros.physics import LidarHits, SurfaceConfig, SurfaceModel
from lidar_ros.physics.effects_config import DetectionConfig, EffectsConfig, SignalConfig
from lidar_ros.physics.footprint import spread_directions, sub_ray_offsets
from lidar_ros.physics.weather import extinction_per_m, fog_exponent
from radarays_ros.errors import ConfigError
from radarays_ros.tracing import make_backend
from radarays_ros.world.mesh import TriMesh
from radarays_ros.world.scene import Scene
from radarays_ros.world.transforms import pose_to_matrix

ROOT = Path(__file__).resolve().parents[1]
SPHERICAL = str(ROOT / "radarays_ros" / "data" / "examples" / "spherical_16x1800.yaml")  # origins 0, no noise
RHO = 0.3  # concrete in the shipped library: Lambertian ρ(θ) = 0.3·cos θ


def box_scene(*boxes):
    scene = Scene()
    for name, size, x in boxes:
        mesh = trimesh.creation.box(size)
        scene.add_entity(name, TriMesh(mesh.vertices, mesh.faces), pose_to_matrix(x, 0, 0), material="concrete")
    return scene, make_backend("embree", scene, threads=2)


@pytest.fixture(scope="module")
def plate_before_wall():
    """A 1 m wide, 4 m tall plate whose front face is x = 5, before a wall whose face is x = 10."""
    return box_scene(("wall", [0.2, 60, 60], 10.1), ("plate", [0.02, 1.0, 4.0], 5.01))


@pytest.fixture(scope="module")
def wall():
    return box_scene(("wall", [0.2, 300, 300], 8.1))


def sensor(**sections):
    return load_sensor(SPHERICAL, {f"{k}.{key}": v for k, d in sections.items() for key, v in d.items()})


# -- footprint ----------------------------------------------------------------------------------
@pytest.mark.parametrize("profile", ["uniform", "gaussian"])
def test_sub_rays_sample_the_beam_profile(profile):
    """Equal-power sub-rays at the profile's radius quantiles: E[r²] = R²/2 for the top hat over radius R
    and for the Gaussian with 1/e² radius R; each sub-ray makes its radius with the beam axis."""
    div = 0.004
    radius, _, weights = sub_ray_offsets(div, 4000, profile)
    np.testing.assert_allclose(weights.sum(), 1.0)
    np.testing.assert_allclose(np.mean(radius**2), (div / 2) ** 2 / 2, rtol=2e-3)
    if profile == "uniform":
        assert radius.max() <= div / 2
    beams = np.array([[1.0, 0.0, 0.0], [0.0, 0.6, 0.8], [0.0, 0.0, 1.0]])
    sub = spread_directions(beams, div, 7, profile).reshape(3, 7, 3).astype(np.float64)
    cross = np.linalg.norm(np.cross(sub, beams[:, None, :]), axis=2)
    angles = np.arctan2(cross, np.einsum("bkj,bj->bk", sub, beams))  # exact for small angles
    expect = sub_ray_offsets(div, 7, profile)[0]
    np.testing.assert_allclose(angles, np.broadcast_to(expect, (3, 7)), atol=5e-7)


def expected_footprint(cfg, k):
    """Per beam, from plane intersections alone: the fraction-weighted echo strengths of the plate (x = 5,
    |y| <= 0.5, |z| <= 2) and the wall (x = 10), and the mixed range of the summed pulse."""
    beams = cfg.directions.reshape(-1, 3).astype(np.float64)
    sub = spread_directions(beams, cfg.effects.beam.divergence_mrad * 1e-3, k).reshape(-1, k, 3).astype(np.float64)
    forward = sub[..., 0] > 1e-6
    t_plate = np.where(forward, 5.0 / np.where(forward, sub[..., 0], 1), np.inf)
    on_plate = forward & (np.abs(sub[..., 1] * t_plate) <= 0.5) & (np.abs(sub[..., 2] * t_plate) <= 2.0)
    cos = np.abs(sub[..., 0])  # both faces face -x
    t_wall = np.where(forward, 10.0 / np.where(forward, sub[..., 0], 1), np.inf)
    r = np.where(on_plate, t_plate, t_wall)
    power = np.where(forward, (1.0 / k) * RHO * cos / r**2, 0.0)
    mixed = np.sum(power * np.where(forward, r, 0), axis=1) / np.maximum(power.sum(axis=1), 1e-30)
    fraction = on_plate.sum(axis=1) / k
    return fraction.reshape(cfg.shape), mixed.reshape(cfg.shape), on_plate, power


def test_plate_before_wall_gives_mixed_pixels_where_the_footprint_straddles_the_edge(plate_before_wall):
    scene, backend = plate_before_wall
    k = 16
    cfg = sensor(beam={"divergence_mrad": 20.0, "sub_rays": k, "return_mode": "mixed"})
    scan = LidarSimulator(cfg, scene, backend).simulate(np.eye(4))
    fraction, mixed, _, _ = expected_footprint(cfg, k)
    straddles = (fraction > 0) & (fraction < 1)
    front = np.abs(scan.azimuth_rad) < np.radians(20)  # the plate spans ±5.7°; the wall is far wider
    dx = np.cos(scan.elevation_rad) * np.cos(scan.azimuth_rad)  # along each beam: plate at 5/dx, wall at 10/dx
    with np.errstate(divide="ignore"):
        between = front & scan.hit & (scan.range > 5 / dx + 0.05) & (scan.range < 10 / dx - 0.05)
    assert straddles.sum() > 20 and not np.any(straddles & ~front)  # two edges on the rows that see the plate
    np.testing.assert_array_equal(between, straddles)
    assert scan.hit[front].all()
    np.testing.assert_allclose(scan.range[front], mixed[front], rtol=1e-4)  # every beam: the summed pulse
    # the same frame with thin rays has no point between the plate and the wall
    thin = LidarSimulator(sensor(), scene, backend).simulate(np.eye(4))
    with np.errstate(divide="ignore"):
        assert not np.any(front & thin.hit & (thin.range > 5 / dx + 0.05) & (thin.range < 10 / dx - 0.05))


def test_dual_returns_report_strongest_and_last(plate_before_wall):
    scene, backend = plate_before_wall
    k = 16
    cfg = sensor(beam={"divergence_mrad": 20.0, "sub_rays": k, "return_mode": "dual", "echo_separation_m": 0.5})
    scan = LidarSimulator(cfg, scene, backend).simulate(np.eye(4))
    fraction, _, on_plate, power = expected_footprint(cfg, k)
    plate_power = np.where(on_plate, power, 0).sum(axis=1).reshape(cfg.shape)
    wall_power = np.where(on_plate, 0, power).sum(axis=1).reshape(cfg.shape)
    straddles = (fraction > 0) & (fraction < 1)
    np.testing.assert_array_equal(scan.second.hit, straddles)  # two echoes exactly where the footprint is split
    plate_first = straddles & (plate_power > wall_power)
    assert plate_first.any() and (straddles & ~plate_first).any()
    np.testing.assert_allclose(scan.range[plate_first], 5.0 / np.cos(scan.azimuth_rad[plate_first]) /
                               np.cos(scan.elevation_rad[plate_first]), rtol=0.01)
    assert np.all(scan.second.range[plate_first] > 9.9)  # the last echo: the wall
    assert np.all(scan.second.range[straddles & ~plate_first] < 5.5)  # the wall was strongest: second = the plate
    # partial hits are darker: the echo's reflectivity is the covered part of the footprint only
    refl = scan.fields["reflectivity"]
    assert np.all(refl[plate_first] < RHO * (fraction[plate_first] + 1e-3))


# -- detection probability and dropouts ----------------------------------------------------------
def synthetic_hits(ranges, rho):
    n = len(ranges)
    hits = LidarHits.misses(n)
    hits.range = np.asarray(ranges, np.float32)
    hits.reflectivity = np.asarray(rho, np.float32)
    hits.material = np.where(np.isfinite(hits.range), 0, -1).astype(np.int32)
    return hits


def test_detection_probability_follows_the_threshold_curve():
    """P_d = Φ(k((r_L(ρ)/r)² − 1)); linear limit through (0.1, 50 m), (0.8, 120 m): r_L(0.1) = 50 m."""
    surface = SurfaceConfig(model="linear", limits=((0.1, 50.0), (0.8, 120.0)))
    effects = EffectsConfig(detection=DetectionConfig(model="snr", snr_at_limit=4.0))
    model = SurfaceModel(surface, None, 1, 0, effects)
    n = 40000
    for r in (40.0, 45.0, 50.0, 55.0, 60.0):
        ret = model.apply(synthetic_hits(np.full(n, r), np.full(n, 0.1)), None, np.random.default_rng(int(r)))
        p = ndtr(4.0 * ((50.0 / r) ** 2 - 1))
        assert abs(ret.hit.mean() - p) < 4 * np.sqrt(p * (1 - p) / n) + 1e-4, (r, ret.hit.mean(), p)


def test_detection_probability_skips_ndtr_only_where_it_is_exactly_one():
    """detection_probability evaluates Φ only below CERTAIN_SNR: above it Φ is 1.0 in float64, so the
    probabilities (and the Bernoulli draws) are the plain formula's, bit for bit, on both sides."""
    from lidar_ros.physics.detection import DetectionLimit
    from lidar_ros.physics.detection_probability import CERTAIN_SNR, detection_probability

    x = np.linspace(CERTAIN_SNR, 60.0, 200001)
    assert np.all(ndtr(x) == 1.0)
    limit = DetectionLimit(SurfaceConfig(model="linear", limits=((0.1, 50.0), (0.8, 120.0))))
    r = np.random.default_rng(3).uniform(0.5, 200.0, 50000)
    rho = np.random.default_rng(4).uniform(0.0, 1.0, 50000)
    r[::97], rho[::89] = np.inf, 0.0
    got = detection_probability(r, rho, limit, 4.0)
    ok = np.isfinite(r) & (rho > 0)
    want = np.where(ok, ndtr(4.0 * ((limit.max_range(rho) / np.maximum(r, 1e-6)) ** 2 - 1.0)), 0.0)
    assert got.tobytes() == want.tobytes()
    assert 0.05 < np.mean(got[ok] == 1.0) < 0.95  # both branches taken


def test_random_dropouts_are_bernoulli_and_seeded():
    effects = EffectsConfig(detection=DetectionConfig(dropout_probability=0.03))
    model = SurfaceModel(None, None, 1, 0, effects)
    n = 100000
    hits = synthetic_hits(np.full(n, 10.0), np.full(n, 0.5))
    one = model.apply(hits, None, np.random.default_rng(5))
    lost = 1 - one.hit.mean()
    assert abs(lost - 0.03) < 4 * np.sqrt(0.03 * 0.97 / n)
    again = model.apply(synthetic_hits(np.full(n, 10.0), np.full(n, 0.5)), None, np.random.default_rng(5))
    np.testing.assert_array_equal(one.hit, again.hit)
    lonely = ~one.hit[1:-1] & one.hit[:-2] & one.hit[2:]
    assert lonely.sum() > 0.8 * (~one.hit).sum()  # single missing pixels, not holes


# -- photons --------------------------------------------------------------------------------------
def test_signal_photons_are_poisson_with_a_noise_floor_and_saturation():
    scale = 2000.0
    effects = EffectsConfig(signal=SignalConfig(poisson=True, noise_floor=3.0, saturation=4000))
    model = SurfaceModel(SurfaceConfig(signal_scale=scale), None, 1, 0, effects)
    n = 60000
    ranges = np.where(np.arange(n) % 3 == 0, np.inf, 4.0)
    ranges[1::3] = 0.5  # a bright near target: 0.5 * 2000 / 0.25 = 4000 mean, saturates
    ret = model.apply(synthetic_hits(ranges, np.full(n, 0.5)), None, np.random.default_rng(1))
    signal = ret.ouster_signal.astype(np.float64)
    far = ret.hit & (ranges == 4.0)
    lam = scale * 0.5 / 16.0
    assert abs(signal[far].mean() - lam) < 4 * np.sqrt(lam / far.sum())
    assert abs(signal[far].var() / lam - 1) < 0.05  # Poisson: variance = mean
    misses = ~ret.hit
    assert abs(signal[misses].mean() - 3.0) < 4 * np.sqrt(3.0 / misses.sum()) and signal[misses].var() > 2.5
    assert signal.max() == 4000 and (signal[1::3] == 4000).mean() > 0.4


# -- weather ---------------------------------------------------------------------------------------
def test_fog_extinction_coefficient_follows_koschmieder_and_kim():
    assert [fog_exponent(v) for v in (0.3, 0.8, 3.0, 20.0, 80.0)] == pytest.approx([0.0, 0.3, 0.82, 1.3, 1.6])
    assert extinction_per_m(0.2, 0.0, 905) == pytest.approx(3.912 / 200)  # q = 0 below 0.5 km
    assert extinction_per_m(3.0, 0.0, 550) == pytest.approx(3.912 / 3000)
    assert extinction_per_m(0.0, 25.0) == pytest.approx(0.365e-3 * 25**0.63, rel=1e-3)  # rain.py


def test_fog_weakens_returns_by_two_way_beer_lambert(wall):
    scene, backend = wall
    clear = LidarSimulator(sensor(), scene, backend).simulate(np.eye(4))
    foggy_cfg = sensor(weather={"fog_visibility_km": 0.2, "rain_rate_mm_h": 4.0})
    foggy = LidarSimulator(foggy_cfg, scene, backend).simulate(np.eye(4))
    alpha = 3.912 / 200 + np.pi * 8000 / (4.1 * 4.0**-0.21) ** 3 * 1e-6  # Marshall-Palmer rain (rain.py)
    both = clear.hit & foggy.hit
    assert both.sum() > 1000 and np.array_equal(clear.hit, foggy.hit)  # no detection limit: all still seen
    ratio = foggy.fields["reflectivity"][both] / clear.fields["reflectivity"][both]
    np.testing.assert_allclose(ratio, np.exp(-2 * alpha * clear.clean_range[both]), rtol=2e-5)


def test_fog_backscatter_gives_false_returns_near_the_sensor_only_in_fog(wall):
    scene, backend = wall
    limits = {"model": "linear", "limits": [[0.0001, 2.0], [0.8, 120.0]]}
    counts = {}
    for visibility in (0.0, 1.0, 0.05):
        cfg = sensor(surface=limits, weather={"fog_visibility_km": visibility})
        scan = LidarSimulator(cfg, scene, backend).simulate(np.eye(4))
        particles = scan.hit & (scan.material == -1)
        counts[visibility] = int(particles.sum())
        if particles.any():
            assert scan.range[particles].max() <= 0.1 + 10.0 and scan.range[particles].min() >= 0.1
    assert counts[0.0] == 0 and counts[0.05] > counts[1.0] and counts[0.05] > 50


# -- time of flight --------------------------------------------------------------------------------
def test_backfolded_range_is_the_range_modulo_the_unambiguous_range(wall):
    scene, backend = wall
    scan = LidarSimulator(sensor(tof={"unambiguous_range_m": 3.0}), scene, backend).simulate(np.eye(4))
    assert scan.hit.sum() > 1000
    np.testing.assert_allclose(scan.range[scan.hit], np.fmod(scan.clean_range[scan.hit], 3.0), atol=2e-6)
    assert scan.range[scan.hit].max() < 3.0 and scan.clean_range[scan.hit].min() >= 8.0


# -- configuration -----------------------------------------------------------------------------------
@pytest.mark.parametrize("key,value,words", [
    ("beam.return_mode", "all", ["beam.return_mode", "strongest, last, first, dual, mixed"]),
    ("beam.sub_rays", 0, ["beam.sub_rays", "[1, 64]"]),
    ("weather.fog_visibility_km", -1, ["weather.fog_visibility_km", "[0, 1000]"]),
    ("detection.dropout_probability", 2, ["detection.dropout_probability"]),
    ("weather.snow", 1, ["weather", "unknown key", "snow"]),
])
def test_bad_effect_settings_name_the_key(key, value, words):
    with pytest.raises(ConfigError) as info:
        load_sensor("VLP-16", {key: value})
    for word in words:
        assert word in str(info.value)


def test_effects_are_seeded(plate_before_wall):
    scene, backend = plate_before_wall
    cfg = sensor(beam={"divergence_mrad": 5.0, "sub_rays": 4, "return_mode": "dual"},
                 detection={"dropout_probability": 0.05}, signal={"poisson": True},
                 weather={"fog_visibility_km": 0.3}, surface={"model": "linear", "limits": [[0.01, 5.0], [0.8, 120.0]]})
    one = LidarSimulator(cfg, scene, backend, seed=3).simulate(np.eye(4))
    two = LidarSimulator(cfg, scene, make_backend("embree", scene, threads=1), seed=3).simulate(np.eye(4))
    for a, b in ((one, two), (one.second, two.second)):
        np.testing.assert_array_equal(a.range, b.range)
        np.testing.assert_array_equal(a.fields["ouster_signal"], b.fields["ouster_signal"])


# -- continuous-wave phase ranging (Heiden et al. 2020) ------------------------------------------------
def test_cw_two_frequency_ranging_unwraps_beyond_one_wavelength():
    from lidar_ros.physics.cw_phase import HOKUYO_FREQUENCIES_HZ, cw_ranges, phase_of

    truth = np.array([0.3, 2.0, 3.3, 5.6, 9.9, 14.0, 21.0])  # c/(2 f1) = 3.22 m: most are beyond one wrap
    measured = cw_ranges(truth[:, None], np.ones((len(truth), 1)))
    np.testing.assert_allclose(measured, truth, atol=1e-9)
    f1 = HOKUYO_FREQUENCIES_HZ[0]
    np.testing.assert_allclose(phase_of(truth, f1), np.mod(4 * np.pi * f1 * truth / 299_792_458.0, 2 * np.pi))


def test_cw_radiance_bias_follows_heidens_formula():
    """ΔΦ' = ΔΦ − (aL² + bL + c): each frequency's range moves by −c/(4πf)·(aL² + bL + c); the unwrapped
    range is their mean."""
    from lidar_ros.physics.cw_phase import HOKUYO_FREQUENCIES_HZ, cw_ranges

    bias = (0.02, 0.05, 0.01)
    truth = np.full(5, 4.0)
    radiance = np.array([0.0, 0.5, 1.0, 2.0, 3.0])
    measured = cw_ranges(truth[:, None], np.ones((5, 1)), bias=bias, radiance=radiance)
    shift = bias[0] * radiance**2 + bias[1] * radiance + bias[2]
    c = 299_792_458.0
    expect = truth - np.mean([c / (4 * np.pi * f) for f in HOKUYO_FREQUENCIES_HZ]) * shift
    np.testing.assert_allclose(measured, expect, atol=1e-9)
    assert np.all(np.diff(measured) < 0)  # brighter reads nearer here (positive bias terms)


def test_cw_mixed_returns_sum_as_waveforms():
    """Two equal returns 10 cm apart: the phasor sum lies halfway (mixed pixel); a weak second return
    pulls the range only a little towards itself."""
    from lidar_ros.physics.cw_phase import cw_ranges

    r = np.array([[2.0, 2.1], [2.0, 2.1]])
    a = np.array([[1.0, 1.0], [1.0, 0.1]])
    measured = cw_ranges(r, a)
    assert measured[0] == pytest.approx(2.05, abs=1e-6)
    assert 2.0 < measured[1] < 2.02


def test_cw_sensor_in_a_scene_wraps_at_the_combined_range_and_biases_by_radiance(wall):
    """A wall at 8 m read by a CW sensor: without bias the range is exact (8 m > c/(2 f1), unwrapped); with a
    constant phase bias c0 every range moves by the mean of c/(4π f_k)·c0."""
    scene, backend = wall
    c = 299_792_458.0
    reach = c / (2 * (53.2e6 - 46.55e6))  # 22.54 m
    clean = LidarSimulator(sensor(tof={"mode": "cw"}), scene, backend).simulate(np.eye(4))
    near = clean.hit & (clean.clean_range < reach - 0.01)
    far = clean.hit & (clean.clean_range > reach + 0.01) & (np.mod(clean.clean_range, reach) < reach - 0.01)
    assert near.sum() > 1000 and far.sum() > 1000
    np.testing.assert_allclose(clean.range[near], clean.clean_range[near], atol=1e-4)
    np.testing.assert_allclose(clean.range[far], np.mod(clean.clean_range[far], reach), atol=1e-4)
    biased = LidarSimulator(sensor(tof={"mode": "cw", "bias": [0.0, 0.0, 0.05]}), scene, backend).simulate(np.eye(4))
    shift = np.mean([c / (4 * np.pi * f * 1e6) for f in (46.55, 53.2)]) * 0.05
    np.testing.assert_allclose(biased.range[near], biased.clean_range[near] - shift, atol=1e-4)


# -- ambient (near_ir) ------------------------------------------------------------------------------
def test_ambient_from_the_sun_albedo_and_sky_with_row_gains():
    """Wall facing the sensor (normal −x) and ground (normal +z), concrete albedo 0.3. Sun at 30° above
    +x: the wall is in shade (level·A·0.2), the ground sunlit (level·A·(sin 30° + 0.2)), the sky reads
    `sky` — brighter than the shade. Poisson counts; each row scaled by its fixed gain."""
    from lidar_ros.physics.ambient import row_gains

    scene, backend = box_scene(("wall", [0.2, 300, 300], 8.1))
    ground = trimesh.creation.box([300, 300, 0.2])
    scene.add_entity("ground", TriMesh(ground.vertices, ground.faces), pose_to_matrix(0, 0, -2.1), material="concrete")
    backend = make_backend("embree", scene, threads=2)
    level, sky = 2000.0, 600.0
    sets = {"surface": {"ambient_level": level, "ambient_sky": sky},
            "signal": {"ambient_model": "sun", "sun_elevation_deg": 30.0, "sun_azimuth_deg": 0.0}}
    cfg = load_sensor(SPHERICAL, {"vertical": {"min_deg": -30, "max_deg": 60, "step_deg": 2}, **sets})
    scan = LidarSimulator(cfg, scene, backend).simulate(np.eye(4))
    near_ir = scan.fields["ouster_ambient"].astype(float)
    entity = scan.entity
    wall_px = entity == scene.find("wall")
    ground_px = entity == scene.find("ground")
    sky_px = ~scan.hit
    assert wall_px.sum() > 1000 and ground_px.sum() > 1000 and sky_px.sum() > 1000
    for mask, mean in ((wall_px, level * 0.3 * 0.2), (ground_px, level * 0.3 * (0.5 + 0.2)), (sky_px, sky)):
        values = near_ir[mask]
        assert abs(values.mean() - mean) < 4 * np.sqrt(mean / mask.sum()), (values.mean(), mean)
        assert abs(values.var() / mean - 1) < 0.1  # Poisson
    assert near_ir[sky_px].mean() > near_ir[wall_px].mean()  # by day the sky outshines the shade
    night = LidarSimulator(cfg.with_overrides({"signal.sun_elevation_deg": -10.0}), scene, backend).simulate(np.eye(4))
    assert night.fields["ouster_ambient"][sky_px].mean() < 0.05 * sky
    banded = cfg.with_overrides({"signal.row_gain_sigma": 0.2})
    band = LidarSimulator(banded, scene, backend, seed=4).simulate(np.eye(4)).fields["ouster_ambient"].astype(float)
    gains = row_gains(0.2, banded.n_lasers, 4)[banded.laser_index]
    rows = sky_px.sum(axis=1) > 500
    np.testing.assert_allclose([band[r][sky_px[r]].mean() for r in np.flatnonzero(rows)], sky * gains[rows], rtol=0.03)


# -- glass ----------------------------------------------------------------------------------------------
def glass_scene(tilt_deg: float, wall_behind: bool):
    scene = Scene()
    pane = trimesh.creation.box([0.01, 6.0, 6.0])
    scene.add_entity("pane", TriMesh(pane.vertices, pane.faces),
                     pose_to_matrix(3 + 0.005 / np.cos(np.radians(tilt_deg)), 0, 0, 0, 0, np.radians(tilt_deg)),
                     material="glass")  # its front face passes through (3, 0, 0)
    side = trimesh.creation.box([40, 0.2, 40])
    scene.add_entity("side", TriMesh(side.vertices, side.faces), pose_to_matrix(0, 4.1, 0), material="concrete")
    if wall_behind:
        wall = trimesh.creation.box([0.2, 40, 40])
        scene.add_entity("wall", TriMesh(wall.vertices, wall.faces), pose_to_matrix(8.1, 0, 0), material="concrete")
    return scene, make_backend("embree", scene, threads=2)


def test_glass_flashes_head_on_by_fresnel_and_is_seen_through_elsewhere():
    """Pane at x = 3 before a wall at x = 8: the strongest echo is the glass where its specular lobe
    R0/(2σ²)·exp(−(2θ)²/(2σ²)) / 3² outshines the wall behind it (t⁴·ρ cos θ / 8²), the wall elsewhere."""
    from lidar_ros.physics.glass import fresnel_normal

    scene, backend = glass_scene(0.0, wall_behind=True)
    cfg = sensor(glass={"specular": True, "lobe_deg": 0.5})
    scan = LidarSimulator(cfg, scene, backend).simulate(np.eye(4))
    dx = np.cos(scan.elevation_rad) * np.cos(scan.azimuth_rad)
    lateral = np.hypot(np.cos(scan.elevation_rad) * np.sin(scan.azimuth_rad), np.sin(scan.elevation_rad))
    through = (lateral * 8 / np.maximum(dx, 1e-9) < 2.9) & (dx > 0.5)  # through the pane and onto the far wall
    theta = np.arccos(np.clip(dx, -1, 1))
    sigma = np.radians(0.5)
    r0 = fresnel_normal(1.5)
    glass_strength = r0 / (2 * sigma**2) * np.exp(-(2 * theta) ** 2 / (2 * sigma**2)) / (3 / dx) ** 2
    wall_strength = 0.96**4 * RHO * dx / (8 / dx) ** 2
    flash = through & (glass_strength > wall_strength)
    assert 0 < flash.sum() < 40  # a few pixels square to the pane
    np.testing.assert_allclose(scan.range[flash], 3.0 / dx[flash], rtol=1e-4)
    np.testing.assert_allclose(scan.fields["reflectivity"][flash],
                               (glass_strength * (3 / dx) ** 2)[flash], rtol=1e-3)
    clear = through & (glass_strength < 0.5 * wall_strength)
    np.testing.assert_allclose(scan.range[clear], 8.0 / dx[clear], rtol=1e-4)
    plain = LidarSimulator(sensor(), scene, backend).simulate(np.eye(4))  # off: the pane is invisible
    np.testing.assert_allclose(plain.range[flash], 8.0 / dx[flash], rtol=1e-4)


def test_glass_reflection_gives_a_ghost_point_behind_the_pane():
    """Pane at 45° through (3, 0, 0), nothing behind it, a wall at y = 4: the forward ray's reflection runs
    along +y to the wall, so a ghost point appears straight ahead at (3 + 4)/cos e, R0² as bright."""
    scene, backend = glass_scene(-45.0, wall_behind=False)  # pane normal (1, −1, 0)/√2: reflects +x into +y
    cfg = sensor(glass={"specular": True})
    scan = LidarSimulator(cfg, scene, backend).simulate(np.eye(4))
    centre = (np.argmin(np.abs(scan.elevation_rad[:, 0] - np.radians(1))), np.argmin(np.abs(scan.azimuth_rad[0])))
    assert abs(scan.azimuth_rad[centre]) < 1e-6
    # elevation e: the pane at 3/cos e, the reflection (0, cos e, sin e) meets y = 4 after 4/cos e
    assert scan.range[centre] == pytest.approx(7.0 / np.cos(np.radians(1)), abs=1e-3)
    assert scan.fields["reflectivity"][centre] == pytest.approx(RHO * 0.04**2, rel=1e-3)
    assert scan.entity[centre] == scene.find("side")  # the ghost reports the surface the reflection met
    off = LidarSimulator(sensor(glass={"specular": True, "ghosts": False}), scene, backend).simulate(np.eye(4))
    assert not off.hit[centre]


# -- blooming ----------------------------------------------------------------------------------------
def test_retroreflector_blooms_into_its_neighbours_in_the_same_row():
    """A retroreflective sign (ρ ≈ 80 × white) 5 m ahead in front of a concrete wall at 10 m: with
    bloom_width 2, the two columns beside the sign on each row read the sign's range with ρ·leak^k."""
    scene = Scene()
    for name, size, x, material in (("wall", [0.2, 60, 60], 10.1, "concrete"),
                                    ("sign", [0.02, 0.6, 0.6], 5.01, "retroreflective_sheeting")):
        box = trimesh.creation.box(size)
        scene.add_entity(name, TriMesh(box.vertices, box.faces), pose_to_matrix(x, 0, 0), material=material)
    backend = make_backend("embree", scene, threads=2)
    plain = LidarSimulator(sensor(), scene, backend).simulate(np.eye(4))
    leak = 0.1
    bloomed = LidarSimulator(sensor(signal={"bloom_threshold": 5.0, "bloom_width_px": 2, "bloom_leak": leak}),
                             scene, backend).simulate(np.eye(4))
    sign = plain.entity == scene.find("sign")
    assert sign.sum() > 10
    expected = np.zeros_like(sign)
    for k in (1, 2):
        expected[:, k:] |= sign[:, :-k]
        expected[:, :-k] |= sign[:, k:]
    expected &= ~sign
    halo = bloomed.hit & (bloomed.material == -1)
    np.testing.assert_array_equal(halo, expected)  # the wall (ρ/r² ≈ 0.003) loses to 80·leak^k/25 ≥ 0.03
    rows, cols = np.nonzero(halo)
    np.testing.assert_allclose(bloomed.range[halo], [plain.range[r, c - 1] if sign[r, c - 1] else plain.range[r, c + 1]
                                                    if sign[r, c + 1] else bloomed.range[r, c] for r, c in zip(rows, cols)],
                               rtol=1e-6)
    np.testing.assert_array_equal(bloomed.range[sign], plain.range[sign])
    refl, sign_refl = bloomed.fields["reflectivity"][halo], plain.fields["reflectivity"][sign]
    assert refl.max() == pytest.approx(leak * sign_refl.max(), rel=1e-5)
    assert refl.min() == pytest.approx(leak**2 * sign_refl.min(), rel=1e-5)


def reference_echoes(r, rho, w, sep, mode):
    """One beam's echoes by the definitions in echoes.py, written plainly: (range, reflectivity, dominant) list."""
    subs = sorted((r[i], i) for i in range(len(r)) if np.isfinite(r[i]))
    groups = []
    for dist, i in subs:
        if groups and (mode == "mixed" or dist - groups[-1][-1][0] <= sep):
            groups[-1].append((dist, i))
        else:
            groups.append([(dist, i)])
    echoes = []
    for g in groups:
        power = [w[i] * rho[i] / max(d, 0.1) ** 2 for d, i in g]
        strength = sum(power)
        echoes.append((sum(p * d for p, (d, _) in zip(power, g)) / strength if strength > 0 else np.inf,
                       sum(w[i] * rho[i] for _, i in g), g[int(np.argmax(power))][1], strength))
    if not echoes:
        return [None] * (2 if mode == "dual" else 1)
    strongest = int(np.argmax([e[3] for e in echoes]))
    if mode in ("strongest", "mixed"):
        return [echoes[strongest]]
    if mode == "first":
        return [echoes[0]]
    if mode == "last":
        return [echoes[-1]]
    if len(echoes) < 2:
        return [echoes[strongest], None]
    last = len(echoes) - 1
    if last == strongest:
        scores = [e[3] if j != strongest else -2 for j, e in enumerate(echoes)]
        last = int(np.argmax(scores))
    return [echoes[strongest], echoes[last]]


@pytest.mark.parametrize("mode", ["strongest", "last", "first", "dual", "mixed"])
def test_echo_formation_matches_a_plain_per_beam_reference(mode):
    from lidar_ros.physics.echoes import form_echoes

    rng = np.random.default_rng(11)
    n, k = 3000, 4
    base = rng.uniform(1, 40, (n, 1))
    r = base + np.where(rng.random((n, k)) < 0.3, rng.choice([0.1, 0.4, 2.0, 7.0], (n, k)), 0.0)
    r[rng.random((n, k)) < 0.2] = np.inf
    rho = rng.uniform(0.05, 1.0, (n, k))
    w = np.full(k, 1 / k)
    got = form_echoes(r.astype(np.float32), rho.astype(np.float32), w, 0.5, mode)
    for beam in range(n):
        want = reference_echoes(r[beam].astype(np.float32).astype(float), rho[beam].astype(np.float32), w, 0.5, mode)
        for echo, ref in zip(got, want):
            if ref is None or not np.isfinite(ref[0]):
                assert not np.isfinite(echo.range[beam])
                continue
            assert echo.range[beam] == pytest.approx(ref[0], rel=1e-5)
            assert echo.reflectivity[beam] == pytest.approx(ref[1], rel=1e-5)
            assert echo.dominant[beam] == beam * k + ref[2]


# -- snow -----------------------------------------------------------------------------------------------
def test_snow_extinction_follows_the_optical_power_law_and_koschmieder():
    """Kaushal & Kaddoum 2017: α = a·S^b dB/km, dry a = 5.42e-5·λ + 5.4958776, b = 1.38; wet a = 1.023e-4·λ +
    3.7855466, b = 0.72; 1 dB = ln(10)/10 nepers. Visibility in snow: α = 3.912/V."""
    from lidar_ros.physics.snow import snow_extinction_per_m, snow_visibility_extinction_per_m

    dry = (5.42e-5 * 905 + 5.4958776) * 5.0**1.38 * np.log(10) / 10 / 1000
    wet = (1.023e-4 * 1550 + 3.7855466) * 2.0**0.72 * np.log(10) / 10 / 1000
    assert snow_extinction_per_m(5.0, "dry", 905) == pytest.approx(dry, rel=1e-12)
    assert dry == pytest.approx(0.0118, abs=1e-4)  # the module's worked number
    assert snow_extinction_per_m(2.0, "wet", 1550) == pytest.approx(wet, rel=1e-12)
    assert snow_extinction_per_m(0.0, "dry", 905) == 0.0
    assert snow_visibility_extinction_per_m(0.5) == pytest.approx(3.912 / 500)


@pytest.mark.parametrize("snow, alpha", [
    ({"snow_rate_mm_h": 5.0}, (5.42e-5 * 905 + 5.4958776) * 5.0**1.38 * np.log(10) / 10 / 1000),
    ({"snow_rate_mm_h": 5.0, "snow_type": "wet"}, (1.023e-4 * 905 + 3.7855466) * 5.0**0.72 * np.log(10) / 10 / 1000),
    ({"snow_visibility_km": 0.3}, 3.912 / 300),
])
def test_snow_weakens_returns_by_two_way_beer_lambert(wall, snow, alpha):
    scene, backend = wall
    clear = LidarSimulator(sensor(), scene, backend).simulate(np.eye(4))
    snowy = LidarSimulator(sensor(weather={**snow, "backscatter": False}), scene, backend).simulate(np.eye(4))
    both = clear.hit & snowy.hit
    assert both.sum() > 1000 and np.array_equal(clear.hit, snowy.hit)  # no detection limit: all still seen
    ratio = snowy.fields["reflectivity"][both] / clear.fields["reflectivity"][both]
    np.testing.assert_allclose(ratio, np.exp(-2 * alpha * clear.range[both]), rtol=1e-4)


def test_snow_gives_particle_returns_near_the_sensor_and_loses_far_surfaces():
    """With a detection limit, falling snow adds false returns before the wall (particle backscatter) and
    thins the far wall out (two-way loss); clear air gives neither."""
    scene, backend = box_scene(("wall", [0.2, 300, 300], 25.1))
    limit = {"surface": {"model": "root2", "limits": [[0.10, 20.0], [0.80, 60.0]]}}  # concrete (0.3): ~36 m
    clear = LidarSimulator(sensor(**limit), scene, backend).simulate(np.eye(4))
    snowy = LidarSimulator(sensor(**limit, weather={"snow_visibility_km": 0.2}), scene, backend).simulate(np.eye(4))
    near = lambda s: (s.hit & (s.range < 20.0)).sum()  # noqa: E731
    far = lambda s: (s.hit & (s.range > 24.9)).sum()  # noqa: E731
    assert near(clear) == 0 and near(snowy) > 20
    assert far(clear) > 1000 and far(snowy) < 0.5 * far(clear)


def test_snow_rate_and_visibility_together_are_refused():
    with pytest.raises(ConfigError, match="snow_rate_mm_h or as snow_visibility_km"):
        sensor(weather={"snow_rate_mm_h": 1.0, "snow_visibility_km": 1.0})
    with pytest.raises(ConfigError, match="snow_type"):
        sensor(weather={"snow_rate_mm_h": 1.0, "snow_type": "slush"})
