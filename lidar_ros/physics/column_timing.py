"""Time stamps of a spinning lidar's measurement columns: nominal spacing plus white jitter and rotor wander.

A spinning Ouster fires each measurement column at a fixed encoder angle and stamps it with the time it
fired (firmware manual: the measurement block's timestamp). Real stamps are not evenly spaced: in the four
shared Ouster frames (/work/shared/realdata) the column-to-column steps d_c spread by 1.4–5 µs around the
nominal 97.66 µs (1024 × 10 Hz), successive steps are anti-correlated (lag-1 correlation −0.3 … −0.9:
stamp noise, a late stamp makes one step long and the next short), and the stamps wander 3.5–12 µs from a
straight line with a correlation over hundreds of columns (the rotor's phase following its speed loop).

Model (per frame, seeded): t_c = c·Δ + w_c + e_c − (w_0 + e_0), with

    e_c ~ N(0, σ_j²) independent per column              (column_jitter_us: stamp/trigger jitter)
    w_c = Σ_{i≤c} n_i,  n_i ~ N(0, σ_w²)                  (column_wander_us: a random walk of the phase)

so the steps have variance σ_w² + 2σ_j² and lag-1 autocovariance −σ_j², from which both are read off a
frame: σ_j² = −cov(d_c, d_{c+1}), σ_w² = var(d) − 2σ_j² (the method-of-moments of an MA(1) + white
sum). The four frames give σ_j = 0.99, 0.99, 1.73, 3.43 µs and σ_w = 0.35, 1.19, 0.00, 1.28 µs (OS-1-64,
OS-2-128, OS-0-128 Rev 6, OS-0-128 Rev 7); the realistic profile uses their medians for every Ouster
line, 1.36 µs and 0.77 µs (test_lidar_realism3 checks the steps' spread, their anti-correlation and the
wander against all four frames). The first column's stamp is the frame's (offset 0).

Only the time stamps (the per-point `t` of the clouds) move: the columns keep their encoder angles, and a
few µs of timing shifts a moving sensor's rays by micrometres, so the traced geometry uses nominal times.
"""
from __future__ import annotations

import numpy as np

SHARED_FRAME_MEDIANS_US = {"column_jitter_us": 1.36, "column_wander_us": 0.77}  # of the four frames above


def column_time_offsets(columns: int, jitter_s: float, wander_s: float, rng: np.random.Generator) -> np.ndarray:
    """(columns,) float64 seconds added to the nominal column times; offset[0] = 0."""
    out = np.zeros(columns, np.float64)
    if columns < 2 or (jitter_s <= 0 and wander_s <= 0):
        return out
    if wander_s > 0:
        out += np.cumsum(rng.normal(0.0, wander_s, columns))
    if jitter_s > 0:
        out += rng.normal(0.0, jitter_s, columns)
    out -= out[0]
    return out
