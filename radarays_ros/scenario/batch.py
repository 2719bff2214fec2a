"""`radarays batch`: the runs of a manifest, on a local process pool or a Ray cluster, resumable.

A batch, in order:
1. plan      manifest.py lists the runs (scenario × seed × drawn variation, ids from content);
             every run's scenario is built with its overrides and every sensor config checked here,
             so a bad manifest is one error before any run starts;
2. resume    a run whose DIR/<id>/run.json says done, with the same content hash and the bag it
             names intact (size and SHA-256), is skipped;
3. run       `execute_run` (the same function under both engines) writes DIR/<id>/bag.mcap (under a
             temporary name until complete), pictures if asked, run.log, and run.json last;
             a worker that dies (killed, out of memory) is retried up to `retries` times; a run that
             raises is reported failed and the others go on;
4. summary   DIR/summary.json and a table (skipped with --index: many jobs share DIR).

Results do not depend on the engine or the worker count: a run's every random draw comes from its
seed (variation.py), and tracing is deterministic whatever its thread count.
"""
from __future__ import annotations

import hashlib
import json
import multiprocessing
import multiprocessing.connection
import os
import shutil
import signal
import sys
import time
import traceback
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..errors import ConfigError, RadaraysError
from .manifest import Manifest, RunSpec, canonical, load_manifest

BAG_NAME = "bag.mcap"
RUN_FILE = "run.json"
LOG_FILE = "run.log"
MARKER = "batch.json"  # marks DIR as a batch folder this program may write into
ENGINES = ("local", "ray")


# -- finding scenarios --------------------------------------------------------------------------
def resolve_scenario(text: str, base: Path, where: str) -> Path:
    """A scenario file: a path (relative to the manifest's folder, or as given), else a shipped name."""
    from ..resources import find_shipped, not_shipped

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


def _file_hash(path: str, cache: dict) -> str:
    if path not in cache:
        cache[path] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    return cache[path]


def software_version() -> str:
    try:
        from importlib.metadata import version

        return version("radarays_ros")
    except Exception:  # noqa: BLE001  a source checkout without metadata
        return "unknown"


# -- one run (the same function under every engine) -----------------------------------------------
def execute_run(task: dict) -> dict:
    """Run one planned run into task['out']/<id>/; returns its run.json record (also written there)."""
    from .runner import run_scenario
    from .variation import varied_scenario

    spec = RunSpec.from_dict(task["spec"])
    run_dir = Path(task["out"]) / spec.id
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / RUN_FILE).unlink(missing_ok=True)  # no run.json = not done, until this attempt ends
    for stale in run_dir.glob(f".{BAG_NAME}.*.partial"):  # left by a killed attempt (ours: this name)
        shutil.rmtree(stale, ignore_errors=True)
    started = time.time()
    record = {"id": spec.id, "index": spec.index, "scenario": spec.scenario, "scenario_path": spec.scenario_path,
              "seed": spec.seed, "set": spec.set, "drawn": spec.drawn, "pictures": spec.pictures,
              "content": task["content"], "version": software_version(), "attempts": task["attempt"],
              "started": _utc(started)}
    with (run_dir / LOG_FILE).open("a", encoding="utf8") as log:
        _log(log, f"attempt {task['attempt']} started, pid {os.getpid()}, {task.get('threads') or 'all'} threads")
        try:
            scenario = varied_scenario(spec.scenario_path, spec.overrides, spec.seed, f"run {spec.id}")
            summary = run_scenario(scenario, run_dir / BAG_NAME, run_dir / "pictures" if spec.pictures else None,
                                   quiet=True, overwrite=True, threads=task.get("threads"))
        except Exception as exc:  # noqa: BLE001  one bad run is reported; the batch goes on
            message = str(exc) if isinstance(exc, RadaraysError) else f"{type(exc).__name__}: {exc}"
            _log(log, f"failed: {message}")
            if not isinstance(exc, RadaraysError):
                log.write(traceback.format_exc())
            record.update(status="failed", error=message.splitlines()[0] if message else type(exc).__name__)
        else:
            bag = run_dir / BAG_NAME
            record.update(status="done", frames=summary.frames, messages=sum(summary.topics.values()),
                          topics=summary.topics, bag=BAG_NAME, bag_bytes=bag.stat().st_size, bag_sha256=_sha256(bag),
                          pictures_written=len(summary.pictures))
            _log(log, f"done: {sum(summary.frames.values())} frames, {record['messages']} messages")
    finished = time.time()
    record["finished"] = _utc(finished)
    record["wall_s"] = round(finished - started, 3)
    write_json(run_dir / RUN_FILE, record)
    return record


