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

from ...errors import ConfigError, one_line
from ...io.npz_files import read_npz
from ...output_files import add_overwrite_argument, check_new, replacing
from ...validate import Rule


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
    add_overwrite_argument(p)
    p.set_defaults(func=run)


def load_polar(path: str, resolution: float | None, layout: str):
    """(counts (A, B), azimuth_rad (A,), resolution) of a polar image file."""
    from ...io import radar_image as rio

    file = Path(path)
    if not file.is_file():
        raise ConfigError(f"radar image {path}: no such file")
    if resolution is not None:
        RESOLUTION.check(resolution, f"radar image {path}: resolution")
    if file.suffix.lower() == ".npz":
        data = read_npz(file, "radar image")
        try:
            image, azimuth, range_m = data["image"], data["azimuth_rad"], data["range_m"]
        except KeyError as exc:
            raise ConfigError(f"radar image {path}: not an npz of `radarays radar` (image, azimuth_rad, range_m): "
                              f"no array {one_line(str(exc), 60)}") from None
        if resolution is None and np.ndim(range_m) == 1 and len(range_m) > 1 and range_m.dtype.kind in "uif":
            with np.errstate(all="ignore"):  # inf - inf, 1e308 + 1e308: nan or inf, refused below
                res = float(np.float64(range_m[1]) - np.float64(range_m[0]))
        else:
            res = resolution
        if not isinstance(res, float) or not 0 < res < 100:  # nan fails too
            raise ConfigError(f"radar image {path}: cannot tell the range resolution; give it")
        image, azimuth = np.asarray(image), np.asarray(azimuth)
        if image.ndim != 2 or image.dtype.kind not in "uif" or azimuth.shape != image.shape[:1] \
                or azimuth.dtype.kind not in "uif" or not np.all(np.isfinite(azimuth)) or not np.all(np.isfinite(image)):
            raise ConfigError(f"radar image {path}: expected a finite 2-D image [azimuths, bins] and one finite "
                              f"azimuth per row, got image {image.dtype} {image.shape}, azimuth_rad {azimuth.shape}")
        return image, azimuth.astype(np.float64), float(res)
    if file.suffix.lower() != ".png":
        raise ConfigError(f"radar image {path}: the suffix must be .png or .npz")
    if layout == "oxford":
        if resolution is None and not Path(str(file) + ".yaml").is_file():
            resolution, rule = infer_resolution(file)
            print(f"{file.name}: range resolution {resolution} m ({rule})")
        counts, azimuth, _, _, res = rio.read_oxford_polar(file, resolution)
        return counts, azimuth, res
    polar = rio.read_picture(file, "radar image")
    if polar.ndim != 2 or polar.dtype != np.uint8:
        raise ConfigError(f"radar image {path}: expected an 8-bit grey polar PNG, got {polar.dtype} {polar.shape}")
    if resolution is None:
        raise ConfigError(f"radar image {path}: a range_rows PNG holds no range resolution: give it")
    counts = polar.T.copy()
    return counts, -np.arange(len(counts)) * 2 * np.pi / len(counts), float(resolution)


BOREAS_SWITCH_S = 1632182400  # 2021-09-21 00:00 UTC: pyboreas reads 0.04381 m bins after it, 0.0596 m before
OXFORD_END_S = 1577836800  # 2020-01-01: Oxford Radar RobotCar (2019) frames lie before Boreas (2020 on)
RESOLUTION_HINT = ("give --real-resolution / --sim-resolution: 0.0432 (Oxford Radar RobotCar, CTS350-X), "
                   "0.0596 (Boreas before 2021-09-21, MulRan CIR204-H: 0.0595238), 0.04381 (Boreas after)")


