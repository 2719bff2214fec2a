"""Hostile inputs replayed through the `radarays` command (issue 27; the mutators and the worker are in
support/hostile_replay.py): every case exits 0 or 2, a failure is exactly one stderr line without raw control
characters or a traceback, and nothing is left behind; under RLIMIT_AS 3 GiB and a time limit.

- every failure ever found is kept in data/hostile_regressions.json and replayed in the quick suite;
- a small seeded sample of fresh cases runs in the quick suite;
- thousands run in the slow suite: RADARAYS_REPLAY_CASES (default 2000) cases from
  RADARAYS_REPLAY_SEED (default 27).
"""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import support.hostile_replay as replay


def _check(cases, limit_s=60.0):
    results = replay.replay(cases, limit_s=limit_s)
    assert len(results) == len(cases)
    return replay.report(cases, results), results


def test_every_regression_case_stays_clean():
    cases = json.loads(replay.REGRESSIONS.read_text())
    assert len(cases) >= 20 and all(c.get("found") for c in cases)
    problems, results = _check(cases)
    assert problems == []
    by_id = {c["id"]: r for c, r in zip(cases, results)}
    for case in cases:  # the cases found failing are refused now (none of them is a valid input)
        assert by_id[case["id"]]["rc"] == 2, (case["id"], by_id[case["id"]])


def test_a_seeded_sample_of_fresh_cases_is_clean():
    cases = replay.generate(seed=1027, n=30)
    assert cases == replay.generate(seed=1027, n=30)  # seeded: the same cases every time
    problems, _ = _check(cases)
    assert problems == []


@pytest.mark.slow
def test_thousands_of_fresh_cases_are_clean():
    seed = int(os.environ.get("RADARAYS_REPLAY_SEED", "27"))
    n = int(os.environ.get("RADARAYS_REPLAY_CASES", "2000"))
    cases = replay.generate(seed=seed, n=n)
    problems, _ = _check(cases)
    assert problems == [], "\n".join(problems[:50])


# -- the checker itself (positive controls: a checker that cannot fail is a defect) ----------------
@pytest.mark.parametrize("result, expect", [
    ({"rc": 1, "stderr": "Traceback (most recent call last):\n  ...\nValueError: x\n"}, "exit status 1"),
    ({"rc": None, "exception": "OverflowError: cannot convert float infinity to integer\n"}, "traceback"),
    ({"rc": 2, "stderr": "radarays: error: a\nb\n"}, "not one error line"),
    ({"rc": 2, "stderr": "radarays: error: key '\x1b[2J'\n"}, "raw control character"),
    ({"rc": 0, "stderr": "x.py:90: RuntimeWarning: invalid value encountered in cast\n"}, "numpy warning"),
    ({"rc": 2, "stderr": "radarays: error: out of memory (x)\n"}, "MemoryError backstop"),
    ({"rc": 2, "stderr": "radarays: error: x\n", "left": ["r.npz"]}, "left behind"),
    ({"rc": 0, "stderr": "", "left": [".r.1234.partial.npz", "r.npz"]}, ".partial file left"),
    ({"rc": None, "timeout": True, "stderr": ""}, "time limit"),
])
def test_the_checker_sees_each_kind_of_problem(result, expect):
    problems = replay.problems({"kind": "radar_config"}, {"left": [], **result})
    assert any(expect in p for p in problems), problems


def test_the_checker_passes_a_clean_error_and_a_clean_success():
    assert replay.problems({"kind": "radar_config"}, {"rc": 2, "stderr": "radarays: error: x = 1: out of range\n",
                                                       "left": []}) == []
    assert replay.problems({"kind": "radar_config"}, {"rc": 0, "stderr": "", "left": ["r.npz"]}) == []


def test_the_mutators_change_what_they_say_and_stay_seeded():
    tree = {"a": {"b": 1.5, "c": "x"}, "d": [1, 2]}
    seen = set()
    for seed in range(40):
        rng = np.random.default_rng(seed)
        mutated, what = replay.mutate_tree(tree, rng)
        assert mutated != tree or "deleted" in what or "nested" in what, what
        again, what_again = replay.mutate_tree(tree, np.random.default_rng(seed))
        assert what_again == what
        seen.add(what.split(" ")[-1][:3])
    assert tree == {"a": {"b": 1.5, "c": "x"}, "d": [1, 2]}  # the source is not changed
    assert len(seen) > 5
