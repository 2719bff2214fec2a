"""Statistics a perception engineer compares between a real and a simulated lidar frame.

Every statistic is defined here once and measured alike on both frames (lidar_ros.compare.frame.LidarFrame).
Neighbours are the 8 pixels around one (columns wrap: a spinning frame is a full turn; rows do not).

Returns and holes
    valid_fraction        pixels with a return
    hole_fraction         misses with at least HOLE_MIN_NEIGHBOURS of 8 neighbours valid: a miss inside
                          the returning scene (not open sky), as a fraction of all pixels
    isolated_fraction     misses whose 4 direct neighbours are all valid ("salt"), fraction of all pixels
                          (shared/realdata README: 0.39-0.84 % on the Ouster frames)
    hole_at_<where>       share of the holes next to: `edge` (the valid neighbours' ranges span more than
                          EDGE_RATIO: a silhouette, mixed pixels), `far` (neighbours' median range over
                          FAR_FACTOR x the frame's median range), `dark` (neighbours' median reflectivity
                          under DARK_FACTOR x the frame's median), `grazing` (neighbours' incidence over GRAZING_DEG, the incidence
                          from the normal of the range image's local surface); `unexplained`: none of these
    valid_at_<where>      the same shares among valid pixels; hole_at / valid_at > 1: holes gather there
Channels (reflectivity, signal over returns; near_ir over every pixel)
    <ch>_p5/p50/p95       percentiles; <ch>_distinct: distinct values
    <ch>_texture          mean |neighbour difference| along a row / median level, over pairs on one surface
                          (ranges within SAME_SURFACE); near_ir over every pair
    near_ir_row_banding   robust spread of the row medians / the median (1.4826 MAD)
    near_ir_row_gain      the detector rows' gain spread with the scene divided out: m_r = median over columns of
                          ln(near_ir[r+1] / near_ir[r]) is ln g_(r+1) - ln g_r where adjacent rows see the same scene,
                          so sigma(ln g) = 1.4826 MAD(m_r) / sqrt(2) (rows in elevation order)
    near_ir_return_to_miss  median near_ir of returns / of misses (sunlit scene vs sky)
    range_p5/p50/p95, range_texture as above (range in m)
Signal vs range
    signal_r2_rho_<a>_<b>m  median of signal * r^2 / rho in range band [a, b) m, rho = reflectivity / 100
                          (Ouster/Velodyne calibrated reflectivity: 0-100 % Lambertian); a flat line is 1/r^2
    signal_near_rolloff   the 0.5-2 m band over the 4-16 m band (< 1: the receiver's near-range overlap)
Second returns (dual frames)
    second_fraction       pixels with a second return / pixels with a first
    second_farther        share of the two-echo pixels whose second echo is farther than the first
    second_minus_first_m  median (range2 - range)
    second_signal_ratio   median signal2 / signal over two-echo pixels
    second_without_first  second returns with no first, / second returns
Noise and timing
    range_noise_m         sigma of range from second differences along a row on one surface:
                          e = r[c] - (r[c-1] + r[c+1]) / 2 has variance 1.5 sigma^2 for independent noise;
                          1.4826 MAD(e) / sqrt(1.5). Also per band: range_noise_near_m (< 5 m), _mid_m (5-20 m)
    range_noise_near_sqrt_signal_m  the near (< 5 m) noise made independent of how bright the scene is: photon
                          counting gives sigma = k / sqrt(S) (lidar_ros/physics/range_precision.py), so two frames
                          whose near pixels differ in SIGNAL S differ in sigma though k is the same. The pixels are
                          binned by their SIGNAL (octaves, SIGNAL_BIN_EDGES), sigma_bin as range_noise_m in each bin
                          with at least NOISE_BIN_MIN_SAMPLES differences, S_bin the bin's median SIGNAL; the
                          statistic is the median over bins of sigma_bin * sqrt(S_bin) (m * sqrt(photons)). NaN
                          without a SIGNAL channel. Only bins up to PHOTON_LIMITED_MAX photons: above it the
                          Ouster precision floor (3 mm against 70 mm / sqrt(S): S ~ 540) and the mm range steps
                          set sigma, sigma * sqrt(S) grows as sqrt(S), and a bright scene would read high again.
    column_step_us        median spacing of the measurement-block times; column_jitter_us: 1.4826 MAD of
                          the spacing; frame_span_ms: first to last block
"""
from __future__ import annotations

