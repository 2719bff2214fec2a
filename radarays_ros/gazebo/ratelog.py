"""One log line per kind of trouble and period, with a count, instead of one traceback per message.

Whatever arrives from the network can arrive 20 000 times a second: a bad datagram or a callback that
fails on a message must neither fill the log nor cost more than counting it.
"""
from __future__ import annotations

import logging
import time

PERIOD_S = 10.0


class RateLimitedLog:
    """`report(key, text)`: logs the first occurrence of `key` at once, then at most once per period
    with the number of occurrences since the last line. `text` is built by the caller only when the
    line is written (pass a callable for texts that cost something to build)."""

    def __init__(self, logger: logging.Logger, period_s: float = PERIOD_S, max_keys: int = 256):
        self._log, self._period, self._max_keys = logger, period_s, max_keys
        self._state: dict[str, list] = {}  # key -> [count since last line, time of last line]
        self.totals: dict[str, int] = {}  # key -> occurrences ever (statistics, tests)

    def report(self, key: str, text, level: int = logging.WARNING) -> None:
        now = time.monotonic()
        if key in self.totals or len(self.totals) < self._max_keys:
            self.totals[key] = self.totals.get(key, 0) + 1
        state = self._state.get(key)
        if state is None:
            if len(self._state) >= self._max_keys:  # keys come from our own code: this is a safety net
                self._state.clear()
            state = self._state[key] = [0, -1e18]
        state[0] += 1
        if now - state[1] < self._period:
            return
        count, state[0], state[1] = state[0], 0, now
        line = text() if callable(text) else text
        suffix = f" ({count} times in the last {self._period:.0f} s)" if count > 1 else ""
        self._log.log(level, "%s%s", " ".join(str(line).split()), suffix)
