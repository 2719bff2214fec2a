"""Lidar realism II (issue 23): per-model detection limits, rain extinction, return profiles from metadata,
signal and noise against datasheet figures and the shared real frames' distributions."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.special import ndtr

from lidar_ros import load_sensor
from lidar_ros.physics import SurfaceModel
from lidar_ros.physics.detection_probability import detection_probability, median_limits


def surface_model(cfg) -> SurfaceModel:
    return SurfaceModel(cfg.surface, cfg.noise, cfg.n_lasers, 0, cfg.effects)


# (reflectivity, range at > 90 %, range at > 50 %): Ouster Rev 6 datasheets, 1024 @ 10 Hz, 100 klx sunlight
DATASHEET = {
    "OS0-128": ((0.10, 15.0, 20.0), (0.80, 45.0, 50.0)),
    "OS1-64": ((0.10, 45.0, 55.0), (0.80, 100.0, 120.0)),
    "OS2-128": ((0.80, 240.0, None),),
}


@pytest.mark.parametrize("preset", list(DATASHEET))
def test_realistic_ouster_presets_detect_their_datasheet_targets_at_ninety_percent(preset):
    """--realistic: each product line's own limits (not the HDL-64E fallback), quoted at > 90 % detection."""
    cfg = load_sensor(preset, realistic=True)
    model = surface_model(cfg)
    k = cfg.effects.detection.snr_at_limit
    for rho, r90, r50 in DATASHEET[preset]:
        p = detection_probability(np.array([r90], np.float32), np.array([rho], np.float32), model.limit, k)[0]
        assert p == pytest.approx(0.9, abs=2e-3)  # float32 range, float64 curve
        if r50 is not None:  # the datasheet's own ½ figure, which the curve's steepness k predicts
            half = float(model.limit.max_range(rho))
            assert half == pytest.approx(r50, rel=0.15)
    # a 10 % target beyond the line's reach is (nearly) never seen
    far = 2.0 * DATASHEET[preset][0][1]
    p = detection_probability(np.array([far], np.float32), np.array([DATASHEET[preset][0][0]], np.float32), model.limit, k)
    assert p[0] < 0.01


def test_median_limits_inverts_the_detection_curve():
    """r_½ = r_P·√(1 + Φ⁻¹(P)/k): Φ(k·((r_½/r_P)² − 1)) = P, for several P and k."""
    for p in (0.5, 0.7, 0.9, 0.99):
        for k in (1.0, 4.0, 20.0):
            (rho, half), = median_limits(((0.1, 40.0),), p, k)
            assert ndtr(k * ((half / 40.0) ** 2 - 1.0)) == pytest.approx(p, abs=1e-12)
    limits = ((0.1, 50.0), (0.8, 120.0))
    assert median_limits(limits, 0.5, 4.0) is limits  # default: the pairs themselves (frames unchanged)


def test_non_ouster_presets_keep_their_limits():
    """Limits quoted at ½ (HDL-64E pairs): the model's curve passes through them unchanged."""
    cfg = load_sensor("HDL-64E-S2", realistic=True)
    model = surface_model(cfg)
    assert model.limit.max_range(np.array([0.1, 0.8])) == pytest.approx([50.0, 120.0])


def test_rain_extinction_is_the_geometric_cross_section_of_marshall_palmer_drops():
    """α = ∫ 2·πD²/4·N₀e^(−ΛD) dD integrated numerically equals the closed form of rain.py."""
    from scipy.integrate import quad

    from lidar_ros.physics.rain import rain_extinction_per_m

    for rate in (0.25, 2.5, 25.0, 100.0):
        slope = 4.1 * rate**-0.21
        area, _ = quad(lambda d: 2.0 * np.pi * d * d / 4.0 * 8000.0 * np.exp(-slope * d), 0.0, 60.0)  # mm² m⁻³
        assert rain_extinction_per_m(rate) == pytest.approx(area * 1e-6, rel=1e-9)


