"""Multipath interference of a time-of-flight camera: one diffuse bounce off the rest of the scene.

A ToF camera floods its whole field of view, so a pixel looking at a point P receives, besides the direct
return (camera → P → camera, path 2·r_P), light that first lit another surface point Q and reached P from
there (camera → Q → P → camera, path L = r_Q + |QP| + r_P ≥ 2·r_P). In a concave corner the other wall is
such a Q for every pixel, and the pixel's range reads long — the corner bias of ToF cameras (Fuchs,
"Multipath interference compensation in time-of-flight camera images", ICPR 2010; Jiménez et al.
2014, "Modeling and correction of multipath interference in time of flight cameras", treat the same
one-bounce Lambertian model).

Lambertian radiometry with a point emitter of intensity I at the camera: a patch Q seen under solid angle
Ω_Q at range r_Q has area A = Ω_Q·r_Q²/cos θ_Q,in and receives E_Q = I·cos θ_Q,in / r_Q², so it radiates
L_Q·A = ρ_Q·I·Ω_Q/π (the incidence cosine and range cancel). It lights P with E = L_Q·A·cos θ_Q·cos θ_P/|QP|²;
the direct light is I·cos θ_P,dir / r_P², and P sends both back to the pixel with the same BRDF, so the
bounce's amplitude relative to the direct return is

    w_Q = (ρ_Q·Ω_Q/π) · cos θ_Q·cos θ_P / |QP|² · r_P² / cos θ_P,dir

(cos θ_Q, cos θ_P: the angles between each normal and the segment QP; pairs facing away give nothing; no
occlusion test between Q and P). A continuous-wave camera at modulation frequency f measures the phase of
the sum of phasors, so its range is

    r = c/(4πf) · arg(e^{i·2k·r_P} + Σ_Q w_Q·e^{i·k·L_Q}),   k = 2πf/c,

and the bias r − r_P = c/(4πf) · arg(1 + Σ w_Q e^{i·k·(L_Q − 2r_P)}); with f = 0 (pulsed light, or
path differences far below the modulation wavelength) it is the amplitude-weighted mean excess path
Σ w_Q (L_Q − 2r_P)/2 / (1 + Σ w_Q). Q runs over a coarse grid of the camera's own pixels (`patches` of
them), so only what the camera sees lights the scene.
"""
from __future__ import annotations

import numpy as np

C = 299_792_458.0  # m/s
CHUNK = 4096  # pixels P per block: CHUNK x patches pairs at a time


def patch_stride(shape: tuple[int, int], patches: int) -> int:
    """Pixel stride of a grid of about `patches` emitting patches over an image of `shape`."""
    return max(1, int(round(np.sqrt(shape[0] * shape[1] / max(patches, 1)))))


def multipath_bias(points: np.ndarray, normals: np.ndarray, ranges: np.ndarray, cos_direct: np.ndarray,
                   sources: np.ndarray, weights: np.ndarray, frequency_hz: float) -> np.ndarray:
    """(N,) range bias (m) of pixels at `points` (N, 3) with unit `normals`, camera ranges `ranges` and
    incidence cosines `cos_direct`, lit by patches `sources` = indices into the same arrays, each of
    radiant weight `weights` = ρ_Q·Ω_Q/π. Camera at the origin of the points' frame."""
    q_points, q_normals, q_ranges = points[sources], normals[sources], ranges[sources]
    bias = np.zeros(len(points))
    for a in range(0, len(points), CHUNK):
        p, n_p, r_p = points[a:a + CHUNK], normals[a:a + CHUNK], ranges[a:a + CHUNK]
        v = q_points[None, :, :] - p[:, None, :]  # P -> Q
        dist = np.sqrt(np.einsum("ijk,ijk->ij", v, v))
        with np.errstate(invalid="ignore", divide="ignore"):
            u = v / dist[..., None]
            cos_p = np.einsum("ijk,ik->ij", u, n_p)
            cos_q = -np.einsum("ijk,jk->ij", u, q_normals)
            w = weights[None, :] * cos_p * cos_q / dist**2
        w = np.where((cos_p > 0) & (cos_q > 0) & (dist > 1e-6), w, 0.0)
        w *= (r_p**2 / np.maximum(cos_direct[a:a + CHUNK], 1e-3))[:, None]
        excess = q_ranges[None, :] + dist - r_p[:, None]  # L_Q - 2 r_P
        excess = np.where(w > 0, excess, 0.0)
        if frequency_hz > 0:
            k = 2 * np.pi * frequency_hz / C
            phasor = 1.0 + (w * np.exp(1j * k * excess)).sum(axis=1)
            bias[a:a + CHUNK] = np.angle(phasor) / (2 * k)
        else:
            bias[a:a + CHUNK] = 0.5 * (w * excess).sum(axis=1) / (1.0 + w.sum(axis=1))
    return bias
