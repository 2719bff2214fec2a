"""Image similarity of two polar radar images on one grid, as RadaRays scores its materials.

    MIS   mutual information (nats) of the joint histogram of the two 8-bit images, 256 x 256 bins:
          sum p(a, b) log(p(a, b) / (p(a) p(b))) (= sklearn.metrics.mutual_info_score of the pixel
          values; RadaRays' paper, Mock et al. RA-L 2025, Sec. VI: "mutual information score")
    SSIM  mean structural similarity (Wang et al., IEEE TIP 13(4), 2004, Eq. 13) with uniform 7 x 7
          windows, constants K1 = 0.01, K2 = 0.03 of the 255 range, sample covariances

Used by `radarays compare` (radar/compare) and `radarays fit radar` (radar/fit: the materials' objective).
"""
from __future__ import annotations

import numpy as np


def mutual_information(a: np.ndarray, b: np.ndarray) -> float:
    a = np.clip(np.rint(np.asarray(a, np.float64)), 0, 255).astype(np.int64).ravel()
    b = np.clip(np.rint(np.asarray(b, np.float64)), 0, 255).astype(np.int64).ravel()
    joint = np.bincount(a * 256 + b, minlength=256 * 256).reshape(256, 256).astype(np.float64)
    p = joint / joint.sum()
    pa, pb = p.sum(axis=1), p.sum(axis=0)
    nz = np.nonzero(p)
    return float(np.sum(p[nz] * np.log(p[nz] / (pa[nz[0]] * pb[nz[1]]))))


def ssim(a: np.ndarray, b: np.ndarray, data_range: float = 255.0, window: int = 7) -> float:
    from scipy.ndimage import uniform_filter  # scipy loads here, not with `radarays --help`

    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    c1, c2 = (0.01 * data_range) ** 2, (0.03 * data_range) ** 2
    norm = window * window / (window * window - 1.0)
    mu_a, mu_b = uniform_filter(a, window), uniform_filter(b, window)
    var_a = norm * (uniform_filter(a * a, window) - mu_a ** 2)
    var_b = norm * (uniform_filter(b * b, window) - mu_b ** 2)
    cov = norm * (uniform_filter(a * b, window) - mu_a * mu_b)
    s = ((2 * mu_a * mu_b + c1) * (2 * cov + c2)) / ((mu_a ** 2 + mu_b ** 2 + c1) * (var_a + var_b + c2))
    h = window // 2
    return float(s[h:-h, h:-h].mean()) if min(s.shape) > 2 * h else float(s.mean())
