"""Issue 27, class by class where the replay (test_hostile_replay.py) cannot say it: derived sizes and
integers (limits.py), one-line messages (errors.one_line), outputs written atomically and never replaced
unasked (output_files.py), a full disk, batch resume records, planning cost and signals."""
from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from radarays_ros import limits
from radarays_ros.cli import main
from radarays_ros.errors import ConfigError, RadaraysError, one_line, os_problem
from radarays_ros.output_files import check_new, replacing, replacing_all
from radarays_ros.resources import data_path
from radarays_ros.validate import check_path

REPO = Path(__file__).resolve().parents[1]
OFFICE = str(data_path("worlds", "office.sdf"))


def one_error(capsys) -> str:
    err = capsys.readouterr().err
    lines = err.strip("\n").split("\n")
    assert len(lines) == 1 and lines[0].startswith("radarays: error:"), err
    return lines[0]


# -- limits ---------------------------------------------------------------------------------------
def test_check_product_names_every_factor_and_the_limit():
    assert limits.check_product("w", {"a": 400, "b": 3424}, 16_000_000) == 400 * 3424
    with pytest.raises(ConfigError, match=r"w: a x b = 400 x 30000000 = 1.2e\+10 exceeds 16000000 cells \(memory\); "
                                          r"lower one of them"):
        limits.check_product("w", {"a": 400, "b": 30_000_000}, 16_000_000, "cells")
    for bad in (float("inf"), float("nan"), -1):
        with pytest.raises(ConfigError, match="exceeds"):
            limits.check_product("w", {"a": bad}, 10)


@pytest.mark.parametrize("rate", [5e-324, 2.2e-308, 1e-300, 0.0, -1.0, float("nan"), float("inf"), 2e9])
def test_period_of_an_extreme_rate_is_refused(rate):
    with pytest.raises(ConfigError, match=r"rate = .*int64 nanoseconds"):
        limits.period_ns(rate, "rate")


def test_period_and_to_int_of_ordinary_values():
    assert limits.period_ns(4.0, "r") == 250_000_000 and limits.period_ns(1e-6, "r") == 10**15
    assert limits.to_int(2.6, "x") == 3
    for bad in (float("inf"), float("nan"), 1e300):
        with pytest.raises(ConfigError, match="x = "):
            limits.to_int(bad, "x")


def test_radar_bins_from_max_range_and_resolution_are_bounded(capsys):
    assert main(["radar", OFFICE, "--set", "range.resolution=1e-6", "--set", "range.max_range=30",
                 "--out", "o.npz"]) == 2
    assert "azimuth.count x range bins = 400 x 30000000" in one_error(capsys)


def test_a_denormal_radar_rate_is_refused_not_written_as_int64_min(tmp_path, capsys):
    assert main(["radar", OFFICE, "--set", "azimuth.rate_hz=2.2e-308", "--out", str(tmp_path / "o.npz")]) == 2
    assert "azimuth.rate_hz = 2.2e-308: " in one_error(capsys)
    assert not (tmp_path / "o.npz").exists()


@pytest.mark.parametrize("value", [5e-324, 2.2e-308, -1e-300])
def test_the_rule_vocabulary_refuses_denormal_and_near_denormal_floats(value):
    from radarays_ros.validate import Rule

    with pytest.raises(ConfigError, match="a nonzero value below 1e-100"):
        Rule(float, None, 100.0).check(value, "receiver.db_per_count")
    assert Rule(float, 0.0, 1.0).check(0.0, "x") == 0.0 and Rule(float, 0.0, 1.0).check(1e-18, "x") == 1e-18


# -- one line --------------------------------------------------------------------------------------
def test_one_line_escapes_control_characters_and_shortens():
    text = one_line("malformed XML: Invalid character\n, line 10\r\x1b[2J\x1e\u202eend\tx")
    assert text == "malformed XML: Invalid character , line 10 \\x1b[2J \\u202eend x"
    long = one_line("a" * 3000 + "END")
    assert len(long) == 1000 and long.endswith("END") and " ... " in long
    assert str(RadaraysError("k\x1b[31m\nv")) == "k\\x1b[31m v"  # every error of the package


def test_os_problem_is_one_line_with_the_file():
    exc = FileNotFoundError(2, "No such file or directory", "/a\nb")
    assert os_problem(exc) == "'/a\\nb': No such file or directory"


