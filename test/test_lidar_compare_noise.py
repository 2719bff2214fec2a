"""`radarays lidar compare`: the like-for-like near-range noise, sigma * sqrt(SIGNAL) binned by SIGNAL
(lidar_ros/compare/stats.py, range_noise_near_sqrt_signal_m), on synthetic frames with a known photon-counting
constant k (sigma = k / sqrt(S), lidar_ros/physics/range_precision.py)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from lidar_ros.compare import LidarFrame, format_table, frame_stats
from lidar_ros.compare.stats import range_noise, range_noise_times_sqrt_signal

H, W = 64, 1024
LEVELS = (20.0, 60.0, 180.0, 540.0)   # signal photons, each in its own octave bin


def flat_frame(k: float, signal: np.ndarray, seed: int, distance: float = 3.0, with_signal: bool = True,
               floor: float = 0.0) -> LidarFrame:
    """A wall at `distance` m seen by every pixel, range noise sigma = max(floor, k / sqrt(signal)) per pixel."""
    rng = np.random.default_rng(seed)
    r = distance + rng.standard_normal((H, W)) * np.maximum(floor, k / np.sqrt(signal))
    el = np.radians(np.linspace(-15, 15, H))[:, None] * np.ones((1, W))
    az = (np.arange(W) * 2 * np.pi / W)[None, :] * np.ones((H, 1))
    d = np.stack([np.cos(el) * np.cos(az), np.cos(el) * np.sin(az), np.sin(el)], axis=-1)
    return LidarFrame(name="flat", sensor="", range_m=r, xyz_m=r[..., None] * d,
                      signal=signal if with_signal else None)


def rows_of_levels(levels=LEVELS) -> np.ndarray:
    """Each row one signal level, the levels repeating down the image (neighbours along a row share S)."""
    return np.repeat(np.asarray(levels)[np.arange(H) % len(levels)][:, None], W, axis=1)


@pytest.mark.parametrize("k, seed", [(0.070, 1), (0.030, 2), (0.150, 3)])
def test_recovers_the_photon_counting_constant_over_several_signal_levels(k, seed):
    """Four signal levels 20-540 photons (sigma 3.4x apart): the statistic reads k within 4 %, while the plain
    near noise is a mix of the levels and says nothing of k alone."""
    frame = flat_frame(k, rows_of_levels(), seed)
    s = frame_stats(frame)
    assert s["range_noise_near_sqrt_signal_m"] == pytest.approx(k, rel=0.04)
    assert range_noise_times_sqrt_signal(frame) == s["range_noise_near_sqrt_signal_m"]


def test_bright_bins_at_the_precision_floor_do_not_count():
    """Ouster-like sigma = max(3 mm, 70 mm / sqrt(S)) with three of five levels above 512 photons, where the floor
    sets sigma and sigma * sqrt(S) reads 116-232 mm: still k within 4 % (the median over every bin would read
    3 mm * sqrt(1500) = 116 mm)."""
    frame = flat_frame(0.070, rows_of_levels((40.0, 150.0, 1500.0, 3000.0, 6000.0)), 11, floor=0.003)
    assert range_noise_times_sqrt_signal(frame) == pytest.approx(0.070, rel=0.04)


def test_like_for_like_where_the_plain_noise_is_not():
    """The same k on a dark scene (20-60 photons) and a bright one (180-540): the plain near noise differs by
    about 3x, sigma * sqrt(S) agrees within 6 % (the compare table's OS-2-128 case: dark real, bright sim)."""
    k = 0.070
    dark = frame_stats(flat_frame(k, rows_of_levels((20.0, 60.0)), 4))
    bright = frame_stats(flat_frame(k, rows_of_levels((180.0, 540.0)), 5))
    assert dark["range_noise_near_m"] / bright["range_noise_near_m"] > 2.5
    assert dark["range_noise_near_sqrt_signal_m"] / bright["range_noise_near_sqrt_signal_m"] == pytest.approx(1, abs=0.06)


def test_scales_with_the_noise_and_reads_a_single_bin_alone():
    """The same draws with twice the noise read twice (the statistic is linear in sigma); one signal level
    (100 photons, sigma 5 mm) gives one bin, sigma * sqrt(100) = 50 mm."""
    signal = rows_of_levels()
    k = 0.070
    once = range_noise_times_sqrt_signal(flat_frame(k, signal, 6))
    twice = range_noise_times_sqrt_signal(flat_frame(2 * k, signal, 6))
    assert twice / once == pytest.approx(2, rel=0.01)
    flat_sigma = 0.005
    constant = range_noise_times_sqrt_signal(flat_frame(flat_sigma * np.sqrt(100.0), np.full((H, W), 100.0), 7))
    assert constant == pytest.approx(0.05, rel=0.05)  # one bin: sigma * sqrt(100)


def test_only_near_pixels_and_only_bins_with_enough_samples():
    """Pixels beyond 5 m do not count (a wall at 8 m reads NaN); a bin of fewer than 50 differences is left
    out (a few noisy pixels at another signal do not move the answer)."""
    far = flat_frame(0.07, rows_of_levels(), 8, distance=8.0)
    assert math.isnan(frame_stats(far)["range_noise_near_sqrt_signal_m"])
    signal = rows_of_levels()
    signal[0, 100:130] = 3.0       # 30 pixels in the 2-4 photon bin: too few
    frame = flat_frame(0.07, signal, 9)
    assert math.isnan(range_noise(frame, (0.0, 5.0), (signal >= 2) & (signal < 4), 50))
    assert frame_stats(frame)["range_noise_near_sqrt_signal_m"] == pytest.approx(0.07, rel=0.04)


def test_a_frame_without_signal_reads_a_dash():
    """No SIGNAL channel (VLP-16, XT32, a plain sim frame): NaN, which the table prints as –, beside a number."""
    with_signal = frame_stats(flat_frame(0.07, rows_of_levels(), 10))
    without = frame_stats(flat_frame(0.07, rows_of_levels(), 10, with_signal=False))
    assert math.isnan(without["range_noise_near_sqrt_signal_m"])
    assert not math.isnan(without["range_noise_near_m"])
    row = next(line for line in format_table(["a", "b"], [without, with_signal]).splitlines()
               if line.startswith("| range_noise_near_sqrt_signal_m |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[2] == "–" and float(cells[3]) == pytest.approx(0.07, rel=0.04)
