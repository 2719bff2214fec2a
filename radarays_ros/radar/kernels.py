"""Range-spread kernels (RadaRays' "signal denoising" / system noise; Mock et al., RadaRays, RA-L 2025: measurement noise as a blur along range).

A return at bin c adds strength * w[i] to bin c - m + i for i in [0, width), m = int(mode * width):
the peak (weight exactly 1) sits on the true bin, m bins before it and width - m after it (a tail
toward far range). The weights are scaled so that w[m] = 1.

* triangular:        w[i] = i/m (i <= m), 1 - (i - m)/(width - m) after.
* gaussian:          exp(-(i - m)^2 / (2 sigma^2)), sigma = width/6 unless given (the original's
                     "Gaussian" is a copy of the triangular code; use `triangular` to match it).
* maxwell_boltzmann: sqrt(2/pi) i^2 exp(-i^2/(2a^2)) / a^3, a = m/sqrt(2) (its mode is at i = m).
* none:              no spread; a bin keeps the maximum of its returns.
"""
from __future__ import annotations

import numpy as np


def kernel_weights(kind: str, width: int, mode: float, gaussian_sigma: float | None = None) -> tuple[np.ndarray, int]:
    """(weights (width,), m): the kernel and the index of its peak."""
    m = int(mode * width)
    m = min(m, width - 1)
    i = np.arange(width, dtype=np.float64)
    if kind == "none" or width == 1:
        return np.ones(1), 0
    if kind == "triangular":
        rising = i / m if m > 0 else (i == 0).astype(float)
        tail = width - m
        falling = 1.0 - (i - m) / tail
        w = np.where(i <= m, rising, falling)
    elif kind == "gaussian":
        sigma = gaussian_sigma if gaussian_sigma else width / 6.0
        w = np.exp(-((i - m) ** 2) / (2.0 * sigma * sigma))
    elif kind == "maxwell_boltzmann":
        m = max(m, 1)  # the distribution is 0 at i = 0, so its peak needs m >= 1
        a = m / np.sqrt(2.0)
        w = np.sqrt(2.0 / np.pi) * i * i * np.exp(-i * i / (2.0 * a * a)) / a ** 3
    else:
        raise ValueError(f"unknown kernel {kind!r}")
    w = w / w.sum()  # as the original: normalise to sum 1, then divide by the peak weight
    return w / w[m], m
