"""The report of `radarays fit radar`: a Markdown table and a picture (real / before / after, objective).

Pictures: polar images (the first POLAR_M metres) as range (m) x azimuth (deg), one grey scale in detector counts; the floor over
range of each (quiet 10-50 % rank mean, counts); the objective per evaluation (log scale).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

POLAR_M = 40.0  # metres of each polar panel (the floor plot shows the whole range)


def _polar_axes(ax, counts, resolution, title, max_range=None):
    b = counts.shape[1]
    extent_r = b * resolution
    show = counts if max_range is None else counts[:, :max(1, int(max_range / resolution))]
    r = show.shape[1] * resolution
    im = ax.imshow(show, aspect="auto", cmap="gray", vmin=0, vmax=255, extent=[0, r, 360, 0], interpolation="nearest")
    ax.set_xlabel("range (m)")
    ax.set_ylabel("azimuth (deg)")
    ax.set_title(title, fontsize=9)
    return im, extent_r


def _figure(panels, profiles, objective, best, resolution, path, title, ylabel="objective", unit="counts"):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(panels) + 2, figsize=(5 * (len(panels) + 2), 4.6))
    im = None
    for ax, (counts, name) in zip(axes, panels):  # the first POLAR_M metres: leakage, STC and the floor's start
        im, _ = _polar_axes(ax, counts, resolution, name, POLAR_M)
    fig.colorbar(im, ax=axes[len(panels) - 1], label=unit)
    ax = axes[len(panels)]
    for (centres, level), name in profiles:
        ax.plot(centres, level, label=name)
    ax.set_xscale("log")
    ax.set_xlabel("range (m)")
    ax.set_ylabel(f"quiet floor ({unit.split(' (')[0]})")
    ax.set_title("floor over range (10-50 % rank mean)", fontsize=9)
    ax.legend(fontsize=8)
    ax = axes[-1]
    ax.plot(np.arange(1, len(objective) + 1), objective, ".", ms=3, alpha=0.5, label="each evaluation")
    ax.plot(np.arange(1, len(best) + 1), best, "-", label="best so far")
    if np.all(np.asarray(objective) > 0):
        ax.set_yscale("log")
    ax.set_xlabel("evaluation")
    ax.set_ylabel(ylabel)
    ax.set_title("objective per evaluation", fontsize=9)
    ax.legend(fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def _centres(stats, resolution):
    return 0.5 * (stats.edges[:-1] + stats.edges[1:]) * resolution


def report_paths(out: Path) -> tuple[Path, Path]:
    """OUT_report.md and OUT_report.png beside the fitted preset OUT."""
    return out.with_name(out.stem + "_report.md"), out.with_name(out.stem + "_report.png")


def sensor_report(fit, frames, preset: str, out: Path, to: tuple[Path, Path] | None = None) -> dict:
    """Write OUT_report.md and OUT_report.png of a SensorFit (or the two files `to`, temporary names the caller
    renames); returns their final paths and a short summary."""
    res = fit.config.range.resolution
    md, png = to or report_paths(out)
    real_summary = fit.stats_real[0].summary(res)
    before, after = fit.stats_before.summary(res), fit.stats_after.summary(res)
    lines = [f"# radarays fit radar: {preset} -> {out.name}", "",
             f"Real frames: {', '.join(f[2] for f in frames)}. Simulated: the physical stage with no returns "
             f"({fit.frame_after.shape[0]} azimuths, seeded). Evaluations: {fit.evaluations} ({fit.message}).", "",
             "| statistic | real | before | after |", "|---|---|---|---|"]
    for key in real_summary:
        lines.append(f"| {key} | {real_summary[key]:.4g} | {before[key]:.4g} | {after[key]:.4g} |")
    lines += ["", "| fitted key | start | fitted | ±1σ |", "|---|---|---|---|"]
    for key, value in fit.values.items():
        lines.append(f"| {key} | {fit.start_values[key]:.6g} | {value:.6g} | {fit.uncertainty.get(key, float('nan')):.2g} |")
    if fit.dropped:
        lines += ["", "Not fitted (kept at the preset value):", ""]
        lines += [f"- `{key}`: {why}" for key, why in fit.dropped.items()]
    lines += ["", f"Objective (sum of squared residuals): start {fit.objective[0]:.4g}, best {fit.best[-1]:.4g}.", "",
              "Objective per evaluation: " + ", ".join(f"{v:.4g}" for v in fit.objective), ""]
    md.write_text("\n".join(lines))
    _figure([(frames[0][0], f"real: {frames[0][2]}"), (fit.frame_before, f"before: {preset} (no scene)"),
             (fit.frame_after, f"after: {out.name} (no scene)")],
            [((_centres(fit.stats_real[0], res), fit.stats_real[0].level), "real"),
             ((_centres(fit.stats_before, res), fit.stats_before.level), "before"),
             ((_centres(fit.stats_after, res), fit.stats_after.level), "after")],
            fit.objective, fit.best, res, png, f"radarays fit radar ({preset}): receiver chain from statistics",
            "sum of squared residuals", f"counts ({fit.config.receiver.db_per_count:g} dB each)")
    summary = "\n".join([f"fitted {k} = {v:.6g} (start {fit.start_values[k]:.6g})" for k, v in fit.values.items()]
                        + [f"not fitted {k}: {why}" for k, why in fit.dropped.items()])
    return dict(zip(("markdown", "picture"), report_paths(out)), summary=summary)


def material_report(fit, frames, preset: str, out: Path, to: tuple[Path, Path] | None = None) -> dict:
    from ..radar.fit.statistics import quiet_stats

    md, png = to or report_paths(out)
    res = frames[0][1] if np.isfinite(frames[0][1]) else 1.0
    lines = [f"# radarays fit radar --world: materials ({preset}) -> {out.name}", "",
             f"Score (MIS, nats, + SSIM weight): before {fit.score_before:.4g}, after {fit.score_after:.4g}. "
             f"{len(fit.objective)} evaluations ({fit.message}).", "", "| parameter | start | fitted |", "|---|---|---|"]
    for key, value in fit.values.items():
        lines.append(f"| {key} | {fit.start_values[key]:.6g} | {value:.6g} |")
    if fit.dropped:
        lines += ["", "Not fitted (kept at the start value):", ""] + [f"- `{k}`: {why}" for k, why in fit.dropped.items()]
    lines += ["", "Objective (-score) per evaluation: " + ", ".join(f"{v:.4g}" for v in fit.objective), ""]
    md.write_text("\n".join(lines))
    stats = [(quiet_stats(img), name) for img, name in ((frames[0][0], "real"), (fit.images_before[0], "before"),
                                                         (fit.images_after[0], "after"))]
    _figure([(frames[0][0], f"real: {frames[0][2]}"), (fit.images_before[0], "before"), (fit.images_after[0], "after")],
            [((_centres(s, res), s.level), n) for s, n in stats], fit.objective, fit.best, res, png,
            f"radarays fit radar --world ({preset}): materials by MIS", "-(MIS + w SSIM)",
            "image value (0-255, RadaRays normalisation)")
    summary = "\n".join([f"fitted {k} = {v:.6g} (start {fit.start_values[k]:.6g})" for k, v in fit.values.items()]
                        + [f"not fitted {k}: {why}" for k, why in fit.dropped.items()]
                        + [f"score {fit.score_before:.4g} -> {fit.score_after:.4g}"])
    return dict(zip(("markdown", "picture"), report_paths(out)), summary=summary)
