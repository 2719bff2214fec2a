"""Range-Doppler coupling of an FMCW chirp.

A radial velocity v (positive = receding) adds the Doppler shift f_D = -2 v / lambda to the beat
frequency f_b = 2 R S / c (S = B / T). Read as range, the target moves by
    dr = s v f_c T / B,    s = +1 on an up-chirp, -1 on a down-chirp
(Rennie et al., "A Doppler extension for radar odometry", and the Boreas-RT papers: the
Navtech RAS6 alternates up and down chirps between azimuths, so a moving target zig-zags by 2 dr).
"""
from __future__ import annotations

import numpy as np


def chirp_signs(n_azimuths: int, chirp: str) -> np.ndarray:
    """+1 (up) / -1 (down) per azimuth index; alternating = up on even azimuths."""
    if chirp == "up":
        return np.ones(n_azimuths)
    if chirp == "down":
        return -np.ones(n_azimuths)
    return np.where(np.arange(n_azimuths) % 2 == 0, 1.0, -1.0)


def range_shift(velocity: np.ndarray, sign: np.ndarray, carrier_hz: float, chirp_time_s: float, bandwidth_hz: float) -> np.ndarray:
    return sign * velocity * carrier_hz * chirp_time_s / bandwidth_hz
