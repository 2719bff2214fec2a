"""Pictures of the lidar physics for documentation: the detection-limit forms through one pair of
datasheet points, and ρ(θ) of the reflectivity models.

    python -m lidar_ros.physics.figures OUT_DIR     # writes detection_limits.png, reflectivity.png
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from .config import DETECTION_MODELS, HDL64E_LIMITS, SurfaceConfig
from .detection import DetectionLimit
from .materials import TABLE_ANGLES_DEG
from .reflectivity import table_reflectivity


def detection_limit_curves(limits=HDL64E_LIMITS, rho=None) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """(ρ samples, {model: r_L(ρ)}) for every detection model except 'none'."""
    rho = np.linspace(0.0, 1.0, 401) if rho is None else np.asarray(rho, float)
    curves = {m: DetectionLimit(SurfaceConfig(model=m, limits=limits)).max_range(rho)
              for m in DETECTION_MODELS if m != "none"}
    return rho, curves


def plot_detection_limits(path, limits=HDL64E_LIMITS) -> Path:
    """PNG of r_L(ρ) of every model through the two datasheet pairs (marked)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rho, curves = detection_limit_curves(limits)
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=120)
    for model, r_l in curves.items():
        ax.plot(100 * rho, r_l, label=model)
    (r1, d1), (r2, d2) = limits
    ax.plot([100 * r1, 100 * r2], [d1, d2], "ko", label="datasheet pairs")
    ax.set_xlabel("reflectivity ρ(θ) [% of a white Lambertian target]")
    ax.set_ylabel("detection limit r_L [m]")
    ax.set_title("Range–reflectivity detection limit (LiMOX §4.2, BlenSor §3.2)")
    return _save(fig, ax, path)


def _save(fig, ax, path) -> Path:
    """Grid, legend, tight layout, PNG at `path`; the figure is closed."""
    import matplotlib.pyplot as plt

    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path)
    plt.close(fig)
    return path


def plot_reflectivity(path, rho0: float = 0.5, table=(0.50, 0.48, 0.45, 0.40, 0.33, 0.25, 0.17, 0.10, 0.05)) -> Path:
    """PNG of ρ(θ): Lambertian ρ(0)·cos θ and an interpolated 9-bin angle table (example values)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    theta = np.linspace(0.0, 90.0, 181)
    row = np.array([list(table) + [0.0]], np.float32)
    tabled = table_reflectivity(np.repeat(row, len(theta), axis=0), theta)
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=120)
    ax.plot(theta, rho0 * np.cos(np.radians(theta)), label=f"lambertian, ρ(0) = {rho0:g}")
    ax.plot(theta, tabled, label="angle table (interpolated)")
    ax.plot(TABLE_ANGLES_DEG, table, "ko", label="table bins 0°, 10°, …, 80°")
    ax.set_xlabel("incidence angle θ [deg]")
    ax.set_ylabel("reflectivity ρ(θ)")
    ax.set_title("Lidar reflectivity models (LiMOX §4.1)")
    return _save(fig, ax, path)


def main(argv=None) -> int:
    out = Path((argv or sys.argv[1:] or ["."])[0])
    out.mkdir(parents=True, exist_ok=True)
    for p in (plot_detection_limits(out / "detection_limits.png"), plot_reflectivity(out / "reflectivity.png")):
        print(p)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
