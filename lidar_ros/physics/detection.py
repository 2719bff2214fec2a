"""Range–reflectivity detection limit r_L(ρ): the farthest range at which a target of reflectivity ρ
still gives a return (LiMOX, Rott et al. 2024, §4.2; BlenSor, Gschwandtner et al. 2011, §3.2).

Datasheets give two points of the curve, e.g. HDL-64E S2: ρ = 10 % seen to 50 m, 80 % to 120 m.
A hit at range r with reflectivity ρ (angle-dependent, per ray) is kept iff r ≤ r_L(ρ), so a dark
far wall is partly visible: the parts hit more squarely (larger ρ(θ)) and nearer stay.

Forms through both pairs (ρ1, d1), (ρ2, d2), with a, b fitted so that r_L(ρ1) = d1, r_L(ρ2) = d2:

* linear:  r_L = a + b·ρ
* rootN:   r_L = a + b·ρ^(1/N), N = 2, 3, 4. Received power of an extended target falls as ρ/r²,
           a line target (wire, pole) as ρ/r³, a point target as ρ/r⁴, so the limit grows as
           ρ^(1/2), ρ^(1/3), ρ^(1/4) (LiMOX §4.2); the offset a lets the curve meet both pairs.
* log:     r_L = a + b·ln ρ
* blensor: BlenSor §3.2: below d1 every ρ > 0 is detected; from d1 on the minimum reflectivity rises
           linearly, R_min(d) = ρ1 + (ρ2 − ρ1)·(d − d1)/(d2 − d1) (and keeps rising past d2). As a
           limit: r_L = d1 for 0 < ρ ≤ ρ1, r_L = d1 + (ρ − ρ1)·(d2 − d1)/(ρ2 − ρ1) above.
* none:    r_L = ∞ (every hit is kept, whatever its ρ).

Every other form is non-decreasing in ρ, clipped at 0, and r_L(ρ ≤ 0) = 0: a black surface is never seen.
"""
from __future__ import annotations

import numpy as np
import numpy as xm  # the formulas' vocabulary (radarays_ros/twin.py)

from radarays_ros.compiled import inlined, kernel

from .config import SurfaceConfig

_ROOTS = {"linear": 1.0, "root2": 2.0, "root3": 3.0, "root4": 4.0}


# the curve's form codes, one source for the host loops below and the Warp kernel (warp_frame_kernels.py)
CURVE_NONE, CURVE_ROOT, CURVE_LOG, CURVE_BLENSOR = range(4)
_NONE, _ROOT, _LOG, _BLENSOR = CURVE_NONE, CURVE_ROOT, CURVE_LOG, CURVE_BLENSOR


class DetectionLimit:
    """r_L(ρ) of one SurfaceConfig, with the fitted coefficients computed once."""

    def __init__(self, config: SurfaceConfig):
        self.model = config.model
        (self.rho1, self.d1), (self.rho2, self.d2) = config.limits
        a = b = power = slope = 0.0
        if self.model in _ROOTS:
            code, power = _ROOT, 1.0 / _ROOTS[self.model]
            b = (self.d2 - self.d1) / (self.rho2**power - self.rho1**power)
            a = self.d1 - b * self.rho1**power
        elif self.model == "log":
            code = _LOG
            b = (self.d2 - self.d1) / (np.log(self.rho2) - np.log(self.rho1))
            a = self.d1 - b * np.log(self.rho1)
        elif self.model == "blensor":
            code, slope = _BLENSOR, (self.d2 - self.d1) / (self.rho2 - self.rho1)
        else:
            code = _NONE
        self._a, self._b, self._power, self._slope = a, b, power, slope
        self.code = code
        self.root = int(_ROOTS.get(self.model, 1))  # N of the rootN forms (1: linear): float32 root by form
        # what the compiled loops need: (model code, a, b, exponent, d1, rho1, slope)
        self.curve = (code, float(a), float(b), float(power), float(self.d1), float(self.rho1), float(slope))

    def max_range(self, rho) -> np.ndarray:
        """r_L(ρ) in metres (float64 array), ∞ for model 'none'."""
        rho = np.asarray(rho, np.float64)
        out = np.empty(rho.shape)
        _max_ranges(rho.reshape(-1), self.curve, out.reshape(-1))
        return out

    def keep(self, ranges, rho) -> np.ndarray:
        """(N,) bool: range ≤ r_L(ρ), decided per ray. Non-finite ranges (misses) are never kept.

        Same curve as max_range, evaluated in float32 with one pass per term (this runs on every ray).
        """
        r = np.asarray(ranges, np.float32)
        if self.model == "none":
            return np.isfinite(r)
        rho = np.asarray(rho, np.float32)
        if r.shape == rho.shape and (self.code == _BLENSOR or (self.code == _ROOT and self.root in (1, 2, 4))):
            # forms of + - × and square roots only (IEEE-exact in float32 on every path): one compiled pass instead
            # of seven numpy passes (the logarithm and the cube root stay numpy's, whose bits a libm call may not give)
            out = np.empty(r.shape, bool)
            f32 = np.float32
            _keep_kernel(np.ascontiguousarray(r).reshape(-1), np.ascontiguousarray(rho).reshape(-1), self.code,
                         self.root, f32(self._a), f32(self._b), f32(self.rho1), f32(self.d1), f32(self._slope),
                         out.reshape(-1))
            return out
        return detected(r, rho, self.limit32(rho))

    def keep_numpy(self, ranges, rho) -> np.ndarray:
        """`keep` through the numpy passes of limit32 and detected: the reference of its compiled pass."""
        r = np.asarray(ranges, np.float32)
        if self.model == "none":
            return np.isfinite(r)
        rho = np.asarray(rho, np.float32)
        return detected(r, rho, self.limit32(rho))

    def limit32(self, rho) -> np.ndarray:
        """r_L(ρ) as `keep` decides with it: float32, the coefficients rounded to float32, one rounding
        per operation (root or log, × b, + a); not clipped at 0 (`keep` also needs ρ > 0). The Warp
        kernel runs the same formula (detection_limit32, compiled by Warp)."""
        rho = np.asarray(rho, np.float32)
        if self.code == _NONE:
            return np.full(rho.shape, np.inf, np.float32)
        f32 = np.float32
        return detection_limit32(rho, self.code, self.root, f32(self._a), f32(self._b), f32(self.rho1), f32(self.d1),
                                 f32(self._slope))