def test_rain_extinction_matches_the_visibility_of_rain_in_the_literature():
    """Kim et al. 2001 (SPIE 4214) weather table: heavy rain 25 mm/h 1.9 km, medium 12.5 mm/h 2.8 km,
    light 2.5 mm/h 5.9 km of visibility; α = 3.912/V within a factor 1.5 (the old 0.01·R^0.6 /m: 25-36×)."""
    from lidar_ros.physics.weather import extinction_per_m

    for rate, visibility_km in ((25.0, 1.9), (12.5, 2.8), (2.5, 5.9)):
        ratio = extinction_per_m(0.0, rate) / (3.912 / (visibility_km * 1000.0))
        assert 1 / 1.5 < ratio < 1.5, (rate, ratio)


# -- return profiles --------------------------------------------------------------------------------
def test_dual_strongest_reports_the_second_strongest_echo_nearer_or_farther():
    """Three echoes at 5 m (ρ 0.1), 10 m (ρ 0.9), 20 m (ρ 0.9), equal weights: strengths ρ/r² = 0.004,
    0.009, 0.00225. Strongest 10 m; Ouster's second return is the second strongest, 5 m (nearer); the
    Velodyne-style dual reports the last, 20 m."""
    from lidar_ros.physics.echoes import form_echoes

    ranges = np.array([[5.0, 10.0, 20.0], [20.0, 5.0, 10.0], [10.0, 10.1, np.inf]], np.float32)
    rho = np.array([[0.1, 0.9, 0.9], [0.9, 0.1, 0.9], [0.9, 0.9, 0.0]], np.float32)
    w = np.full(3, 1 / 3, np.float32)
    first, second = form_echoes(ranges, rho, w, 0.5, "dual_strongest")
    mixed = (10.0 / 100.0 + 10.1 / 10.1**2) / (1 / 100.0 + 1 / 10.1**2)  # one echo: the power-weighted centroid
    np.testing.assert_allclose(first.range, [10.0, 10.0, mixed], rtol=1e-6)
    np.testing.assert_allclose(second.range[:2], [5.0, 5.0])
    assert not np.isfinite(second.range[2])  # one surface: no second return
    np.testing.assert_allclose(second.reflectivity[:2], [0.1 / 3, 0.1 / 3], rtol=1e-6)
    _, last = form_echoes(ranges, rho, w, 0.5, "dual")
    np.testing.assert_allclose(last.range[:2], [20.0, 20.0])


REAL = Path("/work/shared/realdata/ouster")
SHIPPED = Path(__file__).resolve().parents[1] / "radarays_ros" / "data" / "lidar" / "ouster"


def test_ouster_metadata_dual_profile_gives_dual_returns_without_overrides():
    dual = SHIPPED / "raw_3_0_1_os-122246000293-128.json"  # udp_profile_lidar RNG19_RFL8_SIG16_NIR16_DUAL
    single = SHIPPED / "raw_OS-2-128-U1_v2.3.0_1024x10.json"  # RNG19_RFL8_SIG16_NIR16
    assert load_sensor(str(dual)).effects.beam.return_mode == "dual_strongest"
    assert load_sensor(str(dual), realistic=True).effects.beam.return_mode == "dual_strongest"
    assert load_sensor(str(single)).effects.beam.return_mode == "strongest"
    assert load_sensor(str(dual), {"beam.return_mode": "strongest"}).effects.beam.return_mode == "strongest"


# -- signal: near-range overlap ------------------------------------------------------------------------
def real_overlap_trend(name: str, far_m: float):
    """(bin centre ranges, median signal·r²/ρ per bin over its far-range plateau) of a shared real frame,
    ρ from the calibrated reflectivity (Lambertian 1-100; Ouster corrects it for the overlap, not the signal)."""
    d = np.load(REAL / name)
    r = d["range_mm"].astype(float) / 1000
    s = d["signal"].astype(float)
    q = d["reflectivity"].astype(float)
    v = (r > 0) & (q > 2) & (q <= 100) & (s > 0)
    k, rv = s[v] * r[v] ** 2 / (q[v] / 100), r[v]
    plateau = np.median(k[rv >= far_m])
    edges = np.geomspace(1.0, 2 * far_m, 12)
    centres, ratios = [], []
    for a, b in zip(edges[:-1], edges[1:]):
        m = (rv >= a) & (rv < b)
        if m.sum() > 50:
            centres.append(np.sqrt(a * b))
            ratios.append(np.median(k[m]) / plateau)
    return np.array(centres), np.array(ratios)


