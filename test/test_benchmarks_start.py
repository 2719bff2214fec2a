"""Every benchmark starts the way the README runs it (a script from the checkout root, or `-m`):
`--help` answers with exit status 0 (run in this process as `python` would run it; each also once as a
real process, `slow`). The figures themselves are never asserted (wall-clock times)."""
from __future__ import annotations

import runpy
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
AS_SCRIPT = ["bench_radar", "bench_nodes", "bench_gpu", "bench_batch", "bench_fit_lidar", "bench_fit_radar"]
AS_MODULE = ["bench_tracing", "bench_tracing_peer", "bench_lidar", "bench_gazebo", "bench_gz_clients"]


def test_every_benchmark_is_listed_here():
    assert {p.stem for p in (REPO / "benchmarks").glob("bench_*.py")} == set(AS_SCRIPT) | set(AS_MODULE)


COMMANDS = [[f"benchmarks/{name}.py"] for name in AS_SCRIPT] + [["-m", f"benchmarks.{name}"] for name in AS_MODULE]


def _python(command: list[str], argv: list[str]) -> None:
    """`python COMMAND ARGV...` in this process: sys.argv and sys.path[0] as the interpreter sets them."""
    if command[0] == "-m":
        sys.path.insert(0, str(REPO))  # -m puts the working directory first
        sys.argv = [command[1], *argv]
        runpy.run_module(command[1], run_name="__main__", alter_sys=True)
    else:
        script = REPO / command[0]
        sys.path.insert(0, str(script.parent))  # a script's own folder comes first
        sys.argv = [str(script), *argv]
        runpy.run_path(str(script), run_name="__main__")


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[-1])
def test_benchmark_answers_help(command, monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    with pytest.raises(SystemExit) as done:
        _python(command, ["--help"])
    assert done.value.code in (0, None) and "usage:" in capsys.readouterr().out


@pytest.mark.slow
@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[-1])
def test_benchmark_process_answers_help(command):
    done = subprocess.run([sys.executable, *command, "--help"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "usage:" in done.stdout, done.stderr[-2000:]


@pytest.mark.slow
def test_lidar_breakdown_runs_and_names_every_part():
    """`bench_lidar --breakdown` (the README's split of a frame's CPU) runs on a small world and prints every
    part and both piece timings; the figures themselves are not asserted."""
    done = subprocess.run([sys.executable, "-m", "benchmarks.bench_lidar", "--triangles", "20000", "--repeats", "1",
                           "--sensors", "VLP-16+effects", "--breakdown"],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    from benchmarks.bench_lidar import _PARTS

    for part in [*_PARTS, "everything else", "frame", "piece with 1 thread(s)", "piece with 2 thread(s)"]:
        assert part in done.stdout, part


def test_radar_breakdown_parts_are_one_clock_and_add_up(monkeypatch):
    """`bench_radar --breakdown` on a small world: every part and step named, none negative, and the steps
    (geometry passes, glints, sensor stage, each with its own tracing) within the frame's CPU: all figures
    from one clock (process CPU time; a profile on wall time gave negative remainders under load)."""
    monkeypatch.syspath_prepend(str(REPO))
    from benchmarks.bench_radar import _PARTS, _STEPS, ROOT, cpu_breakdown
    from benchmarks.common import make_big_world
    from radarays_ros.radar import RadarConfig
    from radarays_ros.world.transforms import pose_to_matrix

    cfg = RadarConfig.from_yaml(ROOT / "radarays_ros/data/radar/navtech_ras6.yaml")
    parts = cpu_breakdown(cfg, make_big_world(20_000), pose_to_matrix(0.0, 0.0, 2.0))
    assert set(parts) == {*_PARTS, "everything else", "frame", *_STEPS}
    assert all(ms >= 0.0 for ms in parts.values()), parts
    assert sum(parts[step] for step in _STEPS) <= parts["frame"] * (1 + 1e-9)
    assert sum(parts[step] for step in _STEPS) >= 0.5 * parts["frame"]  # the steps are the frame (bar its set-up)


@pytest.mark.slow
def test_tracing_peer_runs_every_part_on_a_small_world():
    """`bench_tracing_peer` (the README's ratios to bare Embree) runs on small worlds and prints every part;
    the figures themselves are not asserted."""
    done = subprocess.run([sys.executable, "-m", "benchmarks.bench_tracing_peer", "--triangles", "20000",
                           "--build-triangles", "20000", "--repeats", "1", "--movers", "5", "--embreex-mesh"],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    for line in ["VLP-16 (28800 rays), 2 thread(s)", "OS1-128 (131072 rays), 1 thread(s)", "5 movers  ",
                 "per_mover_us", "Embree's own", "embreex TriangleMesh"]:
        assert line in done.stdout, line
