"""`radarays batch`: manifests, run ids, resume, retries, --index, engines (local pool and a real Ray cluster).

Bags are read back with the mcap project's reader; a worker is killed with SIGKILL mid-run, and Ctrl-C is
a real SIGINT to a real `radarays batch` process group.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
import yaml

from radarays_ros.cli import main as radarays_main
from radarays_ros.errors import ConfigError
from radarays_ros.scenario.batch import plan, run_batch
from radarays_ros.scenario.batch_run import is_done
from radarays_ros.scenario.manifest import load_manifest
from support.scenario import scenario_file

SMALL_LIDAR = {"type": "lidar", "config": "VLP-16", "set": {"columns": 360}, "mount": [0.0, 0, 1.5, 0, 0, 0]}
SMALL_RADAR = {"type": "radar", "config": "radarays_default", "mount": [0.5, 0, 1.0, 0, 0, 0],
               "set": {"azimuth.count": 20, "azimuth.step_deg": -18.0, "azimuth.rate_hz": 10.0, "range.bins": 100,
                       "range.resolution": 0.1, "beam.samples": 2, "tracing.passes": 1, "kernel.width": 5}}


def small_scenario(tmp_path: Path, name: str = "room.yaml", **changes) -> Path:
    """The test room with a tiny radar and lidar (a run is a second or two), written as `name`."""
    data = {"sensors": {"radar": SMALL_RADAR, "lidar": SMALL_LIDAR}, "duration": 0.3}
    data.update(changes)
    path = scenario_file(tmp_path, **data)
    return path.rename(tmp_path / name)


def manifest(tmp_path: Path, runs: list, **top) -> Path:
    path = tmp_path / "manifest.yaml"
    path.write_text(yaml.safe_dump({"runs": runs, **top}, sort_keys=False))
    return path


def messages(bag: Path) -> list[tuple]:
    """(topic, log time, CDR payload) of every message, as the mcap reference reader sees them."""
    from mcap.reader import make_reader

    with bag.open("rb") as f:
        return [(channel.topic, message.log_time, bytes(message.data))
                for _, channel, message in make_reader(f).iter_messages(log_time_order=True)]


def run_json(out: Path, run_id: str) -> dict:
    return json.loads((out / run_id / "run.json").read_text())


VARY = {"materials.concrete.radar.velocity": {"uniform": [0.05, 0.12]},
        "sensors.lidar.noise.sigma": {"choice": [0.0, 0.01, 0.02]},
        "sensors.radar.noise.system_std": {"normal": [1.0, 0.1]}}


# -- manifests ------------------------------------------------------------------------------------
def test_runs_are_named_and_drawn_by_content(tmp_path):
    small_scenario(tmp_path)
    rows = [{"scenario": "room.yaml", "seeds": [1, 2], "vary": VARY}, {"scenario": "room.yaml", "seed": 7}]
    first = load_manifest(manifest(tmp_path, rows)).runs
    again = load_manifest(manifest(tmp_path, rows)).runs
    swapped = load_manifest(manifest(tmp_path, rows[::-1])).runs
    assert [r.id for r in first] == [r.id for r in again] and len({r.id for r in first}) == 3
    assert {r.id: r.drawn for r in swapped} == {r.id: r.drawn for r in first}  # a row draws the same anywhere
    drawn = [r.drawn for r in first[:2]]
    assert drawn[0] != drawn[1]  # one draw per seed
    for d in drawn:
        assert 0.05 <= d["materials.concrete.radar.velocity"] <= 0.12
        assert d["sensors.lidar.noise.sigma"] in (0.0, 0.01, 0.02)
    assert first[0].id.startswith("room-s1-") and first[2].drawn == {} and first[2].seed == 7


def test_list_prints_every_run(tmp_path, capsys):
    small_scenario(tmp_path)
    path = manifest(tmp_path, [{"scenario": "room.yaml", "seeds": {"first": 10, "count": 3}, "vary": VARY}])
    assert radarays_main(["batch", str(path), "--list"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 4 and all(f"room-s{s}-" in lines[i + 1] for i, s in enumerate((10, 11, 12)))
    assert "materials.concrete.radar.velocity=" in lines[1]


@pytest.mark.parametrize("row, message", [
    ({"scenario": "no_such_scenario"}, r"runs\[0\].scenario: 'no_such_scenario': not a shipped scenario; shipped "
                                       r"scenarios: .*office_demo"),
    ({"scenario": "room.yaml", "vary": {"duration": {"gaussian": [1, 2]}}},
     r"runs\[0\].vary.duration: unknown distribution 'gaussian'; allowed: uniform, loguniform, normal, integer, choice"),
    ({"scenario": "room.yaml", "vary": {"duration": {"uniform": [2, 1]}}},
     r"vary.duration: uniform: \[2, 1\]: expected \[low, high\], low < high"),
    ({"scenario": "room.yaml", "vary": {"duration": {"uniform": [1, 2], "normal": [1, 2]}}}, "expected one distribution"),
    ({"scenario": "room.yaml", "set": {"sensors.sonar.range": 2}}, "the scenario has no sensor 'sonar'; sensors: radar, lidar"),
    ({"scenario": "room.yaml", "set": {"sensors.radar.noise.nope": 2}}, r"sensors.radar: .*noise.nope"),
    ({"scenario": "room.yaml", "set": {"materials.unobtainium.radar.velocity": 0.1}},
     "no material 'unobtainium'; materials: default, concrete"),
    ({"scenario": "room.yaml", "set": {"materials.concrete.radar.colour": 1}}, r"concrete.radar has no 'colour'"),
    ({"scenario": "room.yaml", "vary": {"materials.concrete.radar.velocity": {"uniform": [0.31, 0.5]}}},
     r"velocity"),  # a drawn value outside the material's range: refused while planning, not while running
    ({"scenario": "room.yaml", "set": {"weather.snow_mm_h": 1}}, "unknown weather key; allowed: fog_visibility_km, rain_rate_mm_h"),
    ({"scenario": "room.yaml", "set": {"gravity": 1}}, r"gravity: no such override key; allowed: sensors.<name>"),
    ({"scenario": "room.yaml", "seeds": [1, 1]}, r"seeds: \[1, 1\] repeats a seed"),
    ({"scenario": "room.yaml", "colour": "red"}, r"runs\[0\]: unknown key\(s\) \['colour'\]"),
])
def test_bad_manifest_is_one_error_before_any_run(tmp_path, capsys, row, message):
    import re

    small_scenario(tmp_path)
    rows = [{"scenario": "room.yaml", "seed": 5}, row]  # a good row first: nothing of it may run either
    path = manifest(tmp_path, rows)
    out = tmp_path / "out"
    assert radarays_main(["batch", str(path), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and re.search(message.replace("runs\\[0\\]", "runs\\[1\\]"), err), err
    assert not out.exists()


def test_weather_keys_are_applied_to_lidars_or_refused_clearly(tmp_path):
    """Weather reaches every lidar's config when the lidar model has it, else the manifest is refused
    (never silently ignored); a radar-only scenario refuses it (the radar model has no weather)."""
    from radarays_ros.scenario.variation import lidar_weather_keys

    small_scenario(tmp_path)
    small_scenario(tmp_path, "radar_only.yaml", sensors={"radar": SMALL_RADAR})
    path = manifest(tmp_path, [{"scenario": "room.yaml", "set": {"weather.fog_visibility_km": 0.5}}])
    if "fog_visibility_km" in lidar_weather_keys():
        (run,) = plan(path)[1]
        from radarays_ros.scenario.variation import varied_scenario

        scenario = varied_scenario(run.spec.scenario_path, run.spec.overrides, 1, "test")
        (lidar,) = [s for s in scenario.sensors if s.kind == "lidar"]
        assert lidar.overrides["weather.fog_visibility_km"] == 0.5
        foggy = manifest(tmp_path, [{"scenario": "room.yaml", "set": {"weather.fog_visibility_km": 0.05}},
                                    {"scenario": "room.yaml"}])
        result = run_batch(foggy, tmp_path / "out", progress=False)
        fog, clear = (messages(tmp_path / "out" / r["id"] / "bag.mcap") for r in result.rows)
        lidar_of = lambda bag: [m for m in bag if m[0] == "/lidar/points"]  # noqa: E731
        assert len(lidar_of(fog)) == len(lidar_of(clear)) == 3 and lidar_of(fog) != lidar_of(clear)
        with pytest.raises(ConfigError, match="the scenario has no lidar, and the radar model has no weather"):
            plan(manifest(tmp_path, [{"scenario": "radar_only.yaml", "set": {"weather.fog_visibility_km": 0.5}}]))
    else:
        with pytest.raises(ConfigError, match="weather.fog_visibility_km: not supported yet"):
            plan(path)


def test_out_folder_that_is_not_a_batch_is_refused(tmp_path):
    small_scenario(tmp_path)
    out = tmp_path / "mine"
    out.mkdir()
    (out / "thesis.tex").write_text("x")
    with pytest.raises(ConfigError, match="is not empty and is not a radarays batch folder"):
        run_batch(manifest(tmp_path, [{"scenario": "room.yaml"}]), out, progress=False)
    assert sorted(p.name for p in out.iterdir()) == ["thesis.tex"]


# -- running --------------------------------------------------------------------------------------
def test_local_batch_failing_row_resume_and_content_check(tmp_path, capsys):
    small_scenario(tmp_path)
    small_scenario(tmp_path, "broken.yaml", entities=[{"name": "truck", "trajectory": {"waypoints": [[0, 0], [1, 0]]}}])
    path = manifest(tmp_path, [{"scenario": "room.yaml", "seeds": [1, 2], "vary": VARY},
                               {"scenario": "broken.yaml", "seed": 1}], pictures=False)
    out = tmp_path / "out"
    assert radarays_main(["batch", str(path), "--out", str(out), "--workers", "2", "--quiet"]) == 1  # a run failed
    table = capsys.readouterr().out
    assert "2 done, 0 skipped, 1 failed" in table
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["totals"]["done"], summary["totals"]["failed"], summary["totals"]["frames"]) == (2, 1, 12)
    by_status = {r["status"]: r for r in summary["runs"]}
    failed = run_json(out, by_status["failed"]["id"])
    assert "no entity matches 'truck'" in failed["error"] and failed["attempts"] == 1  # an error is not retried
    done_ids = [r["id"] for r in summary["runs"] if r["status"] == "done"]
    for run_id in done_ids:
        record = run_json(out, run_id)
        assert record["status"] == "done" and record["frames"] == {"radar": 3, "lidar": 3}
        assert set(record["drawn"]) == set(VARY) and record["version"] and record["wall_s"] > 0
        assert record["seed"] in (1, 2) and record["content"]
        assert sorted(p.name for p in (out / run_id).iterdir()) == ["bag.mcap", "run.json", "run.log"]
        assert len(messages(out / run_id / "bag.mcap")) == record["messages"]
    log = (out / "batch.log").read_text()
    assert all(f"{run_id}: done" in log for run_id in done_ids)

    # again: the done runs are skipped (the failed one is tried again and fails again)
    before = {run_id: (out / run_id / "bag.mcap").stat().st_mtime_ns for run_id in done_ids}
    result = run_batch(path, out, progress=False)
    assert sorted(r["status"] for r in result.rows) == ["failed", "skipped", "skipped"]
    assert before == {run_id: (out / run_id / "bag.mcap").stat().st_mtime_ns for run_id in done_ids}

    # a damaged bag is not "done": that run alone is made again, with the same bytes
    damaged = out / done_ids[0] / "bag.mcap"
    good = messages(damaged)
    with damaged.open("ab") as f:
        f.write(b"\0")
    result = run_batch(path, out, progress=False)
    assert {r["id"]: r["status"] for r in result.rows}[done_ids[0]] == "done"
    assert {r["id"]: r["status"] for r in result.rows}[done_ids[1]] == "skipped"
    assert messages(damaged) == good


def test_index_runs_exactly_one_run(tmp_path):
    small_scenario(tmp_path)
    path = manifest(tmp_path, [{"scenario": "room.yaml", "seeds": [1, 2, 3]}])
    runs = plan(path)[1]
    out = tmp_path / "out"
    assert radarays_main(["batch", str(path), "--out", str(out), "--index", "2", "--quiet"]) == 0
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == [runs[2].spec.id]
    assert is_done(runs[2], out) and not (out / "summary.json").exists()  # jobs sharing DIR write no summary
    assert radarays_main(["batch", str(path), "--out", str(out), "--index", "3", "--quiet"]) == 2


def test_threads_per_run_is_honoured_and_changes_no_byte(tmp_path):
    small_scenario(tmp_path)
    path = manifest(tmp_path, [{"scenario": "room.yaml", "seeds": [4]}])
    run = plan(path)[1][0]
    bags = {}
    for threads in ("1", "2"):
        out = tmp_path / f"out{threads}"
        assert radarays_main(["batch", str(path), "--out", str(out), "--threads", threads, "--quiet"]) == 0
        assert f"{threads} threads" in (out / run.spec.id / "run.log").read_text()
        bags[threads] = messages(out / run.spec.id / "bag.mcap")
    assert bags["1"] == bags["2"] and bags["1"]


@pytest.mark.parametrize("threads", ["0", "-3", "100000"])
def test_bad_threads_is_one_error_before_any_run(tmp_path, capsys, threads):
    small_scenario(tmp_path)
    path = manifest(tmp_path, [{"scenario": "room.yaml", "seeds": [1]}])
    out = tmp_path / "out"
    assert radarays_main(["batch", str(path), "--out", str(out), "--threads", threads, "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"--threads {threads}" in err and "allowed 1 .. 1024" in err
    assert not out.exists()


def wait_for_pid(log: Path, attempt: int, timeout: float = 120.0) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if log.exists():
            for line in log.read_text().splitlines():
                if f"attempt {attempt} started, pid " in line:
                    return int(line.split("pid ")[1].split(",")[0])
        time.sleep(0.05)
    raise AssertionError(f"no attempt {attempt} in {log}")


def killed_worker_batch(tmp_path: Path, engine: str) -> None:
    small_scenario(tmp_path, duration=3.0)  # a run outlasts the moment its pid is read and it is killed
    path = manifest(tmp_path, [{"scenario": "room.yaml", "seeds": [1, 2]}])
    runs = plan(path)[1]
    out = tmp_path / "out"
    result = {}
    thread = threading.Thread(target=lambda: result.update(r=run_batch(path, out, engine=engine, workers=2,
                                                                         progress=False)))
    thread.start()
    os.kill(wait_for_pid(out / runs[0].spec.id / "run.log", 1), signal.SIGKILL)
    thread.join(timeout=600)
    rows = {r["id"]: r for r in result["r"].rows}
    assert rows[runs[0].spec.id]["status"] == "done" and rows[runs[0].spec.id]["attempts"] == 2
    assert rows[runs[1].spec.id]["status"] == "done"
    assert run_json(out, runs[0].spec.id)["attempts"] == 2 and is_done(runs[0], out)
    assert "worker" in (out / "batch.log").read_text() and "retrying" in (out / "batch.log").read_text()
    assert not list((out / runs[0].spec.id).glob(".bag.mcap.*"))  # the killed attempt's partial bag is gone
    return out, runs


def test_killed_worker_is_retried_local(tmp_path):
    killed_worker_batch(tmp_path, "local")


def test_retries_are_bounded(tmp_path):
    """With retries: 0 a run whose worker is killed is reported failed at once; the other run is done."""
    small_scenario(tmp_path, duration=3.0)  # a run outlasts the moment its pid is read and it is killed
    path = manifest(tmp_path, [{"scenario": "room.yaml", "seeds": [1, 2]}], retries=0)
    runs = plan(path)[1]
    out = tmp_path / "out"
    result = {}
    thread = threading.Thread(target=lambda: result.update(r=run_batch(path, out, workers=2, progress=False)))
    thread.start()
    os.kill(wait_for_pid(out / runs[0].spec.id / "run.log", 1), signal.SIGKILL)
    thread.join(timeout=600)
    rows = {r["id"]: r for r in result["r"].rows}
    assert rows[runs[0].spec.id]["status"] == "failed" and rows[runs[1].spec.id]["status"] == "done"
    record = run_json(out, runs[0].spec.id)
    assert record["error"] == "worker process died (exit code -9) on each of 1 attempts" and record["attempts"] == 1
    assert not (out / runs[0].spec.id / "bag.mcap").exists()


def _inherit(disposition):
    """preexec_fn of a child started with SIGINT ignored (a background job, nohup) or default (a terminal)."""
    def set_up():
        signal.signal(signal.SIGINT, disposition)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    return set_up


@pytest.mark.slow
@pytest.mark.parametrize("inherited, sent", [(signal.SIG_DFL, signal.SIGINT), (signal.SIG_IGN, signal.SIGINT),
                                             (signal.SIG_IGN, signal.SIGTERM)], ids=["sigint", "sigint-ignored", "sigterm"])
def test_ctrl_c_keeps_finished_runs_and_leaves_no_half_bag(tmp_path, inherited, sent):
    """Whatever SIGINT disposition the batch inherits (the test sets it in the child: a suite started in the
    background would pass SIG_IGN on), Ctrl-C or SIGTERM cancels the batch: exit 130, not a retried worker."""
    # runs long enough (seconds each) that run 1 is still under way 0.5 s after it started
    small_scenario(tmp_path, duration=6.0)
    path = manifest(tmp_path, [{"scenario": "room.yaml", "seeds": [1, 2, 3]}])
    runs = plan(path)[1]
    out = tmp_path / "out"
    process = subprocess.Popen([sys.executable, "-m", "radarays_ros.cli", "batch", str(path), "--out", str(out),
                                "--workers", "1", "--quiet"], start_new_session=True, stderr=subprocess.PIPE,
                               preexec_fn=_inherit(inherited))
    wait_for_pid(out / runs[1].spec.id / "run.log", 1, timeout=300)  # run 0 done, run 1 under way
    time.sleep(0.5)
    os.killpg(process.pid, sent)  # what Ctrl-C in a terminal does: the whole foreground group
    assert process.wait(timeout=120) == 130
    # run 0 is done; run 1 may have finished in the 0.5 s (a fast machine) or not; run 2 never started
    done = [bool(is_done(run, out)) for run in runs]
    assert done[0] and not done[2]
    for run, finished in zip(runs, done):
        if finished:
            continue
        assert not (out / run.spec.id / "bag.mcap").exists() and not (out / run.spec.id / "run.json").exists()
        assert not list((out / run.spec.id).glob(".bag.mcap.*")) if (out / run.spec.id).exists() else True
    summary = json.loads((out / "summary.json").read_text())
    # a run finishing while the interrupt is handled may be counted by the summary or not; its run.json decides
    assert summary["interrupted"] and 1 <= summary["totals"]["done"] <= sum(done)
    result = run_batch(path, out, progress=False)
    assert [r["status"] for r in result.rows] == ["skipped" if d else "done" for d in done]


# -- Ray ------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_ray_and_local_write_the_same_messages(tmp_path):
    """A real local Ray cluster (two workers) against one local worker: every message's bytes equal."""
    pytest.importorskip("ray")
    small_scenario(tmp_path)
    path = manifest(tmp_path, [{"scenario": "room.yaml", "seeds": [1, 2], "vary": VARY}])
    runs = plan(path)[1]
    local = run_batch(path, tmp_path / "local", engine="local", workers=1, progress=False)
    ray = run_batch(path, tmp_path / "ray", engine="ray", workers=2, progress=False)
    assert [r["status"] for r in local.rows] == [r["status"] for r in ray.rows] == ["done", "done"]
    for run in runs:
        a = messages(tmp_path / "local" / run.spec.id / "bag.mcap")
        b = messages(tmp_path / "ray" / run.spec.id / "bag.mcap")
        assert len(a) > 20 and a == b
    assert messages(tmp_path / "local" / runs[0].spec.id / "bag.mcap") != messages(
        tmp_path / "local" / runs[1].spec.id / "bag.mcap")  # the seed and the draws matter


