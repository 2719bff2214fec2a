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
    trend_rings            range bins whose median over azimuth stands more than 3 dB over the smoothed
                           range trend of that median (a running median over 201 bins), as runs: rings
                           measured against the floor's own fall with range
    spokes                 azimuths whose median level (over the outer 90 % of the range) stands more
                           than 3 dB over the median azimuth's, as runs: clipping spokes
    floor_slope_db_per_decade
                           least-squares slope of the floor profile (median level per range band, bands
                           equal in log range from 5 m) against log10(range): 0 for a flat floor
    quiet_azimuth_correlation, quiet_range_correlation_m
                           the two correlations above on quiet cells only (under the smoothed range
                           trend + 3 dB, pairs of quiet cells): the "floor" between targets
    zero_fraction          pixels reading exactly 0
    low_count_levels       distinct values among the counts under 20: 20 for a smooth log detector, a
                           handful for the comb of an integer FFT power (0, 6, 10, 12, 14, ...)
Frame against frame (co-registered on one polar grid, similarity): mutual_information (nats of the joint
histogram of the 8-bit levels, as sklearn's mutual_info_score, the paper's MIS) and ssim (Wang et al.,
IEEE TIP 13(4), 2004: 7 x 7 uniform windows, K1 = 0.01, K2 = 0.03, data range 255).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from ..similarity import mutual_information, ssim  # noqa: F401  (compare/cli.py reads them here)

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
    trend_rings: int = 0
    spokes: int = 0
    floor_slope_db_per_decade: float = 0.0
    quiet_azimuth_correlation: float = 0.0
    quiet_range_correlation_m: float = 0.0
    zero_fraction: float = 0.0
    low_count_levels: int = 0
    floor_profile: tuple = ()  # ((band start m, band end m, median dB), ...)

    def as_dict(self) -> dict:
        return asdict(self)


def levels_db(image: np.ndarray, db_per_count: float) -> np.ndarray:
    return np.asarray(image, np.float64) * db_per_count


def deep_fade_fraction(db: np.ndarray) -> float:
    from scipy.ndimage import uniform_filter  # scipy loads here, not with `radarays --help`

    power = 10.0 ** (db / 10.0)
    local = uniform_filter(power, size=(5, 15), mode="wrap")
    return float(np.mean(power < 0.1 * local))


def azimuth_correlation(db: np.ndarray) -> float:
    x = db - db.mean(axis=0, keepdims=True)
    a, b = x[:-1].ravel(), x[1:].ravel()
    denom = np.sqrt(np.sum(a * a) * np.sum(b * b))
    return float(np.sum(a * b) / denom) if denom > 0 else 0.0


def range_correlation_lags(db: np.ndarray, max_lag: int = 200) -> int:
    from scipy.ndimage import uniform_filter1d  # scipy loads here, not with `radarays --help`

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
    from scipy.ndimage import maximum_filter  # scipy loads here, not with `radarays --help`

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
        **extra_stats(image, resolution_m, db_per_count),
    )


