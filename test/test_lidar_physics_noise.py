"""Detection-limit curves, range noise, intensity fields and config validation of the lidar physics."""
import numpy as np
import pytest

from lidar_ros.physics import (DETECTION_MODELS, DetectionLimit, LidarHits, NoiseConfig, SurfaceConfig,
                               SurfaceModel, jitter_directions)
from lidar_ros.physics.intensity import calibrated_reflectivity, ouster_signal
from radarays_ros.errors import ConfigError

HDL64E = ((0.10, 50.0), (0.80, 120.0))


def wall_hits(ranges, rho=0.5) -> LidarHits:
    """Hits at the given ranges (inf = miss) with reflectivity rho, as trace_lidar would report them."""
    ranges = np.asarray(ranges, np.float32)
    hits = LidarHits.misses(len(ranges))
    hit = np.isfinite(ranges)
    hits.range[:] = ranges
    hits.entity[hit] = 0
    hits.material[hit] = 0
    hits.first_entity[hit] = 0
    hits.cos_incidence[hit] = 1.0
    hits.reflectivity[hit] = rho
    return hits


# -- detection limit ---------------------------------------------------------------------------------
@pytest.mark.parametrize("model", [m for m in DETECTION_MODELS if m != "none"])
@pytest.mark.parametrize("limits", [HDL64E, ((0.10, 50.0), (0.90, 100.0)), ((0.05, 20.0), (0.50, 35.0))])
def test_detection_limit_passes_through_both_datasheet_pairs_and_is_monotone(model, limits):
    limit = DetectionLimit(SurfaceConfig(model=model, limits=limits))
    (r1, d1), (r2, d2) = limits
    np.testing.assert_allclose(limit.max_range([r1, r2]), [d1, d2], rtol=1e-12)
    rho = np.linspace(0.0, 3.0, 3001)
    curve = limit.max_range(rho)
    assert np.all(np.diff(curve) >= 0) and curve[0] == 0.0 and np.all(curve >= 0)
    keep = limit.keep(np.array([d1 * 0.999, d1 * 1.001, np.inf]), np.array([r1, r1, 5.0]))
    assert keep.tolist() == [True, False, False]  # just inside, just outside, a miss


def test_detection_limit_forms_differ_between_the_pairs_as_their_physics_says():
    rho = 0.3
    got = {m: float(DetectionLimit(SurfaceConfig(model=m, limits=HDL64E)).max_range(rho)) for m in DETECTION_MODELS}
    assert got["none"] == np.inf
    # concave forms (root, log) reach farther between the pairs than the straight line
    assert got["linear"] < got["root2"] < got["root3"] < got["root4"] < got["log"]
    assert got["blensor"] == pytest.approx(got["linear"])  # BlenSor: linear R_min(d) between the pairs
    blensor = DetectionLimit(SurfaceConfig(model="blensor", limits=HDL64E))
    assert blensor.max_range([0.01, 0.1]).tolist() == [50.0, 50.0]  # below d_lower every ρ > 0 is seen


@pytest.mark.parametrize("model", DETECTION_MODELS)
def test_compiled_keep_decides_as_the_numpy_passes(model):
    """keep's compiled pass (blensor, linear, root2, root4) and its numpy passes (every form) decide alike, ray by
    ray: ranges on both sides of the limit (a hair either way), misses, NaN, black and negative ρ, a 2-D frame."""
    limit = DetectionLimit(SurfaceConfig(model=model, limits=HDL64E))
    rng = np.random.default_rng(4)
    rho = rng.uniform(-0.1, 1.5, 30000).astype(np.float32)
    rho[:5] = [0.0, np.nan, np.inf, 1e-30, 1.0]
    r = limit.limit32(rho) if model != "none" else rng.uniform(0, 100, 30000).astype(np.float32)
    r = np.where(rng.random(30000) < 0.5, np.nextafter(r, np.float32(np.inf)), r).astype(np.float32)
    r[5:10] = [np.inf, np.nan, 0.0, -0.0, 1e30]
    for ranges, values in ((r, rho), (r.reshape(100, 300), rho.reshape(100, 300))):
        got, want = limit.keep(ranges, values), limit.keep_numpy(ranges, values)
        assert got.shape == want.shape and got.dtype == bool and np.array_equal(got, want)
        assert model == "none" or (got.any() and not got.all())


