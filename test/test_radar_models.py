"""The radar's formulas one by one: beam densities, kernels, Perlin noise, noise floor, BRDFs, normalisation."""
from __future__ import annotations

import math
import sys
import textwrap

import numpy as np
import pytest

from radarays_ros.radar import RadarMaterials, RadarSimulator
from radarays_ros.radar import brdf
from radarays_ros.radar.config import NoiseConfig, OutputConfig, RangeConfig, KernelConfig
from radarays_ros.radar.draw import draw_returns
from radarays_ros.radar.kernels import kernel_weights
from radarays_ros.radar.noise import ambient_noise
from radarays_ros.radar.normalise import normalise, to_uint8
from radarays_ros.radar.perlin import perlin2, perlin_hilo
from radarays_ros.radar.sampling import gain_weights, inside_beam, radial_offsets, sample_cone
from support.radar_scenes import config, library, scene_with, wall_x


# -- beam sampling -----------------------------------------------------------------------------------
@pytest.mark.parametrize("dist", ["D3", "D4"])
@pytest.mark.parametrize("p", [0.5, 0.8, 0.95])
def test_d3_d4_put_p_in_cone_of_samples_inside_the_beam(dist, p):
    u = radial_offsets(np.random.default_rng(1), 200_000, dist, p)
    assert np.mean(np.abs(u) < 1.0) == pytest.approx(p, abs=0.005)


def test_d1_uniform_in_radius_d2_uniform_over_the_disc():
    rng = np.random.default_rng(2)
    u1 = radial_offsets(rng, 200_000, "D1", 0.8)
    u2 = radial_offsets(rng, 200_000, "D2", 0.8)
    assert u1.min() >= 0 and u1.max() <= 1 and u1.mean() == pytest.approx(0.5, abs=0.005)
    assert np.mean(u2 ** 2) == pytest.approx(0.5, abs=0.005)  # uniform area: P(u < s) = s^2
    assert np.mean(u2 < 0.5) == pytest.approx(0.25, abs=0.005)


def test_elliptic_beam_spreads_by_its_two_widths():
    wh, wv = math.radians(2.0), math.radians(25.0)
    alpha, beta = sample_cone(np.random.default_rng(3), 100_000, "D3", 0.8, wh, wv)
    assert np.std(alpha) / np.std(beta) == pytest.approx(12.5, rel=0.03)
    assert np.mean(inside_beam(alpha, beta, wh, wv)) == pytest.approx(0.8, abs=0.005)
    z = math.sqrt(2) * 0.9061938  # sqrt(2) erfinv(0.8)
    assert np.std(beta) == pytest.approx(wh / 2 / z / math.sqrt(2), rel=0.02)  # sigma = radius / z, times std(sin phi)
    w = gain_weights(alpha, beta, wh, wv)
    assert w.mean() == pytest.approx(1.0) and np.argmax(w) == np.argmin((beta / wh) ** 2 + (alpha / wv) ** 2)


def test_cone_is_cached_until_the_beam_changes():
    scene = scene_with(wall_x(3.0))
    sim = RadarSimulator(config(beam={"width_deg": 5.0, "samples": 10}), scene)
    first = sim.cone()[0]
    sim.simulate(np.eye(4))
    assert sim.cone()[0] is first
    sim.reconfigure(sim.config.with_overrides({"output.signal_max": 100}))
    assert sim.cone()[0] is first  # beam unchanged: kept
    sim.reconfigure(sim.config.with_overrides({"beam.width_deg": 6}))
    assert sim.cone()[0] is not first and np.abs(np.arctan2(sim.cone()[0][:, 1], sim.cone()[0][:, 0])).max() > 0


# -- range kernels -------------------------------------------------------------------------------------
def test_triangular_kernel_shape_and_peak_one():
    w, m = kernel_weights("triangular", 50, 0.35)
    assert m == 17 and w[m] == pytest.approx(1.0) and w.max() == pytest.approx(1.0)
    np.testing.assert_allclose(w[: m + 1], np.arange(m + 1) / m)
    np.testing.assert_allclose(w[m:], 1.0 - (np.arange(m, 50) - m) / 33.0)
    assert w.sum() == pytest.approx(25.0, abs=0.6)  # about width / 2