@pytest.mark.skipif(not REAL.is_dir(), reason="shared real frames not present")
@pytest.mark.parametrize("name, preset, far_m", [("single_scan_016.npz", "OS0-128", 6.0),
                                                 ("OS-2-128-U1_v2.3.0_1024x10.npz", "OS2-128", 32.0)])
def test_signal_falls_below_inverse_square_at_near_range_as_the_real_frames_do(name, preset, far_m):
    """signal·r²/ρ over its far plateau, per range bin from 1 m: the preset's overlap O(r) within a factor 2
    of the real frame's in every bin (1/r² alone: 0.03 at 4 m for the OS2)."""
    from lidar_ros.physics.overlap import overlap

    centres, ratios = real_overlap_trend(name, far_m)
    assert len(centres) >= 6 and ratios.min() < 0.2  # the frame does fall below 1/r² near the sensor
    model = overlap(centres, load_sensor(preset).surface.overlap_range_m).astype(float)
    assert np.all(np.abs(np.log(model / ratios)) < np.log(2.0)), np.c_[centres, ratios, model]


def test_signal_carries_the_overlap_on_both_signal_paths():
    """ouster_signal (mean, no shot noise) and the photon path's mean: K·ρ·(1 − exp(−(r/r₀)²))/r²."""
    from lidar_ros.physics.intensity import ouster_signal

    r = np.array([0.5, 2.0, 5.0, 10.0, 40.0], np.float32)
    rho = np.full(5, 0.5, np.float32)
    got = ouster_signal(rho, r, 1e5, 5.0)
    want = np.rint(1e5 * 0.5 * (1 - np.exp(-(r.astype(float) / 5.0) ** 2)) / r.astype(float) ** 2)
    np.testing.assert_allclose(got, want, atol=1)
    np.testing.assert_array_equal(ouster_signal(rho, r, 1e5, 0.0), ouster_signal(rho, r, 1e5))


# -- range precision by SNR ---------------------------------------------------------------------------------
def test_sigma_follows_the_datasheet_repeatability_by_snr():
    """Ouster OS1 datasheet: ±10 cm at SNR 12, ±3 cm at SNR 100, ±1.5 cm above 250 (the floor)."""
    from lidar_ros.physics.range_precision import sigma_at_snr

    pairs = ((12.0, 0.10), (100.0, 0.03))
    got = sigma_at_snr(np.array([12.0, 100.0, 250.0, 1e4, 6.0]), pairs, 0.015)
    np.testing.assert_allclose(got[:2], [0.10, 0.03], rtol=1e-5)
    assert 0.015 <= got[2] < 0.02 and got[3] == pytest.approx(0.015)
    assert got[4] == pytest.approx(0.10 * 2 ** (np.log(0.10 / 0.03) / np.log(100 / 12)), rel=1e-5)


def hits_at(r: float, rho: float, n: int):
    from lidar_ros.physics import LidarHits

    z = np.zeros(n, np.int32)
    return LidarHits(np.full(n, r, np.float32), z, z, np.zeros((n, 3), np.float32), np.ones(n, np.float32),
                     np.full(n, rho, np.float32), z.astype(np.int16), z.astype(np.int16), z, z, np.full(n, r, np.float32))


