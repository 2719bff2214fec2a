"""The one pool policy (radarays_ros/threads.py): kept pools per role and size, safe nesting, fork."""
from __future__ import annotations

import multiprocessing
import threading

import pytest

from radarays_ros import threads


def test_a_pool_is_kept_per_role_and_thread_count():
    two = threads.pool("frame", 2)
    assert threads.pool("frame", 2) is two and threads.kept("frame", 2) is two
    assert threads.pool("frame", 3) is not two
    assert threads.pool("trace", 2) is not two


def test_an_unknown_role_is_refused():
    with pytest.raises(ValueError, match="allowed: frame, trace"):
        threads.pool("stage", 2)


def test_run_all_returns_in_item_order_and_runs_inline_on_one_thread():
    assert threads.run_all("frame", lambda x: x * x, range(50), 2) == [x * x for x in range(50)]
    names = threads.run_all("frame", lambda _: threading.current_thread().name, range(3), 1)
    assert names == [threading.current_thread().name] * 3


def test_frame_tasks_that_trace_do_not_wait_on_their_own_pool():
    # a radar geometry block (a frame task) traces its rays on the backend's spans (trace tasks): with one
    # pool for both, two blocks would hold both workers waiting for spans queued behind the other blocks
    def block(k):
        return sum(threads.run_all("trace", lambda s: s + k, range(4), 2))

    run = threading.Thread(target=lambda: done.append(threads.run_all("frame", block, range(4), 2)), daemon=True)
    done: list = []
    run.start()
    run.join(timeout=30)
    assert done == [[6 + 4 * k for k in range(4)]]


def test_thread_count_takes_the_request_or_the_cores_up_to_a_cap():
    assert threads.thread_count(3) == 3 and threads.thread_count(0) == 1
    assert threads.thread_count(None) == threads.cores()
    assert threads.thread_count(None, cap=1) == 1


def _child_runs_a_pool() -> list:
    return threads.run_all("frame", lambda x: x + 1, range(4), 2)


def test_a_forked_process_makes_its_own_pools():
    # a fork copies no thread: the parent's kept pool would queue the child's tasks and never run them
    both = threading.Barrier(2, timeout=10)  # both workers of the parent's pool exist
    assert threads.run_all("frame", lambda _: both.wait() * 0, range(2), 2) == [0, 0]
    with multiprocessing.get_context("fork").Pool(1) as procs:
        assert procs.apply_async(_child_runs_a_pool).get(timeout=60) == [1, 2, 3, 4]


def test_spans_inline_traces_on_the_calling_thread_and_only_there():
    here = threading.current_thread().name
    where = lambda: set(threads.run_all("trace", lambda _: threading.current_thread().name, range(8), 2))  # noqa: E731
    assert here not in where() and threads.span_threads(4) == 4
    with threads.spans_inline():
        assert where() == {here} and threads.span_threads(4) == 1
        with threads.spans_inline(False):  # nested off: still inline (the outer frame task's)
            assert where() == {here}
        assert threads.run_all("frame", lambda _: threading.current_thread().name, range(8), 2) != [here] * 8
        # another thread is not inside: a pooled task splits its traces as before
        assert threads.pool("frame", 2).submit(lambda: threads.span_threads(4)).result() == 4
    with threads.spans_inline(False):
        assert threads.span_threads(4) == 4
    assert here not in where()