def _local_child(task: dict, conn) -> None:
    """A local worker process: one run; SIGTERM (a cancelled batch) unwinds like Ctrl-C (no half bag)."""
    def stop(*_):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    try:
        record = execute_run(task)
    except KeyboardInterrupt:  # the bag writer has already dropped its unfinished bag
        sys.exit(130)
    conn.send(record)
    conn.close()


def is_done(run: PlannedRun, out: Path) -> dict | None:
    """The run.json record when the run is complete with the same content and its bag intact."""
    run_dir = out / run.spec.id
    try:
        record = json.loads((run_dir / RUN_FILE).read_text("utf8"))
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("status") != "done" or record.get("content") != run.content:
        return None
    bag = run_dir / BAG_NAME
    try:
        if bag.stat().st_size != record.get("bag_bytes") or _sha256(bag) != record.get("bag_sha256"):
            return None
    except OSError:
        return None
    return record


# -- engines --------------------------------------------------------------------------------------
class LocalEngine:
    """A process per run, at most `workers` at once (forkserver: a fresh process, imports preloaded).

    A process per run isolates runs: one that dies is known by its exit code and retried, the others
    never notice (a shared pool breaks as a whole when one of its processes is killed).
    """

    name = "local"

    def __init__(self, workers: int | None):
        self.workers = max(1, workers or os.cpu_count() or 1)
        methods = multiprocessing.get_all_start_methods()
        self.ctx = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
        if self.ctx.get_start_method() == "forkserver":
            self.ctx.set_forkserver_preload([__name__, "radarays_ros.scenario.runner"])

    def submit(self, task: dict):
        reader, writer = self.ctx.Pipe(duplex=False)
        process = self.ctx.Process(target=_local_child, args=(task, writer), name=f"radarays-run-{task['spec']['id']}")
        process.start()
        writer.close()
        return (process, reader)

    def wait(self, jobs: list, timeout: float) -> list[tuple[Any, dict | None, str]]:
        waitables = [w for process, reader in jobs for w in (process.sentinel, reader)]
        ready = set(multiprocessing.connection.wait(waitables, timeout))
        finished = []
        for job in jobs:
            process, reader = job
            if process.sentinel not in ready and reader not in ready:
                continue
            result = None
            try:
                if reader.poll():
                    result = reader.recv()
            except (EOFError, OSError):
                result = None
            process.join(timeout=None if result is None else 30)
            reader.close()
            reason = "" if result is not None else f"worker process died (exit code {process.exitcode})"
            finished.append((job, result, reason))
        return finished

    def cancel(self, jobs: list) -> None:
        for process, _ in jobs:
            if process.is_alive():
                process.terminate()
        for process, reader in jobs:
            process.join(timeout=30)
            reader.close()

    def close(self) -> None:
        pass