def test_range_noise_is_larger_for_weak_far_returns_than_for_near_bright_ones():
    """OS1-64 --realistic (B = 3 background photons): the spread of range − clean range over 40 000 rays
    matches σ(S/√B), S = K·ρ·O(r)/r², floored at noise.snr_floor; a near bright wall gets a few mm (σ = 70 mm/√S,
    range_precision.py), a 10 % target at 40 m about 2 cm. Without background (presets as before) every return
    gets 1.5 cm."""
    from lidar_ros.physics.overlap import overlap
    from lidar_ros.physics.range_precision import sigma_at_snr

    cfg = load_sensor("OS1-64", realistic=True)
    surface = cfg.surface.__class__(**{**cfg.surface.__dict__, "model": "none"})  # every ray returns
    model = SurfaceModel(surface, cfg.noise.__class__(**{**cfg.noise.__dict__, "resolution": 0.0}), 1, 0, cfg.effects)
    background = cfg.effects.signal.noise_floor
    assert background > 0
    for r, rho in ((5.0, 0.8), (40.0, 0.1)):
        ret = model.apply(hits_at(r, rho, 40000), None, np.random.default_rng(3))
        spread = np.std((ret.range - ret.clean_range)[ret.hit])  # --realistic drops a few pixels
        signal = surface.signal_scale * rho * float(overlap(np.array([r]), surface.overlap_range_m)[0]) / r**2
        want = float(sigma_at_snr(np.array([signal / np.sqrt(background)]), cfg.noise.snr_sigma, cfg.noise.snr_floor)[0])
        assert spread == pytest.approx(want, rel=0.03)
        assert (want < 0.005) if r == 5.0 else (want > 0.015)
    plain = load_sensor("OS1-64")
    model = SurfaceModel(surface, plain.noise.__class__(**{**plain.noise.__dict__, "resolution": 0.0}), 1, 0, plain.effects)
    ret = model.apply(hits_at(40.0, 0.1, 40000), None, np.random.default_rng(3))
    assert np.std(ret.range - ret.clean_range) == pytest.approx(0.015, rel=0.03)


# -- dropouts where the footprint splits ------------------------------------------------------------------------
def test_echo_coverage_is_the_power_share_of_the_reported_echo():
    from lidar_ros.physics.edge_dropout import echo_coverage, edge_dropped

    w = np.array([0.1, 0.2, 0.3, 0.4], np.float32)
    ranges = np.array([[5, 5, 5, 5], [5, 5.2, np.inf, np.inf], [5, 9, 9, 9], [np.inf] * 4], np.float32)
    echo = np.array([5.1, 5.1, 9.0, np.inf], np.float32)
    np.testing.assert_allclose(echo_coverage(ranges, w, echo, 0.5), [1.0, 0.3, 0.9, 0.0], rtol=1e-6)
    lost = edge_dropped(np.full(200000, 0.3, np.float32), np.random.default_rng(0))
    assert lost.mean() == pytest.approx(0.7, abs=0.005)
    assert not edge_dropped(np.ones(1000, np.float32), np.random.default_rng(0)).any()


def test_realistic_holes_fall_at_silhouettes_not_on_walls():
    """A pole before the sky, a wall behind part of it; --realistic (edge dropouts, no flat dropouts): no
    pixel of the wall's interior or the pole's interior is lost, a good share of the pole's silhouette
    against the sky is."""
    import trimesh

    from lidar_ros import LidarSimulator
    from radarays_ros.tracing import make_backend
    from radarays_ros.world.mesh import TriMesh
    from radarays_ros.world.scene import Scene
    from radarays_ros.world.transforms import pose_to_matrix

    scene = Scene()
    for name, size, pose in (("wall", (0.2, 4.0, 3.0), (8.0, -2.5, 0.0)), ("pole", (0.3, 0.3, 3.0), (5.0, 0.0, 0.0))):
        box = trimesh.creation.box(size)
        scene.add_entity(name, TriMesh(box.vertices, box.faces), pose_to_matrix(*pose, 0, 0, 0), material="concrete")
    backend = make_backend("embree", scene, threads=2)
    cfg = load_sensor("OS1-64", {"columns": 2048, "beam.divergence_mrad": 6.0}, realistic=True)
    scan = LidarSimulator(cfg, scene, backend, seed=4).simulate(np.eye(4))
    truth = LidarSimulator(load_sensor("OS1-64", {"columns": 2048}), scene, backend).simulate(np.eye(4))
    hit, ref = scan.hit, truth.hit
    # interior: a pixel whose 8 neighbours (and itself) all hit in the clean frame
    pad = np.pad(ref, 1)
    interior = np.ones_like(ref)
    for dr in (-1, 0, 1):
        for dc in (-1, 0, 1):
            interior &= pad[1 + dr:1 + dr + ref.shape[0], 1 + dc:1 + dc + ref.shape[1]]
    edge = ref & ~interior
    assert interior.sum() > 500 and edge.sum() > 50
    assert hit[interior].mean() > 0.999  # walls do not drop (the flat 0.3 % is gone)
    assert 1 - hit[edge].mean() > 0.05, (1 - hit[edge].mean())  # silhouettes do