def range_trend(db: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(median over azimuth per range bin, its running median over 201 bins: the floor's range trend)."""
    from scipy.ndimage import median_filter  # scipy loads here, not with `radarays --help`

    profile = np.median(db, axis=0)
    return profile, median_filter(profile, size=min(201, max(1, len(profile) | 1)), mode="nearest")


def floor_profile(db: np.ndarray, resolution_m: float, bands: int = 8) -> list[tuple[float, float, float]]:
    """Median level per range band, bands equal in log range from 5 m (or the first tenth) to the end."""
    reach = db.shape[1] * resolution_m
    start = min(5.0, 0.1 * reach)
    edges = np.geomspace(start, reach, bands + 1)
    centres = (np.arange(db.shape[1]) + 0.5) * resolution_m
    out = []
    for lo, hi in zip(edges[:-1], edges[1:]):
        inside = (centres >= lo) & (centres < hi)
        if inside.any():
            out.append((float(lo), float(hi), float(np.median(db[:, inside]))))
    return out


def _masked_correlation(x: np.ndarray, ok: np.ndarray, axis: int, lag: int) -> float:
    n = x.shape[axis]
    a = np.take(x, np.arange(0, n - lag), axis=axis)
    b = np.take(x, np.arange(lag, n), axis=axis)
    both = np.take(ok, np.arange(0, n - lag), axis=axis) & np.take(ok, np.arange(lag, n), axis=axis)
    a, b = a[both], b[both]
    if len(a) < 10:
        return 0.0
    a, b = a - a.mean(), b - b.mean()
    denom = math.sqrt(float(np.sum(a * a) * np.sum(b * b)))
    return float(np.sum(a * b) / denom) if denom > 0 else 0.0


def quiet_correlations(db: np.ndarray, resolution_m: float, max_lag: int = 200) -> tuple[float, float]:
    """(azimuth correlation, range correlation length m) of the quiet cells (under the trend + 3 dB)."""
    _, trend = range_trend(db)
    x = db - trend[None, :]
    quiet = x < ARTEFACT_DB / 2
    az = _masked_correlation(x, quiet, 0, 1)
    for lag in range(1, min(max_lag, db.shape[1] - 1)):
        if _masked_correlation(x, quiet, 1, lag) < math.exp(-1.0):
            return az, lag * resolution_m
    return az, min(max_lag, db.shape[1] - 1) * resolution_m


def extra_stats(image: np.ndarray, resolution_m: float, db_per_count: float) -> dict:
    db = levels_db(image, db_per_count)
    profile, trend = range_trend(db)
    outer = db[:, db.shape[1] // 10:]
    per_azimuth = np.median(outer, axis=1)
    bands = floor_profile(db, resolution_m)
    slope = 0.0
    if len(bands) >= 2:
        x = np.log10([math.sqrt(lo * hi) for lo, hi, _ in bands])
        slope = float(np.polyfit(x, [v for _, _, v in bands], 1)[0])
    quiet_az, quiet_r = quiet_correlations(db, resolution_m)
    counts = np.asarray(image)
    return dict(trend_rings=_runs(profile > trend + ARTEFACT_DB / 2),
                spokes=_runs(per_azimuth > np.median(per_azimuth) + ARTEFACT_DB / 2),
                floor_slope_db_per_decade=slope, quiet_azimuth_correlation=quiet_az, quiet_range_correlation_m=quiet_r,
                zero_fraction=float(np.mean(counts == 0)),
                low_count_levels=int(len(np.unique(np.rint(counts[counts < 20])))),
                floor_profile=tuple(bands))


def co_register(real, sim) -> tuple[np.ndarray, np.ndarray]:
    """(real, sim) counts on the real image's polar grid: for each real azimuth the nearest simulated
    one, for each real range bin the simulated bin at the same range; cut to the ranges both cover.
    real, sim: (counts (A, B), azimuth_rad (A,), resolution m)."""
    (rc, raz, rres), (sc, saz, sres) = real, sim
    reach = min(rc.shape[1] * rres, sc.shape[1] * sres)
    n = int(reach / rres)
    diff = np.angle(np.exp(1j * (np.asarray(raz)[:, None] - np.asarray(saz)[None, :])))
    rows = np.argmin(np.abs(diff), axis=1)
    bins = np.minimum(((np.arange(n) + 0.5) * rres / sres).astype(np.int64), sc.shape[1] - 1)
    return np.asarray(rc)[:, :n].astype(np.float64), np.asarray(sc)[rows][:, bins].astype(np.float64)


def format_table(real: ImageStats, sim: ImageStats, names=("REAL", "SIM")) -> str:
    lines = [f"{'statistic':26s} {names[0]:>12s} {names[1]:>12s}"]
    for key, value in real.as_dict().items():
        if key == "floor_profile":
            continue
        other = getattr(sim, key)
        fmt = "{:12d}" if isinstance(value, int) else "{:12.4g}"
        lines.append(f"{key:26s} {fmt.format(value)} {fmt.format(other)}")
    return "\n".join(lines)


def format_profiles(real: ImageStats, sim: ImageStats, names=("REAL", "SIM")) -> str:
    """The floor-vs-range profiles side by side (each image's own bands)."""
    lines = [f"{'floor vs range (median dB)':26s} {names[0]:>12s} {names[1]:>12s}"]
    for k in range(max(len(real.floor_profile), len(sim.floor_profile))):
        cells = []
        for stats in (real, sim):
            if k < len(stats.floor_profile):
                lo, hi, v = stats.floor_profile[k]
                cells.append(f"{v:5.1f} @{lo:5.0f}-{hi:<4.0f}m")
            else:
                cells.append("")
        lines.append(f"{'  band ' + str(k):26s} {cells[0]:>12s} {cells[1]:>12s}")
    return "\n".join(lines)
