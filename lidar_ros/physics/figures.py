"""Pictures of the lidar physics for documentation: the detection-limit forms through one pair of
datasheet points, and ρ(θ) of the reflectivity models.

    python -m lidar_ros.physics.figures OUT_DIR     # writes detection_limits.png, reflectivity.png,
                                                    # lidar_clean_vs_realistic.png
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


def plot_clean_and_realistic(path, world: str = "street", sensor: str = "OS1-64", pose=(0.0, 0.0, 1.8, 0.0, 0.0, 0.0),
                             seed: int = 1) -> Path:
    """PNG of one frame as range and near_ir images: the clean geometric sensor beside the same sensor with
    the realistic profile (lidar_ros.config.REALISTIC: divergence with 4 sub-rays, detection curve,
    dropouts, photon noise, sun ambient with row gains)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from radarays_ros.tracing import make_backend
    from radarays_ros.world.loader import load_world
    from radarays_ros.world.transforms import pose_to_matrix

    from ..config import load_sensor
    from ..simulator import LidarSimulator

    scene = load_world(world)
    backend = make_backend("embree", scene)
    m = pose_to_matrix(*pose)
    scans = [LidarSimulator(load_sensor(sensor, {"columns": 1024}, realistic=r), scene, backend, seed=seed).simulate(m)
             for r in (False, True)]
    fig, axes = plt.subplots(2, 2, figsize=(12, 3.6), dpi=100)
    for col, (scan, title) in enumerate(zip(scans, ("clean", "realistic (--realistic)"))):
        rng_img = np.where(scan.hit, scan.range, np.nan)
        axes[0, col].imshow(rng_img, cmap="viridis", vmin=0, vmax=40, aspect="auto", interpolation="nearest")
        axes[0, col].set_title(f"{sensor} {title}: range (0-40 m, black = no return)", fontsize=9)
        nir = scan.fields["ouster_ambient"].astype(float)
        axes[1, col].imshow(nir, cmap="gray", vmin=0, vmax=np.percentile(nir, 99), aspect="auto", interpolation="nearest")
        axes[1, col].set_title(f"{title}: near_ir (ambient photons)", fontsize=9)
        for ax in axes[:, col]:
            ax.set_facecolor("black")
            ax.set_xticks([])
            ax.set_yticks([])
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def main(argv=None) -> int:
    out = Path((argv or sys.argv[1:] or ["."])[0])
    out.mkdir(parents=True, exist_ok=True)
    for p in (plot_detection_limits(out / "detection_limits.png"), plot_reflectivity(out / "reflectivity.png"),
              plot_clean_and_realistic(out / "lidar_clean_vs_realistic.png")):
        print(p)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
