"""Gradients through a lidar shading kernel with the hit geometry held fixed (Warp `wp.Tape`), and a fit of
the signal scale K and the near-range overlap r0 that uses them.

Heiden et al. fit a lidar model by gradient descent through a differentiable simulator; here the
differentiable part is the shading of a held-fixed scene (scene.py: each pixel's range and ρ): the mean
signal photons of a return (physics/intensity.py, physics/overlap.py)

    S(r, ρ) = K·ρ·O(r)/r²,   O(r) = 1 − exp(−(r/r0)²)   (r ≥ MIN_SIGNAL_RANGE; r0 = 0: O = 1)

and a per-pixel loss against the frame's own signal channel, over the pixels that returned with
SIGNAL_MIN ≤ signal < saturation and 0 < ρ ≤ 1:

    L(K, r0) = ½·mean_i (ln S_i − ln signal_i)²

(log residuals: photon counts over four decades weigh alike; the shot noise of a count is relative).
The kernel runs in float64 on Warp's CPU device (or CUDA); `wp.Tape` records the launch and its backward
pass gives ∂L/∂K and ∂L/∂r0, which the tests check against finite differences. `fit_signal` minimises L
over (ln K, ln r0) with those gradients (scipy L-BFGS-B, bounded by the registry's windows, params.py).

The per-pixel fit co-registers exactly (the scene is the frame's own geometry) but reads ρ from the
calibrated reflectivity, which an Ouster derives from its own signal: on such a frame it recovers the
unit's own signal-to-reflectivity calibration K·O(r). Without Warp, `available()` is False and the
functions raise FitError naming the package.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from radarays_ros.errors import ConfigError

from ..physics.overlap import MIN_SIGNAL_RANGE
from .params import SENSOR_STAGE

SIGNAL_MIN = 2.0         # photons: below, a count's rounding (±0.5) is a large part of its log
SATURATION = 65535.0     # an Ouster SIGNAL count saturates here


def _warp():
    try:
        from radarays_ros.tracing.warp import load_warp

        return load_warp()
    except Exception as exc:  # TracingError (no warp-lang) or a Warp that cannot initialise
        raise ConfigError(f"fit gradients: need NVIDIA Warp (pip install warp-lang): {exc}") from None


def available() -> bool:
    try:
        _warp()
        return True
    except ConfigError:
        return False


_KERNELS = {}


def _kernels():
    if _KERNELS:
        return _KERNELS
    wp = _warp()

    @wp.kernel
    def signal_loss(r: wp.array(dtype=wp.float64), rho: wp.array(dtype=wp.float64),
                    measured: wp.array(dtype=wp.float64), k: wp.array(dtype=wp.float64),
                    r0: wp.array(dtype=wp.float64), scale: wp.float64, loss: wp.array(dtype=wp.float64)):
        # S = K rho O(r) / r^2 (intensity.py, overlap.py); loss += scale * 0.5 * (ln S - ln measured)^2
        i = wp.tid()
        rr = wp.max(r[i], wp.float64(MIN_SIGNAL_RANGE))
        mean = k[0] * rho[i] / (rr * rr)
        if r0[0] > wp.float64(0.0):
            x = rr / r0[0]
            mean = mean * (wp.float64(1.0) - wp.exp(-(x * x)))
        e = wp.log(mean) - wp.log(measured[i])
        wp.atomic_add(loss, 0, scale * wp.float64(0.5) * e * e)

    _KERNELS["signal_loss"] = signal_loss
    return _KERNELS


@dataclass(frozen=True)
class SignalPixels:
    """The pixels of a frame the per-pixel signal loss reads (flattened, float64)."""

    range_m: np.ndarray
    rho: np.ndarray
    signal: np.ndarray

    def __len__(self) -> int:
        return len(self.range_m)


def signal_pixels(scene, signal: np.ndarray) -> SignalPixels:
    """The held scene's range and ρ where the frame returned a usable signal (module docstring)."""
    if signal is None:
        raise ConfigError(f"lidar frame {scene.name}: no SIGNAL channel, the per-pixel signal fit needs one")
    s = np.asarray(signal, np.float64)
    if s.shape != scene.shape:
        raise ConfigError(f"lidar frame {scene.name}: signal {s.shape} vs scene {scene.shape}")
    r, rho = scene.range_m, scene.rho
    with np.errstate(invalid="ignore"):
        ok = scene.returned & (s >= SIGNAL_MIN) & (s < SATURATION) & (rho > 0) & (rho <= 1.0) & np.isfinite(r)
    if ok.sum() < 20:
        raise ConfigError(f"lidar frame {scene.name}: {int(ok.sum())} pixels with a usable signal, too few to fit")
    return SignalPixels(r[ok].astype(np.float64), rho[ok].astype(np.float64), s[ok])


def loss_and_gradient(pixels: SignalPixels, k: float, r0: float, device: str = "cpu") -> tuple[float, float, float]:
    """(L, ∂L/∂K, ∂L/∂r0) by one launch and its `wp.Tape` backward pass (r0 = 0: overlap off, ∂L/∂r0 = 0)."""
    wp = _warp()
    kernel = _kernels()["signal_loss"]
    arrays = [wp.array(a, dtype=wp.float64, device=device) for a in (pixels.range_m, pixels.rho, pixels.signal)]
    kk = wp.array([k], dtype=wp.float64, device=device, requires_grad=True)
    rr0 = wp.array([r0], dtype=wp.float64, device=device, requires_grad=True)
    loss = wp.zeros(1, dtype=wp.float64, device=device, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, dim=len(pixels), inputs=[*arrays, kk, rr0, wp.float64(1.0 / len(pixels)), loss],
                  device=device)
    tape.backward(loss=loss)
    return float(loss.numpy()[0]), float(kk.grad.numpy()[0]), float(rr0.grad.numpy()[0])


@dataclass(frozen=True)
class SignalFit:
    k: float
    r0: float
    loss_start: float
    loss: float
    evaluations: int
    history: tuple


def fit_signal(pixels: SignalPixels, k0: float, r00: float, fit_overlap: bool = True,
               device: str = "cpu") -> SignalFit:
    """K (and r0) minimising L with Tape gradients, in log space inside the registry's search windows."""
    from scipy.optimize import minimize

    windows = {p.key: p.bounds for p in SENSOR_STAGE}
    k_lo, k_hi = windows["surface.signal_scale"]
    r_lo, r_hi = windows["surface.overlap_range_m"]
    r00 = r00 if r00 > 0 else 1.0  # an overlap that is off starts at 1 m (params.py off_start)
    history = []

    def f(x):
        k, r0 = math.exp(x[0]), (math.exp(x[1]) if fit_overlap else 0.0)
        value, dk, dr0 = loss_and_gradient(pixels, k, r0, device)
        history.append(value)
        grad = [dk * k] + ([dr0 * r0] if fit_overlap else [])  # chain rule into log space
        return value, np.array(grad)

    x0 = [math.log(k0)] + ([math.log(r00)] if fit_overlap else [])
    bounds = [(math.log(k_lo), math.log(k_hi))] + ([(math.log(r_lo), math.log(r_hi))] if fit_overlap else [])
    start = f(np.array(x0))[0]
    result = minimize(f, x0, jac=True, method="L-BFGS-B", bounds=bounds, options={"maxiter": 200, "gtol": 1e-12,
                                                                                 "ftol": 1e-15})
    k = math.exp(result.x[0])
    r0 = math.exp(result.x[1]) if fit_overlap else 0.0
    return SignalFit(k, r0, start, float(result.fun), len(history), tuple(history))