def test_gaussian_and_maxwell_boltzmann_kernels():
    g, m = kernel_weights("gaussian", 60, 0.5)
    assert m == 30 and g[m] == pytest.approx(1.0) and np.argmax(g) == m
    np.testing.assert_allclose(g[m - 10: m], g[m + 10: m: -1])  # symmetric about the peak
    assert g[m + 10] == pytest.approx(math.exp(-0.5), rel=1e-9)  # sigma = width / 6 = 10 bins
    mb, m2 = kernel_weights("maxwell_boltzmann", 50, 0.4)
    assert m2 == 20 and np.argmax(mb) == m2 and mb[m2] == pytest.approx(1.0) and mb[0] == 0.0
    a = m2 / math.sqrt(2)
    assert mb[10] == pytest.approx((10 / m2) ** 2 * math.exp(-(100 - m2 ** 2) / (2 * a * a)), rel=1e-9)


def test_drawing_spreads_one_return_by_the_kernel_and_never_writes_bin_0():
    rng_cfg = RangeConfig(resolution=0.1, bins=100)
    kern = KernelConfig(type="triangular", width=10, mode=0.3)
    w, m = kernel_weights("triangular", 10, 0.3)
    img = draw_returns(np.array([0, 0]), np.array([5.05, 0.15]), np.array([2.0, 1.0]), 2, rng_cfg, kern, OutputConfig())
    np.testing.assert_allclose(img[0, 50 - m: 50 - m + 10], 2.0 * w)  # peak weight 1 on the true bin 50
    assert img[0, 0] == 0.0  # RadaRays never writes row 0 (the return at bin 1 would spread into it)
    np.testing.assert_allclose(img[0, 1:1 + 10 - m], w[m:])  # the return at 0.15 m peaks in bin 1
    assert np.all(img[1] == 0)
    with_zero = draw_returns(np.array([0]), np.array([0.15]), np.array([1.0]), 1,
                             RangeConfig(resolution=0.1, bins=100, write_bin_zero=True), kern, OutputConfig())
    assert with_zero[0, 0] == pytest.approx(w[m - 1])
    none = draw_returns(np.array([1, 1, 1]), np.array([2.01, 2.02, 30.0]), np.array([1.0, 3.0, 9.0]), 2, rng_cfg,
                        KernelConfig(type="none"), OutputConfig())
    assert none[1, 20] == 3.0 and none.sum() == 3.0  # max of a bin; beyond the last bin dropped


