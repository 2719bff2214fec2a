"""Issue 27, the `fit` commands and the rest of the replay's new surfaces: frames read from .npz files are bounded
from their headers and refused with one line when broken, pickled or non-finite; a fit checks every input before
its work and writes its outputs together, atomically, refusing existing ones without --overwrite; lidar runs bound
their work and show progress off a terminal; Warp's native CUDA-driver warning never reaches stderr.

The mutated-input corpus itself (fit frames, pictures, poses files, Livox and depth-camera options) is replayed
by test_hostile_replay.py (support/hostile_files.py)."""
from __future__ import annotations

import io
import subprocess
import sys
import zipfile
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np
import pytest

from radarays_ros import limits
from radarays_ros.cli import main
from radarays_ros.errors import ConfigError

REPO = Path(__file__).resolve().parents[1]
WORLD = str(REPO / "radarays_ros" / "data" / "worlds" / "office.sdf")
POSE = "1 0.5 1 0 0 0.3"


def _run(argv):
    err, out = io.StringIO(), io.StringIO()
    with redirect_stderr(err), redirect_stdout(out):
        rc = main(argv)
    return rc, err.getvalue(), out.getvalue()


def _one_error(argv, words):
    rc, err, _ = _run(argv)
    lines = err.strip().splitlines()
    assert rc == 2 and len(lines) == 1 and lines[0].startswith("radarays: error:"), err
    assert words in lines[0], lines[0]
    return lines[0]


