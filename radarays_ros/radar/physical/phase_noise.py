"""Tx-Rx leakage phase noise left after mixing: the skirt that falls with beat frequency (range).

The synthesiser's single-sideband phase noise follows Leeson's model in its 1/f^2 region with a flicker
(1/f^3) part below the corner f_c (Leeson, Proc. IEEE 54(2), 1966):
    L(f) = L_ref (f_ref / f)^2 (1 + f_c / f) / (1 + f_c / f_ref)          (dBc/Hz as a ratio)
Mixing the leakage (delay tau = 2 R_L / c) with the transmit chirp cancels the phase noise that both
share: the residual sideband is 4 sin^2(pi f tau) L(f) (range-correlation effect: Budge and Burt, "Range
correlation effects in radars", IEEE NTC 1993; Melzer et al., "Short-range leakage cancelation in FMCW
radar transceivers", IEEE JSTSP 2015, where it raises the IF noise floor near the leakage). Per range bin
(bandwidth 1 / T of a chirp of duration T), at beat offset f from the leakage tone:
    S(f) = P_L 4 sin^2(pi f tau) L(f) / T                                   (W per bin)
For f << 1 / tau the sine is linear: S ~ P_L L_ref f_ref^2 (2 pi tau)^2 (1 + f_c / f) / ((1 + f_c / f_ref) T),
flat above the flicker corner and falling 10 dB per decade below it. Offsets are taken at >= 1 / T
(the FFT's own bin width: the skirt cannot be resolved closer to the tone).
Every return carries the same synthesiser's phase noise, decorrelated by its own delay 2 R / c: far
targets keep far more of it than the leakage (tau^2), so a strong return spreads a skirt along its range
line, seen through the beam in the neighbouring azimuths as well (skirt_per_watt with the return's range).
"""
from __future__ import annotations

import numpy as np

C = 299_792_458.0


def beat_frequency(range_m, bandwidth_hz: float, chirp_time_s: float) -> np.ndarray:
    """f_b = 2 R S / c with chirp slope S = B / T (realism.md, FMCW range)."""
    return 2.0 * np.asarray(range_m, np.float64) * (bandwidth_hz / chirp_time_s) / C


def ssb_phase_noise(offset_hz, l_ref_dbc_hz: float, ref_offset_hz: float, flicker_corner_hz: float) -> np.ndarray:
    """L(f) as a ratio per Hz (Leeson, with the flicker corner), L(ref_offset_hz) = l_ref_dbc_hz."""
    f = np.asarray(offset_hz, np.float64)
    return (10.0 ** (l_ref_dbc_hz / 10.0) * (ref_offset_hz / f) ** 2 * (1.0 + flicker_corner_hz / f)
            / (1.0 + flicker_corner_hz / ref_offset_hz))


def skirt_per_watt(range_m, source_range_m, l_ref_dbc_hz: float, ref_offset_hz: float, flicker_corner_hz: float,
                   bandwidth_hz: float, chirp_time_s: float) -> np.ndarray:
    """S / P per range bin at ranges range_m of a return at source_range_m (broadcast against each
    other): 4 sin^2(pi f tau) L(f) / T, tau = 2 R_source / c, f the beat offset (>= 1 / T)."""
    f = np.abs(beat_frequency(range_m, bandwidth_hz, chirp_time_s) - beat_frequency(source_range_m, bandwidth_hz, chirp_time_s))
    f = np.maximum(f, 1.0 / chirp_time_s)
    tau = 2.0 * np.asarray(source_range_m, np.float64) / C
    residual = 4.0 * np.sin(np.pi * f * tau) ** 2
    return residual * ssb_phase_noise(f, l_ref_dbc_hz, ref_offset_hz, flicker_corner_hz) / chirp_time_s


def leakage_skirt_w(range_m, leakage_w: float, leakage_range_m: float, l_ref_dbc_hz: float, ref_offset_hz: float,
                    flicker_corner_hz: float, bandwidth_hz: float, chirp_time_s: float) -> np.ndarray:
    """S per range bin (W) at ranges range_m: the residual phase noise of a leakage of leakage_w watts."""
    return leakage_w * skirt_per_watt(range_m, leakage_range_m, l_ref_dbc_hz, ref_offset_hz, flicker_corner_hz,
                                      bandwidth_hz, chirp_time_s)
