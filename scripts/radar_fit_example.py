"""The README's sim-against-sim example of `radarays fit radar` (issue #24): a quiet 400-azimuth `navtech_ras6`
frame made with known receiver values (a truth the preset can express), fitted through the command line from
the shipped preset with every default key. Writes OUT/real.npz, OUT/my_ras6.yaml, OUT/my_ras6_report.md and
OUT/my_ras6_report.png, and prints the preset / true / fitted ± 1 sigma table.

    PYTHONPATH=$PWD python scripts/radar_fit_example.py --out /tmp/fit_example [--seed 21]
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from radarays_ros.cli import main as cli_main
from radarays_ros.radar.config import resolve_radar_config
from radarays_ros.radar.fit import params as registry
from radarays_ros.radar.fit.sensor import quiet_frame

TRUTH = {"receiver.noise_figure_db": 16.0, "receiver.highpass_range_m": 6.0, "receiver.leakage_dbm": -35.0,
         "fmcw.bandwidth_hz": 7.0e8}


def write_npz(path: Path, counts: np.ndarray, resolution: float) -> Path:
    azimuths, bins = counts.shape
    np.savez(path, image=counts, azimuth_rad=-np.arange(azimuths) * 2 * np.pi / azimuths,
             range_m=np.arange(bins) * resolution)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=21)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    preset = resolve_radar_config("navtech_ras6")
    truth = preset.with_overrides(TRUTH)
    real = write_npz(args.out / "real.npz", quiet_frame(truth, seed=args.seed, azimuths=400), preset.range.resolution)
    fitted_path = args.out / "my_ras6.yaml"
    code = cli_main(["fit", "radar", str(real), "--preset", "navtech_ras6", "--out", str(fitted_path),
                     "--seed", str(args.seed), "--overwrite", "--quiet"])
    if code != 0:
        raise SystemExit(code)
    print_table(args.out / "my_ras6_report.md", preset, truth)


def print_table(report: Path, preset, truth) -> None:
    """The report's fitted keys (start, fitted, 1 sigma) beside the preset's and the truth's values."""
    print("| key | preset | true | fitted ± 1σ |")
    print("|---|---|---|---|")
    for line in report.read_text().splitlines():
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if len(cells) != 4 or not cells[0].startswith(("receiver.", "fmcw.", "antenna.")):
            continue
        key, _, fitted, sigma = cells
        param = registry.select([key])[0]
        print(f"| {key} | {param.get(preset):.4g} | {param.get(truth):.4g} | {float(fitted):.4g} ± {sigma} |")

if __name__ == "__main__":
    main()
