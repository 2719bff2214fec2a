"""One run of a batch: `execute_run` writes DIR/<run-id>/, the same function under every engine.

    DIR/<run-id>/bag.mcap     the run's bag (written under a temporary name until complete: io/bag.py)
    DIR/<run-id>/pictures/    a PNG per frame, when the manifest asks
    DIR/<run-id>/run.log      a line per attempt and its outcome (a traceback for an unexpected error)
    DIR/<run-id>/run.json     scenario, seed, drawn values, content hash, version, times, frames, bag
                              size and SHA-256, status -- written last: no run.json means not done

`is_done` is the resume check: status done, the same content, the bag it names intact.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
import traceback
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..errors import RadaraysError
from .manifest import RunSpec

BAG_NAME = "bag.mcap"
RUN_FILE = "run.json"
LOG_FILE = "run.log"


def software_version() -> str:
    try:
        from importlib.metadata import version

        return version("radarays_ros")
    except Exception:  # noqa: BLE001  a source checkout without metadata
        return "unknown"


def execute_run(task: dict) -> dict:
    """Run one planned run into task['out']/<id>/; returns its run.json record (also written there)."""
    from .runner import run_scenario
    from .variation import varied_scenario

    spec = RunSpec.from_dict(task["spec"])
    run_dir = Path(task["out"]) / spec.id
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / RUN_FILE).unlink(missing_ok=True)  # no run.json = not done, until this attempt ends
    _remove_partials(run_dir)  # left by a killed attempt (ours: this name)
    started = time.time()
    record = {"id": spec.id, "index": spec.index, "scenario": spec.scenario, "scenario_path": spec.scenario_path,
              "seed": spec.seed, "set": spec.set, "drawn": spec.drawn, "pictures": spec.pictures,
              "content": task["content"], "version": software_version(), "attempts": task["attempt"],
              "started": utc_text(started)}
    with (run_dir / LOG_FILE).open("a", encoding="utf8") as log:
        log_line(log, f"attempt {task['attempt']} started, pid {os.getpid()}, {task.get('threads') or 'all'} threads")
        try:
            scenario = varied_scenario(spec.scenario_path, spec.overrides, spec.seed, f"run {spec.id}")
            # embree shares the cores among the workers; other backends keep their own defaults
            options = {"threads": task["threads"]} if task.get("threads") and scenario.backend == "embree" else {}
            summary = run_scenario(scenario, run_dir / BAG_NAME, run_dir / "pictures" if spec.pictures else None,
                                   quiet=True, overwrite=True, backend_options=options)
        except Exception as exc:  # noqa: BLE001  one bad run is reported; the batch goes on
            message = str(exc) if isinstance(exc, RadaraysError) else f"{type(exc).__name__}: {exc}"
            log_line(log, f"failed: {message}")
            if not isinstance(exc, RadaraysError):
                log.write(traceback.format_exc())
            record.update(status="failed", error=message.splitlines()[0] if message else type(exc).__name__)
        else:
            bag = run_dir / BAG_NAME
            record.update(status="done", frames=summary.frames, messages=sum(summary.topics.values()),
                          topics=summary.topics, bag=BAG_NAME, bag_bytes=bag.stat().st_size, bag_sha256=_sha256(bag),
                          pictures_written=len(summary.pictures))
            log_line(log, f"done: {sum(summary.frames.values())} frames, {record['messages']} messages")
    finished = time.time()
    record["finished"] = utc_text(finished)
    record["wall_s"] = round(finished - started, 3)
    write_json(run_dir / RUN_FILE, record)
    return record


def is_done(run, out: Path) -> dict | None:
    """The run.json record when the planned run (spec, content) is complete with the same content and an
    intact bag; else None."""
    run_dir = out / run.spec.id
    try:
        record = json.loads((run_dir / RUN_FILE).read_text("utf8"))
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("status") != "done" or record.get("content") != run.content:
        return None
    if not _well_formed(record):  # a run.json edited by hand: run again rather than trust (or crash on) it
        return None
    bag = run_dir / BAG_NAME
    try:
        if bag.stat().st_size != record.get("bag_bytes") or _sha256(bag) != record.get("bag_sha256"):
            return None
    except OSError:
        return None
    return record


def drop_unfinished_bag(run, out: Path) -> None:
    """After a cancelled attempt (the worker stopped): the bag it may have left without its run.json, and any
    partial one, removed, unless the run completed meanwhile (is_done). A worker that ignores SIGINT (a batch
    started in the background) keeps running until terminated and can rename its finished bag into place just
    before: a bag without run.json is no result, and a run dir of ours never holds half of one. Only the
    program's own names in the run's own directory are touched."""
    run_dir = out / run.spec.id
    if is_done(run, out) is not None or not run_dir.is_dir():
        return
    (run_dir / BAG_NAME).unlink(missing_ok=True)
    _remove_partials(run_dir)


def _remove_partials(run_dir: Path) -> None:
    """The bag writer's temporary folders a stopped attempt left (io/bag.py: `.bag.mcap.XXXX.partial/`)."""
    for stale in run_dir.glob(f".{BAG_NAME}.*.partial"):
        shutil.rmtree(stale, ignore_errors=True)


def _well_formed(record: dict) -> bool:
    """The fields a resumed batch reads have the types this module writes."""
    frames, attempts, wall = record.get("frames", {}), record.get("attempts", 1), record.get("wall_s", 0.0)
    return (isinstance(frames, dict) and len(frames) < 1000
            and all(isinstance(n, int) and not isinstance(n, bool) and 0 <= n < 2**53 for n in frames.values())
            and isinstance(attempts, int) and not isinstance(attempts, bool) and 0 < attempts < 1000
            and isinstance(wall, (int, float)) and not isinstance(wall, bool) and 0 <= wall < 1e12
            and isinstance(record.get("bag_bytes"), int) and isinstance(record.get("bag_sha256"), str))


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


def utc_text(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).isoformat(timespec="seconds")


def log_line(log, text: str) -> None:
    log.write(f"{utc_text(time.time())} {text}\n")
    log.flush()
