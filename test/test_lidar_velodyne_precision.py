"""Velodyne range precision from published measurements (lidar_ros/physics/repeatability.py): the VLP-16 presets'
noise.sigma reproduces the published repeated-scan figure on a simulated flat wall, and `radarays lidar compare`
reads that sigma back from one frame."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
import trimesh

from lidar_ros import load_sensor
from lidar_ros.physics import repeatability
from radarays_ros.cli import main
from radarays_ros.errors import ConfigError

POSE = "0 0 1 0 0 0"
WALL_X = 4.0   # the wall's near face: ranges 4-20 m over the VLP-16's view, both compare bands (under 5 m, 5-20 m)


@pytest.fixture(scope="module")
def wall(tmp_path_factory):
    """A 300 m wide flat wall whose near face is the plane x = WALL_X."""
    box = trimesh.creation.box([0.2, 300, 300])
    box.apply_translation([WALL_X + 0.1, 0, 0])
    path = tmp_path_factory.mktemp("wall") / "wall.stl"
    box.export(path)
    return path


def frame(wall, tmp_path, name: str, seed: int, *sets: str) -> np.lib.npyio.NpzFile:
    out = tmp_path / f"{name}.npz"
    args = ["lidar", str(wall), "--sensor", "VLP-16", "--pose", POSE, "--seed", str(seed), "--out", str(out)]
    for s in sets:
        args += ["--set", s]
    assert main(args) == 0
    return out


def test_formula_worked_number_and_its_checks():
    """σ = (√π/2)·D: 2 cm apart on average → 1.772 cm; mean_difference inverts it; bad input names the key."""
    assert repeatability.sigma_from_mean_difference(0.02) == pytest.approx(0.017725, abs=1e-6)
    assert repeatability.mean_difference(repeatability.sigma_from_mean_difference(0.02)) == pytest.approx(0.02)
    # a half-normal check of the formula itself, independent of the simulator
    d = np.random.default_rng(0).standard_normal((2, 400000)) * 0.0177
    assert np.abs(d[0] - d[1]).mean() == pytest.approx(repeatability.mean_difference(0.0177), rel=0.005)
    for bad in (-0.01, math.nan, math.inf):
        with pytest.raises(ConfigError, match="mean_abs_difference_m"):
            repeatability.sigma_from_mean_difference(bad)


@pytest.mark.parametrize("preset", ["VLP-16", "VLP-16-HiRes"])
def test_preset_sigma_is_the_published_repeatability_not_the_accuracy(preset):
    """The preset's σ is the published repeated-scan figure through the formula (to the preset's 0.1 mm
    rounding), well below the ±3 cm datasheet accuracy it used to copy."""
    sigma = load_sensor(preset).noise.sigma
    published = repeatability.sigma_from_mean_difference(repeatability.VLP16_MEAN_SCAN_DIFFERENCE_M)
    assert sigma == pytest.approx(published, abs=1e-4)
    assert sigma < 0.7 * repeatability.VLP16_ACCURACY_M


def test_repeated_scans_of_a_flat_wall_lie_the_published_distance_apart(wall, tmp_path):
    """Two VLP-16 frames of a flat wall from the same pose (seeds 1, 2): the mean |r₁ − r₂| is the published 2 cm
    within 5 standard errors of a half-normal mean (~0.6 % here); against a noise-free frame each scan's σ is the
    preset's within a 5-standard-error χ² bound. The old σ (3 cm) would read 3.4 cm apart."""
    cfg = load_sensor("VLP-16")
    a = np.load(frame(wall, tmp_path, "a", 1))["range"].astype(np.float64)
    b = np.load(frame(wall, tmp_path, "b", 2))["range"].astype(np.float64)
    clean = np.load(frame(wall, tmp_path, "clean", 1, "noise.sigma=0", "noise.resolution=0"))["range"]
    both = np.isfinite(a) & np.isfinite(b) & np.isfinite(clean) & (clean < 20.0)
    n = int(both.sum())
    assert n > 10000
    d = (a - b)[both]
    expected = repeatability.mean_difference(cfg.noise.sigma, cfg.noise.resolution)
    standard_error = math.sqrt(2.0) * cfg.noise.sigma * math.sqrt(1 - 2 / math.pi) / math.sqrt(n)
    assert abs(np.abs(d).mean() - expected) < 5 * standard_error
    assert abs(np.abs(d).mean() - repeatability.VLP16_MEAN_SCAN_DIFFERENCE_M) < 5 * standard_error + 1e-4
    sigma_eff = math.sqrt(cfg.noise.sigma ** 2 + cfg.noise.resolution ** 2 / 12)
    for scan in (a, b):
        e = (scan - clean)[both]
        assert abs(e.mean()) < 5 * sigma_eff / math.sqrt(n)
        assert e.var() / sigma_eff ** 2 == pytest.approx(1.0, abs=5 * math.sqrt(2.0 / n))


def test_lidar_compare_reads_the_preset_sigma_off_one_wall_frame(wall, tmp_path):
    """`radarays lidar compare` on the simulated wall: the range noise under 5 m and at 5–20 m (second
    differences along rows, a MAD estimate) is the preset's σ within 8 % (the MAD's standard error here ~1.5 %;
    the wall's own curvature adds < 0.1 mm)."""
    cfg = load_sensor("VLP-16")
    out = tmp_path / "s.json"
    assert main(["lidar", "compare", str(frame(wall, tmp_path, "one", 3)), "--json", str(out)]) == 0
    stats = json.loads(out.read_text())["real"]
    sigma_eff = math.sqrt(cfg.noise.sigma ** 2 + cfg.noise.resolution ** 2 / 12)
    assert stats["range_noise_near_m"] == pytest.approx(sigma_eff, rel=0.08)
    assert stats["range_noise_mid_m"] == pytest.approx(sigma_eff, rel=0.08)
