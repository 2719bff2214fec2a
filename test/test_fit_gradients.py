"""Gradients through a lidar shading kernel with the hit geometry held fixed (Warp wp.Tape on the CPU device,
lidar_ros/fit/gradients.py), checked against finite differences and the analytic derivative, and used to fit
the signal scale K and the near-range overlap r0 (recovered across seeds); skipped without warp-lang."""
from __future__ import annotations

import math

import numpy as np
import pytest

from support.warp import require_warp

require_warp()

from lidar_ros.fit import SENSOR_STAGE, scene_from_frame  # noqa: E402
from lidar_ros.fit.shade import shade  # noqa: E402
from lidar_ros.fit.gradients import SignalPixels, fit_signal, loss_and_gradient, signal_pixels  # noqa: E402
from lidar_ros.fit.params import apply_values  # noqa: E402
from support.lidar_fit import START, synthetic_scene  # noqa: E402

KEYS = ("surface.signal_scale", "surface.overlap_range_m", "noise.sigma")
PARAMS = tuple(p for p in SENSOR_STAGE if p.key in KEYS)
TRUTH = apply_values(START, PARAMS, [8.0e4, 3.0, 0.01])


def frame_pixels(seed):
    frame = shade(synthetic_scene(), TRUTH, seed=seed, name="truth")
    return signal_pixels(scene_from_frame(frame), frame.signal)


def analytic(pixels, k, r0):
    """L and its derivatives written out: e = ln K + ln ρ + ln O − 2 ln r − ln s, ∂e/∂K = 1/K,
    ∂e/∂r0 = ∂ln O/∂r0 = −2 x² e^(−x²) / (r0 (1 − e^(−x²))), x = r/r0."""
    r = np.maximum(pixels.range_m, 0.1)
    x2 = (r / r0) ** 2
    o = -np.expm1(-x2)
    e = np.log(k * pixels.rho * o / r**2) - np.log(pixels.signal)
    dlno = -2.0 * x2 * np.exp(-x2) / (r0 * o)
    return 0.5 * np.mean(e * e), np.mean(e) / k, np.mean(e * dlno)


def test_tape_gradient_matches_finite_differences_and_the_analytic_one():
    pixels = frame_pixels(1)
    k, r0 = 5.0e4, 2.0
    value, dk, dr0 = loss_and_gradient(pixels, k, r0)
    h = 1e-5
    fd_k = (loss_and_gradient(pixels, k * (1 + h), r0)[0] - loss_and_gradient(pixels, k * (1 - h), r0)[0]) / (2 * k * h)
    fd_r0 = (loss_and_gradient(pixels, k, r0 * (1 + h))[0] - loss_and_gradient(pixels, k, r0 * (1 - h))[0]) / (2 * r0 * h)
    assert dk == pytest.approx(fd_k, rel=1e-6) and dr0 == pytest.approx(fd_r0, rel=1e-6)
    a_value, a_dk, a_dr0 = analytic(pixels, k, r0)
    assert (value, dk, dr0) == pytest.approx((a_value, a_dk, a_dr0), rel=1e-9)
    assert loss_and_gradient(pixels, k, 0.0)[2] == 0.0  # overlap off: no gradient into r0


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_signal_scale_and_overlap_recovered_with_tape_gradients(seed):
    """From K 2e4 and r0 1 m to the truth (K 8e4, r0 3 m) through the frame's integer signal and its 1 cm range
    noise. Stated tolerance 0.5 % (measured over seeds 1-3: K +0.015..+0.019 %, r0 +0.005..+0.011 %)."""
    fit = fit_signal(frame_pixels(seed), 2.0e4, 1.0)
    assert fit.k == pytest.approx(8.0e4, rel=0.005) and fit.r0 == pytest.approx(3.0, rel=0.005)
    assert fit.loss < 1e-3 * fit.loss_start


def test_without_overlap_only_k_moves():
    fit = fit_signal(frame_pixels(2), 2.0e4, 0.0, fit_overlap=False)
    assert fit.r0 == 0.0
    # K alone absorbs the mean log overlap of the pixels: the closed form exp(mean(ln s − ln(ρ/r²)))
    px = frame_pixels(2)
    closed = math.exp(np.mean(np.log(px.signal) - np.log(px.rho / np.maximum(px.range_m, 0.1) ** 2)))
    assert fit.k == pytest.approx(closed, rel=1e-4)


def test_too_few_pixels_or_no_signal_is_one_line():
    from radarays_ros.errors import ConfigError

    frame = shade(synthetic_scene(), TRUTH, seed=1)
    scene = scene_from_frame(frame)
    with pytest.raises(ConfigError, match="no SIGNAL channel"):
        signal_pixels(scene, None)
    with pytest.raises(ConfigError, match="too few to fit"):
        signal_pixels(scene, np.zeros(scene.shape))
    assert isinstance(frame_pixels(1), SignalPixels)
