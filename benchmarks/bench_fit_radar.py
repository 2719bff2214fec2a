"""Sensor-stage fit benchmark: `radarays fit radar` on one simulated 400-azimuth frame (issue #24 budget:
under a minute on 2 cores).

The "real" frame is the preset's physical stage with known receiver values (no openly licensed real
frame is at hand); the fit starts from the preset with the default registry keys. Prints wall and CPU
seconds per fit (this process, all threads), the evaluations and the recovered values.
Run: PYTHONPATH=$PWD .venv/bin/python benchmarks/bench_fit_radar.py [--repeats 3] [--preset navtech_ras6] [--workers 2]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script or with -m

from radarays_ros.radar.config import resolve_radar_config  # noqa: E402
from radarays_ros.radar.fit import params as registry  # noqa: E402
from radarays_ros.radar.fit.sensor import fit_sensor, quiet_frame  # noqa: E402

TRUTH = {"receiver.noise_figure_db": 16.0, "receiver.stc_range_m": 6.0, "receiver.leakage_dbm": -70.0,
         "fmcw.bandwidth_hz": 7e8}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="navtech_ras6")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--max-evaluations", type=int, default=360)
    parser.add_argument("--workers", type=int, default=1, help="threads of the simulated stage (default 1)")
    args = parser.parse_args(argv)
    base = resolve_radar_config(args.preset)
    real = quiet_frame(base.with_overrides(TRUTH), seed=7, azimuths=base.azimuth.count)
    params = registry.available(registry.defaults(), base)
    for i in range(args.repeats):
        cpu, wall = time.process_time(), time.perf_counter()
        fit = fit_sensor([real], base, params, seed=i, max_evaluations=args.max_evaluations, workers=args.workers)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        print(f"fit {i}: wall {wall:.1f} s, cpu {cpu:.1f} s, {fit.evaluations} evaluations, "
              f"objective {fit.objective[0]:.3g} -> {fit.best[-1]:.3g}")
        print("  " + ", ".join(f"{k.split('.')[-1]} {v:.4g} (true {TRUTH.get(k, registry.select([k])[0].get(base)):.4g})"
                               for k, v in fit.values.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