# -- frames seeded by their time -----------------------------------------------------------------------------
def test_single_scans_at_different_start_times_have_different_noise():
    """Noise is seeded by the run's seed, the frame count and the frame's start time: the first frame of two
    runs started at different --t0 differ; the same t0 repeats bit for bit."""
    import trimesh

    from lidar_ros import LidarSimulator
    from radarays_ros.tracing import make_backend
    from radarays_ros.world.mesh import TriMesh
    from radarays_ros.world.scene import Scene

    scene = Scene()
    box = trimesh.creation.box((20.0, 20.0, 6.0))
    scene.add_entity("room", TriMesh(box.vertices, box.faces), material="concrete")
    backend = make_backend("embree", scene, threads=2)
    cfg = load_sensor("VLP-16")  # sigma 1.77 cm per ray
    first = [LidarSimulator(cfg, scene, backend).simulate(np.eye(4), t0).range for t0 in (0, 10**9, 10**9)]
    assert not np.array_equal(first[0], first[1], equal_nan=True)
    np.testing.assert_array_equal(first[1], first[2])


# -- reflectivity texture ---------------------------------------------------------------------------------------------
def test_texture_field_has_unit_variance_and_its_lattice_correlation():
    """Unit variance over space; points 2ℓ apart share no lattice corner (uncorrelated); points ℓ/20 apart
    nearly the same; another seed, another field; the albedo factor keeps the mean."""
    from lidar_ros.physics.texture import albedo_factor, field

    p = np.random.default_rng(0).uniform(-40, 40, (200000, 3))
    n = field(p, 0.3, 7)
    assert n.mean() == pytest.approx(0.0, abs=0.01) and n.std() == pytest.approx(1.0, abs=0.01)
    step = np.array([0.6, 0.0, 0.0])
    assert abs(np.corrcoef(n, field(p + step, 0.3, 7))[0, 1]) < 0.01
    assert np.corrcoef(n, field(p + step / 40, 0.3, 7))[0, 1] > 0.98
    assert abs(np.corrcoef(n, field(p, 0.3, 8))[0, 1]) < 0.01
    np.testing.assert_array_equal(n, field(p, 0.3, 7))
    f = albedo_factor(p, 0.25, 0.3, 7)
    assert f.mean() == pytest.approx(1.0, abs=0.01) and np.log(f).std() == pytest.approx(0.25, rel=0.02)
    assert albedo_factor(np.full((3, 3), np.inf), 0.25, 0.3, 7).tolist() == [1.0, 1.0, 1.0]


def neighbour_spread(r: np.ndarray, q: np.ndarray) -> tuple[int, float]:
    """Horizontal neighbours on one surface (|Δr| < 1 %), both Lambertian 5..100: (count, std of ln q_b/q_a)."""
    a, b = r[:, :-1], r[:, 1:]
    qa, qb = q[:, :-1].astype(float), q[:, 1:].astype(float)
    m = (a > 0) & (b > 0) & (np.abs(a - b) < 0.01 * a) & (qa >= 5) & (qb >= 5) & (qa <= 100) & (qb <= 100)
    return int(m.sum()), float(np.std(np.log(qb[m] / qa[m])))


@pytest.mark.skipif(not REAL.is_dir(), reason="shared real frames not present")
def test_realistic_reflectivity_has_texture_like_the_real_frames():
    """Street world, OS2-128 --realistic: hundreds of distinct reflectivity values (real: 208-245, flat paint:
    a few dozen) and a neighbour-to-neighbour ln spread within a factor 2 of the real OS0/OS2 frames'."""
    from lidar_ros import LidarSimulator
    from radarays_ros.tracing import make_backend
    from radarays_ros.world.loader import load_world
    from radarays_ros.world.transforms import pose_to_matrix

    scene = load_world("street")
    backend = make_backend("embree", scene, threads=2)
    scan = LidarSimulator(load_sensor("OS2-128", realistic=True), scene, backend, seed=2).simulate(
        pose_to_matrix(0, 0, 1.8, 0, 0, 0))
    q = np.asarray(scan.fields["ouster_reflectivity"])
    r = np.where(scan.hit, scan.range, 0.0)
    assert len(np.unique(q[scan.hit])) > 100
    count, spread = neighbour_spread(r, q)
    real = [neighbour_spread(d["range_mm"].astype(float) / 1000, d["reflectivity"])[1]
            for d in (np.load(REAL / n) for n in ("OS-2-128-U1_v2.3.0_1024x10.npz", "single_scan_016.npz"))]
    assert count > 1000 and min(real) / 2 < spread < max(real) * 2, (spread, real)