def infer_resolution(path: Path) -> tuple[float, str]:
    """(metres per bin, the rule) of an Oxford/Boreas polar PNG without a sidecar, as the dataset readers
    decide: the file is named by its timestamp (microseconds); pyboreas (utils/radar.py) reads 0.04381 m
    after 2021-09-21 and 0.0596 m before; the Oxford SDK (radar.py) always 0.0432 m, and Oxford's
    recordings are from 2019, before Boreas began. Else the number of bins decides (3768: Oxford; 6848:
    Boreas RAS6). ConfigError naming the options when neither does."""
    from PIL import Image as PILImage

    stem = path.stem
    if stem.isdigit() and 15 <= len(stem) <= 19:
        seconds = int(stem) / 10 ** (len(stem) - 10)
        if seconds >= BOREAS_SWITCH_S:
            return 0.04381, "pyboreas: a Boreas frame after 2021-09-21"
        if seconds >= OXFORD_END_S:
            return 0.0596, "pyboreas: a Boreas frame before 2021-09-21"
        return 0.0432, "Oxford robotcar-dataset-sdk: a 2019 frame"
    try:
        with PILImage.open(path) as picture:  # the header only (closed: no ResourceWarning on stderr)
            width = picture.size[0] - 11
    except (OSError, ValueError, PILImage.DecompressionBombError):
        width = None
    if width == 3768:
        return 0.0432, "3768 bins: Oxford Radar RobotCar (CTS350-X)"
    if width == 6848:
        return 0.04381, "6848 bins: Boreas (RAS6)"
    raise ConfigError(f"radar PNG {path}: the range resolution is not in the file, there is no {path.name}.yaml "
                      f"beside it and its name is no timestamp to decide by; {RESOLUTION_HINT}")


RESOLUTION = Rule(float, 0.0, 100.0, lo_open=True, hi_open=True, doc="metres per range bin")
MAX_RANGE = Rule(float, 0.1, 1e6, doc="metres (a Cartesian picture of less than 0.1 m shows no bin)")
DB_PER_COUNT = Rule(float, 0.0, 100.0, lo_open=True, hi_open=True, doc="dB per count")


def _azimuth_step_deg(azimuth: np.ndarray) -> float:
    return 360.0 / max(len(azimuth), 1)


def run(args) -> int:
    from . import co_register, format_profiles, format_table, image_stats, mutual_information, ssim
    from lidar_ros.compare.cli import is_lidar_frame

    if is_lidar_frame(args.real) and (args.sim is None or is_lidar_frame(args.sim)):
        from lidar_ros.compare.cli import run as lidar_compare

        return lidar_compare(args)

    DB_PER_COUNT.check(args.db_per_count, "--db-per-count")
    if args.max_range is not None:
        MAX_RANGE.check(args.max_range, "--max-range")
    for name in ("real_resolution", "sim_resolution"):
        if getattr(args, name) is not None:
            RESOLUTION.check(getattr(args, name), "--" + name.replace("_", "-"))
    outputs = [Path(p) for p in (args.json, args.picture) if p]
    check_new(outputs, args.overwrite)  # before the work
    real = load_polar(args.real, args.real_resolution, args.layout)
    sim = load_polar(args.sim, args.sim_resolution, args.layout)
    for (counts, _, _), path in ((real, args.real), (sim, args.sim)):
        if counts.ndim != 2 or min(counts.shape) < 2:  # statistics of an empty image would be NaN
            raise ConfigError(f"radar image {path}: at least 2 azimuths x 2 range bins, got {counts.shape}")
    stats = [image_stats(c, res, _azimuth_step_deg(az), args.db_per_count) for c, az, res in (real, sim)]
    print(format_table(*stats))
    print(format_profiles(*stats))
    a, b = co_register(real, sim)
    if min(a.shape) < 2:  # the ranges both cover hold under 2 of REAL's bins: MI and SSIM of nothing are NaN
        reach = min(real[0].shape[1] * real[2], sim[0].shape[1] * sim[2])
        raise ConfigError(f"REAL {args.real} and SIM {args.sim} share {reach:.4g} m of range, fewer than 2 of REAL's "
                          f"{real[2]:g} m bins: check the range resolutions of both")
    similarity = {"mutual_information": mutual_information(a, b), "ssim": ssim(a, b),
                  "grid": f"{a.shape[0]} azimuths x {a.shape[1]} bins of {real[2]:g} m (REAL's)"}
    print(f"similarity on REAL's polar grid: mutual information {similarity['mutual_information']:.4g} nats, "
          f"SSIM {similarity['ssim']:.4g}")
    if args.json:
        with replacing(args.json, args.overwrite) as tmp:  # a temporary name, renamed when complete
            tmp.write_text(json.dumps({"real": stats[0].as_dict(), "sim": stats[1].as_dict(),
                                       "similarity": similarity}, indent=2))
    if args.picture:
        from ...io.radar_image import comparison_figure

        names = [f"{label} {Path(path).name}\n{len(c)} az x {c.shape[1]} bins of {res:g} m"
                 for label, path, (c, _, res) in (("REAL", args.real, real), ("SIM", args.sim, sim))]
        with replacing(args.picture, args.overwrite) as tmp:
            comparison_figure([real, sim], names, tmp, args.max_range)
        print(f"picture -> {args.picture}")
    return 0
