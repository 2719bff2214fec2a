"""`radarays lidar compare`: statistics of real and simulated lidar frames, on synthetic frames with known answers,
on the shared real frames (their README's figures), and bad inputs as one line."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from lidar_ros.compare import LidarFrame, check_same_sensor, frame_stats
from lidar_ros.compare.stats import holes, incidence_deg, place_flags, range_noise
from radarays_ros.cli import main as radarays_main
from radarays_ros.errors import ConfigError

REALDATA = Path("/work/shared/realdata")
H, W = 32, 720


def directions(h=H, w=W, fov_deg=30.0):
    el = np.radians(np.linspace(-fov_deg / 2, fov_deg / 2, h))[:, None] * np.ones((1, w))
    az = (np.arange(w) * 2 * np.pi / w)[None, :] * np.ones((h, 1))
    return el, az


def make_frame(r, name="synthetic", **channels) -> LidarFrame:
    el, az = directions(*r.shape)
    d = np.stack([np.cos(el) * np.cos(az), np.cos(el) * np.sin(az), np.sin(el)], axis=-1)
    xyz = np.where(np.isfinite(r)[..., None], r[..., None] * d, np.nan)
    return LidarFrame(name=name, sensor="", range_m=r, xyz_m=xyz, **channels)


def room_with_box():
    """A cylindrical wall at 10 m with a box face at 5 m in columns 200-259, rows 8-23."""
    r = np.full((H, W), 10.0)
    r[8:24, 200:260] = 5.0
    return r


# -- holes and where they fall ---------------------------------------------------------------------------
def test_holes_on_a_depth_edge_are_reported_at_the_edge():
    r = room_with_box()
    r[10:22, 199] = np.nan  # the column just left of the box: its neighbours hold 5 m and 10 m
    s = frame_stats(make_frame(r))
    assert s["hole_at_edge"] == 1.0
    assert s["isolated_fraction"] == 0.0  # a vertical slit: no hole has all 4 neighbours valid
    assert s["hole_fraction"] == pytest.approx(12 / (H * W))
    assert s["valid_fraction"] == pytest.approx(1 - 12 / (H * W))


def test_salt_on_a_flat_wall_is_isolated_and_not_at_an_edge():
    r = room_with_box()
    rng = np.random.default_rng(3)
    rows, cols = rng.integers(2, H - 2, 40) // 2 * 2, 400 + 6 * np.arange(40)  # spaced: never neighbours
    r[rows, cols] = np.nan
    frame = make_frame(r)
    s = frame_stats(frame)
    assert s["isolated_fraction"] == pytest.approx(40 / (H * W))
    assert s["hole_at_edge"] == 0.0 and s["hole_at_unexplained"] == 1.0
    hole, isolated = holes(frame)
    assert hole.sum() == isolated.sum() == 40


def test_holes_next_to_dark_and_far_pixels():
    r = room_with_box()
    r[:, 500:520] = 30.0  # a far patch (its own wall, no edge inside)
    refl = np.full((H, W), 40.0)
    refl[:, 600:640] = 2.0  # a dark patch
    r[16, 505] = np.nan
    r[16, 620] = np.nan
    frame = make_frame(r, reflectivity=refl)
    flags = place_flags(frame)
    assert flags["far"][16, 505] and not flags["dark"][16, 505]
    assert flags["dark"][16, 620] and not flags["far"][16, 620]
    s = frame_stats(frame)
    assert s["hole_at_far"] == 0.5 and s["hole_at_dark"] == 0.5 and s["hole_at_edge"] == 0.0


def test_incidence_of_a_flat_wall_is_the_angle_to_its_normal():
    """A wall x = 5 m: the ray at azimuth a, elevation e meets it at arccos(cos e cos a)."""
    el, az = directions()
    az = (az + np.pi) % (2 * np.pi) - np.pi
    with np.errstate(divide="ignore"):
        r = np.where(np.cos(az) > 0.2, 5.0 / (np.cos(el) * np.cos(az)), np.nan)
    inc = incidence_deg(make_frame(r))
    expected = np.degrees(np.arccos(np.cos(el) * np.cos(az)))
    inner = np.isfinite(inc)
    assert inner.sum() > 0.3 * H * W
    assert np.abs(inc[inner] - expected[inner]).max() < 0.5
    assert (inc[inner] > 70).any()  # grazing at the wall's far ends
    s = frame_stats(make_frame(r))
    assert 0 < s["valid_at_grazing"] < 0.5


# -- noise, texture, signal, second returns, timing ------------------------------------------------------
@pytest.mark.parametrize("sigma", [0.0, 0.005, 0.02])
def test_range_noise_estimate_recovers_the_gaussian_sigma(sigma):
    rng = np.random.default_rng(7)
    r = room_with_box() + rng.normal(0.0, sigma, (H, W))
    s = frame_stats(make_frame(r))
    assert s["range_noise_m"] == pytest.approx(sigma, rel=0.05, abs=1e-6)
    near = range_noise(make_frame(r), (0.0, 6.0))  # the box at 5 m only
    assert near == pytest.approx(sigma, rel=0.12, abs=1e-6)


def test_texture_of_flat_paint_is_zero_and_of_noise_its_mean_difference():
    r = room_with_box()
    flat = frame_stats(make_frame(r, reflectivity=np.full((H, W), 30.0)))
    assert flat["reflectivity_texture"] == 0.0 and flat["reflectivity_distinct"] == 1
    rng = np.random.default_rng(1)
    refl = 30.0 + rng.normal(0, 3.0, (H, W))
    s = frame_stats(make_frame(r, reflectivity=refl))
    # |a - b| of two independent N(0, 3): mean 2 * 3 / sqrt(pi); / level 30
    assert s["reflectivity_texture"] == pytest.approx(2 * 3.0 / math.sqrt(math.pi) / 30.0, rel=0.05)


def test_signal_times_r2_over_rho_is_flat_for_1_over_r2_and_rolls_off_with_an_overlap():
    r = np.tile(np.geomspace(0.6, 15.0, W), (H, 1))
    refl = np.full((H, W), 50.0)
    k = 2.0e5
    signal = k * (refl / 100.0) / r ** 2
    s = frame_stats(make_frame(r, reflectivity=refl, signal=signal))
    bands = [v for key, v in s.items() if key.startswith("signal_r2_rho_") and not math.isnan(v)]
    assert len(bands) >= 4 and np.allclose(bands, k, rtol=1e-6)
    assert s["signal_near_rolloff"] == pytest.approx(1.0)
    overlap = np.minimum(1.0, (r / 3.0) ** 2)  # a receiver that sees near targets only in part
    s = frame_stats(make_frame(r, reflectivity=refl, signal=signal * overlap))
    assert s["signal_near_rolloff"] < 0.3
    assert s["signal_r2_rho_4_8m"] == pytest.approx(k)


def test_second_returns_fraction_and_placement():
    r = room_with_box()
    r2 = np.full((H, W), np.nan)
    r2[::10, :] = r[::10, :] + 2.0  # every 10th row: an echo 2 m behind
    s = frame_stats(make_frame(r, range2_m=r2, signal=np.full((H, W), 100.0), signal2=np.full((H, W), 25.0)))
    assert s["second_fraction"] == pytest.approx(len(range(0, H, 10)) / H)
    assert s["second_farther"] == 1.0 and s["second_minus_first_m"] == pytest.approx(2.0)
    assert s["second_signal_ratio"] == pytest.approx(0.25) and s["second_without_first"] == 0.0


def test_column_timing_step_jitter_and_span():
    rng = np.random.default_rng(5)
    step, jitter = 97.66e-6, 2.0e-6
    t = np.arange(1024) * step + rng.normal(0, jitter, 1024)
    s = frame_stats(make_frame(np.full((H, 1024), 10.0), column_time_s=t))
    assert s["column_step_us"] == pytest.approx(97.66, abs=0.3)
    assert s["column_jitter_us"] == pytest.approx(jitter * math.sqrt(2) * 1e6, rel=0.15)  # diff of two draws
    assert s["frame_span_ms"] == pytest.approx(1023 * step * 1e3, abs=0.02)
    exact = frame_stats(make_frame(np.full((H, 1024), 10.0), column_time_s=np.arange(1024) * step))
    assert exact["column_jitter_us"] == pytest.approx(0.0, abs=1e-6)


def test_near_ir_of_returns_vs_misses_and_row_banding():
    r = room_with_box()
    r[:4] = np.nan  # the top rows see the sky
    nir = np.where(np.isfinite(r), 400.0, 100.0)
    s = frame_stats(make_frame(r, near_ir=nir))
    assert s["near_ir_return_to_miss"] == pytest.approx(4.0)
    gains = np.where(np.arange(H) % 2 == 0, 1.1, 0.9)[:, None]
    banded = frame_stats(make_frame(room_with_box(), near_ir=np.full((H, W), 400.0) * gains))
    assert banded["near_ir_row_banding"] == pytest.approx(1.4826 * 0.1, rel=1e-6)


# -- files, the command, bad inputs -----------------------------------------------------------------------
def write_ouster_npz(path, r, **extra):
    el, az = directions(*r.shape)
    d = np.stack([np.cos(el) * np.cos(az), np.cos(el) * np.sin(az), np.sin(el)], axis=-1)
    rr = np.nan_to_num(r)
    np.savez(path, range_mm=np.round(rr * 1000).astype(np.uint32), xyz_m=(rr[..., None] * d).astype(np.float32),
             reflectivity=np.full(r.shape, 20, np.uint8), signal=np.full(r.shape, 100, np.uint16),
             near_ir=np.full(r.shape, 300, np.uint16), timestamp_ns=(1_000_000 + np.arange(r.shape[1]) * 97_656).astype(np.uint64),
             meas_col=np.tile(np.arange(r.shape[1], dtype=np.uint16), (r.shape[0], 1)), sensor=np.array("OS-1-32"),
             udp_profile_lidar=np.array("RNG19_RFL8_SIG16_NIR16"), **extra)


def write_sim_npz(path, r):
    el, az = directions(*r.shape)
    d = np.stack([np.cos(el) * np.cos(az), np.cos(el) * np.sin(az), np.sin(el)], axis=-1)
    np.savez(path, range=r.astype(np.float32), hit=np.isfinite(r), xyz=(np.nan_to_num(r)[..., None] * d).astype(np.float32),
             reflectivity=np.full(r.shape, 20, np.uint8), signal=np.full(r.shape, 100, np.uint16),
             near_ir=np.full(r.shape, 120, np.uint16), time=np.tile(np.arange(r.shape[1]) * 97.656e-6, (r.shape[0], 1)),
             elevation_rad=el.astype(np.float32), azimuth_rad=az.astype(np.float32), ring=np.arange(r.shape[0], dtype=np.uint16))


def test_the_command_prints_both_columns_and_writes_picture_and_json(tmp_path, capsys):
    r = room_with_box()
    r[10:22, 199] = np.nan
    write_ouster_npz(tmp_path / "real.npz", r)
    write_sim_npz(tmp_path / "sim.npz", room_with_box())
    assert radarays_main(["lidar", "compare", str(tmp_path / "real.npz"), str(tmp_path / "sim.npz"),
                          "--picture", str(tmp_path / "cmp.png"), "--json", str(tmp_path / "cmp.json")]) == 0
    out = capsys.readouterr().out
    assert "| statistic | unit | real: real.npz | sim: sim.npz |" in out and "| hole_at_edge |  | 1 | – |" in out
    stats = json.loads((tmp_path / "cmp.json").read_text())
    assert stats["real"]["hole_at_edge"] == 1.0 and stats["sim"]["hole_fraction"] == 0.0
    assert stats["real"]["column_step_us"] == pytest.approx(97.656) and stats["sim"]["column_jitter_us"] < 1e-3
    from PIL import Image

    assert Image.open(tmp_path / "cmp.png").size[0] > 800
    # `radarays compare` (the radar comparison) hands lidar frames over
    assert radarays_main(["compare", str(tmp_path / "real.npz"), str(tmp_path / "sim.npz")]) == 0
    assert "hole_at_edge" in capsys.readouterr().out


def test_frames_of_different_sensors_are_refused_in_one_line(tmp_path, capsys):
    write_ouster_npz(tmp_path / "real.npz", room_with_box())
    write_sim_npz(tmp_path / "sim.npz", np.full((16, W), 10.0))
    assert radarays_main(["lidar", "compare", str(tmp_path / "real.npz"), str(tmp_path / "sim.npz")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "32 x 720 (OS-1-32)" in err and "16 x 720" in err and "not the same sensor" in err
    a = make_frame(room_with_box())
    with pytest.raises(ConfigError, match="columns differ"):
        check_same_sensor(a, make_frame(np.full((H, 2 * W), 10.0)))
    with pytest.raises(ConfigError, match="not the same sensor model"):
        check_same_sensor(LidarFrame("a", "OS-2-128", a.range_m, a.xyz_m), LidarFrame("b", "OS0-128", a.range_m, a.xyz_m))
    check_same_sensor(LidarFrame("a", "OS-2-128 v2.3.0", a.range_m, a.xyz_m), LidarFrame("b", "OS2-128", a.range_m, a.xyz_m))


@pytest.mark.parametrize("content, message", [
    ({"image": np.zeros((4, 4))}, "no lidar frame in it"),
    ({"range_mm": np.zeros(10, np.uint32), "xyz_m": np.zeros((10, 3))}, "range_mm must be (beams, columns)"),
    ({"range": np.zeros((8, 8), np.float32), "xyz": np.zeros((8, 3))}, "xyz has shape"),
])
def test_bad_files_are_one_line(tmp_path, capsys, content, message):
    np.savez(tmp_path / "bad.npz", **content)
    write_sim_npz(tmp_path / "sim.npz", room_with_box())
    assert radarays_main(["lidar", "compare", str(tmp_path / "bad.npz"), str(tmp_path / "sim.npz")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and message in err and "bad.npz" in err


def test_missing_files_and_unknown_types_are_one_line(tmp_path, capsys):
    (tmp_path / "x.txt").write_text("no")
    for path, message in ((tmp_path / "none.npz", "no such file"), (tmp_path / "x.txt", "unknown file type")):
        assert radarays_main(["lidar", "compare", str(path)]) == 2
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and message in err


def test_a_pcap_without_ouster_sdk_says_how(tmp_path, capsys):
    pytest.importorskip("numpy")
    try:
        import ouster.sdk  # noqa: F401
        pytest.skip("ouster-sdk is installed")
    except ImportError:
        pass
    (tmp_path / "a.pcap").write_bytes(b"\0" * 64)
    assert radarays_main(["lidar", "compare", str(tmp_path / "a.pcap")]) == 2
    err = capsys.readouterr().err.strip()
    assert "needs ouster-sdk" in err and "pip install ouster-sdk" in err and err.count("\n") == 0


# -- the shared real frames: the figures their README states ----------------------------------------------
REAL = {  # file: (valid, isolated dropouts, second-return fraction or None)
    "ouster/OS-2-128-U1_v2.3.0_1024x10.npz": (0.913, 0.0039, None),
    "ouster/single_scan_016.npz": (0.776, 0.0058, 0.0634),
    "ouster/OS-0-128-U1_v2.3.0_1024x10.npz": (0.742, 0.0084, None),
    "ouster/OS-1-64_1024x10_fw20.npz": (0.256, 0.0042, None),
    "nebula/vlp16/nebula_vlp16_1673400472138016708.npz": (0.508, None, 0.0128),
    "nebula/xt32/nebula_xt32_1673400678101968885.npz": (0.950, None, 0.0361),
}


@pytest.mark.skipif(not REALDATA.is_dir(), reason="shared real lidar frames not on this machine")
@pytest.mark.parametrize("name", sorted(REAL), ids=lambda n: Path(n).stem[:20])
def test_real_frames_read_as_their_readme_states(name):
    from radarays_ros.io.lidar_frames import read_lidar_frame

    valid, isolated, second = REAL[name]
    frame = read_lidar_frame(REALDATA / name)
    s = frame_stats(frame)
    assert s["valid_fraction"] == pytest.approx(valid, abs=6e-4)
    if isolated is not None:
        assert s["isolated_fraction"] == pytest.approx(isolated, abs=6e-5)
    if second is not None:
        assert s["second_fraction"] == pytest.approx(second, abs=6e-5)
    if name.startswith("ouster"):
        assert 97.3 <= s["column_step_us"] <= 98.4 and s["frame_span_ms"] == pytest.approx(99.8, abs=0.15)


@pytest.mark.skipif(not REALDATA.is_dir(), reason="shared real lidar frames not on this machine")
@pytest.mark.parametrize("raw, npz, meta", [
    ("OS-2-128-U1_v2.3.0_1024x10.pcap", "OS-2-128-U1_v2.3.0_1024x10.npz", None),
    ("single_scan_016.osf", "single_scan_016.npz", None),
    ("OS-1-64_1024x10_fw20.pcap", "OS-1-64_1024x10_fw20.npz", "OS-1-64_sensor_config_reduced.json"),
])
def test_ouster_pcap_and_osf_read_through_ouster_sdk_equal_the_npz(raw, npz, meta):
    """The vendor's decoder (ouster-sdk) gives the frame the shared .npz holds (xyz to float32 rounding)."""
    pytest.importorskip("ouster.sdk")
    from radarays_ros.io.lidar_frames import read_lidar_frame

    base = REALDATA / "ouster"
    a = read_lidar_frame(base / raw, base / meta if meta else None)
    b = read_lidar_frame(base / npz)
    for key in ("range_m", "reflectivity", "signal", "near_ir", "range2_m", "time_s"):
        if getattr(b, key) is not None:
            np.testing.assert_array_equal(np.nan_to_num(getattr(a, key)), np.nan_to_num(getattr(b, key)), err_msg=key)
    assert np.nanmax(np.abs(a.xyz_m - b.xyz_m)) < 2e-5 and a.dual == b.dual


