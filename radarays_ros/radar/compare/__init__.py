"""Statistics a radar engineer compares between a real and a simulated polar image.

Images are log-detector values (Navtech counts: db_per_count = 0.5 dB) as [azimuth, range bin].
Every statistic is defined here once, so real and simulated images are measured alike:

    floor_db               median level (dB above the detector's zero): the noise/clutter floor
    floor_spread_db        robust spread of the levels: 1.4826 x median absolute deviation (= std for Gaussian dB)
    deep_fade_fraction     pixels more than 10 dB under their local mean power (5 azimuths x 15 bins);
                           fully developed speckle (exponential intensity) gives 1 - exp(-0.1) = 0.095
    azimuth_correlation    Pearson correlation of neighbouring azimuths (levels minus each bin's mean)
    range_correlation_m    first lag where the range autocorrelation of the levels (minus their running
                           mean over 101 bins, so that range trends do not count) falls under 1/e, in metres
    peak_to_floor_db       strongest level minus the floor
    above_floor_10/20/30   fraction of pixels more than 10 / 20 / 30 dB over the floor
    range_width_3db_m, range_width_10db_m, azimuth_width_3db_deg, azimuth_width_10db_deg
                           median widths of strong returns (local maxima >= floor + 20 dB, up to 200):
                           contiguous cells within 3 / 10 dB of the peak along range and along azimuth
    rings, streaks         range bins (azimuths) where at least half the azimuths (range bins) lie
                           more than 6 dB over the floor, counted as connected runs: artefacts such as
                           fixed-range ground rings, or saturated spokes
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
from scipy.ndimage import maximum_filter, uniform_filter, uniform_filter1d

STRONG_DB = 20.0
ARTEFACT_DB = 6.0
MAX_PEAKS = 200


@dataclass
class ImageStats:
    floor_db: float
    floor_spread_db: float
    deep_fade_fraction: float
    azimuth_correlation: float
    range_correlation_m: float
    peak_to_floor_db: float
    above_floor_10: float
    above_floor_20: float
    above_floor_30: float
    range_width_3db_m: float
    range_width_10db_m: float
    azimuth_width_3db_deg: float
    azimuth_width_10db_deg: float
    rings: int
    streaks: int

    def as_dict(self) -> dict:
        return asdict(self)


def levels_db(image: np.ndarray, db_per_count: float) -> np.ndarray:
    return np.asarray(image, np.float64) * db_per_count


def deep_fade_fraction(db: np.ndarray) -> float:
    power = 10.0 ** (db / 10.0)
    local = uniform_filter(power, size=(5, 15), mode="wrap")
    return float(np.mean(power < 0.1 * local))


def azimuth_correlation(db: np.ndarray) -> float:
    x = db - db.mean(axis=0, keepdims=True)
    a, b = x[:-1].ravel(), x[1:].ravel()
    denom = np.sqrt(np.sum(a * a) * np.sum(b * b))
    return float(np.sum(a * b) / denom) if denom > 0 else 0.0


def range_correlation_lags(db: np.ndarray, max_lag: int = 200) -> int:
    x = db - uniform_filter1d(db, 101, axis=1, mode="nearest")
    var = float(np.mean(x * x))
    if var == 0:
        return 0
    for lag in range(1, min(max_lag, db.shape[1] - 1)):
        if np.mean(x[:, :-lag] * x[:, lag:]) / var < np.exp(-1.0):
            return lag
    return min(max_lag, db.shape[1] - 1)


def _run_width(profile: np.ndarray, centre: int, drop: float) -> int:
    level = profile[centre] - drop
    lo = centre
    while lo > 0 and profile[lo - 1] >= level:
        lo -= 1
    hi = centre
    while hi < len(profile) - 1 and profile[hi + 1] >= level:
        hi += 1
    return hi - lo + 1


def peak_widths(db: np.ndarray, floor: float) -> tuple[float, float, float, float]:
    """Median (range 3 dB, range 10 dB, azimuth 3 dB, azimuth 10 dB) widths in cells of strong peaks."""
    peaks = (db == maximum_filter(db, size=(5, 9), mode="nearest")) & (db >= floor + STRONG_DB)
    rows, cols = np.nonzero(peaks)
    if not len(rows):
        return (float("nan"),) * 4
    order = np.argsort(-db[rows, cols])[:MAX_PEAKS]
    widths = []
    for r, c in zip(rows[order], cols[order]):
        widths.append((_run_width(db[r], c, 3.0), _run_width(db[r], c, 10.0),
                       _run_width(db[:, c], r, 3.0), _run_width(db[:, c], r, 10.0)))
    return tuple(float(v) for v in np.median(np.array(widths, float), axis=0))


def _runs(mask: np.ndarray) -> int:
    m = np.asarray(mask, np.int8)
    return int(np.sum(np.diff(np.concatenate([[0], m])) == 1))


def image_stats(image: np.ndarray, resolution_m: float, azimuth_step_deg: float, db_per_count: float = 0.5) -> ImageStats:
    db = levels_db(image, db_per_count)
    floor = float(np.median(db))
    spread = float(1.4826 * np.median(np.abs(db - floor)))
    w_r3, w_r10, w_a3, w_a10 = peak_widths(db, floor)
    above = db > floor + ARTEFACT_DB
    return ImageStats(
        floor_db=floor,
        floor_spread_db=spread,
        deep_fade_fraction=deep_fade_fraction(db),
        azimuth_correlation=azimuth_correlation(db),
        range_correlation_m=range_correlation_lags(db) * resolution_m,
        peak_to_floor_db=float(db.max() - floor),
        above_floor_10=float(np.mean(db > floor + 10)),
        above_floor_20=float(np.mean(db > floor + 20)),
        above_floor_30=float(np.mean(db > floor + 30)),
        range_width_3db_m=w_r3 * resolution_m,
        range_width_10db_m=w_r10 * resolution_m,
        azimuth_width_3db_deg=w_a3 * abs(azimuth_step_deg),
        azimuth_width_10db_deg=w_a10 * abs(azimuth_step_deg),
        rings=_runs(above.mean(axis=0) >= 0.5),
        streaks=_runs(above.mean(axis=1) >= 0.5),
    )


def format_table(real: ImageStats, sim: ImageStats, names=("REAL", "SIM")) -> str:
    lines = [f"{'statistic':26s} {names[0]:>12s} {names[1]:>12s}"]
    for key, value in real.as_dict().items():
        other = getattr(sim, key)
        fmt = "{:12d}" if isinstance(value, int) else "{:12.4g}"
        lines.append(f"{key:26s} {fmt.format(value)} {fmt.format(other)}")
    return "\n".join(lines)
