"""`radarays batch`: the runs of a manifest, on a local process pool or a Ray cluster, resumable.

A batch, in order:
1. plan      manifest.py lists the runs (scenario × seed × drawn variation, ids from content);
             every run's scenario is built with its overrides and every sensor config checked here,
             so a bad manifest is one error before any run starts;
2. resume    a run whose DIR/<id>/run.json says done, with the same content hash and the bag it
             names intact (size and SHA-256), is skipped;
3. run       `batch_run.execute_run` (the same function under both engines, engines.py) writes DIR/<id>/bag.mcap (under a
             temporary name until complete), pictures if asked, run.log, and run.json last;
             a worker that dies (killed, out of memory) is retried up to `retries` times; a run that
             raises is reported failed and the others go on;
4. summary   DIR/summary.json and a table (skipped with --index: many jobs share DIR).

Results do not depend on the engine or the worker count: a run's every random draw comes from its
seed (variation.py), and tracing is deterministic whatever its thread count.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .batch_run import RUN_FILE, drop_unfinished_bag, is_done, log_line, software_version, utc_text, write_json
from .engines import make_engine
from .manifest import Manifest, RunSpec, canonical, load_manifest

MAX_THREADS = 1024  # tracing threads per run (a thread pool each; more than any machine's cores)
MARKER = "batch.json"  # marks DIR as a batch folder this program may write into


# -- finding scenarios --------------------------------------------------------------------------
def resolve_scenario(text: str, base: Path, where: str) -> Path:
    """A scenario file: a path (relative to the manifest's folder, or as given), else a shipped name."""
    from ..resources import find_shipped, not_shipped
    from ..validate import check_path

    check_path(text, where)
    for candidate in (base / text, Path(text).expanduser()):
        if candidate.is_file():
            return candidate.resolve()
    found = find_shipped("scenario", text)
    if found is None:
        raise ConfigError(f"{where}: {not_shipped('scenario', text)}")
    return Path(found).resolve()


# -- planning -----------------------------------------------------------------------------------
@dataclass
class PlannedRun:
    spec: RunSpec
    content: str  # hash of everything the run's bytes depend on (checked on resume)


def plan(manifest_path: str | Path, pictures: bool = False) -> tuple[Manifest, list[PlannedRun]]:
    """Every run of a manifest, validated (one ConfigError before anything runs)."""
    from .variation import check_sensor_configs, varied_scenario

    manifest = load_manifest(manifest_path, resolve_scenario, pictures=pictures)
    file_hashes: dict[str, str] = {}
    checked: dict[str, str] = {}
    planned = []
    for spec in manifest.runs:
        where = f"manifest {manifest.path}: runs[{spec.row}] ({spec.scenario}, seed {spec.seed})"
        key = canonical([spec.scenario_path, spec.overrides])
        if key not in checked:  # the same overrides validate once, whatever the seed
            scenario = varied_scenario(spec.scenario_path, spec.overrides, spec.seed, where)
            check_sensor_configs(scenario, where)
            inputs = [spec.scenario_path, str(scenario.world)]
            if isinstance(scenario.materials, Path):
                inputs.append(str(scenario.materials))
            trajectory = hashlib.sha256(scenario.trajectory.t_ns.tobytes() + scenario.trajectory.poses.tobytes())
            checked[key] = canonical({"files": [_file_hash(p, file_hashes) for p in inputs],
                                      "trajectory": trajectory.hexdigest()})
        content = hashlib.sha256(canonical({"run": {k: v for k, v in spec.to_dict().items() if k not in ("index", "row")},
                                            "inputs": checked[key]}).encode()).hexdigest()
        planned.append(PlannedRun(spec, content))
    return manifest, planned


def check_rows(manifest_path: str | Path, pictures: bool = False) -> Manifest:
    """The manifest's runs with each row's first run validated as plan() validates every run: what
    `batch --list` prints. Listing a million runs takes minutes (~0.2 ms a run: the draws and ids),
    where validating each (plan: ~6-16 ms a varied run, measured under load) would take hours."""
    from .variation import check_sensor_configs, varied_scenario

    manifest = load_manifest(manifest_path, resolve_scenario, pictures=pictures)
    seen = set()
    for spec in manifest.runs:
        if spec.row not in seen:
            seen.add(spec.row)
            where = f"manifest {manifest.path}: runs[{spec.row}] ({spec.scenario}, seed {spec.seed})"
            check_sensor_configs(varied_scenario(spec.scenario_path, spec.overrides, spec.seed, where), where)
    return manifest


def _file_hash(path: str, cache: dict) -> str:
    if path not in cache:
        cache[path] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    return cache[path]


# -- the batch ------------------------------------------------------------------------------------
@dataclass
class BatchResult:
    rows: list = field(default_factory=list)  # per run: id, index, scenario, seed, status, attempts, frames, wall_s, error
    wall_s: float = 0.0
    interrupted: bool = False

    def count(self, status: str) -> int:
        return sum(1 for r in self.rows if r["status"] == status)

    @property
    def frames(self) -> int:
        return sum(r.get("frames", 0) for r in self.rows if r["status"] == "done")


def prepare_out(out: Path, manifest: Path) -> None:
    """DIR must be new, empty, or a batch folder written by radarays (nothing else is written into)."""
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out}: exists and is not a folder")
    if out.is_dir() and any(out.iterdir()) and not (out / MARKER).is_file():
        raise ConfigError(f"--out {out}: exists, is not empty and is not a radarays batch folder (no {MARKER}); "
                          "give a new or empty folder")
    out.mkdir(parents=True, exist_ok=True)
    if not (out / MARKER).is_file():
        write_json(out / MARKER, {"manifest": str(manifest), "created": utc_text(time.time()), "version": software_version()})


