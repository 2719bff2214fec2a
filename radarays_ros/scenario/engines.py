"""Where the runs of a batch execute: `local` (a process per run on this machine) or `ray` (Ray tasks).

Both take a task dict (the run's spec, output folder, content hash, attempt, tracing threads), call
`batch_run.execute_run` and report (job, run.json record or None, why none): a None record means the
worker died, and the batch decides whether to retry. Neither engine retries on its own.
"""
from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
from typing import Any

from ..errors import ConfigError
from .batch_run import execute_run

ENGINES = ("local", "ray")


def _local_child(task: dict, conn) -> None:
    """A local worker process: one run; SIGTERM (a cancelled batch) unwinds like Ctrl-C (no half bag).

    Ctrl-C reaches the worker twice: SIGINT from the terminal, then SIGTERM from the batch cancelling it.
    The first one unwinds; the later ones are ignored so they cannot cut the unwinding (the bag writer
    dropping its unfinished bag) short."""
    def stop(*_):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        record = execute_run(task)
    except KeyboardInterrupt:  # the bag writer has already dropped its unfinished bag
        sys.exit(130)
    conn.send(record)
    conn.close()


# what every run imports (the forkserver imports them once; each run's process starts with them loaded)
RUN_MODULES = ["radarays_ros.scenario.batch_run", "radarays_ros.scenario.runner", "radarays_ros.world.loader",
               "radarays_ros.tracing.embree", "radarays_ros.radar", "lidar_ros", "radarays_ros.io.bag", "trimesh",
               "radarays_ros.scenario.kernel_warmup"]  # last: loads the compiled loops (see there)


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
            self.ctx.set_forkserver_preload([__name__, *RUN_MODULES])

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

    # how long cancel waits for the cancelled tasks to unwind before it kills their workers
    CANCEL_JOIN_S = 30.0

    def cancel(self, jobs: list) -> None:
        """Stop the tasks and return once each has ended, as LocalEngine terminates and joins its processes: the
        batch then removes what an unfinished attempt left (batch_run.drop_unfinished_bag), and no task still
        finishing on a node may rename its bag into place after that. A plain cancel raises KeyboardInterrupt in
        the task, which unwinds as Ctrl-C does (the bag writer drops its unfinished bag) and only then resolves
        the task's ref (measured with Ray 2.60: a forced cancel resolves it at once, before the worker is gone).
        A task still running after CANCEL_JOIN_S is killed."""
        for ref in jobs:
            self._cancel(ref, force=False)
        if not jobs:
            return
        _, running = self.ray.wait(list(jobs), num_returns=len(jobs), timeout=self.CANCEL_JOIN_S)
        for ref in running:
            self._cancel(ref, force=True)

    def _cancel(self, ref, force: bool) -> None:
        try:
            self.ray.cancel(ref, force=force)
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
