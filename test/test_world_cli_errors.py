"""Bad worlds through the `radarays` command (radarays_ros.cli.main in this process, stdout, stderr and exit
status as a process gives them): `world info`, `world panorama` and `cast` each print one line naming the
file and element and exit 2 on an error in the world; documented warnings (degenerate triangles, an empty
world) leave the exit status 0."""
import numpy as np
import pytest

from support.cli import radarays


def sdf(body: str) -> str:
    return f'<?xml version="1.0"?>\n<sdf version="1.9">\n<world name="w">\n{body}\n</world>\n</sdf>\n'


def visual(geometry: str, pose: str = "0 0 0 0 0 0") -> str:
    return (f'<model name="m"><static>true</static><pose>{pose}</pose><link name="l">'
            f'<visual name="v"><geometry>{geometry}</geometry></visual></link></model>')


# name -> (file name, content, text every error line must hold)
ERRORS = {
    "malformed_xml": ("malformed.sdf", sdf('<model name="m">\n<link name="l">\n</model>'), "malformed XML"),
    "unknown_geometry": ("unknown.sdf", sdf(visual("<cone><radius>1</radius></cone>")), "unknown geometry <cone>"),
    "nan_pose": ("nan_pose.sdf", sdf(visual("<box><size>1 1 1</size></box>", pose="0 0 nan 0 0 0")), "NaN"),
}
# resources that are missing: errors for panorama and cast; `world info` lists them (exit 2 only with --strict)
MISSING = {
    "missing_mesh": ("missing_mesh.sdf", sdf(visual("<mesh><uri>meshes/gone.obj</uri></mesh>")), "meshes/gone.obj"),
    "unresolvable_uri": ("unresolvable.sdf", sdf("<include><uri>model://nowhere_to_be_found</uri></include>"),
                         "model://nowhere_to_be_found"),
}
COMMANDS = {
    "info": ["world", "info"],
    "panorama": ["world", "panorama"],
    "cast": ["cast"],
}


def _args(command: str, world, tmp_path, extra=()):
    tail = {"info": [], "panorama": ["--out", tmp_path / f"{world.stem}.png", "--width", "16"],
            "cast": ["--rays", tmp_path / "rays.npz", "--out", tmp_path / f"{world.stem}_hits.npz"]}[command]
    return [*COMMANDS[command], str(world), *map(str, tail), *extra]


def _run_all(jobs: dict, cwd):
    """Every command, one after the other, in `cwd`: {key: (exit status, stdout, stderr)}."""
    out = {}
    for key, args in jobs.items():
        done = radarays(*args, cwd=cwd)
        out[key] = (done.returncode, done.stdout, done.stderr)
    return out


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("bad_worlds")
    np.savez(tmp_path / "rays.npz", origins=np.zeros((2, 3)), directions=np.array([[1.0, 0, 0], [0, 0, -1.0]]))
    worlds = {}
    for key, (name, text, _) in {**ERRORS, **MISSING}.items():
        worlds[key] = tmp_path / name
        worlds[key].write_text(text)
    worlds["empty"] = tmp_path / "empty.sdf"
    worlds["empty"].write_text(sdf('<light name="sun" type="directional"/>'))
    worlds["degenerate"] = tmp_path / "degenerate.obj"  # one good triangle at x = 3, one with zero area
    worlds["degenerate"].write_text("v 3 -1 -1\nv 3 1 -1\nv 3 0 1\nv 3 2 -1\nf 1 2 3\nf 1 2 4\n")
    jobs = {(key, command): _args(command, world, tmp_path) for key, world in worlds.items() for command in COMMANDS}
    for key in MISSING:
        jobs[(key, "info --strict")] = _args("info", worlds[key], tmp_path, ["--strict"])
    out = _run_all(jobs, cwd=tmp_path_factory.getbasetemp())  # a cwd unrelated to the worlds
    return out, worlds, tmp_path


def _one_error_line(result, *needles):
    code, stdout, stderr = result
    lines = stderr.strip().splitlines()
    assert code == 2, (code, stdout, stderr)
    assert len(lines) == 1 and lines[0].startswith("radarays: error: "), stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    assert "Traceback" not in stderr


@pytest.mark.parametrize("case", sorted(ERRORS))
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_errors_in_the_world_file_are_one_line_and_exit_2(results, case, command):
    out, worlds, _ = results
    _one_error_line(out[(case, command)], worlds[case].name, ERRORS[case][2])


@pytest.mark.parametrize("case", sorted(MISSING))
@pytest.mark.parametrize("command", ["panorama", "cast", "info --strict"])
def test_missing_resources_are_one_line_and_exit_2(results, case, command):
    out, worlds, tmp_path = results
    _one_error_line(out[(case, command)], worlds[case].name, MISSING[case][2], "<visual name='v'>" if case == "missing_mesh" else "<include>")
    if case == "missing_mesh":  # the absolute place searched, whatever the working directory
        assert str(tmp_path / "meshes" / "gone.obj") in out[(case, command)][2]


@pytest.mark.parametrize("case", sorted(MISSING))
def test_world_info_lists_missing_resources_instead_of_failing(results, case):
    code, stdout, stderr = results[0][(case, "info")]
    assert code == 0, stderr
    assert f"unresolved URIs: {MISSING[case][2]}" in stdout
    assert "0 entities, 0 triangles" in stdout


def test_empty_world_is_a_warning_not_an_error(results):
    out, _, tmp_path = results
    code, stdout, stderr = out[("empty", "info")]
    assert code == 0 and "0 entities" in stdout and "warning:" in stdout and "empty" in stdout
    code, stdout, stderr = out[("empty", "panorama")]
    assert code == 0 and "0 of 128 rays hit" in stdout and "empty" in stderr
    code, stdout, stderr = out[("empty", "cast")]
    assert code == 0, stderr
    hits = np.load(tmp_path / "empty_hits.npz")
    assert not hits["hit"].any() and np.isinf(hits["distance"]).all() and (hits["entity"] == -1).all()


def test_degenerate_triangles_are_dropped_with_a_warning(results):
    out, _, tmp_path = results
    code, stdout, stderr = out[("degenerate", "info")]
    assert code == 0 and "dropped 1 degenerate" in stdout
    row = next(line for line in stdout.splitlines() if line.startswith("degenerate "))
    assert row.split()[:3] == ["degenerate", "yes", "1"]
    code, stdout, stderr = out[("degenerate", "panorama")]
    assert code == 0 and "dropped 1 degenerate" in stderr
    code, _, stderr = out[("degenerate", "cast")]
    assert code == 0, stderr
    hits = np.load(tmp_path / "degenerate_hits.npz")
    assert hits["distance"][0] == pytest.approx(3.0) and hits["face"][0] == 0  # the good triangle, file order
    assert not hits["hit"][1]
