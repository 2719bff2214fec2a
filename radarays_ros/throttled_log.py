"""The one throttled log: one line per kind of trouble and period, with a count, and a log call that never raises.

Whatever arrives from outside (a /tf message, a parameter, a datagram) can arrive 20 000 times a second, so a
bad input must neither fill the log nor cost more than counting it; and a log line is never allowed to end a
node. Two traps this module closes, both found from outside the process:

* rclpy ties each call site (file, line, bytecode offset) to the severity of its first call and raises
  ``ValueError: Logger severity cannot be changed between calls`` when one site logs a warning and then an
  error (rclpy/impl/rcutils_logger.py, `RcutilsLogger.log`). Each severity is therefore sent from its own
  source line (`_emit`), and any exception of the logger is counted in `failures`, never propagated.
* text from outside may span lines or carry control characters (escape sequences reach a terminal): every
  line is collapsed to one line, non-printable characters escaped (repr-style) and shortened.

`logger`: an rclpy logger or a `logging.Logger` (anything with debug/info/warning/error/fatal).
"""
from __future__ import annotations

import logging
import threading
import time

DEBUG, INFO, WARNING, ERROR, FATAL = logging.DEBUG, logging.INFO, logging.WARNING, logging.ERROR, logging.CRITICAL
PERIOD_S = 5.0
MAX_LINE = 1000  # characters of one log line (the rest is cut with '...')


def one_line(text, limit: int = MAX_LINE) -> str:
    """`text` as one printable line: whitespace runs collapsed, control characters escaped, at most `limit` long."""
    line = " ".join(str(text).split())
    if not line.isprintable():
        line = "".join(c if c.isprintable() else repr(c)[1:-1] for c in line)
    return line if len(line) <= limit else line[:limit - 3] + "..."


class ThrottledLog:
    """`report(key, text, level)`: the first occurrence of `key` is logged at once, then at most one line per
    period with the number of occurrences since the last line. `text` may be a callable, built only when a line
    is written. `warning(text, key=None)` etc.: the same, keyed by `key` or else by the text itself.

    Never raises (a failing logger or text is counted in `failures`); thread-safe; remembers at most `max_keys`
    keys (keys may come from outside: on overflow the throttling state starts afresh)."""

    def __init__(self, logger, period_s: float = PERIOD_S, max_keys: int = 256):
        self.logger, self.period_s, self._max_keys = logger, period_s, max_keys
        self._state: dict[str, list] = {}  # key -> [occurrences since the last line, time of the last line]
        self.totals: dict[str, int] = {}  # explicit key -> occurrences ever (statistics, tests; max_keys of them)
        self.failures = 0  # log calls that raised inside the logger or while building the text
        self._lock = threading.Lock()

    def debug(self, text, key: str | None = None) -> None:
        self.report(key, text, DEBUG)

    def info(self, text, key: str | None = None) -> None:
        self.report(key, text, INFO)

    def warning(self, text, key: str | None = None) -> None:
        self.report(key, text, WARNING)

    def error(self, text, key: str | None = None) -> None:
        self.report(key, text, ERROR)

    def fatal(self, text, key: str | None = None) -> None:
        self.report(key, text, FATAL)

    def report(self, key: str | None, text, level: int = WARNING) -> None:
        try:
            self._report(key, text, level)
        except Exception:  # noqa: BLE001 - a log line must never end the caller (see the module docstring)
            self.failures += 1

    def _report(self, key, text, level) -> None:
        counted = key is not None  # keys named by our code; texts may come from outside
        if key is None:
            key = text() if callable(text) else str(text)
        now = time.monotonic()
        with self._lock:
            if counted and (key in self.totals or len(self.totals) < self._max_keys):
                self.totals[key] = self.totals.get(key, 0) + 1
            state = self._state.get(key)
            if state is None:
                if len(self._state) >= self._max_keys:
                    self._state.clear()
                state = self._state[key] = [0, -float("inf")]
            state[0] += 1
            if now - state[1] < self.period_s:
                return
            count, state[0], state[1] = state[0], 0, now
        line = one_line(text() if callable(text) else text)
        if count > 1:
            line += f" ({count} times in the last {self.period_s:g} s)"
        self._emit(level, line)

    def _emit(self, level: int, line: str) -> None:
        """One call site per severity (rclpy's rule); the logger's own filters still apply."""
        if level >= FATAL:
            self.logger.fatal(line)
        elif level >= ERROR:
            self.logger.error(line)
        elif level >= WARNING:
            self.logger.warning(line)
        elif level >= INFO:
            self.logger.info(line)
        else:
            self.logger.debug(line)