def test_drawing_sums_each_bin_in_increasing_source_order_bit_for_bit():
    """The spreading loop gives the float64 sums of spreading every occupied cell return by return in increasing
    bin order (the per-tap scatter it replaced), edges cut off, for a wide asymmetric kernel."""
    rng = np.random.default_rng(5)
    rng_cfg = RangeConfig(resolution=0.05, bins=300)
    kern = KernelConfig(type="triangular", width=41, mode=0.2)
    az, ranges = rng.integers(0, 7, 4000), rng.uniform(-1.0, 16.0, 4000)
    energy = rng.exponential(1.0, 4000) * rng.choice([1e-6, 1.0, 1e6], 4000)
    got = draw_returns(az, ranges, energy, 7, rng_cfg, kern, OutputConfig())
    w, m = kernel_weights("triangular", 41, 0.2)
    cell = np.floor(ranges / 0.05)
    ok = (cell >= 0) & (cell < 300)
    delta = np.bincount(az[ok] * 300 + cell[ok].astype(np.int64), energy[ok], minlength=7 * 300)
    occupied = np.flatnonzero(delta)
    padded, start = np.zeros(7 * (300 + 41)), occupied + (occupied // 300) * 41
    for i in range(40, -1, -1):  # per tap, last to first: each bin gets its sources in increasing order
        padded[start + i] += delta[occupied] * w[i]
    want = padded.reshape(7, 341)[:, m:m + 300].copy()
    want[:, 0] = 0.0
    assert got.tobytes() == want.tobytes() and got[:, 1:].min() >= 0 and (got > 0).mean() > 0.5


# -- Perlin and ambient noise ------------------------------------------------------------------------------
def test_perlin_lattice_zeros_range_and_smoothness():
    xs, ys = np.meshgrid(np.arange(0, 50), np.arange(0, 50))
    assert np.all(perlin2(xs, ys) == 0.0)  # zero at every lattice point
    rng = np.random.default_rng(4)
    x, y = rng.uniform(0, 200, 200_000), rng.uniform(0, 200, 200_000)
    v = perlin2(x, y)
    assert np.abs(v).max() <= 1.0 and abs(v.mean()) < 0.01 and 0.1 < v.std() < 0.4
    # continuity: a step of 0.05 changes the value by a bounded, small amount (Lipschitz noise)
    step = np.abs(perlin2(x + 0.05, y) - v)
    assert step.max() < 0.15 and step.mean() < 0.2 * v.std()


def test_perlin_column_offsets_vs_coherent():
    cols = np.arange(400.0)[:, None]
    bins = np.arange(300.0)[None, :]
    rng = np.random.default_rng(5)
    independent = perlin_hilo(rng.uniform(0, 1000, 400)[:, None], bins, cols, 0.05, 0.2, 0.9)
    coherent = perlin_hilo(np.full((400, 1), 123.4), bins, cols, 0.05, 0.2, 0.9)

    def neighbour_corr(a, axis):
        x = np.moveaxis(a, axis, 0)
        return np.corrcoef(x[:-1].ravel(), x[1:].ravel())[0, 1]

    assert neighbour_corr(coherent, 0) > 0.9 and neighbour_corr(coherent, 1) > 0.9  # smooth both ways
    assert abs(neighbour_corr(independent, 0)) < 0.1 and neighbour_corr(independent, 1) > 0.9  # original


def test_ambient_noise_floor_and_amplitude_formula():
    cfg = NoiseConfig(ambient="uniform", at_signal_0=0.0, at_signal_1=0.0, energy_max=0.5, energy_min=0.1, energy_loss=0.05)
    signal = np.zeros((3, 100))
    m = np.array([1.0, 2.0, 0.0])
    n = ambient_noise(cfg, signal, m, 0.5, np.random.default_rng(0))
    r = (np.arange(100) + 0.5) * 0.5
    np.testing.assert_allclose(n[1], 2.0 * (0.4 * np.exp(-0.05 * r) + 0.1), rtol=1e-6)  # float32
    assert np.all(n[2] == 0)
    cfg2 = NoiseConfig(ambient="uniform", at_signal_0=0.3, at_signal_1=0.03, energy_max=0.0, energy_min=0.0)
    signal = np.array([[0.0, 0.5, 1.0]])
    n2 = ambient_noise(cfg2, signal, np.array([1.0]), 0.1, np.random.default_rng(0))
    p = np.random.default_rng(0).uniform(0, 1, (1, 3))
    s = (1 - signal) ** 4
    np.testing.assert_allclose(n2, p * (s * 0.3 + (1 - s) * 0.03), rtol=1e-6)  # big where no signal, small on the peak


# -- normalisation -----------------------------------------------------------------------------------------
def test_normalisation_modes():
    s = np.zeros((3, 10))
    s[0, 2], s[0, 5], s[1, 4] = 2.0, 1.0, 0.5
    quiet = NoiseConfig(ambient="none")
    rng = np.random.default_rng(0)
    col = normalise(s, OutputConfig(normalisation="radarays", energy_max=0.5, signal_max=120), quiet, 0.1, rng)
    assert col[0, 2] == 60 and col[0, 5] == 30 and col[1, 4] == 60 and np.all(col[2] == 0)
    glob = normalise(s, OutputConfig(normalisation="global", energy_max=0.5, signal_max=120), quiet, 0.1, rng)
    assert glob[0, 2] == 60 and glob[1, 4] == 15
    gz = normalise(s, OutputConfig(normalisation="gazebo", signal_max=120), NoiseConfig(ambient="uniform", energy_max=4.0), 0.1, rng)
    assert np.all(np.isfinite(gz)) and gz[2].min() > 0  # the floor M = max(e_max, M) keeps empty columns finite
    db = normalise(s, OutputConfig(normalisation="db", db_reference=2.0, db_range=30.0), quiet, 0.1, rng)
    assert db[0, 2] == pytest.approx(255.0) and db[0, 5] == pytest.approx(255 * (1 - 10 * math.log10(2) / 30))
    assert db[2].max() == 0.0
    faint = np.zeros((1, 3))
    faint[0] = [2.0, 2.0 * 10 ** -1.5, 2.0 * 10 ** -4]  # 0 dB, -15 dB and -40 dB below E0
    cut = normalise(faint, OutputConfig(normalisation="db", db_reference=2.0, db_range=30.0), quiet, 0.1, rng)
    np.testing.assert_allclose(cut[0], [255.0, 127.5, 0.0])  # linear in dB, cut off below -db_range
    assert to_uint8(np.array([-3.0, 2.5, 3.5, 300.0])).tolist() == [0, 2, 4, 255]


# -- BRDFs and materials -------------------------------------------------------------------------------------
def test_brdf_forms():
    theta = np.radians([0.0, 30.0, 60.0, 89.0])
    np.testing.assert_allclose(brdf.radarays(theta, {"A": 0.6, "B": 0.3, "C": 30}), 0.6 + 0.3 * np.cos(theta) ** 30)
    c = np.cos(theta)
    np.testing.assert_allclose(brdf.paper(theta, {"A": 0.5, "B": 0.3, "C": 10}), 0.5 + 0.3 * c + 0.2 * c ** 10)
    ct = brdf.cook_torrance(theta, {"diffuse": 0.2, "roughness": 0.5, "n": 100.0, "transmittance": 0.1})
    assert np.all(np.diff(ct) < 0) and ct[0] == pytest.approx((0.2 / math.pi + 0.8 * (((99 / 101) ** 2) / (math.pi * 0.25)) / 4))


def test_materials_validation_names_origin_and_key():
    from radarays_ros.errors import ConfigError
    from radarays_ros.world.materials import MaterialLibrary

    def lib(radar):
        return MaterialLibrary.from_dict({"materials": {"m": {"radar": radar}}}, origin="lib.yaml")

    with pytest.raises(ConfigError, match=r"lib.yaml: materials.m.radar.velocity = 0.5: out of range, allowed \[0.0, 0.3\]"):
        RadarMaterials.from_library(lib({"velocity": 0.5, "A": 1, "B": 0, "C": 1}))
    with pytest.raises(ConfigError, match=r"materials.m.radar.brdf = 'phong': unknown BRDF; known: .*cook_torrance"):
        RadarMaterials.from_library(lib({"velocity": 0.1, "brdf": "phong"}))
    with pytest.raises(ConfigError, match=r"materials.m.radar: missing key 'C'"):
        RadarMaterials.from_library(lib({"velocity": 0.1, "A": 1, "B": 0}))
    with pytest.raises(ConfigError, match=r"unknown key\(s\) \['D'\]"):
        RadarMaterials.from_library(lib({"velocity": 0.1, "A": 1, "B": 0, "C": 1, "D": 2}))
    with pytest.raises(ConfigError, match=r"A \+ B <= 1"):
        RadarMaterials.from_library(lib({"velocity": 0.1, "brdf": "paper", "A": 0.7, "B": 0.5, "C": 1}))
    mats = RadarMaterials.from_library(library())
    assert mats.velocity[mats.air] == 0.3 and mats.velocity[mats.names.index("glass")] == 0.05


def test_user_brdf_from_an_entry_point(tmp_path, monkeypatch):
    (tmp_path / "radarays_test_brdf_mod.py").write_text(textwrap.dedent("""
        import numpy as np
        def flat(theta, params):
            return params["k"] * np.ones_like(theta)
    """))
    dist = tmp_path / "radarays_test_brdf-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: radarays-test-brdf\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[radarays_ros.brdf]\nflat = radarays_test_brdf_mod:flat\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "flat" in brdf.known_names()
    lib = library({"plugin_metal": {"radar": {"velocity": 0.0, "brdf": "flat", "k": 0.25}}})
    img = RadarSimulator(config(), scene_with(wall_x(3.0, material="plugin_metal"), lib=lib)).simulate(np.eye(4))
    first = img.returns[img.returns["azimuth"] == 0]
    assert np.allclose(first["energy"], 0.25)  # R = 1 times the plugin's BRDF
    sys.modules.pop("radarays_test_brdf_mod", None)


def test_row_perlin_equals_pointwise_perlin():
    from radarays_ros.radar.perlin import perlin_rows

    x0 = np.array([0.0, 3.7, -20.2, 999.9])
    y = np.array([0.0, 1.5, 7.25, 20.0])
    for step in (0.05, 0.2, -0.3):
        x = x0[:, None] + step * np.arange(300)[None, :]
        np.testing.assert_allclose(perlin_rows(x0, step, 300, y), perlin2(x, y[:, None]), atol=1e-4)  # float32