def test_model_none_keeps_every_hit():
    returns = SurfaceModel().apply(wall_hits([1.0, 500.0, np.inf], rho=0.0), None, np.random.default_rng(0))
    assert returns.hit.tolist() == [True, True, False]


# -- per-laser bias ------------------------------------------------------------------------------------
def test_per_laser_bias_is_fixed_for_the_run_and_set_by_the_seed():
    noise = NoiseConfig(bias_sigma=0.05)
    model = SurfaceModel(noise=noise, n_lasers=16, seed=7)
    lasers = np.arange(16).repeat(4)
    hits = wall_hits(np.full(len(lasers), 10.0))
    scans = [model.apply(hits, lasers, np.random.default_rng(s)).range - 10.0 for s in range(3)]
    for offsets in scans:  # the same offset for every ray of a laser, and the same in every scan
        np.testing.assert_allclose(offsets, model.biases[lasers], atol=2e-6)
    assert np.ptp(model.biases) > 0.01
    np.testing.assert_array_equal(SurfaceModel(noise=noise, n_lasers=16, seed=7).biases, model.biases)
    assert not np.allclose(SurfaceModel(noise=noise, n_lasers=16, seed=8).biases, model.biases)


@pytest.mark.parametrize("distribution", ["gaussian", "laplace"])
def test_bias_distribution_has_the_configured_spread(distribution):
    biases = SurfaceModel(noise=NoiseConfig(bias_distribution=distribution, bias_sigma=0.06), n_lasers=20000,
                          seed=1).biases
    assert abs(biases.mean()) < 0.003 and biases.std() == pytest.approx(0.06, rel=0.04)
    kurtosis = np.mean(biases**4) / np.mean(biases**2) ** 2
    assert kurtosis == pytest.approx(3.0 if distribution == "gaussian" else 6.0, rel=0.2)


# -- per-ray noise -------------------------------------------------------------------------------------
def test_per_ray_gaussian_has_zero_mean_and_the_configured_sigma():
    n = 40000
    returns = SurfaceModel(noise=NoiseConfig(sigma=0.02)).apply(wall_hits(np.full(n, 10.0)), None,
                                                                np.random.default_rng(3))
    error = returns.range.astype(np.float64) - 10.0
    assert abs(error.mean()) < 4 * 0.02 / np.sqrt(n)
    assert error.std() == pytest.approx(0.02, rel=0.03)
    np.testing.assert_array_equal(returns.clean_range, 10.0)


@pytest.mark.parametrize("exponent", [1.0, 2.0])
def test_relative_noise_scales_with_range_to_the_power_k(exponent):
    n = 20000
    model = SurfaceModel(noise=NoiseConfig(relative_sigma=0.001, relative_exponent=exponent))
    spread = {}
    for r in (5.0, 20.0):
        returns = model.apply(wall_hits(np.full(n, r)), None, np.random.default_rng(4))
        spread[r] = (returns.range.astype(np.float64) - r).std()
        assert spread[r] == pytest.approx(0.001 * r**exponent, rel=0.04)
    assert spread[20.0] / spread[5.0] == pytest.approx(4.0**exponent, rel=0.06)


def test_dust_only_shortens_ranges_within_its_bounds():
    n = 20000
    model = SurfaceModel(noise=NoiseConfig(dust_probability=0.1, dust_min_range=1.0))
    returns = model.apply(wall_hits(np.full(n, 10.0)), None, np.random.default_rng(5))
    assert np.all(returns.range <= 10.0) and np.all(returns.range >= 1.0)
    assert returns.dust.mean() == pytest.approx(0.1, abs=0.01)
    assert np.all(returns.range[~returns.dust] == 10.0) and np.all(returns.range[returns.dust] < 10.0)
    assert returns.range[returns.dust].mean() == pytest.approx(5.5, abs=0.15)  # uniform in [1, 10]


def test_quantisation_rounds_to_the_resolution():
    ranges = np.array([1.0004, 1.0006, 7.3337, 12.5])
    returns = SurfaceModel(noise=NoiseConfig(resolution=0.002)).apply(wall_hits(ranges), None,
                                                                       np.random.default_rng(0))
    np.testing.assert_allclose(returns.range, [1.000, 1.000, 7.334, 12.5], atol=1e-6)
    steps = returns.range / 0.002
    np.testing.assert_allclose(steps, np.round(steps), atol=1e-3)