def test_argparse_errors_are_one_line(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["compare", "a.png", "b.png", "--max-range", "-inf"])
    assert stop.value.code == 2
    assert "argument --max-range: expected one argument (see radarays compare --help)" in one_error(capsys)


@pytest.mark.parametrize("value, expect", [("a\x00b", "NUL byte"), ("w" * 300, "longer than the file system"),
                                           ("d/" * 2100, "longer than the file system"), (5, "not a path")])
def test_check_path(value, expect):
    with pytest.raises(ConfigError, match=expect):
        check_path(value, "scenario s.yaml: world")


# -- outputs ---------------------------------------------------------------------------------------
def test_replacing_keeps_the_old_file_when_the_write_fails(tmp_path):
    out = tmp_path / "a.npz"
    out.write_bytes(b"old")
    with pytest.raises(RuntimeError):
        with replacing(out, overwrite=True) as tmp:
            assert tmp.parent == tmp_path and tmp.name.endswith(".partial.npz") and tmp.name.startswith(".a.")
            tmp.write_bytes(b"half")
            raise RuntimeError("disk full")
    assert out.read_bytes() == b"old" and sorted(p.name for p in tmp_path.iterdir()) == ["a.npz"]
    with replacing(out, overwrite=True) as tmp:
        tmp.write_bytes(b"new")
    assert out.read_bytes() == b"new" and sorted(p.name for p in tmp_path.iterdir()) == ["a.npz"]


def test_replacing_refuses_an_existing_file_and_uses_the_umask(tmp_path):
    out = tmp_path / "a.png"
    with replacing(out) as tmp:
        tmp.write_bytes(b"x")
    umask = os.umask(0)
    os.umask(umask)
    assert out.stat().st_mode & 0o777 == 0o666 & ~umask  # not tempfile's private 0600
    with pytest.raises(ConfigError, match=r"a.png: exists; give another name, or --overwrite to replace it"):
        with replacing(out, overwrite=False):
            pass
    with pytest.raises(ConfigError, match="is a folder"):
        check_new([tmp_path], overwrite=True)


def test_replacing_all_renames_none_when_one_write_fails(tmp_path):
    paths = [tmp_path / "a.png", tmp_path / "a.png.yaml"]
    with pytest.raises(OSError):
        with replacing_all(paths) as (png, sidecar):
            png.write_bytes(b"p")
            raise OSError(28, "No space left on device")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("argv, suffix", [
    (["radar", OFFICE], ".npz"), (["radar", OFFICE], ".png"), (["lidar", OFFICE, "--sensor", "VLP-16"], ".pcd"),
    (["lidar", OFFICE, "--sensor", "VLP-16"], ".npz"), (["world", "panorama", OFFICE, "--width", "16"], ".png"),
])
def test_an_existing_output_is_refused_without_overwrite_and_replaced_with_it(tmp_path, capsys, argv, suffix):
    out = tmp_path / f"x{suffix}"
    out.write_bytes(b"keep")
    assert main([*argv, "--out", str(out)]) == 2
    assert "exists; give another name, or --overwrite" in one_error(capsys)
    assert out.read_bytes() == b"keep"
    assert main([*argv, "--out", str(out), "--overwrite"]) == 0
    assert out.read_bytes() != b"keep"
    assert not [p for p in tmp_path.iterdir() if ".partial" in p.name]


@pytest.mark.parametrize("argv", [
    ["lidar", OFFICE, "--sensor", "VLP-16", "--out", "{file}/x/l.npz"],
    ["world", "panorama", OFFICE, "--width", "16", "--out", "{file}/p.png"],
    ["run", str(data_path("scenarios", "office_demo.yaml")), "--out", "{dir}/b.mcap", "--pictures", "{file}/pics",
     "--quiet"],
])
def test_output_under_a_file_is_one_line_and_leaves_nothing(tmp_path, capsys, argv):
    (tmp_path / "file").write_text("x")
    (tmp_path / "d").mkdir()
    argv = [a.replace("{file}", str(tmp_path / "file")).replace("{dir}", str(tmp_path / "d")) for a in argv]
    assert main(argv) == 2
    err = one_error(capsys)
    assert "Not a directory" in err or "is a file, not a folder" in err, err
    assert list((tmp_path / "d").iterdir()) == []


def _full_disk(limit_bytes: int):
    def set_up():  # a file may grow to `limit_bytes`, then writes fail with EFBIG (like a full disk)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))
    return set_up


