"""The one rule vocabulary: kinds, ranges, choices, and the one message format with plain numbers."""
import numpy as np
import pytest

from radarays_ros.errors import ConfigError
from radarays_ros.validate import Rule, plain


def test_numbers_in_range_come_back_as_their_kind():
    assert Rule(int, 0, 5).check(3.0, "k") == 3 and isinstance(Rule(int, 0, 5).check(3.0, "k"), int)
    assert Rule(float, 0, 5).check(np.float32(2.5), "k") == 2.5
    assert Rule(float, 0, None, lo_open=True).check(1e-7, "k") == 1e-7


@pytest.mark.parametrize("rule, value, message", [
    (Rule(int, 0, 5), 9, r"k = 9: out of range, allowed \[0, 5\] \(integer\)$"),
    (Rule(int, 0, 5), 2.5, r"k = 2.5: not an integer, allowed \[0, 5\] \(integer\)$"),
    (Rule(float, 0, 1, lo_open=True), 0.0, r"k = 0.0: out of range, allowed \(0, 1\]$"),
    (Rule(float, 0, 1), float("inf"), r"k = inf: not a finite number, allowed \[0, 1\]$"),
    (Rule(float, 0, 1), np.float64(7.0), r"k = 7.0: out of range, allowed \[0, 1\]$"),  # no np.float64(...)
    (Rule(float, 0, 1), "x", r"k = 'x': not a number, allowed \[0, 1\]$"),
    (Rule(float, 0, 1), True, r"k = True: not a number"),
    (Rule(str, choices=("a", "b")), "c", r"k = 'c': not a choice, allowed one of a, b$"),
    (Rule(bool), 1, r"k = 1: not true or false, allowed true or false$"),
    (Rule(float), None, r"k = None: a value is required, allowed \(-inf, inf\)$"),
    (Rule(list, choices=("x",)), ["x", "y"], r"k = \['y'\]: not a choice, allowed each one of x$"),
])
def test_every_problem_is_one_line_in_one_format(rule, value, message):
    with pytest.raises(ConfigError, match=message):
        rule.check(value, "k")


def test_plain_prints_numbers_as_people_read_them():
    assert plain(np.float64(0.25)) == "0.25" and plain(np.int64(3)) == "3"
    assert plain([np.float32(1.5), 2]) == "[1.5, 2]"
    assert len(plain("x" * 1000)) == 60