@pytest.mark.slow
def test_killed_ray_worker_is_retried(tmp_path):
    pytest.importorskip("ray")
    killed_worker_batch(tmp_path, "ray")


def test_readme_batches_section_is_what_the_program_takes(tmp_path):
    """The README's manifest is a valid manifest (102 runs), its commands parse, its Job is an Indexed Job."""
    import re
    import shlex

    from radarays_ros.cli import build_parser
    from radarays_ros.scenario.batch import resolve_scenario

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    section = readme[readme.index("## Batches"):]
    section = section[:section.index("\n## ", 5)]
    blocks = re.findall(r"```yaml\n(.*?)```", section, re.S)
    (tmp_path / "manifest.yaml").write_text(blocks[0])
    runs = load_manifest(tmp_path / "manifest.yaml", resolve_scenario).runs
    assert len(runs) == 102 and {r.scenario for r in runs} == {"office_demo", "street_demo"}
    assert set(runs[-1].drawn) == {"materials.concrete.radar.velocity", "weather.fog_visibility_km",
                                   "odometry.drift.translation_std"}
    job = yaml.safe_load(blocks[1])
    assert job["kind"] == "Job" and job["spec"]["completionMode"] == "Indexed"
    command = job["spec"]["template"]["spec"]["containers"][0]["command"][-1]
    commands = [line.strip() for line in section.splitlines() if line.strip().startswith("radarays batch")]
    commands.append(command.replace("$JOB_COMPLETION_INDEX", "3"))
    assert len(commands) >= 5
    for line in commands:
        args = build_parser().parse_args(shlex.split(line.split("#")[0])[1:])
        assert args.func.__name__ == "batch"


