"""Hostile inputs replayed through the `radarays` command (issue 27; the mutators and the worker are in
support/hostile_replay.py, the binary inputs of `fit` and the Livox/depth-camera lidar options in
support/hostile_files.py): every case exits 0 or 2, a failure is exactly one stderr line without raw control
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
    for case in cases:  # the cases found failing are refused now (unless a case says it is valid: "rc": 0)
        assert by_id[case["id"]]["rc"] == case.get("rc", 2), (case["id"], by_id[case["id"]])


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
    ({"rc": None, "timeout": True, "stderr": "fit: evaluations 25\n"}, "time limit"),  # not a progress line
    ({"rc": 2, "stderr": "fit lidar: evaluation   1  objective 3  (0.1 s)\nradarays: error: a\nb\n"}, "not one error line"),
])
def test_the_checker_sees_each_kind_of_problem(result, expect):
    problems = replay.problems({"kind": "radar_config"}, {"left": [], **result})
    assert any(expect in p for p in problems), problems


def test_the_checker_passes_a_clean_error_and_a_clean_success():
    assert replay.problems({"kind": "radar_config"}, {"rc": 2, "stderr": "radarays: error: x = 1: out of range\n",
                                                       "left": []}) == []
    assert replay.problems({"kind": "radar_config"}, {"rc": 0, "stderr": "", "left": ["r.npz"]}) == []


def test_progress_lines_before_the_error_and_a_long_run_showing_progress_are_clean():
    progress = "fit lidar: evaluation   1  objective 3  (0.1 s)\nfit lidar: evaluation   2  objective 2  (0.2 s)\n"
    assert replay.problems({"kind": "fit_lidar"}, {"rc": 2, "stderr": progress + "radarays: error: x\n", "left": []}) == []
    assert replay.problems({"kind": "lidar_options"}, {"rc": None, "timeout": True, "left": [],
                                                       "stderr": "VLP-16: scan 4 of 900 (10 s)\n"}) == []


def test_the_file_recipes_are_what_they_say(tmp_path):
    """The binary mutators (support/hostile_files.py): a bomb header claims 2^44 values, a cut archive is no zip,
    poses files carry the numbers asked for; the same recipe, the same bytes."""
    import zipfile

    from support import hostile_files as files

    np.savez(tmp_path / "a.npz", x=np.arange(6.0).reshape(2, 3), y=np.zeros(4))
    bomb = files.mutated_npz(tmp_path / "a.npz", [["bomb", 0]])
    (tmp_path / "b.npz").write_bytes(bomb)
    with zipfile.ZipFile(tmp_path / "b.npz") as archive, archive.open("x.npy") as member:
        np.lib.format.read_magic(member)
        assert np.lib.format.read_array_header_1_0(member)[0] == (1 << 22, 1 << 22)
    assert files.mutated_npz(tmp_path / "a.npz", [["bomb", 0]]) == bomb
    (tmp_path / "c.npz").write_bytes(files.mutated_npz(tmp_path / "a.npz", [["corrupt"]]))
    assert not zipfile.is_zipfile(tmp_path / "c.npz")
    (tmp_path / "d.npz").write_bytes(files.mutated_npz(tmp_path / "a.npz", [["fill", 0, "nan"], ["shape", 1, "T"]]))
    with np.load(tmp_path / "d.npz") as d:
        assert np.isnan(d["x"]).all() and d["y"].shape == (4,)
    for how in files.SHAPES:  # every reshape after a "text" op made the array a scalar (seed 27 case 1964)
        files.mutated_npz(tmp_path / "a.npz", [["text", 0, "x" * 50], ["shape", 0, how]])
    filled = files.mutated_npz(tmp_path / "a.npz", [["text", 0, "OS1"], ["fill", 0, "nan"]])  # (seed 31 case 236)
    (tmp_path / "e.npz").write_bytes(filled)
    with np.load(tmp_path / "e.npz") as e:
        assert np.isnan(e["x"]).all()
    text = files.poses_text(2, [["number", 1, 3, "inf"], ["junk", "\x1b[2J"]])
    assert text.splitlines()[0] == "\x1b[2J" and text.splitlines()[2].split()[3] == "inf"


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
