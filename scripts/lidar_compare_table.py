"""Re-make the README's "sim vs the six shared real frames" table: simulate each frame with the README's
command (`radarays lidar WORLD --sensor S --realistic --pose P --seed 1 --out sim.npz`), compare it with the real
frame (`radarays lidar compare REAL sim.npz --json`) and print the table's rows as real / sim.

    PYTHONPATH=$PWD python scripts/lidar_compare_table.py [--shared ../shared] [--keep DIR] [--set KEY=VALUE ...]
        [--only COLUMN ...]

The real frames are read from SHARED/realdata (a sibling of the checkout); `--set` is passed to every simulation
(e.g. `--set foliage.volume=false` to see a switch's share). Prints progress per frame on stderr.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import sys
import tempfile
from pathlib import Path

WORLDS = "radarays_ros/data/worlds"
# (column, real frame under realdata/, world, sensor (a path under realdata/ or a preset), pose, extra sets)
FRAMES = (
    ("OS-2-128", "ouster/OS-2-128-U1_v2.3.0_1024x10.npz", "street", "ouster/OS-2-128-U1_v2.3.0_1024x10.json",
     "0 0 1.8 0 0 0", ()),
    ("OS-0-128 dual", "ouster/single_scan_016.npz", "street", "ouster/single_scan_016.json", "0 0 1.2 0 0 0", ()),
    ("OS-0-128 LB", "ouster/OS-0-128-U1_v2.3.0_1024x10.npz", "hall", "ouster/OS-0-128-U1_v2.3.0_1024x10.json",
     "0 0 1.2 0 0 0", ()),
    ("OS-1-64", "ouster/OS-1-64_1024x10_fw20.npz", "office", "ouster/OS-1-64_sensor_config_reduced.json",
     "1 0 1.2 0 0 0", ()),
    ("VLP-16", "nebula/vlp16/nebula_vlp16_1673400472138016708.npz", "office", "VLP-16", "1 0 1.2 0 0 0",
     ("beam.return_mode=dual",)),
    ("XT32", "nebula/xt32/nebula_xt32_1673400678101968885.npz", "office", "XT32", "1 0 1.2 0 0 0",
     ("beam.return_mode=dual",)),
)
# (README row, statistic, scale, format)
ROWS = (
    ("hole fraction (misses inside the scene)", "hole_fraction", 1, ".2g"),
    ("share of holes at depth edges", "hole_at_edge", 1, ".2g"),
    ("share of holes explained by nothing (salt)", "hole_at_unexplained", 1, ".2g"),
    ("reflectivity: distinct values", "reflectivity_distinct", 1, ".0f"),
    ("reflectivity texture (mean neighbour step / median)", "reflectivity_texture", 1, ".2g"),
    ("signal·r²/ρ at 8–16 m", "signal_r2_rho_8_16m", 1, ".2g"),
    ("signal·r²/ρ, 0.5–2 m over 4–16 m", "signal_near_rolloff", 1, ".2g"),
    ("near_ir row-gain spread (scene divided out)", "near_ir_row_gain", 1, ".2g"),
    ("near_ir row banding", "near_ir_row_banding", 1, ".2g"),
    ("near_ir returns / misses", "near_ir_return_to_miss", 1, ".2f"),
    ("second echoes / returns", "second_fraction", 1, ".2g"),
    ("second echo farther than the first", "second_farther", 1, ".2g"),
    ("second echo without a first", "second_without_first", 1, ".2g"),
    ("range noise under 5 m (mm)", "range_noise_near_m", 1000, ".1f"),
    ("the same × √SIGNAL, binned by SIGNAL ≤ 512 (mm)", "range_noise_near_sqrt_signal_m", 1000, ".0f"),
    ("range noise 5–20 m (mm)", "range_noise_mid_m", 1000, ".1f"),
    ("column jitter (µs)", "column_jitter_us", 1, ".2f"),
)


def _cell(value, scale: float, fmt: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    text = format(value * scale, fmt)
    return text.replace("e+0", "e").replace("e-0", "e-")  # 4.1e4, as the README writes it


def compare_frame(realdata: Path, out: Path, column: str, real: str, world: str, sensor: str, pose: str,
                  sets: tuple[str, ...]) -> dict:
    """Simulate one frame as the README says and return {"real": stats, "sim": stats}."""
    from radarays_ros.cli import main

    sensor_arg = str(realdata / sensor) if "/" in sensor else sensor
    sim = out / f"{column.replace(' ', '_')}.npz"
    stats = out / f"{column.replace(' ', '_')}.json"
    argv = ["lidar", f"{WORLDS}/{world}.sdf", "--sensor", sensor_arg, "--realistic", "--pose", pose, "--seed", "1",
            "--out", str(sim)]
    for s in sets:
        argv += ["--set", s]
    with contextlib.redirect_stdout(io.StringIO()):  # the commands' own reports; the table is this script's output
        if main(argv) != 0:
            raise SystemExit(f"simulating {column} failed: radarays {' '.join(argv)}")
        if main(["lidar", "compare", str(realdata / real), str(sim), "--json", str(stats)]) != 0:
            raise SystemExit(f"comparing {column} failed")
    return json.loads(stats.read_text())


def table(results: dict[str, dict]) -> str:
    names = list(results)
    lines = ["| statistic | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for label, key, scale, fmt in ROWS:
        cells = [f"{_cell(r['real'].get(key), scale, fmt)} / {_cell(r['sim'].get(key), scale, fmt)}"
                 for r in results.values()]
        cells = ["–" if c == "– / –" else c for c in cells]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shared", default="../shared", help="the shared folder holding realdata/ (default ../shared)")
    p.add_argument("--keep", help="keep the simulated frames and statistics in this folder")
    p.add_argument("--set", action="append", default=[], help="KEY=VALUE passed to every simulation")
    p.add_argument("--only", action="append", choices=[f[0] for f in FRAMES], help="just these columns")
    args = p.parse_args(argv)
    realdata = Path(args.shared) / "realdata"
    if not realdata.is_dir():
        raise SystemExit(f"no real frames at {realdata} (--shared names the folder holding realdata/)")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(args.keep) if args.keep else Path(tmp)
        out.mkdir(parents=True, exist_ok=True)
        results = {}
        chosen = [f for f in FRAMES if not args.only or f[0] in args.only]
        for column, real, world, sensor, pose, sets in chosen:
            print(f"[{len(results) + 1}/{len(chosen)}] {column}: {world}", file=sys.stderr, flush=True)
            results[column] = compare_frame(realdata, out, column, real, world, sensor, pose, (*sets, *args.set))
    print(table(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