def run_batch(manifest_path: str | Path, out: str | Path, engine: str = "local", workers: int | None = None,
              address: str | None = None, index: int | None = None, pictures: bool = False,
              progress: bool = True, stream=None, threads: int | None = None) -> BatchResult:
    """Plan, resume, run and summarise (see the module doc); KeyboardInterrupt cancels cleanly and re-raises.

    `threads`: tracing threads per run; None shares the local cores among the workers (Ray: 1 per task)."""
    if threads is not None and not (isinstance(threads, int) and 1 <= threads <= MAX_THREADS):
        raise ConfigError(f"--threads {threads}: tracing threads per run, allowed 1 .. {MAX_THREADS}")
    with interrupts_raise():
        return _run_batch(manifest_path, out, engine, workers, address, index, pictures, progress, stream, threads)


@contextlib.contextmanager
def interrupts_raise():
    """SIGINT and SIGTERM raise KeyboardInterrupt here, whatever the process inherited: a batch started
    in the background or under nohup has SIGINT ignored, and Python then installs no handler of its own
    (Ctrl-C would kill only the workers, which the batch would retry). Restored afterwards."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    for sig in previous:
        signal.signal(sig, interrupt)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)


def _run_batch(manifest_path, out, engine, workers, address, index, pictures, progress, stream, threads) -> BatchResult:
    started = time.time()
    manifest, planned = plan(manifest_path, pictures)
    if index is not None:
        if not 0 <= index < len(planned):
            raise ConfigError(f"--index {index}: the manifest has {len(planned)} runs (0 .. {len(planned) - 1})")
        planned = [planned[index]]
    out = Path(out)
    prepare_out(out, manifest.path)
    result = BatchResult()
    rows = {run.spec.id: _row(run.spec, "pending") for run in planned}
    todo = deque()
    for run in planned:
        record = is_done(run, out)
        if record is not None:
            rows[run.spec.id].update(status="skipped", frames=sum(record.get("frames", {}).values()),
                                     attempts=record.get("attempts", 1), wall_s=record.get("wall_s", 0.0))
        else:
            todo.append(run)
    bar = _bar(len(planned), progress, stream)
    bar.update(len(planned) - len(todo))
    with (out / "batch.log").open("a", encoding="utf8") as log:
        log_line(log, f"batch {manifest.path}: {len(planned)} runs, {len(planned) - len(todo)} already done, "
                  f"engine {engine}")
        runner = None
        in_flight: dict = {}
        try:
            if todo:
                runner = make_engine(engine, workers, address)
                # local: the cores shared among the workers; Ray: one core per task, as Ray accounts for it
                if threads is None:
                    threads = max(1, (os.cpu_count() or 1) // runner.workers) if runner.name == "local" else 1
                attempts: dict[str, int] = {}
                while todo or in_flight:
                    while todo and len(in_flight) < runner.workers:
                        run = todo.popleft()
                        attempts[run.spec.id] = attempts.get(run.spec.id, 0) + 1
                        task = {"spec": run.spec.to_dict(), "out": str(out.resolve()), "content": run.content,
                                "attempt": attempts[run.spec.id], "threads": threads}
                        in_flight[runner.submit(task)] = run
                        log_line(log, f"{run.spec.id}: attempt {attempts[run.spec.id]} started")
                    for job, record, reason in runner.wait(list(in_flight), timeout=1.0):
                        run = in_flight.pop(job)
                        row = rows[run.spec.id]
                        if record is None and attempts[run.spec.id] <= manifest.retries:
                            log_line(log, f"{run.spec.id}: {reason}; retrying")
                            todo.appendleft(run)
                            continue
                        if record is None:
                            record = _crashed_record(run, out, attempts[run.spec.id], reason)
                        row.update(status=record["status"], attempts=attempts[run.spec.id],
                                   frames=sum(record.get("frames", {}).values()), wall_s=record.get("wall_s", 0.0),
                                   error=record.get("error", ""))
                        log_line(log, f"{run.spec.id}: {record['status']}" + (f": {row['error']}" if row["error"] else ""))
                        bar.update(1)
                        bar.set_postfix_str(f"failed {sum(r['status'] == 'failed' for r in rows.values())}",
                                            refresh=False)
        except KeyboardInterrupt:
            result.interrupted = True
            log_line(log, "interrupted: cancelling runs in progress")
            if runner is not None and in_flight:
                runner.cancel(list(in_flight))
            for run in in_flight.values():
                rows[run.spec.id]["status"] = "interrupted"
                drop_unfinished_bag(run, out)
        finally:
            if runner is not None:
                runner.close()
            bar.close()
    result.rows = list(rows.values())
    result.wall_s = time.time() - started
    if index is None:
        write_summary(out / "summary.json", manifest, engine, result)
    if result.interrupted:
        raise KeyboardInterrupt
    return result


def _crashed_record(run: PlannedRun, out: Path, attempts: int, reason: str) -> dict:
    spec = run.spec
    record = {"id": spec.id, "index": spec.index, "scenario": spec.scenario, "scenario_path": spec.scenario_path,
              "seed": spec.seed, "set": spec.set, "drawn": spec.drawn, "pictures": spec.pictures,
              "content": run.content, "version": software_version(), "attempts": attempts, "status": "failed",
              "error": f"{reason} on each of {attempts} attempts"}
    (out / spec.id).mkdir(parents=True, exist_ok=True)
    write_json(out / spec.id / RUN_FILE, record)
    return record


def _row(spec: RunSpec, status: str) -> dict:
    return {"id": spec.id, "index": spec.index, "scenario": spec.scenario, "seed": spec.seed, "drawn": spec.drawn,
            "status": status, "attempts": 0, "frames": 0, "wall_s": 0.0, "error": ""}


def write_summary(path: Path, manifest: Manifest, engine: str, result: BatchResult) -> None:
    ran = [r for r in result.rows if r["status"] in ("done", "failed")]
    write_json(path, {
        "manifest": str(manifest.path), "engine": engine, "version": software_version(),
        "finished": utc_text(time.time()), "wall_s": round(result.wall_s, 3), "interrupted": result.interrupted,
        "runs": result.rows,
        "totals": {"runs": len(result.rows), "done": result.count("done"), "skipped": result.count("skipped"),
                   "failed": result.count("failed"), "interrupted": result.count("interrupted"),
                   "frames": result.frames + sum(r["frames"] for r in result.rows if r["status"] == "skipped"),
                   "runs_per_hour": round(len(ran) / result.wall_s * 3600, 2) if ran and result.wall_s else 0.0,
                   "frames_per_s": round(result.frames / result.wall_s, 3) if result.wall_s else 0.0},
    })


def summary_table(result: BatchResult) -> str:
    """The runs as a fixed-width table, then the totals."""
    lines = [f"{'#':>4}  {'run':<36} {'status':<11} {'tries':>5} {'frames':>6} {'wall s':>7}  error"]
    for r in result.rows:
        lines.append(f"{r['index']:>4}  {r['id']:<36} {r['status']:<11} {r['attempts']:>5} {r['frames']:>6} "
                     f"{r['wall_s']:>7.1f}  {r['error'][:80]}")
    ran = result.count("done") + result.count("failed")
    rate = ran / result.wall_s * 3600 if result.wall_s else 0.0
    lines.append(f"runs: {result.count('done')} done, {result.count('skipped')} skipped, {result.count('failed')} "
                 f"failed" + (f", {result.count('interrupted')} interrupted" if result.interrupted else "")
                 + f"; {result.frames} frames in {result.wall_s:.1f} s ({rate:.0f} runs/hour, "
                 f"{result.frames / result.wall_s if result.wall_s else 0.0:.2f} frames/s)")
    return "\n".join(lines)


def list_table(planned) -> str:
    """The runs (PlannedRun or RunSpec), one line each."""
    lines = [f"{'#':>4}  {'run':<36} {'seed':>6}  scenario / drawn values"]
    for run in planned:
        spec = getattr(run, "spec", run)
        drawn = ", ".join(f"{k}={_fmt(v)}" for k, v in spec.drawn.items())
        lines.append(f"{spec.index:>4}  {spec.id:<36} {spec.seed:>6}  {spec.scenario}" + (f"  {drawn}" if drawn else ""))
    return "\n".join(lines)


# -- small helpers --------------------------------------------------------------------------------
def _fmt(value: Any) -> str:
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def _bar(total: int, enabled: bool, stream):
    from tqdm import tqdm

    return tqdm(total=total, unit="run", disable=not enabled, file=stream or sys.stderr, dynamic_ncols=True)
