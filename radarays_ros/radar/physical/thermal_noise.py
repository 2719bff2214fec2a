"""Thermal noise per range bin: N = k T F / T_chirp.

Receiver noise power in the bandwidth of one FFT bin, 1 / T for a chirp of duration T
(Skolnik, "Introduction to Radar Systems", 3rd ed., Sec. 2.3: N = k T0 B_n F; Richards,
"Fundamentals of Radar Signal Processing", Sec. 2.3 for the bin bandwidth of an FFT over T).
Independent of the targets; the window's noise bandwidth is applied by the range response.
"""
from __future__ import annotations

BOLTZMANN = 1.380649e-23  # J/K


def noise_power_w(receiver, fmcw) -> float:
    """Noise power per bin in watts (receiver.noise_dbm when configured)."""
    if receiver.noise_dbm is not None:
        return 10.0 ** ((receiver.noise_dbm - 30.0) / 10.0)
    figure = 10.0 ** (receiver.noise_figure_db / 10.0)
    return BOLTZMANN * receiver.temperature_k * figure / fmcw.chirp_time_s
