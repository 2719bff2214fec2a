"""Signal photons per product line against the calibration figures of lidar_ros/physics/photon_calibration.py.

The threshold and the limit signal are recomputed here from the Poisson distribution written out by hand
(no scipy), the scale from the datasheet pairs; then each product line's preset, looking at a Lambertian
wall of the datasheet reflectivity at the datasheet range, must count Poisson photons of that mean."""
from __future__ import annotations

import math

import numpy as np
import pytest
import trimesh

from lidar_ros import LidarSimulator, load_sensor
from lidar_ros.physics.photon_calibration import BACKGROUND_PHOTONS, PRODUCT_LINES, limit_signal, threshold
from lidar_ros.physics.unit_calibration import UNIT_SIGNAL_SCALE
from radarays_ros.tracing import make_backend
from radarays_ros.world.materials import Material
from radarays_ros.world.mesh import TriMesh
from radarays_ros.world.scene import Scene
from radarays_ros.world.transforms import pose_to_matrix

PRESET_OF_LINE = {"OS0": "OS0-32", "OS1": "OS1-32", "OS2": "OS2-32", "HDL-64E": "HDL-64E-S2", "Mid-360": "Mid-360",
                  "HAP": "HAP"}


def poisson_tail(k: int, lam: float) -> float:
    """P(Poisson(lam) >= k), summed by hand."""
    term, below = math.exp(-lam), 0.0
    for i in range(k):
        below += term
        term *= lam / (i + 1)
    return 1.0 - below


def hand_limit(background: float, false_positive: float, detection: float) -> tuple[int, float]:
    t = next(k for k in range(1, 1000) if poisson_tail(k, background) <= false_positive)
    lo, hi = 0.0, 1000.0
    for _ in range(200):  # bisection: the tail grows with the mean
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if poisson_tail(t, mid + background) < detection else (lo, mid)
    return t, lo


def test_threshold_and_limit_signal_follow_poisson_counting():
    for background, rate, detection in ((3.0, 1e-4, 0.9), (1.0, 1e-4, 0.9), (10.0, 1e-3, 0.5)):
        t, s = hand_limit(background, rate, detection)
        assert threshold(background, rate) == t
        assert limit_signal(background, rate, detection) == pytest.approx(s, rel=1e-6)
    assert hand_limit(3.0, 1e-4, 0.9)[0] == 12  # the worked number of the module doc


# lines whose presets carry a real unit's calibration instead (unit_calibration.py, test_lidar_realism3.py)
@pytest.mark.parametrize("line", [line for line in PRESET_OF_LINE if line not in UNIT_SIGNAL_SCALE])
def test_each_product_line_counts_poisson_photons_at_its_datasheet_calibration(line):
    figures = PRODUCT_LINES[line]
    _, s_limit = hand_limit(BACKGROUND_PHOTONS, figures.false_positive_rate, figures.detection_probability)
    scale = s_limit * math.exp(np.mean([math.log(r * r / rho) for rho, r in figures.pairs]))
    cfg = load_sensor(PRESET_OF_LINE[line])
    assert cfg.surface.signal_scale == pytest.approx(scale, rel=0.005)  # the preset carries the calibrated K
    rho, reach = min(figures.pairs, key=lambda pair: pair[1])  # the nearer datasheet pair
    # a wall of that reflectivity at that range, seen with shot noise on
    scene = Scene()
    scene.materials.add(Material("datasheet_target", {}, {"class": "general", "reflectivity": rho}))
    box = trimesh.creation.box([0.2, 4 * reach, 4 * reach])
    scene.add_entity("wall", TriMesh(box.vertices, box.faces), pose_to_matrix(reach + 0.1, 0, 0),
                     material="datasheet_target")
    sim = LidarSimulator(load_sensor(PRESET_OF_LINE[line], {
        "noise": {}, "surface.model": "none", "range.max": 2.0 * reach, "detection": {},
        "signal": {"poisson": True, "noise_floor": BACKGROUND_PHOTONS}}), scene, make_backend("embree", scene, threads=2))
    scan = sim.simulate(np.eye(4))
    hit = scan.hit & (np.abs(scan.azimuth_rad) < 1.0)
    assert hit.sum() > 500
    cos = (np.cos(scan.elevation_rad) * np.cos(scan.azimuth_rad))[hit]  # Lambert: the wall's normal is x
    mean = scale * rho * cos / scan.range[hit].astype(np.float64) ** 2
    counts = np.asarray(scan.fields["ouster_signal"], np.float64)[hit]
    z = (counts.sum() - mean.sum()) / math.sqrt(mean.sum())
    assert abs(z) < 4.5  # the calibrated mean
    dispersion = ((counts - mean) ** 2 / mean).mean()
    assert abs(dispersion - 1.0) < 5 * math.sqrt(2.0 / hit.sum()) + 0.02  # Poisson: variance = mean
    # at normal incidence the datasheet pair gives the limit signal (two pairs: their geometric-mean spread)
    spread = math.exp(abs(math.log(reach**2 / rho) - np.mean([math.log(r * r / p) for p, r in figures.pairs])))
    assert scale * rho / reach**2 == pytest.approx(s_limit * spread, rel=1e-9) or \
        scale * rho / reach**2 == pytest.approx(s_limit / spread, rel=1e-9)
    misses = ~scan.hit
    if misses.sum() > 1000:  # background photons where nothing returns
        floor = np.asarray(scan.fields["ouster_signal"], np.float64)[misses]
        assert abs(floor.mean() - BACKGROUND_PHOTONS) < 5 * math.sqrt(BACKGROUND_PHOTONS / misses.sum())
