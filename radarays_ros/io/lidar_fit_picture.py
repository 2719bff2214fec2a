"""The picture of a lidar fit: the objective per evaluation, and real vs simulated-before vs -after statistics
(signal·r²/ρ over range, near-IR percentiles, range noise) of every frame in the report."""
from __future__ import annotations

import math
from pathlib import Path

BANDS = ((0.5, 1), (1, 2), (2, 4), (4, 8), (8, 16), (16, 32), (32, 64))
COLOURS = {"real": "black", "before": "tab:red", "after": "tab:blue"}


def fit_picture(path: str | Path, history, tables, dpi: int = 90) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = max(len(tables), 1)
    fig, axes = plt.subplots(n, 3, figsize=(14, 3.6 * n), squeeze=False)
    for row, (title, stats) in enumerate(tables):
        ax = axes[row, 0]
        if row == 0:
            ax.semilogy(range(1, len(history) + 1), history, "o-", ms=3)
            ax.set(xlabel="evaluation", ylabel="objective ½Σ log(sim/real)²", title="objective")
        else:
            ax.axis("off")
        ax = axes[row, 1]
        centre = [math.sqrt(a * b) for a, b in BANDS]
        for label, s in zip(("real", "before", "after"), stats):
            y = [s.get(f"signal_r2_rho_{a:g}_{b:g}m", math.nan) for a, b in BANDS]
            ax.loglog(centre, y, "o-", color=COLOURS[label], label=label)
        ax.set(xlabel="range [m]", ylabel="signal·r²/ρ", title=f"{title}: signal vs range")
        ax.legend(fontsize=8)
        ax = axes[row, 2]
        keys = ("near_ir_p5", "near_ir_p50", "near_ir_p95", "range_noise_near_m", "range_noise_mid_m", "isolated_fraction")
        for i, (label, s) in enumerate(zip(("real", "before", "after"), stats)):
            ratio = [s.get(k, math.nan) / stats[0].get(k, math.nan) if stats[0].get(k) else math.nan for k in keys]
            ax.bar([j + 0.27 * (i - 1) for j in range(len(keys))], ratio, 0.27, color=COLOURS[label], label=label)
        ax.set_yscale("log")
        ax.set_xticks(range(len(keys)), [k.replace("_", " ") for k in keys], rotation=30, fontsize=7, ha="right")
        ax.set(ylabel="÷ real", title="near-IR, noise, dropouts ÷ real")
        ax.axhline(1.0, color="grey", lw=0.5)
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return Path(path)