class RayEngine:
    """Ray tasks running `execute_run`: `address` joins a running cluster, none starts a local one."""

    name = "ray"

    def __init__(self, workers: int | None, address: str | None):
        try:
            import ray
        except ImportError:
            raise ConfigError("--engine ray needs Ray: pip install 'radarays_ros[ray]' (or pip install ray)") from None
        self.ray = ray
        self.started_here = not ray.is_initialized()
        if self.started_here:
            options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                                       "configure_logging": False}
            try:
                if address:
                    ray.init(address=address, **options)
                else:
                    ray.init(num_cpus=workers or os.cpu_count() or 1, **options)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise ConfigError(f"--engine ray: cannot {'join ' + address if address else 'start Ray'}: "
                                  f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
        self.workers = max(1, workers or int(ray.cluster_resources().get("CPU", 1)))
        # no retries inside Ray: the batch retries crashed runs itself, the same way for both engines
        self.remote = ray.remote(num_cpus=1, max_retries=0)(execute_run)

    def submit(self, task: dict):
        return self.remote.remote(task)

    def wait(self, jobs: list, timeout: float) -> list[tuple[Any, dict | None, str]]:
        ready, _ = self.ray.wait(list(jobs), num_returns=1, timeout=timeout)
        finished = []
        for ref in ready:
            try:
                finished.append((ref, self.ray.get(ref), ""))
            except self.ray.exceptions.RayError as exc:
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
                finished.append((ref, None, f"{type(exc).__name__}: {first}"[:300]))
        return finished

    def cancel(self, jobs: list) -> None:
        for ref in jobs:
            try:
                self.ray.cancel(ref, force=True)
            except Exception:  # noqa: BLE001  already finished
                pass

    def close(self) -> None:
        if self.started_here:
            self.ray.shutdown()


def make_engine(name: str, workers: int | None, address: str | None):
    if name not in ENGINES:
        raise ConfigError(f"--engine {name}: allowed: {', '.join(ENGINES)}")
    if address and name != "ray":
        raise ConfigError("--address joins a Ray cluster: use it with --engine ray")
    if workers is not None and workers < 1:
        raise ConfigError(f"--workers {workers}: must be >= 1")
    return LocalEngine(workers) if name == "local" else RayEngine(workers, address)


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
        write_json(out / MARKER, {"manifest": str(manifest), "created": _utc(time.time()), "version": software_version()})


def run_batch(manifest_path: str | Path, out: str | Path, engine: str = "local", workers: int | None = None,
              address: str | None = None, index: int | None = None, pictures: bool = False,
              progress: bool = True, stream=None) -> BatchResult:
    """Plan, resume, run and summarise (see the module doc); KeyboardInterrupt cancels cleanly and re-raises."""
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
        _log(log, f"batch {manifest.path}: {len(planned)} runs, {len(planned) - len(todo)} already done, "
                  f"engine {engine}")
        runner = None
        in_flight: dict = {}
        try:
            if todo:
                runner = make_engine(engine, workers, address)
                # local: the cores shared among the workers; Ray: one core per task, as Ray accounts for it
                threads = max(1, (os.cpu_count() or 1) // runner.workers) if runner.name == "local" else 1
                attempts: dict[str, int] = {}
                while todo or in_flight:
                    while todo and len(in_flight) < runner.workers:
                        run = todo.popleft()
                        attempts[run.spec.id] = attempts.get(run.spec.id, 0) + 1
                        task = {"spec": run.spec.to_dict(), "out": str(out.resolve()), "content": run.content,
                                "attempt": attempts[run.spec.id], "threads": threads}
                        in_flight[runner.submit(task)] = run
                        _log(log, f"{run.spec.id}: attempt {attempts[run.spec.id]} started")
                    for job, record, reason in runner.wait(list(in_flight), timeout=1.0):
                        run = in_flight.pop(job)
                        row = rows[run.spec.id]
                        if record is None and attempts[run.spec.id] <= manifest.retries:
                            _log(log, f"{run.spec.id}: {reason}; retrying")
                            todo.appendleft(run)
                            continue
                        if record is None:
                            record = _crashed_record(run, out, attempts[run.spec.id], reason)
                        row.update(status=record["status"], attempts=attempts[run.spec.id],
                                   frames=sum(record.get("frames", {}).values()), wall_s=record.get("wall_s", 0.0),
                                   error=record.get("error", ""))
                        _log(log, f"{run.spec.id}: {record['status']}" + (f": {row['error']}" if row["error"] else ""))
                        bar.update(1)
                        bar.set_postfix_str(f"failed {sum(r['status'] == 'failed' for r in rows.values())}",
                                            refresh=False)
        except KeyboardInterrupt:
            result.interrupted = True
            _log(log, "interrupted: cancelling runs in progress")
            if runner is not None and in_flight:
                runner.cancel(list(in_flight))
            for run in in_flight.values():
                rows[run.spec.id]["status"] = "interrupted"
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
        "finished": _utc(time.time()), "wall_s": round(result.wall_s, 3), "interrupted": result.interrupted,
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


def list_table(planned: list[PlannedRun]) -> str:
    lines = [f"{'#':>4}  {'run':<36} {'seed':>6}  scenario / drawn values"]
    for run in planned:
        drawn = ", ".join(f"{k}={_fmt(v)}" for k, v in run.spec.drawn.items())
        lines.append(f"{run.spec.index:>4}  {run.spec.id:<36} {run.spec.seed:>6}  {run.spec.scenario}"
                     + (f"  {drawn}" if drawn else ""))
    return "\n".join(lines)


# -- small helpers --------------------------------------------------------------------------------
def write_json(path: Path, data: Any) -> None:
    """Write via a temporary file and rename: a reader never sees half a file."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", "utf8")
    os.replace(tmp, path)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _utc(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).isoformat(timespec="seconds")


def _log(log, text: str) -> None:
    log.write(f"{_utc(time.time())} {text}\n")
    log.flush()


def _fmt(value: Any) -> str:
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def _bar(total: int, enabled: bool, stream):
    from tqdm import tqdm

    return tqdm(total=total, unit="run", disable=not enabled, file=stream or sys.stderr, dynamic_ncols=True)
