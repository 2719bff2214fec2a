"""Range precision (1σ repeatability) of a lidar from a published repeated-scan difference, and the published
figures behind the Velodyne presets' noise.sigma.

Accuracy is not precision. Velodyne states the VLP-16's range as "accuracy up to ±3 cm (typical)" (VLP-16
datasheet; the VLP-32C and VLS-128 datasheets state theirs in the same form): a bound on the error, systematic part
(per-laser offsets, calibration) included. A simulator's per-ray σ is the random part alone: how far two
measurements of the same surface point scatter.

The formula. Two scans of a static surface from the same place, each range with independent Gaussian noise of
standard deviation σ: the distance between the two scans at a point is d = ε₁ − ε₂ ~ N(0, 2σ²), whose mean
absolute value is E|d| = √2·σ·√(2/π) = 2σ/√π (the half-normal mean). So a published mean scan-to-scan distance D
gives

    σ = (√π / 2) · D

Worked number: D = 2 cm gives σ = 0.886 · 2 cm = 1.77 cm.

With range quantisation q (the driver's 2 mm step) each range also carries a uniform rounding error of variance
q²/12, so the mean distance of two simulated scans is 2·√(σ² + q²/12)/√π (1.77 cm → 1.001× for q = 2 mm).

Published figures (what is known per preset; none from our shared real frames, which check the result):
  VLP-16 (and VLP-16 Hi-Res, the same ranging on narrower optics): Bula, Derron & Mariethoz (2020), "Dense point
    cloud acquisition with a low-cost Velodyne VLP-16", Geosci. Instrum. Method. Data Syst. 9, 385-396,
    doi:10.5194/gi-9-385-2020: "Stability tests demonstrated an average distance of ±2 cm between repeated scans"
    (indoors, the VLP-16 on a motorised rotating platform; the same paper reads ±2.5 cm mean absolute difference
    against a high-cost TLS, which is accuracy). The only independent VLP-16 repeatability figure found
    (searched: Kidd 2017, Glennie et al. 2016, Lassiter et al. 2020, Carballo et al. 2020 "LIBRE", not readable
    here). Its scans include the platform's axis errors and cloud-to-cloud (nearest point) distances, so
    σ = 1.77 cm is an upper bound on the unit's own ranging noise, not a flat-target figure.
  HDL-32E: Velodyne's datasheet gives "< 2 cm (one sigma at 25 m)" (its specification page was not readable in
    our search tools; the figure as the issue quotes it): a 1σ figure, from the maker, not independent. σ 2 cm kept.
  HDL-64E S2/S3: the presets keep BlenSor's HDL-64E defaults, 1 cm per ray and a 4 cm per-laser offset
    (Gschwandtner et al. 2011, §3.2; BlenSor's laser notes: "distance accuracy (sigma): 2cm"). Glennie & Lichti
    (2010, Remote Sens. 2, 1610) find the factory calibration's planar misclosure RMSE three times their own
    calibration's, and Glennie & Dueitt ("A comparison of laser scanners for mobile mapping applications") call
    the HDL-64E's range specification optimistic, 2.5 cm RMSE without further calibration: accuracy (offsets
    included), no per-ray precision, so nothing to replace the defaults with.
  VLP-32C, VLS-128: only "up to ±3 cm (typical)" accuracy; no published precision found, σ stays 3 cm.
"""
from __future__ import annotations

import math

from radarays_ros.errors import ConfigError

# (figure m, what it is, source) per preset family; the presets' comments cite the same.
VLP16_MEAN_SCAN_DIFFERENCE_M = 0.02   # Bula, Derron & Mariethoz 2020, GI 9:385, "average distance of ±2 cm"
VLP16_ACCURACY_M = 0.03               # Velodyne VLP-16 manual: "accuracy up to ±3 cm (typical)" (not a σ)


def sigma_from_mean_difference(mean_abs_difference_m: float) -> float:
    """1σ range noise (m) of each of two scans whose points lie `mean_abs_difference_m` apart on average:
    σ = (√π/2)·D (module docstring)."""
    if not (mean_abs_difference_m >= 0.0 and math.isfinite(mean_abs_difference_m)):
        raise ConfigError(f"mean_abs_difference_m: {mean_abs_difference_m}; allowed: a finite number >= 0")
    return 0.5 * math.sqrt(math.pi) * mean_abs_difference_m


def mean_difference(sigma_m: float, resolution_m: float = 0.0) -> float:
    """Mean |r₁ − r₂| (m) of two scans with Gaussian σ each and ranges rounded to `resolution_m`:
    2·√(σ² + q²/12)/√π."""
    return 2.0 * math.sqrt(sigma_m * sigma_m + resolution_m * resolution_m / 12.0) / math.sqrt(math.pi)