import math

import numpy as np

from .frame import LidarFrame

HOLE_MIN_NEIGHBOURS = 3
EDGE_RATIO = 1.15       # max/min range among a pixel's neighbours: a depth edge (15 %)
SAME_SURFACE = 0.05     # relative range difference of two neighbours on one surface
GRAZING_DEG = 70.0
FAR_FACTOR = 2.0        # x the frame's median range
DARK_FACTOR = 0.5       # x the frame's median reflectivity
SIGNAL_BANDS_M = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0)
MIN_BAND_SAMPLES = 20
PHOTON_LIMITED_MAX = 512.0                    # signal photons; (70 mm / 3 mm)^2 ~ 540, range_precision.py presets
SIGNAL_BIN_EDGES = 2.0 ** np.arange(0, 10)    # signal photons, octaves 1 .. PHOTON_LIMITED_MAX
NOISE_BIN_MIN_SAMPLES = 50                    # second differences per SIGNAL bin (MAD within ~15 %)
NEAR_BAND_M = (0.0, 5.0)
WHERE = ("edge", "far", "dark", "grazing", "unexplained")


def neighbours(a: np.ndarray, fill) -> np.ndarray:
    """(8, H, W): the 8 neighbours of every pixel; columns wrap around, rows beyond the image are `fill`."""
    a = np.asarray(a)
    padded = np.concatenate([np.full((1,) + a.shape[1:], fill, a.dtype), a, np.full((1,) + a.shape[1:], fill, a.dtype)])
    out = []
    for dr in (-1, 0, 1):
        for dc in (-1, 0, 1):
            if dr or dc:
                out.append(np.roll(padded, -dc, axis=1)[1 + dr:1 + dr + a.shape[0]])
    return np.stack(out)


