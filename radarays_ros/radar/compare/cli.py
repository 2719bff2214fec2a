"""`radarays compare REAL SIM`: radar image statistics side by side, and a picture.

REAL and SIM are polar radar images: an Oxford/Boreas polar PNG (rows = azimuths; 11 header columns),
an .npz written by `radarays radar` (image, azimuth_rad, range_m), or a plain polar PNG (rows = range
bins, columns = azimuths, MulRan /Navtech/Polar style) with --layout range_rows. An Oxford PNG holds no
range resolution: it comes from --*-resolution, else PATH.yaml beside it (written by radarays).
Values are read as log-detector counts (--db-per-count, Navtech: 0.5 dB).
Lidar frames (shared/realdata .npz, `radarays lidar` .npz, Ouster .pcap/.osf) go to `radarays lidar compare`.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ...errors import ConfigError


def add_parser(sub) -> None:
    p = sub.add_parser("compare", help="compare a real and a simulated polar radar image or lidar frame "
                       "(statistics + picture; lidar: `radarays lidar compare`)",
                       description=__doc__.split("\n\n")[0])
    p.add_argument("real", help="real polar image: Oxford/Boreas PNG, .npz, or polar PNG (--layout range_rows)")
    p.add_argument("sim", help="simulated polar image, same formats")
    p.add_argument("--real-resolution", type=float, help="metres per range bin of REAL (else its .yaml sidecar)")
    p.add_argument("--sim-resolution", type=float, help="metres per range bin of SIM (else its .yaml sidecar)")
    p.add_argument("--layout", default="oxford", choices=("oxford", "range_rows"),
                   help="how a .png is laid out (default oxford: rows = azimuths with the 11-column header)")
    p.add_argument("--db-per-count", type=float, default=0.5, help="log detector step (Navtech: 0.5 dB per count)")
    p.add_argument("--picture", help="write a side-by-side picture (polar and Cartesian) to this PNG")
    p.add_argument("--max-range", type=float, help="metres shown in the Cartesian pictures (default: all)")
    p.add_argument("--json", help="write both statistics as JSON")
    p.set_defaults(func=run)


def load_polar(path: str, resolution: float | None, layout: str):
    """(counts (A, B), azimuth_rad (A,), resolution) of a polar image file."""
    from ...io import radar_image as rio

    file = Path(path)
    if not file.is_file():
        raise ConfigError(f"radar image {path}: no such file")
    if file.suffix.lower() == ".npz":
        try:
            with np.load(file) as data:
                image, azimuth, range_m = data["image"], data["azimuth_rad"], data["range_m"]
        except (OSError, ValueError, KeyError) as exc:
            raise ConfigError(f"radar image {path}: not an npz of `radarays radar` (image, azimuth_rad, range_m): {exc}") from None
        res = resolution or (float(range_m[1] - range_m[0]) if len(range_m) > 1 else None)
        if not res or res <= 0:
            raise ConfigError(f"radar image {path}: cannot tell the range resolution; give it")
        return np.asarray(image), np.asarray(azimuth, np.float64), float(res)
    if file.suffix.lower() != ".png":
        raise ConfigError(f"radar image {path}: the suffix must be .png or .npz")
    if layout == "oxford":
        counts, azimuth, _, _, res = rio.read_oxford_polar(file, resolution)
        return counts, azimuth, res
    from PIL import Image as PILImage

    polar = np.array(PILImage.open(file))
    if polar.ndim != 2 or polar.dtype != np.uint8:
        raise ConfigError(f"radar image {path}: expected an 8-bit grey polar PNG, got {polar.dtype} {polar.shape}")
    if resolution is None:
        raise ConfigError(f"radar image {path}: a range_rows PNG holds no range resolution: give it")
    counts = polar.T.copy()
    return counts, -np.arange(len(counts)) * 2 * np.pi / len(counts), float(resolution)


def _azimuth_step_deg(azimuth: np.ndarray) -> float:
    return 360.0 / max(len(azimuth), 1)


def run(args) -> int:
    from . import format_table, image_stats
    from lidar_ros.compare.cli import is_lidar_frame

    if is_lidar_frame(args.real) and (args.sim is None or is_lidar_frame(args.sim)):
        from lidar_ros.compare.cli import run as lidar_compare

        return lidar_compare(args)

    real = load_polar(args.real, args.real_resolution, args.layout)
    sim = load_polar(args.sim, args.sim_resolution, args.layout)
    if not 0 < args.db_per_count < 100:
        raise ConfigError(f"--db-per-count {args.db_per_count}: must be in (0, 100)")
    stats = [image_stats(c, res, _azimuth_step_deg(az), args.db_per_count) for c, az, res in (real, sim)]
    print(format_table(*stats))
    if args.json:
        Path(args.json).write_text(json.dumps({"real": stats[0].as_dict(), "sim": stats[1].as_dict()}, indent=2))
    if args.picture:
        from ...io.radar_image import comparison_figure

        comparison_figure([real, sim], [Path(args.real).name, Path(args.sim).name], args.picture, args.max_range)
        print(f"picture -> {args.picture}")
    return 0
