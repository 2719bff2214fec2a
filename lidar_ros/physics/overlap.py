"""Near-range overlap (geometric form factor) of a lidar receiver: the fraction O(r) of a near target's
return that reaches the detector pixel.

A receiver focused at infinity images a target at range r with a defocus blur whose angular size grows
as D/r (D the receiving aperture); the pixel collects the part of the blur inside its field of view θ.
For a Gaussian blur spot and a round pixel that part is 1 − exp(−2a²/w²) with a/w ∝ r, so

    O(r) = 1 − exp(−(r/r₀)²),      r₀ ∝ D/θ,  the range where O = 1 − 1/e = 63 %

(the overlap function of lidar remote sensing: Measures, "Laser Remote Sensing", 1984, §7.4; Halldórsson
& Langerholc, Appl. Opt. 17:240, 1978). Signal below r₀ falls under the 1/r² law; from ~2 r₀ on O ≈ 1.
Ouster calibrates its REFLECTIVITY channel for it, not SIGNAL (firmware manual: reflectivity "scales
measured signal photons by range and sensor sensitivity").

r₀ per Ouster product line (presets' surface.overlap_range_m): no datasheet gives it; it is the one
parameter of the form above read off the shared real frames' signal·r²/reflectivity trend (OS0-128
fw 3.0.1: 3.6 m; OS2-128 fw 2.3.0: 28.5 m; test_lidar_realism2 checks the whole curve, not the one
number). OS1: their geometric mean, 10.1 m: with one SPAD detector across the lines the pixel field
θ ∝ the vertical field of view (OS0 90°, OS1 45°, OS2 22.5°), and any power law r₀ ∝ FOV^(−p) puts OS1
at the geometric mean of OS0 and OS2.
OS2 check (test_lidar_real_overlap): 28.5 m is the least log-misfit r₀ of this form over 4–128 m (15 % either
side fits worse); the unit's own curve is steeper (real/model 0.7 at 8–16 m, 1.6 at 26–30 m), which one
parameter cannot follow. No Ouster datasheet or manual in the searched corpora gives aperture or focal length,
so r₀ is not derived from optics; the frame sets it and no other OS2 frame is held out.
"""
from __future__ import annotations

import numpy as np
import numpy as xm  # the formulas' vocabulary (radarays_ros/twin.py)

MIN_SIGNAL_RANGE = 0.1  # m: the nearest range the signal formulas read (keeps 1/r² finite for a target touching the window)


def overlap(ranges: np.ndarray, overlap_range: float) -> np.ndarray:
    """O(r) (float32) for ranges r (NaN stays NaN, inf gives 1); 1 everywhere for overlap_range 0 (off)."""
    r = np.asarray(ranges, np.float32)
    if overlap_range <= 0:
        return np.ones(r.shape, np.float32)
    return overlap_factor(r, np.float32(overlap_range))


def range_overlap(ranges: np.ndarray, overlap_range: float) -> np.ndarray:
    """(N,) float32 O(r) at the ranges as the signal formulas read them (intensity.py, photons.py,
    range_precision.py): r ≥ MIN_SIGNAL_RANGE, NaN (no return) as MIN_SIGNAL_RANGE."""
    return overlap(np.fmax(np.asarray(ranges, np.float32), np.float32(MIN_SIGNAL_RANGE)), overlap_range)


def overlap_factor(r: float, r0: float) -> float:
    """O(r) = 1 - exp(-(r/r0)^2) in the dtype of r and r0 (r0 > 0). Written once: numpy runs it on the host,
    Warp compiles its source for device frames (radarays_ros/twin.py). ASCII only in these lines."""
    x = r / r0
    return xm.float32(1.0) - xm.exp(-(x * x))
