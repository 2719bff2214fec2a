"""Batch throughput: runs per hour with 1 and 2 local workers and with Ray (2 workers).

    .venv/bin/python benchmarks/bench_batch.py [--scenarios office_demo hall_demo] [--seeds 2] [--no-ray]

For each engine setting the same manifest (every scenario × `--seeds` seeds) runs into a fresh
folder; the figures are
- bare:       the same runs one after the other inside this process (run_scenario, no batch machinery),
              the cost every batch figure is compared with;
- runs/hour:  per setting, from the batch's wall time (planning, process start, runs, summary);
- batch overhead (1 local worker): wall(1 worker) / wall(bare) - 1;
- parallel efficiency 1 -> 2 workers, each run tracing with 1 thread (the same work per run, the batch
  engine's own scaling; the project's target >= 0.9): wall(1 worker) / (2 · wall(2 workers)); 1.0 is perfect;
- the same with the default threads (cores / workers: 1 worker traces with every core, so this compares
  process parallelism with the tracer's thread parallelism on the same cores);
- Ray per-run overhead: (wall(Ray, 2 workers) - Ray start-up - wall(local, 2 workers)) / runs, and the
  start-up of the local Ray cluster on its own.
On a machine
other people are using at the same time the efficiency says little: run it on a quiet machine.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from radarays_ros.scenario.batch import plan, run_batch  # noqa: E402
from radarays_ros.scenario.runner import run_scenario  # noqa: E402
from radarays_ros.scenario.variation import varied_scenario  # noqa: E402


def timed_batch(manifest: Path, out: Path, engine: str, workers: int, threads: int | None = None) -> tuple[float, dict]:
    start = time.perf_counter()
    result = run_batch(manifest, out, engine=engine, workers=workers, progress=False, threads=threads)
    wall = time.perf_counter() - start
    statuses = {r["status"] for r in result.rows}
    if statuses != {"done"}:
        raise SystemExit(f"{engine} x{workers}: runs not all done: {[(r['id'], r['status'], r['error']) for r in result.rows]}")
    return wall, {"frames": result.frames}


def ray_startup(workers: int) -> float:
    import ray

    start = time.perf_counter()
    ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False, configure_logging=False)
    ray.get(ray.remote(lambda: 1).remote())  # a worker process is up
    elapsed = time.perf_counter() - start
    ray.shutdown()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", nargs="+", default=["office_demo", "hall_demo"])
    parser.add_argument("--seeds", type=int, default=4, help="seeds per scenario")
    parser.add_argument("--no-ray", action="store_true")
    parser.add_argument("--json", metavar="FILE", help="also write the figures here")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench_batch_") as tmp:
        tmp = Path(tmp)
        manifest = tmp / "manifest.yaml"
        manifest.write_text(yaml.safe_dump({"runs": [{"scenario": s, "seeds": list(range(args.seeds))}
                                                     for s in args.scenarios]}))
        _, planned = plan(manifest)
        runs = len(planned)
        cores = os.cpu_count() or 1
        print(f"{runs} runs ({', '.join(args.scenarios)} x {args.seeds} seeds), {cores} cores")

        start = time.perf_counter()
        for run in planned:
            scenario = varied_scenario(run.spec.scenario_path, run.spec.overrides, run.spec.seed, "bench")
            run_scenario(scenario, tmp / f"bare_{run.spec.id}.mcap", quiet=True, backend_options={"threads": cores})
        bare = time.perf_counter() - start

        walls = {}
        walls["local x1 t1"], info = timed_batch(manifest, tmp / "local1t1", "local", 1, threads=1)
        walls["local x2 t1"], _ = timed_batch(manifest, tmp / "local2t1", "local", 2, threads=1)
        walls["local x1"], _ = timed_batch(manifest, tmp / "local1", "local", 1)
        walls["local x2"], _ = timed_batch(manifest, tmp / "local2", "local", 2)
        figures = {"runs": runs, "frames": info["frames"], "bare_s": round(bare, 2)}
        if not args.no_ray:
            figures["ray_startup_s"] = round(ray_startup(2), 2)
            walls["ray x2"], _ = timed_batch(manifest, tmp / "ray2", "ray", 2)

    print(f"{'setting':<12} {'wall s':>8} {'runs/hour':>10} {'x bare':>7}   (tN: N tracing threads per run)")
    print(f"{'bare':<12} {bare:>8.1f} {runs / bare * 3600:>10.0f} {1.0:>7.2f}")
    for name, wall in walls.items():
        print(f"{name:<12} {wall:>8.1f} {runs / wall * 3600:>10.0f} {wall / bare:>7.2f}")
        figures[f"{name.replace(' ', '_')}_s"] = round(wall, 2)
        figures[f"{name.replace(' ', '_')}_runs_per_hour"] = round(runs / wall * 3600, 1)
    efficiency = walls["local x1 t1"] / (2 * walls["local x2 t1"])
    shared_cores = walls["local x1"] / (2 * walls["local x2"])
    figures["batch_overhead_1_worker"] = round(walls["local x1"] / bare - 1, 3)
    figures["parallel_efficiency_1_to_2"] = round(efficiency, 3)
    figures["parallel_efficiency_1_to_2_shared_cores"] = round(shared_cores, 3)
    print(f"batch overhead, 1 local worker vs bare (same threads): {figures['batch_overhead_1_worker'] * 100:+.1f} %")
    print(f"parallel efficiency 1 -> 2 local workers, 1 thread per run: {efficiency:.2f} (target >= 0.9)")
    print(f"the same with cores / workers threads per run: {shared_cores:.2f} "
          f"(2 workers give {walls['local x1'] / walls['local x2']:.2f}x the runs/hour of 1 worker tracing on every core)")
    if "ray x2" in walls:
        per_run = (walls["ray x2"] - figures["ray_startup_s"] - walls["local x2"]) / runs
        figures["ray_overhead_per_run_s"] = round(per_run, 3)
        print(f"Ray: local cluster start-up {figures['ray_startup_s']:.1f} s; per-run overhead vs local x2 "
              f"{per_run:+.2f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
