"""The side-by-side picture of `radarays lidar compare`: each channel's panorama for every frame on one
colour scale (misses black), and the channels' histograms."""
from __future__ import annotations

from pathlib import Path

import numpy as np

# channel -> (attribute, label with unit, logarithmic colour scale)
CHANNELS = {
    "range": ("range_m", "range (m)", False),
    "reflectivity": ("reflectivity", "reflectivity (0-100 % diffuse, >100 retro)", False),
    "signal": ("signal", "signal (photons)", True),
    "near_ir": ("near_ir", "near_ir (ambient counts)", True),
}


def _upward_rows(frame) -> bool:
    """Whether the frame's rows go up in elevation (Velodyne ring order): drawn flipped, sky on top."""
    xyz = np.asarray(frame.xyz_m, np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        el = np.where(frame.valid, np.arctan2(xyz[..., 2], np.hypot(xyz[..., 0], xyz[..., 1])), np.nan)
        rows = np.array([np.nanmedian(row) if np.isfinite(row).any() else np.nan for row in el])
    known = rows[np.isfinite(rows)]  # the first and last rows with returns (a dead laser has none)
    return bool(len(known) >= 2 and known[0] < known[-1])


def _values(frame, attribute: str):
    a = getattr(frame, attribute)
    if a is None:
        return None
    a = np.asarray(a, np.float64)
    a = a if attribute == "near_ir" else np.where(frame.valid, a, np.nan)
    return a[::-1] if _upward_rows(frame) else a


def comparison_picture(frames, path: str | Path, dpi: int = 90) -> Path:
    """Panoramas (rows = beams, top = highest; columns = azimuth) of every channel any frame has, then histograms."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import LogNorm, Normalize

    channels = [c for c, (attr, _, _) in CHANNELS.items() if any(getattr(f, attr) is not None for f in frames)]
    panel_h = [max(0.9, min(2.0, f.shape[0] / 64)) for f in frames]
    heights = [h for _ in channels for h in panel_h] + [2.4]
    fig = plt.figure(figsize=(14, sum(heights) + 0.5 * len(channels) + 1.0), dpi=dpi)
    grid = fig.add_gridspec(len(heights), 1 + len(channels), height_ratios=heights,
                            width_ratios=[1] * len(channels) + [0.02 * len(channels)], hspace=0.8)
    row = 0
    for channel in channels:
        attribute, label, log = CHANNELS[channel]
        arrays = [_values(f, attribute) for f in frames]
        pooled = np.concatenate([a[np.isfinite(a) & ((a > 0) if log else True)].ravel() for a in arrays if a is not None]
                                or [np.array([1.0])])
        lo, hi = (np.percentile(pooled, 1), np.percentile(pooled, 99)) if pooled.size else (0.0, 1.0)
        norm = LogNorm(max(lo, 1e-3), max(hi, lo * 10, 1e-2)) if log else Normalize(lo, max(hi, lo + 1e-6))
        cmap = plt.get_cmap("viridis").with_extremes(bad="black")
        image = None
        for frame, values in zip(frames, arrays):
            ax = fig.add_subplot(grid[row, :len(channels)])
            row += 1
            if values is None:
                ax.text(0.5, 0.5, f"{frame.name}: no {channel} channel", ha="center", va="center", transform=ax.transAxes)
                ax.set_axis_off()
                continue
            shown = np.where(values > 0, values, np.nan) if log else values
            image = ax.imshow(shown, aspect="auto", interpolation="nearest", cmap=cmap, norm=norm)
            ax.set_title(f"{frame.name}: {label}", fontsize=9, loc="left")
            ax.set_ylabel("beam (top: up)", fontsize=8)
            ax.tick_params(labelsize=7)
        ax.set_xlabel("column (azimuth index)", fontsize=8)
        if image is not None:
            cax = fig.add_subplot(grid[row - len(frames):row, len(channels)])
            fig.colorbar(image, cax=cax).set_label(label, fontsize=8)
    for k, channel in enumerate(channels):
        attribute, label, log = CHANNELS[channel]
        ax = fig.add_subplot(grid[row, k])
        for frame in frames:
            values = _values(frame, attribute)
            if values is None:
                continue
            v = values[np.isfinite(values)]
            v = v[v > 0] if log else v
            if v.size == 0:
                continue
            lo, hi = max(float(v.min()), 1e-3), max(float(v.max()), 1e-2)
            bins = np.geomspace(lo, max(hi, 1.5 * lo), 60) if log else 60
            ax.hist(v, bins=bins, histtype="step", weights=np.full(v.size, 1.0 / v.size), label=frame.name[:28])
        if log:
            ax.set_xscale("log")
        ax.set_xlabel(label, fontsize=8)
        ax.set_ylabel("fraction per bin", fontsize=8)
        ax.tick_params(labelsize=7)
        if k == 0:
            ax.legend(fontsize=7)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, bbox_inches="tight")
    plt.close(fig)
    return path
