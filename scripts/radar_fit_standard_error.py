"""The expected standard error of the radar fit's noise-figure estimate (test_radar_fit.py's nf case: no leakage,
noise figure 15 dB, a 128-azimuth "real" frame against the fit's 64-azimuth frames), two ways:

1. linearised: the fit's residual vector (fit/sensor.residual_vector, its weights) of quiet frames of independent
   seeds, projected on its derivative with respect to the noise figure: the spread of that projection is the spread
   of a Gauss-Newton estimate; real and simulated frames' spreads add;
2. the level group alone, from first principles: each range block's level is the 10-50 % rank mean of its counts;
   its variance x n for independent exponential intensities (drawn here), divided by the block's independent cells
   (rows x bins over the range correlation's variance factor), averaged over the blocks as the fit weighs them
   (alike, whatever their size: single-bin blocks of 128 and 64 cells weigh as much as a block of 1388 bins).

    PYTHONPATH=$PWD python scripts/radar_fit_standard_error.py [--seeds 12]
"""
from __future__ import annotations

import argparse
import math

import numpy as np

from radarays_ros.radar.config import resolve_radar_config
from radarays_ros.radar.fit.sensor import quiet_frame, residual_vector
from radarays_ros.radar.fit.statistics import block_edges, quiet_stats, quiet_stats_with_errors

REAL_ROWS, SIM_ROWS = 128, 64


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=12, help="independent frames per row count")
    args = ap.parse_args()
    ras6 = resolve_radar_config("navtech_ras6").with_overrides({"fmcw.bandwidth_hz": 1.0e9})
    quiet = ras6.with_overrides({"receiver.leakage_dbm": "null"})
    cfg = lambda nf: quiet.with_overrides({"receiver.noise_figure_db": nf})  # noqa: E731
    stats = lambda nf, seed, rows: quiet_stats(quiet_frame(cfg(nf), seed=seed, azimuths=rows))  # noqa: E731
    ref_frame = quiet_frame(cfg(15.0), seed=1000, azimuths=REAL_ROWS)
    ref = quiet_stats(ref_frame)
    weights_from = quiet_stats_with_errors(ref_frame)  # the fit's weights: this 128-row frame's standard errors
    vec = lambda s: residual_vector(s, [weights_from], SIM_ROWS)  # noqa: E731
    h = 0.25
    hi, lo = stats(15 + h, 1000, 512), stats(15 - h, 1000, 512)
    jac = (vec(hi) - vec(lo)) / (2 * h)
    counts_per_db = float(np.median((hi.level - lo.level) / (2 * h)))
    sizes = [len(ref.level), len(ref.spread), len(ref.range_corr), 1, 2]
    print("derivative's norm per group (level, spread, range corr, azimuth corr, zero/saturated):",
          [round(float(np.linalg.norm(g)), 3) for g in np.split(jac, np.cumsum(sizes)[:-1])])
    spread = {}
    for rows in (REAL_ROWS, SIM_ROWS):
        proj = [jac @ vec(stats(15.0, seed, rows)) / (jac @ jac) for seed in range(args.seeds)]
        spread[rows] = float(np.std(proj, ddof=1))
        print(f"{rows} rows: linearised estimate sd {spread[rows]:.3f} dB ({args.seeds} seeds)")
    print(f"1. linearised, real {REAL_ROWS} - fit {SIM_ROWS} rows: sd {math.hypot(*spread.values()):.3f} dB")

    rng = np.random.default_rng(0)
    n, levels = 4000, []
    for _ in range(2000):
        x = np.sort(counts_per_db * 10 * np.log10(rng.standard_exponential(n)))
        levels.append(x[int(0.1 * n):int(0.5 * n)].mean())
    level_var = float(np.var(levels)) * n  # counts^2 per independent cell
    rho = np.clip(ref.range_corr, 0, None)  # lags 1-4 of the quiet counts
    bins = np.diff(block_edges(ref.edges[-1]))

    def block_variances(rows):
        out = []
        for m in bins:
            lags = np.arange(1, min(m, len(rho) + 1))
            factor = 1 + 2 * np.sum((1 - lags / m) * rho[lags - 1])
            out.append(level_var * factor / (rows * m))
        return np.array(out)

    both = block_variances(REAL_ROWS) + block_variances(SIM_ROWS)
    print(f"   counts per dB {counts_per_db:.3f}; level's variance per cell {level_var:.0f} counts^2; range correlation "
          f"{np.round(rho, 2).tolist()}; {len(bins)} blocks, {int((bins == 1).sum())} of one bin "
          f"({both[bins == 1].sum() / both.sum():.0%} of the variance)")
    print(f"2. level group alone: sd {math.sqrt(both.sum()) / len(bins) / counts_per_db:.3f} dB (all cells alike and "
          f"independent instead: {math.sqrt(level_var * (1 / REAL_ROWS + 1 / SIM_ROWS) / ref.edges[-1]) / counts_per_db:.4f} dB)")


if __name__ == "__main__":
    main()