@pytest.mark.skipif(not REALDATA.is_dir(), reason="shared real lidar frames not on this machine")
def test_readme_table_script_reports_the_frames_own_statistics(tmp_path, monkeypatch):
    """scripts/lidar_compare_table.py re-makes the README table: each cell is real / sim, the real side the real
    frame's own statistic and the sim side that of the frame it simulated with the README's command."""
    import importlib.util
    import json

    from lidar_ros.compare import frame_stats
    from radarays_ros.io.lidar_frames import read_lidar_frame

    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("lidar_compare_table", root / "scripts" / "lidar_compare_table.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    monkeypatch.chdir(root)
    out = tmp_path / "frames"
    table = _run_main(script.main, ["--shared", str(REALDATA.parent), "--only", "VLP-16", "--keep", str(out)])
    rows = {line.split(" | ")[0].lstrip("| "): line.rstrip(" |").split(" | ")[1] for line in table.splitlines()[2:]}
    assert len(rows) == len(script.ROWS)
    column = next(f for f in script.FRAMES if f[0] == "VLP-16")
    real = frame_stats(read_lidar_frame(str(REALDATA / column[1])))
    sim = frame_stats(read_lidar_frame(str(out / "VLP-16.npz")))
    assert json.loads((out / "VLP-16.json").read_text())["sim"]["hole_fraction"] == sim["hole_fraction"]
    for label, key, scale, fmt in script.ROWS:
        want = f"{script._cell(real[key], scale, fmt)} / {script._cell(sim[key], scale, fmt)}"
        assert rows[label] == ("–" if want == "– / –" else want), label


def _run_main(main, argv) -> str:
    import contextlib
    import io

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert main(argv) == 0
    return buffer.getvalue()
