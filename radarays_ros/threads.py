"""Worker threads: the one pool policy of the package.

Every parallel part of a frame (a backend's ray spans, a lidar frame's pieces, the radar stage's row
blocks and geometry blocks, Perlin noise rows) runs its tasks on a pool handed out here:

* one pool per (role, thread count), made on first use and kept for the life of the process: frames
  start no threads, and sensors with other thread counts (a rig) run side by side on their own pools;
* a forked process (batch workers) makes its own pools: a fork copies no thread, so a pool inherited
  from the parent would take tasks and never run them;
* the role says where in a frame the tasks run. A pooled task must never wait for a task of its own
  pool (once every worker waits, nothing runs), and frame tasks trace rays: a frame's tasks use the
  "frame" pools, a backend's ray spans the "trace" pools.

The thread count never changes a result: tasks write disjoint parts or return values gathered in order.

A frame whose tasks already run side by side, one per core, traces inside each task on that task's thread
(`spans_inline`): a backend that split each of those traces over its own pool as well would put twice as
many threads as cores on the frame.

Long-lived threads of a layer (the Gazebo mirror's, its transport's) start with `context_thread`: they run
in the context of whoever started them, so the log records they make can be told apart by owner.
"""
from __future__ import annotations

import contextlib
import contextvars
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable

ROLES = ("frame", "trace")

_POOLS: dict[tuple[str, int], ThreadPoolExecutor] = {}
_POOLS_PID = os.getpid()
_LOCK = threading.Lock()
_INLINE = threading.local()  # .spans: True on a thread inside spans_inline()


def cores() -> int:
    """The cores this process may run on (its CPU affinity; os.cpu_count() where there is none)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def thread_count(requested: int | None = None, cap: int | None = None) -> int:
    """`requested` threads (at least 1), or where None the cores this process may use, at most `cap`."""
    if requested is not None:
        return max(1, int(requested))
    n = cores()
    return max(1, min(n, cap) if cap else n)


def pool(role: str, threads: int) -> ThreadPoolExecutor:
    """The process's kept pool of `threads` workers for `role` (one of ROLES)."""
    global _POOLS_PID
    if role not in ROLES:
        raise ValueError(f"thread pool role {role!r}; allowed: {', '.join(ROLES)}")
    threads = max(1, int(threads))
    with _LOCK:
        if _POOLS_PID != os.getpid():  # forked: the parent's pools have no threads here
            _POOLS.clear()
            _POOLS_PID = os.getpid()
        found = _POOLS.get((role, threads))
        if found is None:
            found = _POOLS[(role, threads)] = ThreadPoolExecutor(threads, thread_name_prefix=f"radarays-{role}{threads}")
        return found


def kept(role: str, threads: int) -> ThreadPoolExecutor | None:
    """The pool `pool(role, threads)` would hand out in this process, or None when none was made yet."""
    with _LOCK:
        return _POOLS.get((role, int(threads))) if _POOLS_PID == os.getpid() else None


@contextlib.contextmanager
def spans_inline(on: bool = True):
    """Within (where `on`), on this thread: span_threads() is 1, and run_all("trace", ...) runs its items in
    turn. For a frame's tasks that run side by side on the "frame" pool: each traces its rays on its own thread
    (measured: a navtech_ras6 frame of the 1 M city on 2 shared cores, its four geometry blocks and the
    glints on 2 frame threads each splitting its traces over 2 trace threads: 144-150 ms a frame, 245-252 ms
    CPU; tracing inline: 131-138 ms, 230-235 ms CPU)."""
    before = getattr(_INLINE, "spans", False)
    _INLINE.spans = before or on
    try:
        yield
    finally:
        _INLINE.spans = before


def span_threads(threads: int) -> int:
    """The threads a backend of `threads` may split one trace over on this thread: 1 inside spans_inline()."""
    return 1 if getattr(_INLINE, "spans", False) else max(1, int(threads))


def run_all(role: str, task: Callable, items: Iterable, threads: int) -> list:
    """[task(item) for item in items], in item order: inline for one item or one thread (or for the
    "trace" role inside spans_inline()), else on the role's pool of `threads` workers."""
    items = list(items)
    if role == "trace":
        threads = span_threads(threads)
    if len(items) < 2 or threads <= 1:
        return [task(item) for item in items]
    return list(pool(role, threads).map(task, items))


def context_thread(target: Callable, name: str, args: tuple = ()) -> threading.Thread:
    """A daemon thread (not started) that runs `target(*args)` in a copy of the caller's contextvars.
    threading.Thread starts with an empty context (Python < 3.14): a thread started inside a node's
    LogRelay scope would otherwise log as nobody's (ros/gazebo_link.py tells nodes' records apart so)."""
    return threading.Thread(target=contextvars.copy_context().run, args=(target, *args), name=name, daemon=True)
