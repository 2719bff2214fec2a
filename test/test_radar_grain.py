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


def measured_correlation(power: np.ndarray, axis: int, lags: int, per_bin: bool = True) -> np.ndarray:
    """Intensity correlation coefficient along an axis, each range bin normalised by its mean over the
    azimuths first (the floor's level over range is not grain; per_bin False: one mean for a flat region,
    as a column's own mean over 400 correlated azimuths biases the azimuth lags by ~ -sum(rho)/400)."""
    p = power / (power.mean(axis=0, keepdims=True) if per_bin else power.mean())
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


def plain_config(**scatter) -> RadarConfig:
    """400 azimuths of the Navtech beam (sinc, 1.8 deg at 0.9 deg steps), a plain receiver of known noise."""
    return RadarConfig.from_dict({"sensor": {"model": "physical"}, "azimuth": {"count": 400, "step_deg": -0.9},
                                  "range": {"resolution": 0.04381, "bins": 3000},
                                  "antenna": {"azimuth_pattern": "sinc", "azimuth_width_deg": 1.8},
                                  "fmcw": {"bandwidth_hz": 8.5655e8},
                                  "receiver": {"noise_dbm": -150.0, "stc_range_m": 0.0, "leakage_dbm": None},
                                  "scatter": scatter, "seed": 0}, origin="test")


def weak_clutter(cfg, power_w: float, near: float = 20.0, far: float = 120.0):
    """One diffuse return per azimuth over [near, far): a quiet region of clutter (ground at grazing)."""
    a = cfg.azimuth.count
    clutter = Clutter(np.arange(a), np.full(a, near), np.full(a, far), np.full(a, power_w), np.zeros(a))
    return clutter, nothing()[1]


@pytest.mark.parametrize("clutter_to_noise", [100.0, 1.0])
def test_quiet_clutter_correlates_between_azimuths_by_the_beam_overlap(clutter_to_noise):
    """A quiet region of diffuse clutter C over noise N: the intensity correlation of beams m steps apart is
    rho_m^2 (C / (C + N))^2, rho_m the overlap of the two-way field patterns (antenna.field_correlation)."""
    cfg = plain_config()
    bin_m = cfg.range.resolution
    noise_w = 10 ** ((-150.0 - 30.0) / 10)
    per_bin = bin_m / (C / (2 * cfg.fmcw.bandwidth_hz))
    half = int(math.ceil(8.0 / per_bin))
    cell = float(np.sum(hann_amplitude(np.arange(-half, half + 1) * per_bin) ** 2))  # clutter V per bin reads V x sum h^2
    near, far = 5.0, 130.0
    clutter, glints = weak_clutter(cfg, clutter_to_noise * noise_w * (far - near) / bin_m / cell, near, far)
    power = run_stage(clutter, glints, cfg, np.random.default_rng(5)).power_w.astype(np.float64)
    region = power[:, int((near + 3.0) / bin_m):int((far - 3.0) / bin_m)]
    assert region.mean() == pytest.approx(noise_w * (1 + clutter_to_noise), rel=0.03)
    share = clutter_to_noise / (1.0 + clutter_to_noise)  # the clutter's part of each cell's power
    measured = measured_correlation(region, axis=0, lags=4, per_bin=False)
    step, width = math.radians(0.9), math.radians(1.8)
    for m in (1, 2, 3):
        overlap = antenna.field_correlation(m * step, width, "sinc")
        tolerance = 0.01 if m < 3 else 0.02  # lag 3 follows the fitted recursion, not the overlap exactly
        assert measured[m] == pytest.approx(overlap ** 2 * share ** 2, abs=tolerance), (m, measured.round(4))


def test_without_azimuth_correlation_the_clutter_is_independent_between_azimuths():
    cfg = plain_config(azimuth_correlation=False)
    clutter, glints = weak_clutter(cfg, 100.0 * 10 ** (-18.0) * 2283)
    power = run_stage(clutter, glints, cfg, np.random.default_rng(5)).power_w.astype(np.float64)
    measured = measured_correlation(power[:, int(30.0 / 0.04381):int(110.0 / 0.04381)], axis=0, lags=2, per_bin=False)
    assert abs(measured[1]) < 0.01
