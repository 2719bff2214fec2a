"""Sub-rays over a beam's footprint (beam divergence): where to trace K rays of one beam, and their weights.

A real beam is a cone of full angle θ (datasheet divergence, e.g. VLP-16 3.0 x 1.5 mrad, HDL-64E
3.4 mrad, OS1 0.18° ≈ 3.1 mrad FWHM; HELIOS++ and Heiden et al. 2020 §III-B sample it with a few
sub-rays). The K sub-rays carry equal power 1/K and sit at the radius quantiles of the beam's
irradiance profile, turned by the golden angle from one to the next (a Vogel spiral), so the
footprint is covered evenly and the pattern is the same for every beam and frame:

* uniform (top hat over the cone): P(ρ ≤ r) = r²/R², so r_i = R·√u_i, R = θ/2;
* gaussian with its 1/e² radius at R (I ∝ exp(−2r²/R²)): P(ρ ≤ r) = 1 − exp(−2r²/R²), so
  r_i = R·√(−ln(1 − u_i)/2);

with u_i = (i + ½)/K and azimuth φ_i = i·π(3 − √5). K = 1 is the central ray alone.
"""
from __future__ import annotations

import numpy as np

GOLDEN_ANGLE = np.pi * (3.0 - np.sqrt(5.0))


def sub_ray_offsets(divergence_rad: float, count: int, profile: str = "uniform") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(radius rad, azimuth rad, weight) of `count` sub-rays around the central ray (float64 arrays)."""
    if count == 1 or divergence_rad <= 0:
        return np.zeros(count), np.zeros(count), np.full(count, 1.0 / count)
    u = (np.arange(count) + 0.5) / count
    edge = divergence_rad / 2.0
    radius = edge * (np.sqrt(u) if profile == "uniform" else np.sqrt(-np.log1p(-u) / 2.0))
    return radius, np.arange(count) * GOLDEN_ANGLE, np.full(count, 1.0 / count)


def spread_directions(directions: np.ndarray, divergence_rad: float, count: int, profile: str = "uniform") -> np.ndarray:
    """(N*K, 3) float32 unit sub-ray directions of N unit beam directions, beam-major (rows k*K .. k*K+K-1
    belong to beam k). Each sub-ray is its beam's direction turned by radius r_i towards azimuth φ_i,
    measured in the plane across the beam (φ = 0 along the horizontal axis z × d)."""
    d = np.asarray(directions, np.float64).reshape(-1, 3)
    radius, azimuth, _ = sub_ray_offsets(divergence_rad, count, profile)
    across = np.cross(np.array([0.0, 0.0, 1.0]), d)
    norm = np.linalg.norm(across, axis=1, keepdims=True)
    vertical = norm[:, 0] < 1e-9  # a beam straight up or down: any horizontal axis will do
    across[vertical] = (1.0, 0.0, 0.0)
    norm[vertical] = 1.0
    e1 = across / norm
    e2 = np.cross(d, e1)
    t = np.tan(radius)
    out = d[:, None, :] + (t * np.cos(azimuth))[None, :, None] * e1[:, None, :] + (t * np.sin(azimuth))[None, :, None] * e2[:, None, :]
    out /= np.linalg.norm(out, axis=2, keepdims=True)
    return out.reshape(-1, 3).astype(np.float32)