def test_a_full_disk_keeps_the_existing_output(tmp_path):
    """A write that fails half-way (RLIMIT_FSIZE: EFBIG, as ENOSPC would) over an existing radar .npz:
    one line, exit 2, the old file as it was, no temporary file (before: a corrupt zip in place)."""
    out = tmp_path / "r.npz"
    out.write_bytes(b"the previous scan")
    env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONDONTWRITEBYTECODE="1", NUMBA_CACHE_DIR=str(tmp_path / "nc"))
    done = subprocess.run([sys.executable, "-m", "radarays_ros.cli", "radar", OFFICE, "--out", str(out), "--overwrite"],
                          capture_output=True, text=True, env=env, preexec_fn=_full_disk(200_000), timeout=300)
    assert done.returncode == 2, done.stderr[-2000:]
    lines = done.stderr.strip().split("\n")
    assert len(lines) == 1 and lines[0].startswith("radarays: error:") and "File too large" in lines[0], done.stderr
    assert out.read_bytes() == b"the previous scan"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "nc") == ["r.npz"]


# -- batch -----------------------------------------------------------------------------------------
def test_a_hand_edited_run_json_is_run_again_not_trusted(tmp_path):
    from radarays_ros.scenario.batch import PlannedRun
    from radarays_ros.scenario.batch_run import is_done
    from radarays_ros.scenario.manifest import RunSpec

    spec = RunSpec("r-s1-abc", 0, 0, "s", "s.yaml", 1)
    run = PlannedRun(spec, "content")
    (tmp_path / spec.id).mkdir()
    (tmp_path / spec.id / "bag.mcap").write_bytes(b"bag")
    import hashlib

    good = {"status": "done", "content": "content", "frames": {"radar": 3}, "attempts": 1, "wall_s": 1.5,
            "bag_bytes": 3, "bag_sha256": hashlib.sha256(b"bag").hexdigest()}
    (tmp_path / spec.id / "run.json").write_text(json.dumps(good))
    assert is_done(run, tmp_path) == good
    for key, value in [("frames", {"radar": "3"}), ("frames", [1]), ("attempts", "1"), ("wall_s", None),
                       ("bag_bytes", "3"), ("frames", {"radar": True})]:
        (tmp_path / spec.id / "run.json").write_text(json.dumps({**good, key: value}))
        assert is_done(run, tmp_path) is None, (key, value)


def test_list_checks_each_row_once_and_plan_reads_each_file_once(tmp_path, monkeypatch, capsys):
    import radarays_ros.config_file as config_file
    from radarays_ros.scenario import batch, variation

    scenario = data_path("scenarios", "hall_demo.yaml")
    manifest = tmp_path / "m.yaml"
    manifest.write_text(f"runs:\n  - scenario: {scenario}\n    seeds: {{first: 0, count: 3000}}\n"
                        "    vary: {sensors.radar.noise.system_std: {uniform: [1.0, 2.0]}}\n")
    calls = []
    original = variation.varied_scenario
    monkeypatch.setattr(variation, "varied_scenario", lambda *a, **k: calls.append(1) or original(*a, **k))
    assert main(["batch", str(manifest), "--list"]) == 0
    assert len(capsys.readouterr().out.strip().splitlines()) == 3001 and len(calls) == 1
    reads = []
    original_load = config_file.yaml.safe_load
    monkeypatch.setattr(config_file.yaml, "safe_load", lambda fh: reads.append(1) or original_load(fh))
    manifest.write_text(manifest.read_text().replace("3000", "20"))
    _, planned = batch.plan(manifest)
    assert len(planned) == 20 and len(reads) < 20  # not one parse of each file per run


def test_the_batch_parent_handles_sigint_even_when_it_inherited_it_ignored():
    """interrupts_raise installs handlers whatever the disposition was, and restores it afterwards."""
    from radarays_ros.scenario.batch import interrupts_raise

    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with pytest.raises(KeyboardInterrupt):
            with interrupts_raise():
                os.kill(os.getpid(), signal.SIGINT)
                sum(range(1000))  # the handler runs between bytecodes
        with pytest.raises(KeyboardInterrupt):
            with interrupts_raise():
                os.kill(os.getpid(), signal.SIGTERM)
                sum(range(1000))  # the handler runs between bytecodes
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)
