"""Per-material lidar reflectivity from real frames co-registered with a simulated frame of a known scene.

With the mesh world and the recording's pose, the simulator gives each pixel the material it hits, its
noise-free range and the reflectivity it reports (calibrated 0-100 %). Where the real and the simulated
pixel see the same surface (both return, ranges within CO_REGISTERED of each other, both diffuse ≤ 100 %),
the ratio real / simulated reflectivity is the correction of that material's ρ(0): under every model of
lidar_ros/physics/materials.py (Lambertian, table, constant) ρ(θ) is proportional to `reflectivity`, so
the fitted value is reflectivity × Σ real / Σ simulated over the pixels whose ratio lies within the TRIM
percentiles (trimmed: robust to the pixels co-registration gets wrong; a ratio of sums, not a median of
ratios: both channels are whole percents, and at grazing floors of 3-9 % a median of rounded ratios is
biased by ~6 %, the sums average the rounding out). A material with fewer than MIN_PIXELS such pixels is
reported as unidentifiable and keeps its value. Values are clipped to the material rule's range.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..physics.materials import MAX_REFLECTIVITY

CO_REGISTERED = 0.05   # |r_real - r_sim| <= 5 % of r_sim
MIN_PIXELS = 50
TRIM = (10.0, 90.0)   # percentiles of the ratio kept


@dataclass(frozen=True)
class MaterialFit:
    name: str
    start: float
    value: float
    pixels: int
    identifiable: bool
    verdict: str


def fit_material_reflectivity(real_range, real_refl, sim_range, sim_refl, material_ids, names, starts) -> list[MaterialFit]:
    """One MaterialFit per material id present in `material_ids` (arrays [rows, cols]; ranges NaN = none)."""
    rr, rs = np.asarray(real_range, float), np.asarray(sim_range, float)
    qr, qs = np.asarray(real_refl, float), np.asarray(sim_refl, float)
    mat = np.asarray(material_ids)
    with np.errstate(invalid="ignore"):
        same = (np.isfinite(rr) & np.isfinite(rs) & (np.abs(rr - rs) <= CO_REGISTERED * rs) & (qs > 0) & (qs <= 100)
                & (qr > 0) & (qr <= 100))
    out = []
    for mid in sorted(set(mat[np.isfinite(rs)].tolist()) - {-1}):
        sel = same & (mat == mid)
        n, start = int(sel.sum()), float(starts[mid])
        if n < MIN_PIXELS:
            out.append(MaterialFit(names[mid], start, start, n, False,
                                   f"unidentifiable: {n} co-registered pixels (< {MIN_PIXELS})"))
            continue
        ratio = qr[sel] / qs[sel]
        lo, hi = np.percentile(ratio, TRIM)
        keep = (ratio >= lo) & (ratio <= hi)
        value = float(np.clip(start * qr[sel][keep].sum() / qs[sel][keep].sum(), 1e-4, MAX_REFLECTIVITY["general"]))
        out.append(MaterialFit(names[mid], start, value, n, True, f"fitted from {n} pixels"))
    return out
