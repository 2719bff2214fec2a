"""Range precision that depends on the return's signal-to-noise ratio, as lidar datasheets state it.

A pulsed receiver times the centroid of the return's photons: N photons spread over the pulse give a
timing error ∝ τ/√N, so the range's standard deviation falls with the SNR. Datasheets give σ at a few
SNRs; Ouster OS1 (850 nm generation) "Range Repeatability (1 sigma / standard deviation): SNR > 250:
±1.5 cm, SNR 100: ±3 cm, SNR 12: ±10 cm". Through two such pairs (SNR₁, σ₁), (SNR₂, σ₂) a power law,
floored at σ_floor:

    σ(SNR) = max(σ_floor, σ₁·(SNR₁/SNR)^p),   p = ln(σ₁/σ₂) / ln(SNR₂/SNR₁)

Worked number, Ouster's pairs (12, 0.10 m), (100, 0.03 m): p = 0.567 (near the ½ of photon counting);
SNR 250 gives 1.8 cm (the datasheet: 1.5 cm above 250).

The floor (noise.snr_floor; unset: noise.sigma, the datasheet's best figure) is the part of the timing
error that does not fall with the signal (clock and laser jitter). The datasheet's "SNR > 250: ±1.5 cm"
bounds a whole band; it is not a floor: the law continued gives 4.8 mm at SNR 2 500.

Ouster units of today (Rev 6/7, 865 nm) time much better than that first datasheet: their own σ of range
(second differences under 5 m, compare/stats.py range_noise) binned by SIGNAL photons S follows photon
counting, σ·√S ≈ 70 mm (σ ∝ S^-1/2: the centroid of S photons of one pulse shape), from one product line
to the next:
    OS-0-128 Rev 7 (single_scan_016)  S 40-640: σ 10.9-3.6 mm, σ·√S 66-101 mm
    OS-2-128 (v2.3.0)                 S 10-40:  σ 16.3-15.7 mm, σ·√S 65-77 mm
    OS-1-64 (fw 2.0, held out)        S 40-640: σ 7.9-2.4 mm, σ·√S 46-67 mm
and flatten at 2.4-3.6 mm above S ≈ 300 (the real surfaces' own roughness is in that figure too).
The Ouster presets therefore carry σ = 70 mm/√S as the law's pairs at S = SNR·√B (B = 3):
[[12, 0.0154], [100, 0.0053]], p = ½, and snr_floor 3 mm (the flat part, both frames; the held-out
OS-0-128 Rev 6 low-data-rate frame, 8 mm range steps, checks it). The datasheet's pairs give 3 cm at
S = 173, where these units read 4-5 mm.

The SNR of a return of S mean signal photons over B background photons in its detection window, limited
by the background's shot noise (daylight, as the datasheets' detection figures): SNR = S/√B, with
S = K·ρ(θ)·O(r)/r² (intensity.py, overlap.py) and B = signal.noise_floor. Without background (B = 0, the
presets without --realistic) the SNR is unbounded and every return gets noise.sigma: those frames are as
before, and the device path (which runs only with B = 0) needs no term of its own.
Worked numbers, OS1 preset --realistic (K = 231 000, B = 3, r₀ = 10.1 m, the pairs above, p = 0.503): a
30 % wall at 10 m, S = 437, SNR 252, σ = 3.4 mm; at 5 m σ is the 3 mm floor; a 10 % target at 40 m,
S = 14.4, SNR 8.3, σ = 1.9 cm.
"""
from __future__ import annotations

import numpy as np

from radarays_ros.compiled import kernel

from .overlap import range_overlap


def exponent(pairs) -> float:
    """p of the power law through the two (SNR, σ) pairs."""
    (snr1, sigma1), (snr2, sigma2) = pairs
    return float(np.log(sigma1 / sigma2) / np.log(snr2 / snr1))


def signal_to_noise(signal: np.ndarray, background: float) -> np.ndarray:
    """S/√B (float32); 0 where S is 0 or NaN (no return); inf for B = 0 and S > 0."""
    s = np.nan_to_num(np.asarray(signal, np.float32), nan=0.0, posinf=0.0)
    if background <= 0:
        return np.where(s > 0, np.float32(np.inf), np.float32(0.0)).astype(np.float32)
    return s / np.float32(np.sqrt(background))


