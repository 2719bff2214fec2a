"""Oxford/Boreas PNG round trips with independent decoders, CFAR false-alarm rates, and `radarays compare`
statistics on synthetic images with known answers."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
from PIL import Image as PILImage

from radarays_ros.cli import main as cli_main
from radarays_ros.errors import ConfigError
from radarays_ros.io import radar_image as rio
from radarays_ros.radar import RadarConfig
from radarays_ros.radar.cfar import ca_alpha, cfar, os_alpha, os_pfa
from radarays_ros.radar.compare import image_stats
from radarays_ros.radar.image import RadarImage


def synthetic_image(counts: np.ndarray, step_deg: float, resolution: float = 0.05, chirp_up=None, physical=True):
    a, b = counts.shape
    overrides = {"azimuth.count": a, "azimuth.step_deg": step_deg, "range.resolution": resolution, "range.bins": b}
    if physical:
        overrides["sensor.model"] = "physical"
    cfg = RadarConfig().with_overrides(overrides)
    az = np.radians(step_deg * np.arange(a))
    return RadarImage(image_f32=counts.astype(np.float32), image=counts.astype(np.uint8), azimuth_rad=az,
                      range_m=np.arange(b) * resolution, azimuth_time_ns=10**9 + np.arange(a) * 625_000, t0_ns=10**9,
                      config=cfg, chirp_up=chirp_up)


# -- independent decoders written from the docs ------------------------------------------------
def oxford_sdk_style_decode(path):
    """As the Oxford robotcar SDK documents radar PNGs: int64 stamps, uint16 encoder / 5600 * 2 pi, col 10 = 255 valid."""
    raw = np.array(PILImage.open(path))
    stamps = np.frombuffer(raw[:, :8].tobytes(), dtype="<i8")
    angles = np.frombuffer(raw[:, 8:10].tobytes(), dtype="<u2") / 5600.0 * 2 * np.pi
    return stamps, angles, raw[:, 10], raw[:, 11:].astype(np.float32) / 255.0


def sdk_cartesian(angles, fft, resolution, cart_resolution, width):
    """The documented polar-to-Cartesian lookup: x forward up, y to the right, angle clockwise from forward,
    azimuth index (angle - angles[0]) / step with step = (last - first) / (M - 1); nearest neighbour."""
    half = (width // 2) * cart_resolution
    coords = np.linspace(-half, half, width)
    right, forward = np.meshgrid(coords, -coords)
    rng = np.hypot(right, forward)
    ang = np.mod(np.arctan2(right, forward), 2 * np.pi)
    step = (angles[-1] - angles[0]) / (len(angles) - 1)
    v = np.round((ang - angles[0]) / step).astype(int)
    u = np.round((rng - resolution / 2) / resolution).astype(int)
    ok = (v >= 0) & (v < len(angles)) & (u >= 0) & (u < fft.shape[1])
    out = np.zeros_like(rng)
    out[ok] = fft[v[ok], u[ok]]
    return out


@pytest.mark.parametrize("step_deg", [-0.9, 0.9])
def test_oxford_png_round_trip_either_sweep_direction(tmp_path, step_deg):
    counts = np.zeros((400, 300), np.uint8)
    target_az = 50 if step_deg < 0 else 350  # 45 deg clockwise (front right) in both sweeps
    rows = [target_az - 1, target_az, target_az + 1]
    counts[rows, 198:203] = 250  # 9.9-10.15 m
    img = synthetic_image(counts, step_deg)
    path = rio.oxford_polar_png(img, tmp_path / "1633000000000000.png")
    stamps, angles, flags, fft = oxford_sdk_style_decode(path)
    assert np.all(np.diff(angles) > 0) and angles[0] == 0.0  # increasing encoder, starting at forward
    assert np.all(flags == 255)
    assert set(stamps.tolist()) == set((img.azimuth_time_ns // 1000).tolist())
    cart = sdk_cartesian(angles, fft, 0.05, 0.25, 101)
    assert cart.max() > 0.9  # not empty (a counter-clockwise sweep used to decode to nothing)
    row, col = np.unravel_index(np.argmax(cart), cart.shape)
    forward, right = (50 - row) * 0.25, (col - 50) * 0.25
    assert math.hypot(forward, right) == pytest.approx(10.0, abs=0.4)
    assert math.degrees(math.atan2(right, forward)) == pytest.approx(45.0, abs=2.0)
    # our reader and the sidecar agree with the image
    counts_back, az_back, _, _, res = rio.read_oxford_polar(path)
    assert res == 0.05 and counts_back.shape == counts.shape
    lit = counts_back.max(axis=1) > 0
    assert np.degrees(np.mod(az_back[lit], 2 * np.pi)).mean() == pytest.approx(315.0, abs=0.1)


def test_oxford_png_encoder_offset_and_chirp_flags(tmp_path):
    counts = np.zeros((4, 20), np.uint8)
    img = synthetic_image(counts, -90.0, chirp_up=np.array([True, False, True, False]))
    raw = rio.oxford_polar_array(img, encoder_offset=100)
    encoder = np.frombuffer(raw[:, 8:10].tobytes(), dtype="<u2")
    assert encoder.tolist() == [100, 1500, 2900, 4300]
    assert raw[:, 10].tolist() == [255, 0, 255, 0]  # Boreas-RT: 255 up-chirp, 0 down-chirp
    path = rio.oxford_polar_png(img, tmp_path / "x.png")
    assert "chirp" in (tmp_path / "x.png.yaml").read_text()
    with pytest.raises(ConfigError, match="resolution"):
        (tmp_path / "x.png.yaml").unlink()
        rio.read_oxford_polar(path)


# -- CFAR ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["ca", "os"])
@pytest.mark.parametrize("pfa", [1e-2, 1e-3])
def test_cfar_false_alarm_rate_on_noise_matches_pfa(method, pfa):
    rng = np.random.default_rng(5)
    noise = rng.exponential(1.0, (400, 2000))  # square-law detected Gaussian noise
    hits = cfar(noise, method, guard=3, train=16, pfa=pfa)
    tested = 400 * 2000  # windows cut at the ends keep their cells (one edge rule, radar/cfar.py)
    rate = hits.sum() / tested
    sigma = math.sqrt(pfa * (1 - pfa) / tested)
    assert abs(rate - pfa) < 4 * sigma + 0.05 * pfa


def test_cfar_thresholds_analytic_and_detects_a_target():
    assert ca_alpha(32, 1e-3) == pytest.approx(32 * (1e-3 ** (-1 / 32) - 1))
    alpha = os_alpha(32, 24, 1e-4)
    assert os_pfa(alpha, 32, 24) == pytest.approx(1e-4, rel=1e-6)
    power = np.ones((2, 100))
    power[1, 50] = 1000.0
    for method in ("ca", "os"):
        hits = cfar(power, method, guard=2, train=8, pfa=1e-4)
        assert np.argwhere(hits).tolist() == [[1, 50]]
    with pytest.raises(ConfigError, match="pfa"):
        cfar(power, "ca", pfa=2.0)


# -- compare -------------------------------------------------------------------------------------
def speckle_counts(rng, shape, floor_db=30.0):
    """Navtech counts of fully developed speckle with mean level floor_db."""
    intensity = rng.exponential(1.0, shape)
    return np.clip(np.round(2 * (floor_db + 10 * np.log10(intensity))), 0, 255)


def test_compare_statistics_known_answers():
    rng = np.random.default_rng(2)
    counts = speckle_counts(rng, (400, 1000))
    s = image_stats(counts, 0.05, 0.9)
    assert s.floor_db == pytest.approx(30 + 10 * math.log10(math.log(2)), abs=0.3)  # median of Exp(1) = ln 2
    assert s.deep_fade_fraction == pytest.approx(1 - math.exp(-0.1), abs=0.01)
    assert abs(s.azimuth_correlation) < 0.02
    assert s.range_correlation_m == pytest.approx(0.05)  # white: under 1/e at the first lag
    assert s.rings == 0 and s.streaks == 0
    # Gaussian levels in dB: spread = std; fraction above floor + 10 dB for std 5: 1 - Phi(2)
    levels = 60 + 5 * rng.standard_normal((400, 1000))
    s = image_stats(2 * levels, 0.05, 0.9)  # unquantised: MAD of 0.5 dB steps would be biased
    assert s.floor_spread_db == pytest.approx(5.0, abs=0.1)
    assert s.above_floor_10 == pytest.approx(0.02275, abs=0.002)


def test_compare_rings_streaks_widths_and_correlations():
    rng = np.random.default_rng(3)
    counts = speckle_counts(rng, (400, 1000), 20.0)
    counts[:, 300:303] = 120  # one ring (3 bins)
    counts[:, 700] = 120  # another
    counts[17, :] = 120  # one radial streak
    s = image_stats(counts, 0.05, 0.9)
    assert s.rings == 2 and s.streaks == 1
    counts = speckle_counts(rng, (400, 1000), 20.0)
    # a strong point: 5 bins wide in range and 3 azimuths wide at -3 dB, 9 x 5 at -10 dB
    counts[200:203, 500:505] = 200
    counts[199, 498:507] = 184
    counts[203, 498:507] = 184
    counts[200:203, 498:500] = 184
    counts[200:203, 505:507] = 184
    s = image_stats(counts, 0.05, 0.9)
    assert s.range_width_3db_m == pytest.approx(5 * 0.05) and s.azimuth_width_3db_deg == pytest.approx(3 * 0.9)
    assert s.range_width_10db_m == pytest.approx(9 * 0.05) and s.azimuth_width_10db_deg == pytest.approx(5 * 0.9)
    # AR(1) along range with coefficient 0.5 (on a slow range trend, which does not count): autocorrelation
    # 0.5^lag falls under 1/e first at lag 2
    x = rng.standard_normal((300, 2000))
    for k in range(1, 2000):
        x[:, k] = 0.5 * x[:, k - 1] + math.sqrt(1 - 0.25) * x[:, k]
    trend = np.linspace(30, 0, 2000)[None, :]
    s = image_stats(2 * (60 + trend + 3 * x), 0.05, 0.9)
    assert s.range_correlation_m == pytest.approx(2 * 0.05)


def test_compare_cli_on_written_images(tmp_path, capsys):
    rng = np.random.default_rng(4)
    real = synthetic_image(speckle_counts(rng, (400, 500)).astype(np.uint8), -0.9)
    sim = synthetic_image(speckle_counts(rng, (400, 500), 35.0).astype(np.uint8), -0.9)
    rio.oxford_polar_png(real, tmp_path / "real.png")
    np.savez(tmp_path / "sim.npz", image=sim.image, azimuth_rad=sim.azimuth_rad, range_m=sim.range_m)
    code = cli_main(["compare", str(tmp_path / "real.png"), str(tmp_path / "sim.npz"), "--picture",
                     str(tmp_path / "cmp.png"), "--json", str(tmp_path / "cmp.json")])
    assert code == 0
    out = capsys.readouterr().out
    assert "floor_db" in out and "deep_fade_fraction" in out
    stats = json.loads((tmp_path / "cmp.json").read_text())
    assert stats["sim"]["floor_db"] - stats["real"]["floor_db"] == pytest.approx(5.0, abs=0.3)
    assert PILImage.open(tmp_path / "cmp.png").size[0] > 500
    assert cli_main(["compare", str(tmp_path / "nope.png"), str(tmp_path / "sim.npz")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_radar_figure_has_title_rings_and_units(tmp_path):
    img = synthetic_image(np.full((400, 200), 60, np.uint8), -0.9)
    path = rio.radar_figure(img, tmp_path / "fig.png", title="test sensor")
    rgb = np.array(PILImage.open(path))
    assert rgb.shape[0] > 400 and rgb.shape[1] > 400
    assert "Navtech counts" in rio.level_label(img)
    assert "RadaRays" in rio.level_label(synthetic_image(np.zeros((4, 8), np.uint8), -90, physical=False))


# -- compare: floor profile, spokes, quiet correlations, comb, similarity, resolution inference -----
def test_compare_floor_slope_trend_rings_and_spokes():
    from radarays_ros.radar.compare import image_stats as stats_of

    rng = np.random.default_rng(11)
    res = 0.05
    r = (np.arange(4000) + 0.5) * res
    floor = 40.0 - 10.0 * np.log10(np.maximum(r, 5.0) / 5.0)  # falls 10 dB per decade from 5 m
    levels = floor[None, :] + 10 * np.log10(rng.exponential(1.0, (400, 4000)))
    counts = np.clip(np.round(2 * levels), 0, 255)
    s = stats_of(counts, res, 0.9)
    assert s.floor_slope_db_per_decade == pytest.approx(-10.0, abs=0.7)
    assert s.trend_rings == 0 and s.spokes == 0
    counts[:, 3000:3004] += 20  # a ring 10 dB over the (falling) floor where the global floor is higher
    counts[17] += 20  # a spoke: one azimuth 10 dB up over all its range
    s = stats_of(np.clip(counts, 0, 255), res, 0.9)
    assert s.trend_rings == 1 and s.spokes == 1


def test_compare_quiet_correlations_comb_and_zeros():
    from radarays_ros.radar.compare import image_stats as stats_of

    rng = np.random.default_rng(12)
    levels = 30 + 3 * rng.standard_normal((400, 2000))
    levels[1::2] = levels[0::2]  # azimuth pairs: half the neighbouring pairs identical, half independent
    s = stats_of(2 * levels, 0.05, 0.9)
    # quiet cells lie under the trend + 3 dB = 1 std: an identical pair is quiet with q = Phi(1), an
    # independent one with q^2, so identical pairs make 1 / (1 + q) of the quiet pairs, their correlation
    q = 0.5 * (1 + math.erf(1 / math.sqrt(2)))
    assert s.quiet_azimuth_correlation == pytest.approx(1 / (1 + q), abs=0.02)
    assert s.quiet_range_correlation_m == pytest.approx(0.05)  # white along range
    # an integer FFT power's log: counts 20 log10(k) of integer k, k = 0 reading 0
    power = np.floor(rng.exponential(3.0, (400, 2000)))
    comb = np.rint(20 * np.log10(np.maximum(power, 1)))
    s = stats_of(comb, 0.05, 0.9)
    assert s.zero_fraction == pytest.approx(1 - math.exp(-2 / 3.0), abs=0.01)  # k <= 1
    assert s.low_count_levels == len({round(20 * math.log10(k)) for k in range(1, 10)})  # 0, 6, 10, 12, ... 19 (k = 10 reads 20)
    assert stats_of(np.clip(np.round(2 * levels) - 50, 0, 255), 0.05, 0.9).low_count_levels == 20  # a smooth detector


def test_similarity_scores_known_answers():
    from radarays_ros.radar.compare import co_register, mutual_information, ssim

    rng = np.random.default_rng(13)
    a = rng.integers(0, 4, (200, 300)).astype(float)
    assert mutual_information(a, a) == pytest.approx(math.log(4), abs=0.01)  # = the entropy of 4 equal levels
    assert mutual_information(a, rng.integers(0, 4, (200, 300))) < 0.001
    img = rng.integers(0, 256, (200, 300)).astype(float)
    assert ssim(img, img) == pytest.approx(1.0)
    assert abs(ssim(img, rng.integers(0, 256, (200, 300)).astype(float))) < 0.02
    # co-registration: a simulated image at twice the resolution and reversed azimuth order maps onto the real grid
    az = -np.radians(0.9 * np.arange(400))
    real = np.tile(np.arange(100, dtype=float), (400, 1))
    sim = np.tile(np.repeat(np.arange(100, dtype=float), 2), (400, 1))[::-1]
    got_real, got_sim = co_register((real, az, 0.1), (sim, az[::-1], 0.05))
    assert np.array_equal(got_real, got_sim)


@pytest.mark.parametrize("stem, expected", [("1632182400000001", 0.04381), ("1606417230036848", 0.0596),
                                            ("1547131046353776", 0.0432)])
def test_compare_infers_the_range_resolution_as_the_dataset_readers_do(tmp_path, stem, expected):
    from radarays_ros.radar.compare.cli import infer_resolution

    img = synthetic_image(np.full((400, 100), 30, np.uint8), -0.9)
    path = rio.oxford_polar_png(img, tmp_path / f"{stem}.png")
    (tmp_path / f"{stem}.png.yaml").unlink()
    assert infer_resolution(path)[0] == expected
    other = rio.oxford_polar_png(img, tmp_path / "frame.png")
    (tmp_path / "frame.png.yaml").unlink()
    with pytest.raises(ConfigError, match="--real-resolution.*0.0432.*0.04381"):
        infer_resolution(other)


def test_compare_cli_prints_profile_and_similarity(tmp_path, capsys):
    rng = np.random.default_rng(14)
    counts = speckle_counts(rng, (400, 500)).astype(np.uint8)
    real = synthetic_image(counts, -0.9)
    rio.oxford_polar_png(real, tmp_path / "real.png")
    np.savez(tmp_path / "sim.npz", image=counts, azimuth_rad=real.azimuth_rad, range_m=real.range_m)
    assert cli_main(["compare", str(tmp_path / "real.png"), str(tmp_path / "sim.npz"), "--json", str(tmp_path / "c.json")]) == 0
    out = capsys.readouterr().out
    assert "floor vs range" in out and "SSIM" in out
    similarity = json.loads((tmp_path / "c.json").read_text())["similarity"]
    assert similarity["ssim"] == pytest.approx(1.0)  # the same frame on both sides
