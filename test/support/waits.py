"""Waiting for a condition in tests that start processes: poll until it holds or a deadline passes
(a count, a message, a state read once right after an action is a race on a busy machine)."""
from __future__ import annotations

import time


def wait_for(predicate, timeout: float = 5.0, interval: float = 0.01) -> bool:
    """Poll `predicate()` until true or `timeout` seconds pass; returns its last value."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(interval)
    return bool(predicate())
