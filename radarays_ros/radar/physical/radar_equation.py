"""The radar range equation (monostatic and bistatic).

    P_r = P_t G_t G_r lambda^2 sigma / ((4 pi)^3 R_t^2 R_r^2 L)

(Skolnik, "Introduction to Radar Systems", 3rd ed., Eq. 2.1 and Sec. 2.13; bistatic: Willis,
"Bistatic Radar", Eq. 4.1). G_t, G_r = peak gain x normalised pattern; R_t = R_r = R when monostatic.
Powers in watts.
"""
from __future__ import annotations

import math


def dbm_to_watt(dbm: float) -> float:
    return 10.0 ** ((dbm - 30.0) / 10.0)


def constant(receiver, antenna, wavelength: float) -> float:
    """P_t G0^2 lambda^2 / ((4 pi)^3 L): multiply by pattern_tx pattern_rx sigma / (R_t^2 R_r^2)."""
    g0 = 10.0 ** (antenna.gain_dbi / 10.0)
    loss = 10.0 ** (receiver.system_loss_db / 10.0)
    return dbm_to_watt(receiver.transmit_power_dbm) * g0 * g0 * wavelength ** 2 / ((4.0 * math.pi) ** 3 * loss)