def sigma_at_snr(snr: np.ndarray, pairs, floor: float) -> np.ndarray:
    """σ(SNR) (float32, metres) of the power law through `pairs`, at least `floor`; SNR ≤ 0 gives σ at 1e-3."""
    (snr1, sigma1), _ = pairs
    p = np.float32(exponent(pairs))
    x = np.float32(snr1) / np.maximum(np.asarray(snr, np.float32), np.float32(1e-3))
    sigma = np.power(x, p) * np.float32(sigma1)
    return np.maximum(sigma, np.float32(floor)).astype(np.float32)


def ray_sigma(rho: np.ndarray, clean: np.ndarray, signal_scale: float, overlap_range: float, background: float,
              pairs, floor: float, snr_floor: float | None = None, factor: np.ndarray | None = None) -> np.ndarray:
    """(N,) float32 σ of each return from its ρ and clean range (NaN: no return, σ unused): S = K·ρ·O(r)/r²
    with r ≥ 0.1 m, SNR = S/√B, σ(SNR) as above, floored at snr_floor (None: `floor`); `floor` everywhere
    without background (B ≤ 0); factor: O(r) of these ranges (overlap.range_overlap) when the caller has it.
    The SNR, the rows below the floor's SNR and their x = SNR₁/SNR in one compiled pass (float32, the numpy
    passes' order: test_lidar_realism2), the power only there with numpy (its float32 SIMD exp and power:
    measured ~5x faster here than a compiled loop's scalar libm calls, and those bits), then σ₁·x^p floored in
    a second pass over those rows."""
    (snr1, sigma1), _ = pairs
    p = exponent(pairs)
    if background <= 0:
        return np.full(len(clean), np.float32(floor), np.float32)
    floor = floor if snr_floor is None else snr_floor
    clean = np.asarray(clean, np.float32)
    if overlap_range > 0 and factor is None:
        factor = range_overlap(clean, overlap_range)
    floor_snr = snr1 * (sigma1 / floor) ** (1.0 / p) if floor > 0 else np.inf
    n = len(clean)
    out, x, low = np.empty(n, np.float32), np.empty(n, np.float32), np.empty(n, np.intp)
    count = _low_snr(np.asarray(rho, np.float32), clean, np.float32(signal_scale / np.sqrt(background)),
                     factor if overlap_range > 0 else _NO_FACTOR, np.float32(floor_snr), np.float32(snr1),
                     np.float32(floor), out, x, low)
    if count:
        _floored_sigma(np.power(x[:count], np.float32(p)), low, np.float32(sigma1), np.float32(floor), out)
    return out


_NO_FACTOR = np.empty(0, np.float32)


@kernel
def _low_snr(rho, clean, scale, factor, floor_snr, snr1, floor, out, x, low):
    """out = floor; the rows with a finite range whose SNR (ρ·scale / max(r, 0.1)² · O) is below floor_snr: their
    index low[j] and x[j] = snr1 / max(SNR, 1e-3); returns their number."""
    count = 0
    for i in range(clean.shape[0]):
        out[i] = floor
        c = clean[i]
        r = c if c > np.float32(0.1) else np.float32(0.1)  # np.fmax: NaN gives 0.1
        snr = rho[i] * scale
        snr = snr / (r * r)
        if factor.shape[0]:
            snr = np.float32(snr * factor[i])
        if snr < floor_snr and np.isfinite(c):
            x[count] = snr1 / (snr if snr > np.float32(1e-3) else np.float32(1e-3))
            low[count] = i
            count += 1
    return count


@kernel
def _floored_sigma(powered, low, sigma1, floor, out):
    """out[low[j]] = max(σ₁·x[j]^p, floor), NaN kept (np.maximum)."""
    for j in range(powered.shape[0]):
        sigma = powered[j] * sigma1
        out[low[j]] = floor if sigma < floor else sigma