def test_misses_stay_misses_with_every_noise_on():
    noise = NoiseConfig(bias_sigma=0.1, sigma=0.1, relative_sigma=0.01, dust_probability=0.5, dust_min_range=0.5,
                        resolution=0.01, angular_sigma=0.01)
    ranges = np.where(np.arange(1000) % 3 == 0, np.inf, 0.05 + np.arange(1000) * 0.1)
    model = SurfaceModel(SurfaceConfig(model="root2"), noise, n_lasers=4, seed=0)
    returns = model.apply(wall_hits(ranges), np.arange(1000) % 4, np.random.default_rng(6))
    miss = ~np.isfinite(ranges)
    assert np.all(np.isnan(returns.range[miss])) and not returns.hit[miss].any()
    assert np.all(np.isfinite(returns.range[returns.hit])) and np.all(returns.range[returns.hit] >= 0)
    assert np.all(np.isnan(returns.range[~returns.hit]))
    assert np.all(returns.intensity[miss] == 0) and np.all(returns.ouster_signal[miss] == 0)


def test_same_seed_same_returns_bit_for_bit():
    noise = NoiseConfig(bias_sigma=0.05, sigma=0.01, dust_probability=0.05)
    hits = wall_hits(np.linspace(1, 80, 500))
    lasers = np.arange(500) % 8
    a = SurfaceModel(SurfaceConfig(model="log"), noise, 8, seed=3).apply(hits, lasers, np.random.default_rng(9))
    b = SurfaceModel(SurfaceConfig(model="log"), noise, 8, seed=3).apply(hits, lasers, np.random.default_rng(9))
    for field in ("range", "hit", "ouster_ambient", "dust"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))


def test_laser_index_is_checked_when_biases_are_used():
    model = SurfaceModel(noise=NoiseConfig(bias_sigma=0.05), n_lasers=4)
    with pytest.raises(ConfigError, match="laser"):
        model.apply(wall_hits([5.0]), None, np.random.default_rng(0))
    with pytest.raises(ConfigError, match="0..3"):
        model.apply(wall_hits([5.0]), np.array([4]), np.random.default_rng(0))


# -- angular jitter ------------------------------------------------------------------------------------
def test_jitter_tilts_unit_directions_by_sigma():
    rng = np.random.default_rng(2)
    dirs = rng.normal(size=(20000, 3))
    dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
    out = jitter_directions(dirs, 0.01, rng)
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-6)
    angle = np.arccos(np.clip(np.einsum("ij,ij->i", out, dirs), -1, 1))
    assert angle.mean() == pytest.approx(0.01 * np.sqrt(np.pi / 2), rel=0.03)  # Rayleigh(σ) mean
    assert jitter_directions(dirs, 0.0, rng) is not None
    np.testing.assert_array_equal(jitter_directions(dirs.astype(np.float32), 0.0, rng), dirs.astype(np.float32))


# -- intensity fields ----------------------------------------------------------------------------------
def test_calibrated_reflectivity_scale():
    values = calibrated_reflectivity(np.array([0.0, 0.1, 0.555, 1.0, 1.0001, 10.0, 100.0, 1e4]), 100.0)
    assert values.tolist() == [0.0, 10.0, 56.0, 100.0, 101.0, 178.0, 255.0, 255.0]


def test_ouster_signal_falls_with_range_squared_and_saturates():
    signal = ouster_signal(np.array([0.5, 0.5, 0.5, 50.0, 0.5]), np.array([10.0, 20.0, 40.0, 0.5, np.inf]), 2e5)
    assert signal[0] == 1000 and signal[1] == 250 and signal[2] == 62
    assert signal[3] == 65535 and signal[4] == 0 and signal.dtype == np.uint16


def test_returns_fields_types_and_ambient_model():
    model = SurfaceModel(SurfaceConfig(ambient_level=1000.0, ambient_sky=20.0))
    ranges = np.where(np.arange(4000) % 2 == 0, 10.0, np.inf)
    returns = model.apply(wall_hits(ranges, rho=0.5), None, np.random.default_rng(1))
    assert returns.range.dtype == np.float32 and returns.intensity.dtype == np.float32
    assert returns.ouster_reflectivity.dtype == np.uint16 and returns.ouster_ambient.dtype == np.uint16
    assert returns.ouster_ambient[returns.hit].mean() == pytest.approx(500, rel=0.03)
    assert returns.ouster_ambient[~returns.hit].mean() == pytest.approx(20, rel=0.1)
    assert np.all(returns.velodyne_intensity[returns.hit] == 50) and np.all(returns.intensity[returns.hit] == 0.5)


