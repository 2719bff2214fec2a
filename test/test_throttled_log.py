"""The one throttled log (radarays_ros/throttled_log.py): every helper at every severity, from one object, never
raises; one line of printable text; the count of what was held back. test/ros/test_ros_logging.py does the same
against rclpy's own logger."""
from __future__ import annotations

import inspect
import logging

import pytest

from radarays_ros import throttled_log
from radarays_ros.throttled_log import ThrottledLog, one_line

HELPERS = ("debug", "info", "warning", "error", "fatal")
LEVELS = (logging.DEBUG, logging.INFO, logging.WARNING, logging.ERROR, logging.CRITICAL)


class StrictLogger:
    """rclpy's rule (RcutilsLogger.log): a call site keeps the severity of its first call, else ValueError."""

    def __init__(self):
        self.sites: dict = {}
        self.lines: list = []

    def _log(self, severity: str, text: str) -> None:
        caller = inspect.currentframe().f_back.f_back
        site = (caller.f_code.co_filename, caller.f_lineno, caller.f_lasti)
        if self.sites.setdefault(site, severity) != severity:
            raise ValueError("Logger severity cannot be changed between calls.")
        self.lines.append((severity, text))

    def debug(self, text):
        self._log("debug", text)

    def info(self, text):
        self._log("info", text)

    def warning(self, text):
        self._log("warning", text)

    def error(self, text):
        self._log("error", text)

    def fatal(self, text):
        self._log("fatal", text)


def test_every_helper_and_every_level_from_one_object_never_trips_the_call_site_rule():
    logger = StrictLogger()
    log = ThrottledLog(logger, period_s=0.0)
    for round_ in range(2):  # the second round meets call sites already tied to a severity
        for helper in HELPERS:
            for key in (None, "shared"):  # one key logged at every severity in turn: the /tf kill switch
                getattr(log, helper)(f"{helper} {round_} {key}", key=key)
        for level in LEVELS + (5, 25, 45, 60):  # levels between the named ones too
            log.report("shared", f"report {level}", level)
    assert log.failures == 0
    said = [s for s, _ in logger.lines]
    assert said[:2] == ["debug", "debug"] and said[-1] == "fatal" and len(said) == 2 * (2 * 5 + 9)
    assert ("warning", "report 25") not in logger.lines and ("info", "report 25") in logger.lines


def test_a_logger_that_raises_or_text_that_cannot_be_built_is_counted_not_raised():
    class Broken:
        def __getattr__(self, name):
            raise RuntimeError("the node is gone")

    log = ThrottledLog(Broken(), period_s=0.0)
    for helper in HELPERS:
        getattr(log, helper)("x")
    log.warning(lambda: 1 / 0, key="lazy")
    assert log.failures == 6


@pytest.mark.parametrize("text, expected", [
    ("bad frame\n, line 10", "bad frame , line 10"),
    ("name \x1b[31mred\x1b[0m", "name \\x1b[31mred\\x1b[0m"),
    ("nul \x00 and \r\x1e", "nul \\x00 and"),
    ("x" * 5000, "x" * 997 + "..."),
])
def test_lines_are_one_printable_line(text, expected):
    assert one_line(text) == expected
    logger = StrictLogger()
    ThrottledLog(logger).error(text)
    assert logger.lines == [("error", expected)]


def test_held_back_lines_are_counted_and_keys_from_outside_are_bounded(monkeypatch):
    clock = [0.0]
    monkeypatch.setattr(throttled_log.time, "monotonic", lambda: clock[0])
    logger = StrictLogger()
    log = ThrottledLog(logger, period_s=10.0, max_keys=4)
    for i in range(1000):  # 1000 distinct texts (keyed by text): state stays bounded
        log.warning(f"bad datagram {i}")
    assert len(log._state) <= 4 and log.totals == {}  # totals: only the keys our code names
    for _ in range(20):
        log.error("spoof", key="spoof")
    clock[0] = 10.0
    log.error("spoof", key="spoof")
    assert logger.lines[-2:] == [("error", "spoof"), ("error", "spoof (20 times in the last 10 s)")]
    assert log.totals["spoof"] == 21
