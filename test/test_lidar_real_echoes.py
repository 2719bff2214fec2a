"""Which echo each vendor reports in which slot, on scenes with known answers (issue 23, item 2).

Ouster dual profiles: RANGE = strongest, RANGE2 = second strongest (nearer or farther). Velodyne dual and
Hesai "last + strongest" (0x39, mode `dual`): the strongest and the last; when the last is the strongest, the
second strongest. Hesai "first + strongest" (0x3C, `dual_first`): the strongest and the first, likewise. A second echo *nearer* than the strongest comes from a partial occluder in front of a stronger
surface: a thin dark pole before a bright wall covers little of the footprint, so the wall is the
strongest (and, for Velodyne/Hesai, also the last) and the pole is reported second, nearer.
Echo strength is ρ·w/r² (echoes.py); the real nebula frames' echoes are ranked the same way, by their
calibrated intensity / r² (io/lidar_frames.py _echoes).
"""
from __future__ import annotations

import numpy as np
import pytest

from lidar_ros import load_sensor
from lidar_ros.physics.echoes import form_echoes

VENDORS = [("OS0-128", "dual_strongest"), ("VLP-16", "dual"), ("XT32", "dual"), ("XT32", "dual_first")]


@pytest.fixture(scope="module")
def pole_before_wall():
    """A 2 cm dark pole (asphalt, ρ 0.08) 3 m ahead of a bright wall (metal, ρ 0.6) at 6 m, both 40 m tall."""
    import trimesh

    from radarays_ros.tracing import make_backend
    from radarays_ros.world.mesh import TriMesh
    from radarays_ros.world.scene import Scene
    from radarays_ros.world.transforms import pose_to_matrix

    scene = Scene()
    wall = trimesh.creation.box((0.1, 40.0, 40.0))
    scene.add_entity("wall", TriMesh(wall.vertices, wall.faces), pose_to_matrix(6.05, 0, 0), material="metal")
    pole = trimesh.creation.box((0.02, 0.02, 40.0))
    scene.add_entity("pole", TriMesh(pole.vertices, pole.faces), pose_to_matrix(3.01, 0, 0), material="asphalt")
    return scene, make_backend("embree", scene, threads=2)


@pytest.mark.parametrize("name, mode", VENDORS, ids=[f"{n}-{m}" for n, m in VENDORS])
def test_thin_pole_before_a_bright_wall_is_the_nearer_second_echo(pole_before_wall, name, mode):
    """Two-echo beams see the pole (3 m / cos elevation) and the wall (6 m / cos elevation): the ranges differ
    by a factor 2; the slot-1 echo is the stronger (ρ/r²); where the pole covers little the wall is first and
    the pole second, nearer (most two-echo beams: the pole is thinner than the footprint)."""
    from lidar_ros import LidarSimulator
    from radarays_ros.world.transforms import pose_to_matrix

    scene, backend = pole_before_wall
    cfg = load_sensor(name, {"beam.return_mode": mode, "beam.divergence_mrad": 10.0, "beam.sub_rays": 8,
                             "noise.sigma": 0.0, "noise.resolution": 0.0})
    scan = LidarSimulator(cfg, scene, backend, seed=1).simulate(pose_to_matrix(0, 0, 0, 0, 0, 0))
    two = scan.hit & scan.second.hit
    assert two.sum() > 20
    r1, r2 = scan.range[two], scan.second.range[two]
    near, far = np.minimum(r1, r2), np.maximum(r1, r2)
    np.testing.assert_allclose(far / near, 6.0 / 3.0, rtol=1e-2)  # sub-rays 10 mrad apart on slanted beams
    rho1 = np.asarray(scan.fields["reflectivity"])[two]
    rho2 = np.asarray(scan.second.fields["reflectivity"])[two]
    assert np.all(rho1 / r1**2 >= rho2 / r2**2 * (1 - 1e-5))  # slot 1: the strongest
    pole_second = r2 < r1
    assert 0.5 < pole_second.mean() < 1.0  # the pole is second where it covers little, first where it covers much
    assert np.all(rho2[pole_second] < rho1[pole_second])


