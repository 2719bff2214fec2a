"""OS2 near-range signal against the shared real OS-2-128 frame (issue 23, defect 1).

The README table read the simulated OS2 frame's SIGNAL under 5 m as ~10x the real one's, and its range noise
there (photon counting, sigma = 70 mm/sqrt(S)) 2.7x low. signal*r^2/rho per range band says where that comes
from: the simulated frame's signal*r^2/rho follows the real unit's within 1.3x at 4-16 m (the overlap
O(r) = 1 - exp(-(r/r0)^2), r0 = 28.5 m, lidar_ros/physics/overlap.py, is the real unit's roll-off), while
the real pixels under 5 m are dark (REFLECTIVITY 1-5 %: a dark object at z = -0.56 m, two azimuth sectors)
and the street world's are bright (~40 %). The signal gap is the reflectivity gap; at equal SIGNAL both
frames' noise is the same law. Frames: the OS-2-128 frame sets r0 and K (unit_calibration.py); the OS-0-128
Rev 7 frame is the other line's check; no OS1 frame has a calibrated reflectivity.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from lidar_ros import load_sensor
from lidar_ros.physics.overlap import overlap

REAL = Path("/work/shared/realdata/ouster")
OS2_REAL = REAL / "OS-2-128-U1_v2.3.0_1024x10.npz"
OS2_META = REAL / "OS-2-128-U1_v2.3.0_1024x10.json"
needs_real = pytest.mark.skipif(not OS2_REAL.is_file(), reason="shared real frames not present")


# -- the overlap function itself (analytic) ---------------------------------------------------------------
def test_overlap_is_the_gaussian_defocus_form():
    """O(r0) = 1 - 1/e; O ~ (r/r0)^2 well inside r0 (signal flat in r there); O(2 r0) = 1 - e^-4; 0 is off."""
    r0 = 28.5
    r = np.array([0.5, 2.0, r0, 2 * r0, np.inf], np.float32)
    o = overlap(r, r0).astype(float)
    assert o[2] == pytest.approx(1 - np.exp(-1), rel=1e-6)
    assert o[3] == pytest.approx(1 - np.exp(-4), rel=1e-6)
    assert o[4] == 1.0
    assert o[0] == pytest.approx((0.5 / r0) ** 2, rel=1e-3) and o[1] == pytest.approx((2 / r0) ** 2, rel=1e-2)
    assert np.all(overlap(r[:4], 0.0) == 1.0)


def test_overlap_range_grows_from_os0_to_os2_and_is_one_per_line():
    """Wider aperture and longer focal length: r0(OS0) < r0(OS1) < r0(OS2), the same for 32/64/128 beams."""
    r0 = {line: {load_sensor(f"{line}-{n}").surface.overlap_range_m for n in (32, 64, 128)}
          for line in ("OS0", "OS1", "OS2")}
    assert all(len(v) == 1 for v in r0.values()), r0
    os0, os1, os2 = (v.pop() for v in r0.values())
    assert 0 < os0 < os1 < os2


# -- the real OS-2-128 frame ------------------------------------------------------------------------------
def real_os2():
    d = np.load(OS2_REAL)
    r = d["range_mm"].astype(float) / 1000
    return r, d["signal"].astype(float), d["reflectivity"].astype(float)


def band_ratio(r, s, q, a, b, min_refl=1):
    """Median signal*r^2/rho over Lambertian returns (REFLECTIVITY min_refl..100) with a <= r < b."""
    m = (r >= a) & (r < b) & (s > 0) & (q >= min_refl) & (q <= 100)
    return float(np.median(s[m] * r[m] ** 2 / (q[m] / 100))), int(m.sum())


@needs_real
def test_preset_overlap_is_the_real_os2_near_range_roll_off_within_a_factor_1_5():
    """signal*r^2/(rho*K) of the real unit per band from 4 m to 64 m: the preset's O(r) within 1.5x at 4-16 m
    (real/model 0.70-1.1) and 1.7x beyond (the unit's curve is steeper at 20-30 m than the one-parameter form); 1/r^2 alone (O = 1)
    would be 20-40x off at 4-8 m."""
    r, s, q = real_os2()
    surface = load_sensor(str(OS2_META), realistic=True).surface
    k, r0 = surface.signal_scale, surface.overlap_range_m
    for a, b, tol in ((4, 6, 1.5), (6, 8, 1.5), (8, 12, 1.5), (12, 16, 1.5), (16, 24, 1.7), (24, 32, 1.7),
                      (32, 64, 1.7), (64, 128, 1.1)):
        ratio, n = band_ratio(r, s, q, a, b)
        model = float(overlap(np.array([np.sqrt(a * b)]), r0)[0])
        assert n > 300 and 1 / tol < ratio / k / model < tol, (a, b, ratio / k, model)
    ratio, _ = band_ratio(r, s, q, 4, 8)
    assert ratio / k < 0.1  # the roll-off is there: 1/r^2 alone reads 1


@needs_real
def test_preset_r0_is_the_best_gaussian_overlap_for_the_real_os2_trend():
    """Held-in check of the number: over bins from 4 to 128 m, r0 = 28.5 m gives a smaller log-rms misfit of
    signal*r^2/(rho*K) than r0 15 % shorter or longer (the OS2's 'longest r0' is the unit's, not a guess)."""
    r, s, q = real_os2()
    surface = load_sensor("OS2-128").surface
    edges = [4, 5, 6, 7, 8, 9, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 33, 36, 40, 45, 50, 64, 90, 128]
    bins = [(np.sqrt(a * b), band_ratio(r, s, q, a, b)) for a, b in zip(edges[:-1], edges[1:])]
    bins = [(c, v / surface.signal_scale) for c, (v, n) in bins if n >= 30]

    def misfit(r0):
        return np.sqrt(np.mean([np.log(v / overlap(np.array([c]), r0)[0]) ** 2 for c, v in bins]))

    best = misfit(surface.overlap_range_m)
    assert best < misfit(0.85 * surface.overlap_range_m) and best < misfit(1.15 * surface.overlap_range_m)
    assert best < np.log(1.35)


@pytest.fixture(scope="module")
def os2_frames(tmp_path_factory):
    """(real, simulated) OS-2-128 frames: street world, its metadata JSON, pose 0 0 1.8, --realistic, seed 1
    (the README's 'Lidar against real frames' recipe)."""
    if not OS2_REAL.is_file():
        pytest.skip("shared real frames not present")
    from radarays_ros.cli import main as radarays_main
    from radarays_ros.io.lidar_frames import read_lidar_frame

    out = tmp_path_factory.mktemp("os2") / "sim.npz"
    assert radarays_main(["lidar", "street", "--sensor", str(OS2_META), "--realistic", "--pose", "0 0 1.8 0 0 0",
                          "--seed", "1", "--out", str(out)]) == 0
    return read_lidar_frame(OS2_REAL), read_lidar_frame(out)


def frame_arrays(frame):
    r = np.where(frame.valid, np.asarray(frame.range_m, float), np.nan)
    return r, np.asarray(frame.signal, float), np.asarray(frame.reflectivity, float)


def test_simulated_os2_signal_r2_over_rho_is_the_real_units_at_near_range(os2_frames):
    """signal*r^2/rho per near band (4-8 m, 8-16 m; the compare table's bands) of the simulated frame within
    1.5x of the real frame's (2026-11-28: 2.30e4 / 1.87e4 and 5.09e4 / 4.12e4)."""
    real, sim = (frame_arrays(f) for f in os2_frames)
    for a, b in ((4, 8), (8, 16)):
        want, n_real = band_ratio(*real, a, b)
        got, n_sim = band_ratio(*sim, a, b)
        assert n_real > 300 and n_sim > 300
        assert 1 / 1.5 < got / want < 1.5, (a, b, got, want)


def test_os2_near_range_signal_gap_is_the_scenes_reflectivity_not_the_sensor(os2_frames):
    """Under 5 m, S = (S*r^2/rho) * rho / r^2: the sensor's part, S*r^2/rho (K*O(r), what a wrong K or r0
    would move), agrees within 2x (2026-11-28: sim 9.5e3, real 1.2e4), while the simulated SIGNAL is ~10x the
    real one's because the scene's part is: the real pixels are dark (median REFLECTIVITY <= 5 %, 8-bit
    percent 1-3 on most), the simulated ones bright (>= 20 %)."""
    (rr, sr, qr), (rs, ss, qs) = (frame_arrays(f) for f in os2_frames)
    near_r = (rr < 5) & (sr > 0) & (qr >= 1) & (qr <= 100)
    near_s = (rs < 5) & (ss > 0) & (qs >= 1) & (qs <= 100)
    assert near_r.sum() > 300 and near_s.sum() > 300
    assert np.median(ss[near_s]) / np.median(sr[near_r]) > 4  # the gap the README table shows
    sensor_real = np.median(sr[near_r] * rr[near_r] ** 2 / (qr[near_r] / 100))
    sensor_sim = np.median(ss[near_s] * rs[near_s] ** 2 / (qs[near_s] / 100))
    assert 0.5 < sensor_sim / sensor_real < 2, (sensor_sim, sensor_real)
    assert np.median(qr[near_r]) <= 5 and np.median(qs[near_s]) >= 20


def test_os2_near_range_noise_is_the_same_law_at_each_frames_signal(os2_frames):
    """Range noise under 5 m (second differences, the compare table's row) times sqrt(median SIGNAL there):
    both frames within 45-105 mm, the photon-counting 70 mm of range_precision.py, and within 1.5x of each
    other, though their sigma differ 2.7x (16.3 vs 6.1 mm): the gap is S, i.e. the scene."""
    from lidar_ros.compare.stats import range_noise

    products = []
    for frame in os2_frames:
        r, s, _ = frame_arrays(frame)
        sigma = range_noise(frame, (0.0, 5.0))
        products.append(sigma * np.sqrt(np.median(s[(r < 5) & (s > 0)])))
    assert all(0.045 < p < 0.105 for p in products), products
    assert 1 / 1.5 < products[0] / products[1] < 1.5, products


@needs_real
def test_os2_model_at_the_real_pixels_own_range_and_reflectivity_gives_the_real_near_noise():
    """The sensor stage (OS2 metadata, --realistic) applied to the real frame's own returns under 5 m (their range
    and REFLECTIVITY/100 as rho, 40 draws each) spreads range by 1.4826 MAD within 1.5x of the real frame's noise
    there (2026-11-28: 20.8 mm vs 16.3 mm; the street world's bright pixels read 6.1 mm). The 8-bit percent
    rounds most of these pixels to 1-3 %, which biases the model's rho low and its sigma high."""
    from lidar_ros.compare.stats import range_noise
    from lidar_ros.physics import LidarHits, SurfaceModel
    from radarays_ros.io.lidar_frames import read_lidar_frame

    r, _, q = real_os2()
    near = (r > 0) & (r < 5) & (q >= 1) & (q <= 100)
    ranges = np.repeat(r[near], 40).astype(np.float32)
    rho = np.repeat(q[near] / 100, 40).astype(np.float32)
    n, zero = len(ranges), np.zeros(len(ranges), np.int32)
    hits = LidarHits(ranges, zero, zero, np.zeros((n, 3), np.float32), np.ones(n, np.float32), rho,
                     zero.astype(np.int16), zero.astype(np.int16), zero, zero, ranges.copy())
    cfg = load_sensor(str(OS2_META), realistic=True)
    ret = SurfaceModel(cfg.surface, cfg.noise, 1, 0, cfg.effects).apply(hits, None, np.random.default_rng(3))
    e = (ret.range - ret.clean_range)[ret.hit]
    assert ret.hit.mean() > 0.9
    got = 1.4826 * np.median(np.abs(e - np.median(e)))
    want = range_noise(read_lidar_frame(OS2_REAL), (0.0, 5.0))
    assert want / 1.5 < got < want * 1.5, (got, want)
