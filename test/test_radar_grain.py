"""Speckle grain of the physical radar stage against analytic answers (issue #22 item 4): along range the
grain is the range response of the datasheet's range resolution (not the bin size); between azimuths a
quiet region of clutter correlates by the overlap of the two-way beam patterns."""
from __future__ import annotations

import math

import numpy as np
import pytest

from radarays_ros.radar import RadarConfig
from radarays_ros.radar.physical import antenna
from radarays_ros.radar.physical.geometry import Clutter, Glints
from radarays_ros.radar.physical.stage import run_stage
from radarays_ros.resources import shipped

C = 299_792_458.0
DATASHEET_RESOLUTION_M = 0.175  # Navtech CTS350-X range resolution (RADIATE dataset, Sheeny et al., ICRA 2021)


def nothing():
    return (Clutter(np.zeros(0, np.int64), *([np.zeros(0)] * 4)),
            Glints(np.zeros(0, np.int64), np.zeros(0), np.zeros(0, np.complex128), np.zeros(0)))


def hann_amplitude(x: np.ndarray, n: int = 4096) -> np.ndarray:
    """The Hann-windowed FFT's amplitude response at offsets x in resolutions c/(2B), written out:
    sum_n w[n] cos(2 pi x (n - (n-1)/2) / n) / sum_n w[n] (Richards, Sec. 5.2; Harris 1978)."""
    k = np.arange(n)
    w = 0.5 - 0.5 * np.cos(2 * np.pi * k / n)
    centred = k - (n - 1) / 2.0
    return (w[None, :] * np.cos(2 * np.pi * np.asarray(x)[:, None] * centred[None, :] / n)).sum(axis=1) / w.sum()


def analytic_range_correlation(bin_m: float, resolution_m: float, lags: int) -> np.ndarray:
    """Intensity correlation of white noise through the response sampled on the bins, lags 0..lags-1:
    |sum_n h_n h_(n+k)|^2 / (sum_n h_n^2)^2 (a circular Gaussian field's intensity correlation is its
    field correlation squared, Goodman 2007 Sec. 3.3)."""
    per_bin = bin_m / resolution_m
    half = int(math.ceil(8.0 / per_bin))
    h = hann_amplitude(np.arange(-half, half + 1) * per_bin)
    field = np.array([np.sum(h[:len(h) - k] * h[k:]) for k in range(lags)]) / np.sum(h * h)
    return field ** 2


def measured_correlation(power: np.ndarray, axis: int, lags: int) -> np.ndarray:
    """Intensity correlation coefficient along an axis, each range bin normalised by its mean over the
    azimuths first (the floor's level over range is not grain)."""
    p = power / power.mean(axis=0, keepdims=True)
    p = p - p.mean()
    n = p.shape[axis]
    out = []
    for k in range(lags):
        a = np.take(p, np.arange(0, n - k), axis=axis)
        b = np.take(p, np.arange(k, n), axis=axis)
        out.append(float(np.sum(a * b) / math.sqrt(np.sum(a * a) * np.sum(b * b))))
    return np.array(out)


@pytest.mark.parametrize("preset", ["navtech_ras6", "navtech_cts350x"])
def test_quiet_range_grain_is_the_datasheet_resolutions_response(preset):
    cfg = RadarConfig.from_yaml(shipped("radar", preset))
    assert C / (2 * cfg.fmcw.bandwidth_hz) == pytest.approx(DATASHEET_RESOLUTION_M, rel=1e-3)
    clutter, glints = nothing()
    power = run_stage(clutter, glints, cfg, np.random.default_rng(11)).power_w.astype(np.float64)
    bin_m = cfg.range.resolution
    quiet = power[:, int(40.0 / bin_m):int(150.0 / bin_m)]  # beyond leakage and high-pass, before the low-pass
    lags = 12
    measured = measured_correlation(quiet, axis=1, lags=lags)
    expected = analytic_range_correlation(bin_m, DATASHEET_RESOLUTION_M, lags)
    assert np.max(np.abs(measured - expected)) < 0.01, (measured.round(3), expected.round(3))
    # correlation length: the intensity correlation's equivalent width (both sides), metres
    length = (2 * measured[1:].sum() + 1) * bin_m
    assert length == pytest.approx((2 * expected[1:].sum() + 1) * bin_m, rel=0.03)
    # the bin size's response (c/(2B) = one bin) would be far finer: the test tells them apart
    assert abs(length - (2 * analytic_range_correlation(bin_m, bin_m, lags)[1:].sum() + 1) * bin_m) > 0.05