def test_reflectivity_is_inferred_from_the_counted_signal_with_its_shot_noise():
    """signal.poisson on: REFLECTIVITY = round(100·N·r²/(K·O(r))) of Poisson counts N, so its mean is the
    surface's 100·ρ and its spread √(mean N)/mean N relative; off: the exact 100·ρ."""
    cfg = load_sensor("OS1-64", realistic=True)
    surface = cfg.surface.__class__(**{**cfg.surface.__dict__, "model": "none"})
    model = SurfaceModel(surface, None, 1, 0, cfg.effects)
    from lidar_ros.physics.overlap import overlap

    for r, rho in ((30.0, 0.2), (6.0, 0.5)):
        ret = model.apply(hits_at(r, rho, 40000), None, np.random.default_rng(5))
        q = np.asarray(ret.ouster_reflectivity, float)[ret.hit]
        counts = surface.signal_scale * rho * float(overlap(np.array([r]), surface.overlap_range_m)[0]) / r**2
        assert q.mean() == pytest.approx(100 * rho, rel=0.01)
        assert q.std() == pytest.approx(100 * rho / np.sqrt(counts), rel=0.1)  # + rounding to integers
    plain = SurfaceModel(surface, None, 1, 0, load_sensor("OS1-64").effects)
    q = np.asarray(plain.apply(hits_at(30.0, 0.2, 1000), None, np.random.default_rng(5)).ouster_reflectivity)
    assert np.all(q == 20)


def test_ray_sigma_is_the_formula_of_range_precision():
    """The fast per-ray σ (power only above the floor) equals σ(S/√B) written out, and the floor without B."""
    from lidar_ros.physics.overlap import overlap
    from lidar_ros.physics.range_precision import ray_sigma, sigma_at_snr, signal_to_noise

    rng = np.random.default_rng(1)
    clean = rng.uniform(0.05, 150, 20000).astype(np.float32)
    clean[::9] = np.nan
    rho = rng.uniform(0, 1.2, 20000).astype(np.float32)
    pairs = ((12.0, 0.10), (100.0, 0.03))
    r = np.fmax(clean, np.float32(0.1))
    signal = np.where(np.isnan(clean), 0, rho * 231000.0 * overlap(r, 10.1) / (r * r))
    want = sigma_at_snr(signal_to_noise(signal, 3.0), pairs, 0.015)
    got = ray_sigma(rho, clean, 231000.0, 10.1, 3.0, pairs, 0.015)
    ok = np.isfinite(clean) & (rho > 0)
    np.testing.assert_allclose(got[ok], want[ok], rtol=2e-5)
    assert np.all(ray_sigma(rho, clean, 231000.0, 10.1, 0.0, pairs, 0.015) == np.float32(0.015))


@pytest.mark.skipif(not REAL.is_dir(), reason="shared real frames not present")
def test_ouster_dual_never_has_a_second_return_without_a_first():
    """Ouster reports the strongest detected echo in RANGE: a pixel never has RANGE2 alone (real
    single_scan_016: 0 of 6447), also where --realistic's edge dropouts reject the strongest."""
    from lidar_ros import LidarSimulator
    from radarays_ros.tracing import make_backend
    from radarays_ros.world.loader import load_world
    from radarays_ros.world.transforms import pose_to_matrix

    real = np.load(REAL / "single_scan_016.npz")
    assert np.count_nonzero((real["range2_mm"] > 0) & (real["range_mm"] == 0)) == 0
    scene = load_world("street")
    backend = make_backend("embree", scene, threads=2)
    cfg = load_sensor(str(REAL / "single_scan_016.json"), {"beam.divergence_mrad": 8.0}, realistic=True)
    scan = LidarSimulator(cfg, scene, backend, seed=3).simulate(pose_to_matrix(0, 0, 1.8, 0, 0, 0))
    assert scan.second.hit.sum() > 100
    assert not np.any(scan.second.hit & ~scan.hit)