def incidence_deg(frame: LidarFrame) -> np.ndarray:
    """(H, W) angle between the ray and the local surface normal of the range image (deg); NaN where a
    neighbour is missing or on another surface."""
    xyz = np.asarray(frame.xyz_m, np.float64)
    r = np.where(frame.valid, frame.range_m, np.nan)
    dx = np.roll(xyz, -1, axis=1) - np.roll(xyz, 1, axis=1)
    dy = np.full_like(xyz, np.nan)
    dy[1:-1] = xyz[2:] - xyz[:-2]
    n = np.cross(dx, dy)
    norm = np.linalg.norm(n, axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        ray = xyz / np.linalg.norm(xyz, axis=-1, keepdims=True)
        cos = np.abs(np.sum(n * ray, axis=-1)) / norm
        around = np.stack([np.roll(r, -1, 1), np.roll(r, 1, 1),
                           np.vstack([r[1:], np.full((1, r.shape[1]), np.nan)]),
                           np.vstack([np.full((1, r.shape[1]), np.nan), r[:-1]])])
        same = np.all(np.abs(around - r) <= SAME_SURFACE * r, axis=0)
        angle = np.degrees(np.arccos(np.clip(cos, 0.0, 1.0)))
    return np.where(same & np.isfinite(angle), angle, np.nan)


def _nanmedian_stack(stack: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return np.nanmedian(stack, axis=0)


def place_flags(frame: LidarFrame) -> dict[str, np.ndarray]:
    """(H, W) bool per place (edge, far, dark, grazing), judged from each pixel's valid neighbours (a hole's
    own range is unknown) and, for a valid pixel, itself too."""
    valid = frame.valid
    r = np.where(valid, frame.range_m, np.nan)
    nb_r = neighbours(r, np.nan)
    with_self = np.concatenate([nb_r, r[None]])
    rng = np.where(valid[None], with_self, np.concatenate([nb_r, np.full((1,) + r.shape, np.nan)]))
    with np.errstate(invalid="ignore"):
        lo, hi = np.nanmin(np.where(np.isnan(rng), np.inf, rng), 0), np.nanmax(np.where(np.isnan(rng), -np.inf, rng), 0)
        edge = (hi / lo) > EDGE_RATIO
    near_r = np.where(valid, r, _nanmedian_stack(nb_r))
    far_cut = FAR_FACTOR * np.median(r[valid]) if valid.any() else np.inf
    with np.errstate(invalid="ignore"):
        flags = {"edge": edge & np.isfinite(lo) & np.isfinite(hi), "far": near_r > far_cut}
    if frame.reflectivity is not None and valid.any():
        refl = np.where(valid, np.asarray(frame.reflectivity, np.float64), np.nan)
        near_refl = np.where(valid, refl, _nanmedian_stack(neighbours(refl, np.nan)))
        with np.errstate(invalid="ignore"):
            flags["dark"] = near_refl < DARK_FACTOR * np.median(refl[valid])
    else:
        flags["dark"] = np.zeros(r.shape, bool)
    inc = incidence_deg(frame)
    near_inc = np.where(valid, inc, _nanmedian_stack(neighbours(inc, np.nan)))
    with np.errstate(invalid="ignore"):
        flags["grazing"] = near_inc > GRAZING_DEG
    return flags


def holes(frame: LidarFrame) -> tuple[np.ndarray, np.ndarray]:
    """(holes, isolated) masks: misses with >= HOLE_MIN_NEIGHBOURS valid neighbours; misses whose 4 direct
    neighbours are valid."""
    valid = frame.valid
    nb = neighbours(valid, False)
    hole = ~valid & (nb.sum(0) >= HOLE_MIN_NEIGHBOURS)
    direct = nb[[1, 3, 4, 6]]  # up, left, right, down in neighbours()' order
    return hole, ~valid & direct.all(0)


def _pct(values: np.ndarray, q: float) -> float:
    return float(np.percentile(values, q)) if values.size else math.nan


def _mad(values: np.ndarray) -> float:
    return float(1.4826 * np.median(np.abs(values - np.median(values)))) if values.size else math.nan


def texture(values: np.ndarray, frame: LidarFrame, every_pixel: bool = False) -> float:
    """Mean |a[r, c+1] - a[r, c]| over pairs on one surface (or every pair), / the median level (the mean,
    not the median: on integer channels most neighbours of flat paint are equal and a median says 0)."""
    a = np.asarray(values, np.float64)
    b = np.roll(a, -1, axis=1)
    if every_pixel:
        pair = np.ones(a.shape, bool)
    else:
        r = np.where(frame.valid, frame.range_m, np.nan)
        r2 = np.roll(r, -1, axis=1)
        with np.errstate(invalid="ignore"):
            pair = np.abs(r2 - r) <= SAME_SURFACE * np.minimum(r, r2)
    level = np.median(a[pair]) if pair.any() else math.nan
    if not pair.any() or not level:
        return math.nan
    return float(np.mean(np.abs(b - a)[pair]) / abs(level))


def range_noise(frame: LidarFrame, band: tuple[float, float] = (0.0, math.inf), where: np.ndarray | None = None,
                min_samples: int = MIN_BAND_SAMPLES) -> float:
    """sigma of range (m) from second differences along rows on one surface, within a range band (and, when
    given, at the (H, W) pixels `where`); NaN with fewer than `min_samples` differences."""
    r = np.where(frame.valid, np.asarray(frame.range_m, np.float64), np.nan)
    left, right = np.roll(r, 1, axis=1), np.roll(r, -1, axis=1)
    e = r - 0.5 * (left + right)
    with np.errstate(invalid="ignore"):
        ok = (np.isfinite(e) & (np.abs(left - r) <= SAME_SURFACE * r) & (np.abs(right - r) <= SAME_SURFACE * r)
              & (r >= band[0]) & (r < band[1]))
    if where is not None:
        ok &= np.asarray(where, bool)
    if ok.sum() < min_samples:
        return math.nan
    return _mad(e[ok]) / math.sqrt(1.5)


def range_noise_times_sqrt_signal(frame: LidarFrame, band: tuple[float, float] = NEAR_BAND_M) -> float:
    """Median over SIGNAL bins of sigma_bin * sqrt(S_bin) (m * sqrt(photons)), the photon-counting constant k
    of sigma = k / sqrt(S) (module docstring); NaN without SIGNAL or without a bin of enough samples."""
    if frame.signal is None:
        return math.nan
    sig = np.asarray(frame.signal, np.float64)
    r = np.asarray(frame.range_m, np.float64)
    with np.errstate(invalid="ignore"):
        in_band = frame.valid & (r >= band[0]) & (r < band[1])
    products = []
    for lo, hi in zip(SIGNAL_BIN_EDGES[:-1], SIGNAL_BIN_EDGES[1:]):
        in_bin = (sig >= lo) & (sig < hi)
        sigma = range_noise(frame, band, in_bin, NOISE_BIN_MIN_SAMPLES)
        if math.isfinite(sigma):
            products.append(sigma * math.sqrt(float(np.median(sig[in_bin & in_band]))))
    return float(np.median(products)) if products else math.nan


def signal_vs_range(frame: LidarFrame) -> dict[str, float]:
    """Median signal * r^2 / rho per range band (rho from calibrated reflectivity 1-100 %)."""
    out = {}
    keys = [f"signal_r2_rho_{a:g}_{b:g}m" for a, b in zip(SIGNAL_BANDS_M[:-1], SIGNAL_BANDS_M[1:])]
    if frame.signal is None or frame.reflectivity is None:
        return {**{k: math.nan for k in keys}, "signal_near_rolloff": math.nan}
    r = np.asarray(frame.range_m, np.float64)
    refl = np.asarray(frame.reflectivity, np.float64)
    sig = np.asarray(frame.signal, np.float64)
    ok = frame.valid & (refl >= 1) & (refl <= 100) & (sig > 0)
    k = np.where(ok, sig * r * r / np.maximum(refl / 100.0, 1e-9), np.nan)

    def band(a, b):
        sel = ok & (r >= a) & (r < b)
        return float(np.median(k[sel])) if sel.sum() >= MIN_BAND_SAMPLES else math.nan

    for key, a, b in zip(keys, SIGNAL_BANDS_M[:-1], SIGNAL_BANDS_M[1:]):
        out[key] = band(a, b)
    out["signal_near_rolloff"] = band(0.5, 2.0) / band(4.0, 16.0)
    return out


def second_returns(frame: LidarFrame) -> dict[str, float]:
    keys = ("second_fraction", "second_farther", "second_minus_first_m", "second_signal_ratio", "second_without_first")
    if frame.range2_m is None:
        return {k: math.nan for k in keys}
    r1 = np.asarray(frame.range_m, np.float64)
    r2 = np.asarray(frame.range2_m, np.float64)
    v1, v2 = frame.valid, np.isfinite(r2) & (r2 > 0)
    both = v1 & v2
    out = {"second_fraction": float(v2.sum() / max(v1.sum(), 1)),
           "second_farther": float((r2[both] > r1[both]).mean()) if both.any() else math.nan,
           "second_minus_first_m": float(np.median(r2[both] - r1[both])) if both.any() else math.nan,
           "second_signal_ratio": math.nan,
           "second_without_first": float((v2 & ~v1).sum() / v2.sum()) if v2.any() else math.nan}
    if frame.signal is not None and frame.signal2 is not None and both.any():
        s1, s2 = np.asarray(frame.signal, np.float64)[both], np.asarray(frame.signal2, np.float64)[both]
        good = s1 > 0
        out["second_signal_ratio"] = float(np.median(s2[good] / s1[good])) if good.any() else math.nan
    return out


def row_gain_spread(near_ir) -> float:
    """sigma of ln(row gain) of a near_ir image [row, column], rows in elevation order (module docstring)."""
    nir = np.asarray(near_ir, np.float64)
    if nir.ndim != 2 or nir.shape[0] < 4:
        return math.nan
    both = (nir[1:] > 0) & (nir[:-1] > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(both, np.log(nir[1:]) - np.log(nir[:-1]), np.nan)
    enough = both.sum(axis=1) >= max(8, nir.shape[1] // 8)
    if enough.sum() < 3:
        return math.nan
    steps = np.nanmedian(ratio[enough], axis=1)
    return _mad(steps) / math.sqrt(2.0)


def column_timing(frame: LidarFrame) -> dict[str, float]:
    nan = {"column_step_us": math.nan, "column_jitter_us": math.nan, "frame_span_ms": math.nan}
    t = frame.column_time_s
    if t is None or len(t) < 3:
        return nan
    t = np.sort(np.asarray(t, np.float64))
    step = np.diff(t)
    return {"column_step_us": float(np.median(step) * 1e6), "column_jitter_us": _mad(step) * 1e6,
            "frame_span_ms": float((t[-1] - t[0]) * 1e3)}


def frame_stats(frame: LidarFrame) -> dict[str, float]:
    """Every statistic of the module docstring, by name (NaN where the frame lacks the channel)."""
    valid = frame.valid
    n = valid.size
    hole, isolated = holes(frame)
    flags = place_flags(frame)
    out = {"valid_fraction": float(valid.mean()), "hole_fraction": float(hole.sum() / n),
           "isolated_fraction": float(isolated.sum() / n)}
    any_flag_h = np.zeros(hole.sum(), bool)
    any_flag_v = np.zeros(valid.sum(), bool)
    for where in WHERE[:-1]:
        out[f"hole_at_{where}"] = float(flags[where][hole].mean()) if hole.any() else math.nan
        out[f"valid_at_{where}"] = float(flags[where][valid].mean()) if valid.any() else math.nan
        any_flag_h |= flags[where][hole]
        any_flag_v |= flags[where][valid]
    out["hole_at_unexplained"] = float((~any_flag_h).mean()) if hole.any() else math.nan
    out["valid_at_unexplained"] = float((~any_flag_v).mean()) if valid.any() else math.nan
    r = np.asarray(frame.range_m, np.float64)
    channels = {"range": (r, False), "reflectivity": (frame.reflectivity, False), "signal": (frame.signal, False),
                "near_ir": (frame.near_ir, True)}
    for name, (values, every) in channels.items():
        if values is None:
            for suffix in ("p5", "p50", "p95", "distinct", "texture"):
                out[f"{name}_{suffix}"] = math.nan
            continue
        a = np.asarray(values, np.float64)
        sample = a.ravel() if every else a[valid]
        out[f"{name}_p5"], out[f"{name}_p50"], out[f"{name}_p95"] = (_pct(sample, q) for q in (5, 50, 95))
        out[f"{name}_distinct"] = float(len(np.unique(np.round(sample, 3)))) if sample.size else math.nan
        out[f"{name}_texture"] = texture(np.where(valid | every, a, np.nan), frame, every)
    if frame.near_ir is not None:
        nir = np.asarray(frame.near_ir, np.float64)
        level = np.median(nir)
        rows = np.median(nir, axis=1)
        out["near_ir_row_banding"] = _mad(rows) / level if level else math.nan
        out["near_ir_row_gain"] = row_gain_spread(nir)
        ret, miss = nir[valid], nir[~valid]
        out["near_ir_return_to_miss"] = (float(np.median(ret) / np.median(miss))
                                         if ret.size and miss.size and np.median(miss) else math.nan)
    else:
        out["near_ir_row_banding"] = out["near_ir_return_to_miss"] = out["near_ir_row_gain"] = math.nan
    out.update(signal_vs_range(frame))
    out.update(second_returns(frame))
    out["range_noise_m"] = range_noise(frame)
    out["range_noise_near_m"] = range_noise(frame, NEAR_BAND_M)
    out["range_noise_near_sqrt_signal_m"] = range_noise_times_sqrt_signal(frame)
    out["range_noise_mid_m"] = range_noise(frame, (5.0, 20.0))
    out.update(column_timing(frame))
    return out


# (key, unit, format) in the order of the table
def table_rows(stats: dict[str, float]) -> list[tuple[str, str, str]]:
    units = {"_m": "m", "_us": "us", "_ms": "ms"}
    rows = []
    for key in stats:
        unit = next((u for s, u in units.items() if key.endswith(s)), "")
        if key.startswith("range_p"):
            unit = "m"
        rows.append((key, unit, ".4g"))
    return rows


def format_table(names: list[str], stats: list[dict[str, float]]) -> str:
    """A Markdown table: one row per statistic, one column per frame (NaN shown as –)."""
    header = "| statistic | unit | " + " | ".join(names) + " |"
    lines = [header, "|---|---|" + "---:|" * len(names)]
    for key, unit, fmt in table_rows(stats[0]):
        cells = []
        for s in stats:
            v = s.get(key, math.nan)
            cells.append("–" if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, fmt))
        lines.append(f"| {key} | {unit} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