@pytest.mark.slow
def test_fork_server_warm_up_loads_the_compiled_loops_and_leaves_no_thread():
    """The fork server imports scenario.kernel_warmup (engines.RUN_MODULES): afterwards the compiled loops
    of lidar frames are loaded (a forked run inherits them: a Velodyne or an Ouster frame, realistic or
    not, loads no loop, nor a loop's new signature, the warm-up did not) and the process still has one
    thread only (a fork copies no thread: pools made before it would have none in the child)."""
    from radarays_ros.scenario.engines import RUN_MODULES

    assert RUN_MODULES[-1] == "radarays_ros.scenario.kernel_warmup"
    script = textwrap.dedent("""
        import sys, threading
        import numpy as np
        import radarays_ros.scenario.kernel_warmup
        from numba.core.registry import CPUDispatcher

        def loaded():
            return {(module, name, str(signature)) for module, m in list(sys.modules.items())
                    if module.startswith(("lidar_ros", "radarays_ros")) for name, f in list(vars(m).items())
                    if isinstance(f, CPUDispatcher) for signature in f.signatures}

        threads, warm = threading.active_count(), loaded()
        import trimesh
        from lidar_ros import LidarSimulator, load_sensor
        from radarays_ros.tracing import make_backend
        from radarays_ros.world.mesh import TriMesh
        from radarays_ros.world.scene import Scene
        scene = Scene()
        box = trimesh.creation.box((30.0, 24.0, 8.0))
        scene.add_entity("hall", TriMesh(box.vertices, box.faces))
        backend = make_backend("embree", scene, threads=1)
        for sensor, overrides in [("OS1-128", {"columns": 1024}), ("VLP-16", {})]:
            for realistic in (True, False):
                config = load_sensor(sensor, overrides, realistic=realistic)
                LidarSimulator(config, scene, backend, seed=3).simulate(np.eye(4))
        print(threads, len(warm), sorted(loaded() - warm))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    threads, warm, not_warmed = done.stdout.split(" ", 2)
    assert not_warmed.strip() == "[]", not_warmed
    assert int(threads) == 1 and int(warm) > 0


def test_a_cancelled_run_leaves_no_bag_without_its_run_json(tmp_path):
    """What a cancelled worker may leave (a worker ignoring SIGINT can rename its finished bag into place just
    before it is terminated): the bag without a run.json and the writer's partial folders are removed, a file of
    anyone else's in the run dir stays; a run that completed (run.json with its bag's size and SHA-256) keeps all."""
    import hashlib

    from radarays_ros.scenario.batch_run import drop_unfinished_bag, write_json

    small_scenario(tmp_path)
    runs = plan(manifest(tmp_path, [{"scenario": "room.yaml", "seeds": [1, 2]}]))[1]
    out = tmp_path / "out"
    cut, done = (out / run.spec.id for run in runs)
    for run_dir in (cut, done):
        (run_dir / ".bag.mcap.abcd.partial").mkdir(parents=True)
        (run_dir / "bag.mcap").write_bytes(b"a whole bag")
        (run_dir / "notes.txt").write_text("the user's")
    (done / ".bag.mcap.abcd.partial").rmdir()
    write_json(done / "run.json", {"status": "done", "content": runs[1].content, "frames": {"radar": 1},
                                   "attempts": 1, "wall_s": 1.0, "bag_bytes": len(b"a whole bag"),
                                   "bag_sha256": hashlib.sha256(b"a whole bag").hexdigest()})
    assert is_done(runs[1], out) and not is_done(runs[0], out)
    for run in runs:
        drop_unfinished_bag(run, out)
    assert not (cut / "bag.mcap").exists() and not list(cut.glob(".bag.mcap.*")) and (cut / "notes.txt").exists()
    assert (done / "bag.mcap").read_bytes() == b"a whole bag" and is_done(runs[1], out)
    drop_unfinished_bag(runs[0], tmp_path / "nowhere")  # no run dir: nothing to do


def test_ray_cancel_returns_only_after_the_cancelled_tasks_ended():
    """RayEngine.cancel joins, as LocalEngine.cancel does: a plain cancel (KeyboardInterrupt in the task, which
    unwinds like Ctrl-C), then a wait for every task, before the batch removes what they left
    (drop_unfinished_bag); a task still running after the wait is killed (force)."""
    from radarays_ros.scenario.engines import RayEngine

    calls = []

    class FakeRay:  # records the calls Ray's API receives, in order; "stuck" never ends on a plain cancel
        def cancel(self, ref, force):
            calls.append(("cancel", ref, force))
            if ref == "finished":
                raise ValueError("a finished task cannot be cancelled")

        def wait(self, refs, num_returns, timeout):
            calls.append(("wait", tuple(refs), num_returns, timeout))
            return [r for r in refs if r != "stuck"], [r for r in refs if r == "stuck"]

    engine = object.__new__(RayEngine)  # no cluster: only the calls matter here
    engine.ray = FakeRay()
    engine.cancel(["running", "finished", "stuck"])
    assert calls == [("cancel", "running", False), ("cancel", "finished", False), ("cancel", "stuck", False),
                     ("wait", ("running", "finished", "stuck"), 3, RayEngine.CANCEL_JOIN_S),
                     ("cancel", "stuck", True)]
    calls.clear()
    engine.cancel([])
    assert calls == []


@pytest.mark.slow
def test_a_cancelled_ray_task_unwinds_before_cancel_returns(tmp_path):
    """A real Ray task cancelled mid-run: its KeyboardInterrupt unwinds the run (the bag writer drops its unfinished
    bag) before RayEngine.cancel returns, with no cleanup by the batch: nothing of a bag is left in the run dir."""
    pytest.importorskip("ray")
    from radarays_ros.scenario.engines import RayEngine

    small_scenario(tmp_path, duration=6.0)  # seconds of work: still under way when cancelled
    run = plan(manifest(tmp_path, [{"scenario": "room.yaml", "seed": 1}]))[1][0]
    out = tmp_path / "out"
    engine = RayEngine(1, None)
    try:
        ref = engine.submit({"spec": run.spec.to_dict(), "out": str(out.resolve()), "content": run.content,
                             "attempt": 1, "threads": 1})
        run_dir = out / run.spec.id
        deadline = time.monotonic() + 120
        while not list(run_dir.glob(".bag.mcap.*.partial")) and time.monotonic() < deadline:
            time.sleep(0.05)  # the bag writer has started
        assert list(run_dir.glob(".bag.mcap.*.partial")), "the run never started writing its bag"
        engine.cancel([ref])
        assert engine.ray.wait([ref], timeout=0)[0] == [ref]  # ended, not only asked to
        assert not (run_dir / "bag.mcap").exists() and not list(run_dir.glob(".bag.mcap.*"))
        assert not (run_dir / "run.json").exists()
    finally:
        engine.close()
