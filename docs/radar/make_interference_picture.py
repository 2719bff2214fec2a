"""The README's mutual-interference picture (run from the repository root):

    .venv/bin/python docs/radar/make_interference_picture.py

One `navtech_ras6` sweep of the shipped street world from 1.5 m above its centre, with a `navtech_cts350x`
12 m ahead and 4 m to the right at the same height (its clock set so that the two beams meet once a turn, the worst case, and the picture is the same every run):
the spokes of its chirps crossing ours (radar/physical/interference.py).
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from radarays_ros.io import radar_image as rio
from radarays_ros.radar import RadarSimulator
from radarays_ros.radar.config import resolve_radar_config
from radarays_ros.world.loader import load_world
from radarays_ros.world.transforms import pose_to_matrix

OUT = Path(__file__).resolve().parent
OTHER = {"interference.preset": "navtech_cts350x", "interference.x_m": 12.0, "interference.y_m": -4.0,
         "interference.z_m": 1.5, "interference.heading_deg": 90.0, "interference.clock_offset_s": 0.0628}


def main() -> int:
    scene = load_world("street")
    pose = pose_to_matrix(0.0, 0.0, 1.5)
    alone = RadarSimulator(resolve_radar_config("navtech_ras6"), scene).simulate(pose, t0_ns=1_700_000_000 * 10**9)
    img = RadarSimulator(resolve_radar_config("navtech_ras6", OTHER), scene).simulate(pose, t0_ns=1_700_000_000 * 10**9)
    path = OUT / "ras6_interference_figure.png"
    rio.radar_figure(img, path, title="navtech_ras6 beside a navtech_cts350x at (12, -4) m: interference spokes",
                     max_range=60.0, dpi=80)
    from PIL import Image
    Image.open(path).convert("RGB").quantize(128).save(path, optimize=True)  # a small file for the repository
    rise = np.median(img.image, axis=1) - np.median(alone.image, axis=1)  # counts (0.5 dB each) of the azimuth's median
    print(f"azimuths whose median rose by >= 6 counts (3 dB): {int((rise >= 6).sum())} of {len(rise)}; the largest rises:",
          {int(k): f"{np.median(alone.image[k]):.0f} -> {np.median(img.image[k]):.0f} counts" for k in np.argsort(rise)[::-1][:3]})
    return 0


if __name__ == "__main__":
    sys.exit(main())