def test_lane_marking_is_bright_at_grazing_incidence_where_asphalt_is_dark():
    """Road seen at grazing incidence: beaded lane paint returns 0.47 of a white target (EN 1436 R3,
    retroreflective, whatever the angle); asphalt 0.08·cos θ. Calibrated reflectivity ~47 against ~1."""
    import trimesh

    from lidar_ros import LidarSimulator
    from radarays_ros.tracing import make_backend
    from radarays_ros.world.mesh import TriMesh
    from radarays_ros.world.scene import Scene
    from radarays_ros.world.transforms import pose_to_matrix

    got = {}
    for material in ("lane_marking", "asphalt"):
        scene = Scene()
        road = trimesh.creation.box((200.0, 200.0, 0.1))
        scene.add_entity("road", TriMesh(road.vertices, road.faces), pose_to_matrix(0, 0, -0.05), material=material)
        backend = make_backend("embree", scene, threads=2)
        scan = LidarSimulator(load_sensor("OS1-64"), scene, backend).simulate(pose_to_matrix(0, 0, 1.8, 0, 0, 0))
        far = scan.hit & (scan.range > 15.0)  # incidence > 83 deg
        got[material] = (np.asarray(scan.fields["reflectivity"])[far], np.asarray(scan.fields["ouster_reflectivity"])[far])
    lane, asphalt = got["lane_marking"], got["asphalt"]
    assert len(lane[0]) > 100 and len(asphalt[0]) > 100
    np.testing.assert_allclose(lane[0], 0.47, rtol=1e-5)
    assert np.median(lane[1]) == 47 and np.median(asphalt[1]) <= 1


@pytest.mark.parametrize("overlap_range, snr_floor", [(10.1, None), (0.0, 0.003)])
def test_ray_sigma_has_the_bits_of_its_numpy_passes(overlap_range, snr_floor):
    """ray_sigma's compiled passes against the float32 numpy passes in the same order (fmax, ρ·K, / r², · O(r),
    the rows below the floor's SNR), bit for bit, with NaN ranges (no return) and ranges under 0.1 m."""
    from lidar_ros.physics.overlap import overlap
    from lidar_ros.physics.range_precision import exponent, ray_sigma

    rng = np.random.default_rng(2)
    clean = rng.uniform(0.0, 150, 20000).astype(np.float32)
    clean[::9] = np.nan
    clean[1::97] = np.inf
    rho = rng.uniform(0, 1.2, 20000).astype(np.float32)
    pairs, floor, background = ((12.0, 0.0154), (100.0, 0.0053)), 0.004, 3.0
    (snr1, sigma1), _ = pairs
    p = exponent(pairs)
    low_floor = floor if snr_floor is None else snr_floor
    r = np.fmax(clean, np.float32(0.1))
    snr = rho * np.float32(231000.0 / np.sqrt(background))
    snr /= r * r
    if overlap_range > 0:
        snr *= overlap(r, overlap_range)
    floor_snr = snr1 * (sigma1 / low_floor) ** (1.0 / p)
    low = np.flatnonzero((snr < np.float32(floor_snr)) & np.isfinite(clean))
    want = np.full(len(clean), np.float32(low_floor), np.float32)
    x = np.float32(snr1) / np.maximum(snr[low], np.float32(1e-3))
    want[low] = np.maximum(np.power(x, np.float32(p)) * np.float32(sigma1), np.float32(low_floor))
    got = ray_sigma(rho, clean, 231000.0, overlap_range, background, pairs, floor, snr_floor)
    assert got.dtype == np.float32 and 0 < len(low) < len(clean)
    np.testing.assert_array_equal(got, want)
    if overlap_range > 0:  # O(r) given by the caller (SurfaceModel.apply shares it with the photon fields)
        from lidar_ros.physics.overlap import range_overlap

        factor = range_overlap(clean, overlap_range)
        shared = ray_sigma(rho, clean, 231000.0, overlap_range, background, pairs, floor, snr_floor, factor)
        assert shared.tobytes() == got.tobytes()