def detection_limit32(rho: float, code: int, root: int, a: float, b: float, rho1: float, d1: float,
                      slope: float) -> float:
    """r_L(rho) of the forms root (N = root), log and blensor, one rounding per operation in the dtype of rho
    and the coefficients. Written once: numpy runs it over float32 arrays on the host (DetectionLimit.limit32),
    Warp compiles it for the device frame (radarays_ros/twin.py). ASCII only in these lines."""
    limit = float(0.0)
    if code == CURVE_ROOT:
        safe = xm.maximum(rho, xm.float32(1.0e-30))
        base = safe
        if root == 2:
            base = xm.sqrt(safe)
        elif root == 3:
            base = xm.cbrt(safe)
        elif root == 4:
            base = xm.sqrt(xm.sqrt(safe))
        limit = base * b + a
    elif code == CURVE_LOG:
        limit = xm.log(xm.maximum(rho, xm.float32(1.0e-30))) * b + a
    else:  # blensor
        limit = xm.maximum(rho - rho1, xm.float32(0.0)) * slope + d1
    return limit


def detected(r: float, rho: float, limit: float) -> bool:
    """Whether a return at range r of reflectivity rho is seen: r <= r_L(rho) (limit) and rho > 0 (a black surface
    never is); a NaN or infinite range (a miss) never is. Written once: numpy runs it on the host (DetectionLimit.keep),
    Warp compiles it for the device frame (radarays_ros/twin.py). ASCII only in these lines."""
    return xm.logical_and(r <= limit, rho > 0.0)


_limit32_compiled = inlined(detection_limit32)
_detected_compiled = inlined(detected)


@kernel
def _keep_kernel(r, rho, code, root, a, b, rho1, d1, slope, out):
    """out = detected(r, ρ, detection_limit32(ρ, ...)) per return: the float32 limit (held exactly in a float64
    variable by numba) compared with the float32 range, and ρ > 0 (a NaN ρ is never kept, whatever its limit)."""
    for i in range(out.shape[0]):
        out[i] = _detected_compiled(r[i], rho[i], _limit32_compiled(rho[i], code, root, a, b, rho1, d1, slope))


@inlined
def limit_at(rho, curve):
    """r_L(ρ) (float64) of one reflectivity on a curve (DetectionLimit.curve); 0 for ρ ≤ 0."""
    code, a, b, power, d1, rho1, slope = curve
    if code == _NONE:
        return np.inf
    if not rho > 0:
        return 0.0
    if code == _ROOT:  # ρ^(1/2) as sqrt (numpy's own fast path for ** 0.5: the same bits)
        limit = a + b * (np.sqrt(rho) if power == 0.5 else rho**power)
    elif code == _LOG:
        limit = a + b * np.log(rho)
    else:  # blensor
        limit = d1 + max(rho - rho1, 0.0) * slope
    return max(limit, 0.0)


@kernel
def _max_ranges(rho, curve, out):
    for i in range(rho.shape[0]):
        out[i] = limit_at(rho[i], curve)
