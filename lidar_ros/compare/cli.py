"""`radarays lidar compare REAL [SIM]`: a real and a simulated frame of one lidar, statistics side by side.

REAL and SIM are lidar frames: an Ouster or nebula (VLP-16, XT32) `.npz` as in shared/realdata, an `.npz`
written by `radarays lidar`, or an Ouster `.pcap` (+ metadata JSON) / `.osf` through ouster-sdk. The
statistics (lidar_ros/compare/stats.py explains each) come as a Markdown table; --picture draws every
channel's panorama on one colour scale, and the histograms. Without SIM: the statistics of REAL alone.
"""
from __future__ import annotations

import argparse
import json
import math
from dataclasses import replace
from pathlib import Path


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("real", help="real frame: shared/realdata .npz, Ouster .pcap (+ --real-meta) or .osf")
    p.add_argument("sim", nargs="?", help="simulated frame of the same sensor (`radarays lidar --out X.npz`)")
    p.add_argument("--real-meta", help="Ouster metadata JSON of a REAL .pcap (default: REAL with .json)")
    p.add_argument("--sim-meta", help="Ouster metadata JSON of a SIM .pcap")
    p.add_argument("--scan", type=int, default=0, help="which scan of a several-scan SIM .npz (default 0)")
    p.add_argument("--picture", help="write the side-by-side panoramas and histograms to this PNG")
    p.add_argument("--json", help="write the statistics as JSON")
    p.set_defaults(func=run)


def parser(prog: str = "radarays lidar compare") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    add_arguments(p)
    return p


def is_lidar_frame(path: str) -> bool:
    """Whether a file looks like a lidar frame (so that `radarays compare` hands it over here)."""
    import numpy as np

    file = Path(path)
    if file.suffix.lower() in (".pcap", ".osf"):
        return True
    if file.suffix.lower() != ".npz" or not file.is_file():
        return False
    try:
        with np.load(file) as data:
            keys = set(data.files)
    except (OSError, ValueError):
        return False
    return bool({"range_mm", "grid_distance_raw"} & keys) or {"range", "xyz"} <= keys


def run(args) -> int:
    from radarays_ros.io.lidar_frames import read_lidar_frame

    from . import check_same_sensor, format_table, frame_stats

    frames = [read_lidar_frame(args.real, getattr(args, "real_meta", None))]
    if args.sim:
        frames.append(read_lidar_frame(args.sim, getattr(args, "sim_meta", None), getattr(args, "scan", 0)))
        check_same_sensor(*frames)
    frames = [replace(f, name=("real: " if i == 0 else "sim: ") + f.name) for i, f in enumerate(frames)]
    stats = [frame_stats(f) for f in frames]
    print(format_table([f.name for f in frames], stats))
    if args.json:
        clean = [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in s.items()} for s in stats]
        Path(args.json).write_text(json.dumps(dict(zip(("real", "sim"), clean)), indent=2))
    if args.picture:
        from radarays_ros.io.lidar_compare_picture import comparison_picture

        comparison_picture(frames, args.picture)
        print(f"picture -> {args.picture}")
    return 0