def test_vendors_differ_only_where_the_other_echo_is_neither_strongest_nor_second():
    """Three surfaces per beam with equal weights (strength ρ/3r²), the strongest first in every mode:
    a: pole 3 m ρ 0.1 (0.0037), wall 6 m ρ 0.9 (0.0083), far wall 20 m ρ 0.9 (0.00075):
       Ouster: the pole (second strongest, nearer); Velodyne / Hesai last+strongest: the last (20 m);
       Hesai first+strongest: the first (the pole).
    b: pole 3 m ρ 0.05, wall 6 m ρ 0.9, nothing behind: the wall is strongest and last: every mode the pole
       (Velodyne/Hesai: the second strongest when the last is the strongest).
    c: board 3 m ρ 0.9 (0.033), wall 6 m ρ 0.9: the board strongest and first: every mode the wall, farther.
    d: pole 2 m ρ 0.02 (0.0017), board 4 m ρ 0.6 (0.0125), wall 6 m ρ 0.6 (0.0056): Ouster and
       Velodyne the wall (second strongest, last); Hesai first+strongest the pole."""
    inf = np.inf
    ranges = np.array([[3.0, 6.0, 20.0], [3.0, 6.0, inf], [3.0, 6.0, inf], [2.0, 4.0, 6.0]], np.float32)
    rho = np.array([[0.1, 0.9, 0.9], [0.05, 0.9, 0.0], [0.9, 0.9, 0.0], [0.02, 0.6, 0.6]], np.float32)
    w = np.full(3, 1 / 3, np.float32)
    want = {"dual_strongest": [3.0, 3.0, 6.0, 6.0], "dual": [20.0, 3.0, 6.0, 6.0], "dual_first": [3.0, 3.0, 6.0, 2.0]}
    for mode, second in want.items():
        first, other = form_echoes(ranges, rho, w, 0.5, mode)
        np.testing.assert_allclose(first.range, [6.0, 6.0, 3.0, 4.0], err_msg=mode)
        np.testing.assert_allclose(other.range, second, err_msg=mode)
    one = form_echoes(np.array([[5.0, 5.1, inf]], np.float32), rho[:1], w, 0.5, "dual_first")
    assert np.isfinite(one[0].range[0]) and not np.isfinite(one[1].range[0])  # one surface: no second return


def nebula_vlp16(distance_raw: np.ndarray, intensity: np.ndarray) -> dict:
    """A minimal nebula VLP-16 .npz mapping: one firing column per row of distance_raw [firing, echo] on laser 1."""
    f = len(distance_raw)
    grid = np.zeros((f, 16, 2), np.uint16)
    ints = np.zeros((f, 16, 2), np.uint8)
    grid[:, 1], ints[:, 1] = distance_raw, intensity
    return {"grid_distance_raw": grid, "grid_intensity": ints, "grid_azimuth_cdeg": np.arange(f, dtype=np.uint16) * 20,
            "grid_in_frame": np.ones(f, bool), "laser_vert_deg": np.linspace(-15, 15, 16),
            "distance_unit_m": np.float32(0.002)}


def test_real_dual_echoes_are_ranked_by_power_as_the_sensor_ranks_them():
    """Echo 0 (last) at 6 m with intensity 40, echo 1 at 2 m: with intensity 10 its power 10/4 beats 40/36, so
    it is the first (the byte alone ranked the far echo first); with intensity 3 (0.75 < 1.11) the far echo is.
    Equal ranges: one echo, no second."""
    from radarays_ros.io.lidar_frames import velodyne_grid_frame

    raw = np.array([[3000, 1000], [3000, 1000], [3000, 3000], [3000, 0]], np.uint16)  # 2 mm units: 6 m, 2 m
    ints = np.array([[40, 10], [40, 3], [40, 40], [40, 0]], np.uint8)
    frame = velodyne_grid_frame(nebula_vlp16(raw, ints), "synthetic")
    row = int(np.argsort(np.linspace(-15, 15, 16))[1])  # laser 1's ring
    first, second = frame["range_m"][row], frame["range2_m"][row]
    np.testing.assert_allclose(first, [2.0, 6.0, 6.0, 6.0], rtol=1e-6)
    np.testing.assert_allclose(second[:2], [6.0, 2.0], rtol=1e-6)
    assert np.isnan(second[2:]).all()
    np.testing.assert_array_equal(frame["reflectivity"][row], [10, 40, 40, 40])
