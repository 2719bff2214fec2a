"""RadarImage: one polar radar frame and its metadata (arrays are [azimuth column, range bin])."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

RETURN_DTYPE = np.dtype([("azimuth", "<i4"), ("range", "<f4"), ("energy", "<f4"), ("bounce", "<i2")])


@dataclass
class RadarImage:
    image_f32: np.ndarray  # (A, B) float32, output value before the 8-bit conversion
    image: np.ndarray  # (A, B) uint8
    azimuth_rad: np.ndarray  # (A,) float64 azimuth of each column from sensor +x, counter-clockwise
    range_m: np.ndarray  # (B,) float64 start of each range bin
    azimuth_time_ns: np.ndarray  # (A,) int64 firing time of each column
    t0_ns: int  # start of the sweep (azimuth k = 0)
    config: object  # the RadarConfig that made it
    returns: np.ndarray | None = None  # structured RETURN_DTYPE (azimuth = output column) if returns.keep
    energy: np.ndarray | None = None  # (A, B) drawn energies before normalisation and noise (physical: power, W)
    chirp_up: np.ndarray | None = None  # (A,) bool chirp direction per column (physical model), None = not modelled
    velocity: np.ndarray | None = None  # (A, B) float32 radial velocity channel, m/s (physical, fmcw.velocity_channel)

    @property
    def n_azimuths(self) -> int:
        return self.image.shape[0]

    @property
    def n_bins(self) -> int:
        return self.image.shape[1]

    @property
    def resolution(self) -> float:
        return float(self.range_m[1] - self.range_m[0]) if len(self.range_m) > 1 else float(self.config.range.resolution)