# -- config validation ---------------------------------------------------------------------------------
@pytest.mark.parametrize("cls, data, key, allowed", [
    (SurfaceConfig, {"model": "cubic"}, "model", "none, linear, root2, root3, root4, log, blensor"),
    (SurfaceConfig, {"limits": [[0.1, 50]]}, "limits", "two [reflectivity, range_m] pairs"),
    (SurfaceConfig, {"limits": [[0.1, 50], [0.8, 40]]}, "limits", "strictly increasing"),
    (SurfaceConfig, {"limits": [[0.0, 50], [0.8, 120]]}, "limits[0][0]", "(0, 10000]"),
    (SurfaceConfig, {"signal_scale": -1}, "signal_scale", "[0, 1000000000000]"),
    (SurfaceConfig, {"detection": "x"}, "detection", "allowed one of model, limits"),
    (NoiseConfig, {"bias_distribution": "uniform"}, "bias_distribution", "gaussian, laplace"),
    (NoiseConfig, {"sigma": -0.01}, "sigma", "[0, 10]"),
    (NoiseConfig, {"sigma": float("nan")}, "sigma", "[0, 10]"),
    (NoiseConfig, {"dust_probability": 1.5}, "dust_probability", "[0, 1]"),
    (NoiseConfig, {"resolution": "1mm"}, "resolution", "a number"),
    (NoiseConfig, {"gauss": 0.1}, "gauss", "allowed one of bias_distribution"),
])
def test_bad_config_values_are_rejected_naming_key_and_allowed_values(cls, data, key, allowed):
    with pytest.raises(ConfigError) as err:
        cls.from_dict(data, where="sensor.yaml: lidar.cfg")
    message = str(err.value)
    assert message.startswith("sensor.yaml: lidar.cfg") and key in message and allowed in message


def test_configs_round_trip_through_dicts():
    surface = SurfaceConfig.from_dict({"model": "root3", "limits": [[0.8, 120], [0.1, 50]]})
    assert surface.limits == HDL64E  # pairs are sorted by reflectivity
    assert SurfaceConfig.from_dict(surface.to_dict()) == surface
    noise = NoiseConfig.from_dict({"bias_distribution": "laplace", "sigma": 0.01, "resolution": 0.002})
    assert NoiseConfig.from_dict(noise.to_dict()) == noise and noise.enabled and not NoiseConfig().enabled
    assert SurfaceConfig.from_dict(None) == SurfaceConfig()


def test_documentation_figures_are_written(tmp_path):
    from lidar_ros.physics.figures import detection_limit_curves, main

    assert main([str(tmp_path)]) == 0
    for name in ("detection_limits.png", "reflectivity.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rho, curves = detection_limit_curves(HDL64E, rho=[0.1, 0.8])
    assert set(curves) == set(DETECTION_MODELS) - {"none"}
    for r_l in curves.values():
        np.testing.assert_allclose(r_l, [50.0, 120.0])


def test_direct_construction_is_validated_too():
    with pytest.raises(ConfigError, match="SurfaceConfig.model = 'cubic': not a choice, allowed one of none, linear"):
        SurfaceConfig(model="cubic")
    with pytest.raises(ConfigError, match=r"NoiseConfig.sigma = -1.0: out of range, allowed \[0, 10\]"):
        NoiseConfig(sigma=-1)
    assert SurfaceConfig(limits=[[0.8, 120], [0.1, 50]]).limits == HDL64E


def test_box_muller_draws_are_standard_normal_and_seeded():
    from scipy import stats

    from lidar_ros.physics.noise import standard_normal

    z = standard_normal(np.random.default_rng(12), 200_001)
    assert z.shape == (200_001,) and z.dtype == np.float32
    z = z.astype(np.float64)
    assert abs(z.mean()) < 4 / np.sqrt(len(z)) and z.std() == pytest.approx(1.0, rel=0.01)
    assert np.mean(z**4) / np.mean(z**2) ** 2 == pytest.approx(3.0, rel=0.03)
    # the whole distribution, against the normal CDF (Kolmogorov-Smirnov)
    assert stats.kstest(z, "norm").pvalue > 1e-3
    np.testing.assert_array_equal(standard_normal(np.random.default_rng(12), 9), standard_normal(np.random.default_rng(12), 9))
