"""The README's radar realism pictures and statistics (run from the repository root):

    .venv/bin/python docs/radar/make_pictures.py

One sweep of the shipped street world from 1.5 m above its centre: `navtech_ras6` (physical stage) as a
labelled Cartesian figure, and `navtech_cir204` (RadaRays look) beside `navtech_cir204_realistic`
(physical) through `radarays compare`.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

from radarays_ros.io import radar_image as rio
from radarays_ros.radar import RadarSimulator
from radarays_ros.radar.config import resolve_radar_config
from radarays_ros.world.loader import load_world
from radarays_ros.world.transforms import pose_to_matrix

OUT = Path(__file__).resolve().parent


def main() -> int:
    scene = load_world("street")
    pose = pose_to_matrix(0.0, 0.0, 1.5)
    images = {}
    for preset in ("navtech_ras6", "navtech_cir204", "navtech_cir204_realistic"):
        img = RadarSimulator(resolve_radar_config(preset), scene).simulate(pose, t0_ns=1_700_000_000 * 10**9)
        images[preset] = img
        rio.oxford_polar_png(img, OUT / f"{preset}.png")
    rio.radar_figure(images["navtech_ras6"], OUT / "ras6_street_figure.png", max_range=60.0, dpi=80)
    cmd = [sys.executable, "-m", "radarays_ros.cli", "compare", str(OUT / "navtech_cir204.png"),
           str(OUT / "navtech_cir204_realistic.png"), "--max-range", "60", "--json", str(OUT / "compare_cir204.json"), "--overwrite"]
    subprocess.run(cmd, check=True)
    rio.comparison_figure([rio.read_oxford_polar(OUT / f"{p}.png")[:2] + (images[p].resolution,)
                           for p in ("navtech_cir204", "navtech_cir204_realistic")],
                          ["navtech_cir204", "navtech_cir204_realistic"], OUT / "compare_cir204.png", 60.0, dpi=70)
    for name in ("ras6_street_figure.png", "compare_cir204.png"):  # small files for the repository
        from PIL import Image
        Image.open(OUT / name).convert("RGB").quantize(128).save(OUT / name, optimize=True)
    for preset in images:  # the polar PNGs are inputs of the comparison only
        (OUT / f"{preset}.png").unlink()
        (OUT / f"{preset}.png.yaml").unlink()
    print("counts percentiles (ras6):", np.percentile(images["navtech_ras6"].image, [5, 50, 95, 99.9]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