def _bomb_npz(path: Path, names=("range", "xyz")) -> Path:
    """An .npz whose first array's header claims 2^22 x 2^22 float64 (128 TiB) over 16 bytes of data."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f8", "fortran_order": False, "shape": (1 << 22, 1 << 22)})
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(names[0] + ".npy", header.getvalue() + b"\0" * 16)
        for name in names[1:]:
            small = io.BytesIO()
            np.lib.format.write_array(small, np.zeros((3, 3)))
            archive.writestr(name + ".npy", small.getvalue())
    return path


@pytest.fixture(scope="module")
def lidar_frame(tmp_path_factory):
    """A simulated OS1-16 frame (512 columns) and the sensor file it is of."""
    import yaml

    folder = tmp_path_factory.mktemp("fit_frames")
    preset = REPO / "radarays_ros" / "data" / "lidar" / "presets" / "OS1-16.yaml"
    tree = yaml.safe_load(preset.read_text())
    tree["metadata"] = str((preset.parent / tree["metadata"]).resolve())
    tree["columns"] = 512
    sensor = folder / "os1.yaml"
    sensor.write_text(yaml.safe_dump(tree))
    rc, err, _ = _run(["lidar", WORLD, "--pose", POSE, "--sensor", str(sensor), "--out", str(folder / "f.npz")])
    assert rc == 0, err
    with np.load(folder / "f.npz") as npz:
        arrays = {k: npz[k] for k in npz.files}
    return sensor, folder / "f.npz", arrays


@pytest.fixture(scope="module")
def radar_frame(tmp_path_factory):
    """A small physical radar preset (32 azimuths x 256 bins) and a frame of it."""
    folder = tmp_path_factory.mktemp("fit_radar")
    text = (REPO / "radarays_ros" / "data" / "radar" / "navtech_ras6.yaml").read_text()
    preset = folder / "small.yaml"
    preset.write_text(text.replace("count: 400", "count: 32").replace("bins: 6848", "bins: 256").replace(
        "samples_azimuth: 8, samples_elevation: 24", "samples_azimuth: 2, samples_elevation: 4"))
    rc, err, _ = _run(["radar", WORLD, "--pose", POSE, "--config", str(preset), "--out", str(folder / "r.npz")])
    assert rc == 0, err
    return preset, folder / "r.npz"


# -- .npz frames from outside ------------------------------------------------------------------------------------
def test_a_header_claiming_terabytes_is_refused_before_any_allocation(tmp_path, lidar_frame, radar_frame):
    bomb = _bomb_npz(tmp_path / "bomb.npz")
    _one_error(["fit", "lidar", str(bomb), "--sensor", str(lidar_frame[0]), "--out", str(tmp_path / "a.yaml")],
               f"exceeds {limits.MAX_ARRAY_VALUES} values")
    radar_bomb = _bomb_npz(tmp_path / "rbomb.npz", ("image", "azimuth_rad", "range_m"))
    _one_error(["fit", "radar", str(radar_bomb), "--preset", str(radar_frame[0]), "--out", str(tmp_path / "b.yaml")],
               "exceeds")
    _one_error(["compare", str(radar_bomb), str(radar_frame[1])], "exceeds")
    assert list(tmp_path.glob("*.yaml")) == []


def test_pickles_and_broken_archives_are_one_line(tmp_path, lidar_frame):
    sensor, frame, arrays = lidar_frame
    pickled = tmp_path / "p.npz"
    np.savez(pickled, **{**arrays, "range": np.array([object()] * 4, dtype=object)})
    _one_error(["fit", "lidar", str(pickled), "--sensor", str(sensor), "--out", str(tmp_path / "a.yaml")],
               "Python objects")
    cut = tmp_path / "cut.npz"
    cut.write_bytes(frame.read_bytes()[: frame.stat().st_size * 2 // 3])
    _one_error(["fit", "lidar", str(cut), "--sensor", str(sensor), "--out", str(tmp_path / "a.yaml")],
               "not a readable .npz")
    complex_range = tmp_path / "c.npz"
    np.savez(complex_range, **{**arrays, "range": arrays["range"].astype(np.complex128)})
    _one_error(["fit", "lidar", str(complex_range), "--sensor", str(sensor), "--out", str(tmp_path / "a.yaml")],
               "allowed real numbers or text")


@pytest.mark.parametrize("key, value, words", [
    ("range", 1e308, "range holds values outside"),  # (+inf is a miss, REP-117: read as NaN)
    ("range", -1.0, "range holds values outside"),
    ("xyz", np.nan, "xyz is not finite"),
    ("signal", np.nan, "signal holds values that are not finite"),
    ("time", 1e308, "time_s holds values"),
])
def test_non_finite_channels_of_a_lidar_frame_are_refused(tmp_path, lidar_frame, key, value, words):
    from radarays_ros.io.lidar_frames import read_lidar_frame

    _, _, arrays = lidar_frame
    bad = {k: v.copy() for k, v in arrays.items()}
    bad[key] = bad[key].astype(np.float64)
    bad[key].reshape(-1)[::5] = value
    np.savez(tmp_path / "f.npz", **bad)
    with pytest.raises(ConfigError, match=words):
        read_lidar_frame(tmp_path / "f.npz")


def test_wrongly_shaped_arrays_of_a_known_layout_are_one_line(tmp_path, lidar_frame):
    from radarays_ros.io.lidar_frames import read_lidar_frame

    _, _, arrays = lidar_frame
    np.savez(tmp_path / "o.npz", range_mm=np.full((4, 4), "ab"), xyz_m=np.zeros((4, 4, 3)))  # text where numbers belong
    with pytest.raises(ConfigError, match="malformed arrays"):
        read_lidar_frame(tmp_path / "o.npz")
    np.savez(tmp_path / "s.npz", **{**arrays, "hit": arrays["hit"][:, :7]})
    with pytest.raises(ConfigError, match="malformed arrays"):
        read_lidar_frame(tmp_path / "s.npz")


# -- the fits: inputs before the work, outputs together -------------------------------------------------------------
def test_a_check_frame_that_cannot_be_shaded_fails_before_the_fit_and_leaves_nothing(tmp_path, lidar_frame):
    sensor, frame, arrays = lidar_frame
    empty = tmp_path / "empty.npz"
    np.savez(empty, **{**arrays, "hit": np.zeros_like(arrays["hit"])})
    out = tmp_path / "out" / "fit.yaml"
    rc, err, _ = _run(["fit", "lidar", str(frame), "--sensor", str(sensor), "--out", str(out), "--check", str(empty),
                       "--max-evaluations", "2"])
    assert rc == 2 and "too few to fit" in err and "fit lidar: evaluation" not in err, err  # before any evaluation
    assert not out.parent.exists() or list(out.parent.iterdir()) == []


def test_fit_lidar_refuses_existing_outputs_and_replaces_them_with_overwrite(tmp_path, lidar_frame):
    sensor, frame, _ = lidar_frame
    out = tmp_path / "fit.yaml"
    out.with_suffix(".md").write_text("mine\n")
    argv = ["fit", "lidar", str(frame), "--sensor", str(sensor), "--out", str(out), "--max-evaluations", "2", "--quiet"]
    _one_error(argv, "exists; give another name, or --overwrite")
    assert out.with_suffix(".md").read_text() == "mine\n" and not out.exists()
    rc, err, _ = _run(argv + ["--overwrite"])
    assert rc == 0, err
    assert out.is_file() and out.with_suffix(".md").read_text() != "mine\n" and out.with_suffix(".json").is_file()
    assert not [p for p in tmp_path.iterdir() if ".partial" in p.name]


def test_fit_radar_bounds_its_work_and_writes_its_outputs_together(tmp_path, radar_frame):
    preset, frame = radar_frame
    out = tmp_path / "fit.yaml"
    base = ["fit", "radar", str(frame), "--preset", str(preset), "--out", str(out)]
    _one_error(base + ["--max-evaluations", str(10**9)], "--max-evaluations = 1000000000: out of range")
    _one_error(base + ["--starts", str(10**9)], "--starts = 1000000000: out of range")
    _one_error(base + ["--seed", "-1"], "--seed = -1: out of range")
    _one_error(base + ["--ssim-weight", "nan"], "--ssim-weight = nan")
    (tmp_path / "fit_report.png").write_bytes(b"mine")
    _one_error(base + ["--max-evaluations", "10"], "fit_report.png: exists")
    rc, err, _ = _run(base + ["--max-evaluations", "10", "--quiet", "--params", "receiver.noise_figure_db",
                              "--overwrite"])
    assert rc == 0, err
    assert out.is_file() and (tmp_path / "fit_report.md").is_file()
    assert (tmp_path / "fit_report.png").read_bytes()[:4] == b"\x89PNG"
    assert not [p for p in tmp_path.iterdir() if ".partial" in p.name]


def test_a_material_library_without_a_world_is_refused_not_ignored(tmp_path, lidar_frame, radar_frame):
    sensor, frame, _ = lidar_frame
    library = tmp_path / "mine.yaml"
    library.write_text("materials: {}\n")
    _one_error(["fit", "lidar", str(frame), "--sensor", str(sensor), "--out", str(tmp_path / "l.yaml"),
                "--materials", str(library)], "a material library is read with the mesh world (--world W)")
    preset, radar = radar_frame
    _one_error(["fit", "radar", str(radar), "--preset", str(preset), "--out", str(tmp_path / "r.yaml"),
                "--materials", str(library)], "a material library is read with the mesh world (--world W)")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.yaml"]


# -- long lidar runs: bounded work, progress off a terminal -----------------------------------------------------------
def test_a_lidar_run_of_hours_is_refused_naming_the_work_bound(tmp_path):
    line = _one_error(["lidar", WORLD, "--pose", POSE, "--sensor", "VLP-16", "--set", "beam.sub_rays=64",
                       "--set", "beam.divergence_mrad=3", "--scans", "1700", "--out", str(tmp_path / "l.npz")],
                      f"exceeds {limits.MAX_RUN_RAYS} rays traced in one run (work")
    assert "1700 x 16 x 1800 x 64" in line


def test_a_long_lidar_run_shows_progress_off_a_terminal(tmp_path, monkeypatch):
    import lidar_ros.cli as lidar_cli

    monkeypatch.setattr(lidar_cli, "PROGRESS_EVERY_S", 0.0)
    rc, err, _ = _run(["lidar", WORLD, "--pose", POSE, "--sensor", "VLP-16", "--scans", "3", "--out",
                       str(tmp_path / "l.npz")])
    assert rc == 0
    assert [line.split(" (")[0] for line in err.splitlines()] == [f"VLP-16: scan {k} of 3" for k in (1, 2, 3)], err
    import support.hostile_replay as replay  # the replay takes these lines for progress (a long run, not a hang)

    assert all(replay.PROGRESS.match(line) for line in err.splitlines())


# -- Warp's own output --------------------------------------------------------------------------------------------
def test_warp_prints_nothing_of_its_own_on_stderr(tmp_path):
    """Warp's native library writes "Warp CUDA warning: Could not find or load the NVIDIA CUDA driver" to fd 2 at
    init whatever wp.config.quiet says: a refused device is exactly our one line, a CPU run prints nothing."""
    pytest.importorskip("warp")
    command = [sys.executable, "-m", "radarays_ros.cli", "lidar", WORLD, "--pose", POSE, "--sensor", "VLP-16",
               "--backend", "warp"]
    env = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "HOME": str(Path.home())}
    refused = subprocess.run(command + ["--device", "cuda:99", "--out", str(tmp_path / "a.npz")], capture_output=True,
                             text=True, env=env, timeout=300)
    assert refused.returncode == 2, refused.stderr
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("radarays: error: backend 'warp' device 'cuda:99'"), refused.stderr
    on_cpu = subprocess.run(command + ["--device", "cpu", "--frames", "device", "--out", str(tmp_path / "b.npz")],
                            capture_output=True, text=True, env=env, timeout=600)
    assert on_cpu.returncode == 0 and on_cpu.stderr == "", on_cpu.stderr
