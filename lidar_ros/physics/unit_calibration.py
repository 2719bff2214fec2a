"""Signal scale K of a lidar unit read from its own calibrated frame (Ouster SIGNAL + REFLECTIVITY).

An Ouster sensor reports SIGNAL (photons) and REFLECTIVITY, which "scales measured signal photons by range
and sensor sensitivity" (Ouster firmware user manual, REFLECTIVITY field; 0-100 = Lambertian percent for
FW >= 2.1), i.e. the sensor itself computes ρ = S·r² / (K·O(r)) with its factory sensitivity K and its
near-range overlap O(r) (overlap.py). Every Lambertian pixel of a real frame therefore carries the unit's
K, and

    K = median over pixels with O(r) >= O_MIN and 1 <= REFLECTIVITY <= 100 of  S·r² / (ρ·O(r)),  ρ = REFLECTIVITY/100

is a reading of the unit's calibration constant, not a fit of any distribution: the median is over
thousands of pixels whose ratio is one number up to rounding of the 8-bit reflectivity and the sensor's
shot noise (OS2-128 frame: inter-quartile range ±3 % at 64-128 m). O_MIN keeps the pixels where the
overlap correction is small (r ≥ 2 r₀), so r₀'s uncertainty does not enter; ρ > 1 (retroreflectors, 101-255
on a log scale) and ρ < 1 % (8-bit rounding) are left out.

Product lines (UNIT_SIGNAL_SCALE, the presets' surface.signal_scale): the shared real frames of
/work/shared/realdata that have both channels (its README lists them):

* OS2: OS-2-128-U1 v2.3.0 (part 840-103576-06, Rev 6), 3.72e5 photons (2236 pixels) — 2.6× below the datasheet
  calibration of photon_calibration.py (9.79e5, K ∝ 240² m² with one background for every line).
* OS0: single_scan_016, OS-0-128 (part 860-105000-07, Rev 7, fw 3.0.1), 2.72e5 (54 216 pixels; its
  second-return channel, other echoes of the same unit, gives 2.58e5) — 6× above the datasheet
  calibration (4.25e4 from the Rev 6 50 m @ 80 %). The Rev 6 OS0 frame in the shared data (low-bandwidth
  profile) has no SIGNAL channel, so no Rev 6 unit could be read; the presets' beam tables are Rev 6.
* OS1: no shared frame has a calibrated REFLECTIVITY (the OS-1-64 frame is fw 2.0 LEGACY): the datasheet
  calibration stays (2.31e5) — between the two measured units, as a shared SPAD detector design suggests.

The two measured units differ by 1.37× where the datasheet calibration predicts 23×: the detection ranges of
the lines differ mainly by their background per pixel (field of view per pixel), not by the signal of a
white target at 1 m. Velodyne and Hesai sensors report a calibrated reflectivity byte, not photons: K does
not enter their channels.
"""
from __future__ import annotations

import numpy as np

from .overlap import overlap

O_MIN = 0.98  # pixels where the overlap correction is at most 2 %
UNIT_SIGNAL_SCALE = {
    "OS0": (2.72e5, "single_scan_016 (OS-0-128 Rev 7, fw 3.0.1)"),
    "OS2": (3.72e5, "OS-2-128-U1_v2.3.0_1024x10 (OS-2-128 Rev 6, fw 2.3.0)"),
}


def unit_signal_scale(signal, ranges_m, reflectivity, overlap_range_m: float) -> tuple[float, int]:
    """(K, pixels used): the median of S·r²/(ρ·O(r)) over Lambertian returns (REFLECTIVITY 1..100) where
    O(r) >= O_MIN. Inputs: SIGNAL photons, range in metres (0, NaN or inf = no return), REFLECTIVITY 0..255."""
    s = np.asarray(signal, np.float64).reshape(-1)
    r = np.asarray(ranges_m, np.float64).reshape(-1)
    q = np.asarray(reflectivity, np.float64).reshape(-1)
    with np.errstate(invalid="ignore"):
        o = overlap(np.where(np.isfinite(r), r, 0.0), overlap_range_m).astype(np.float64)
        use = np.isfinite(r) & (r > 0) & (s > 0) & (q >= 1) & (q <= 100) & (o >= O_MIN)
    if not use.any():
        return float("nan"), 0
    k = s[use] * r[use] ** 2 / (q[use] / 100.0 * o[use])
    return float(np.median(k)), int(use.sum())
