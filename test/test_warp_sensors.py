"""The sensors on the Warp backend (Warp's CPU device) against the same sensors on Embree.

Lidar: hit masks identical except edge grazers, ranges within 1 mm. Radar (the RadaRays-compatible
configuration): median column correlation >= 0.99. Plus `--backend warp` through the command line.
"""
import numpy as np
import pytest
import trimesh

from support.frames import assert_same_lidar_frames, column_correlations
from support.warp import CrossChecked, require_warp

require_warp()

from lidar_ros import LidarSimulator, load_sensor  # noqa: E402
from radarays_ros.cli import main  # noqa: E402
from radarays_ros.radar.config import RadarConfig  # noqa: E402
from radarays_ros.radar.simulator import RadarSimulator  # noqa: E402
from radarays_ros.resources import shipped  # noqa: E402
from radarays_ros.tracing import make_backend  # noqa: E402
from radarays_ros.world.loader import load_world  # noqa: E402
from radarays_ros.world.mesh import TriMesh  # noqa: E402
from radarays_ros.world.trajectory import Trajectory  # noqa: E402
from radarays_ros.world.transforms import pose_to_matrix  # noqa: E402

NOISY = {"noise": {"sigma": 0.02, "dust_probability": 0.01}}


def lidar_pair(cfg, scene, seed):
    """(Warp-backed simulator whose every trace is checked against Embree's, Embree-backed simulator)."""
    checked = CrossChecked(make_backend("warp", scene, device="cpu"), make_backend("embree", scene, threads=1), scene)
    return (LidarSimulator(cfg, scene, checked, seed=seed), checked,
            LidarSimulator(cfg, scene, make_backend("embree", scene, threads=1), seed=seed))


# The demo worlds have coincident faces (a window pane's edge in the wall's plane, a car's body top
# and cabin bottom): which of two tied faces a ray meets first is broken differently by Embree and
# Warp, and a ray that then crosses glass in one frame returns from metal in the other. Every trace of
# the Warp frame is checked against Embree (CrossChecked: only verified ties and grazers differ), and
# only as many pixels as such rays may differ between the frames.
@pytest.mark.parametrize("world, sensor", [("hall", "VLP-16"), ("office", "OS1-64"), ("street", "VLP-16")])
def test_lidar_frames_match_embree(world, sensor):
    scene = load_world(world)
    warp, checked, embree = lidar_pair(load_sensor(sensor, NOISY), scene, seed=3)
    pose = pose_to_matrix(3.0, 0.5, 1.2, 0.0, 0.0, 0.4)
    moving = Trajectory(np.array([0, 100_000_000]), np.stack([pose, pose_to_matrix(3.8, 0.7, 1.2, 0, 0, 0.6)]))
    for where in (pose, moving):
        checked.diverging = 0
        a = warp.simulate(where)
        assert_same_lidar_frames(a, embree.simulate(where), checked.diverging)
        assert checked.diverging <= 0.005 * a.hit.size


def test_lidar_frames_match_embree_with_moving_entities():
    scene = load_world("office")
    lib = scene.materials
    movers = []
    for k, material in enumerate(["metal", "wood", "concrete"]):
        crate = trimesh.creation.box([0.8, 0.6, 1.0]).subdivide()
        movers.append(scene.add_entity(f"crate{k}", TriMesh(crate.vertices, crate.faces), pose_to_matrix(6 + k, 1, 0.51),
                                       static=False, material=material))
    assert lib.id_of("wood") >= 0
    warp, checked, embree = lidar_pair(load_sensor("VLP-16", NOISY), scene, seed=5)
    pose = pose_to_matrix(3.0, 0.0, 1.2)
    for step in range(3):
        poses = [pose_to_matrix(4.5 + 1.2 * k + 0.3 * step, -1.0 + 0.8 * step, 0.51, 0, 0, 0.4 * step + k) for k in range(3)]
        scene.set_poses_array(movers, np.stack(poses))
        checked.diverging = 0
        a, b = warp.simulate(pose), embree.simulate(pose)
        assert_same_lidar_frames(a, b, checked.diverging)
        assert np.isin(movers, a.entity).all()


@pytest.mark.parametrize("world", ["office", "hall"])
def test_radar_images_match_embree(world):
    scene = load_world(world)
    cfg = RadarConfig.from_yaml(shipped("example", "radarays_compat")).with_overrides({"azimuth.count": 100})
    pose = pose_to_matrix(4.0, 0.3, 1.0, 0, 0, 0.2)
    warp = RadarSimulator(cfg, scene, backend=make_backend("warp", scene, device="cpu")).simulate(pose)
    embree = RadarSimulator(cfg, scene, backend=make_backend("embree", scene, threads=1)).simulate(pose)
    corr = column_correlations(warp.energy, embree.energy)
    assert len(corr) > 50
    assert np.median(corr) >= 0.99, f"median column correlation {np.median(corr):.4f}"
    assert np.median(column_correlations(warp.image_f32, embree.image_f32)) >= 0.99


def test_column_correlation_notices_a_different_image():
    rng = np.random.default_rng(0)
    a = rng.random((20, 50))
    assert np.median(column_correlations(a, a)) == pytest.approx(1.0)
    assert np.median(column_correlations(a, rng.random((20, 50)))) < 0.5


def test_cast_command_with_the_warp_backend(tmp_path):
    rng = np.random.default_rng(2)
    d = rng.normal(size=(300, 3))
    o = np.tile([[4.0, 0.0, 1.2]], (300, 1))
    np.savez(tmp_path / "rays.npz", origins=o, directions=d)
    outs = {}
    for backend in ("embree", "warp"):
        extra = ["--device", "cpu"] if backend == "warp" else []
        assert main(["cast", "office", "--rays", str(tmp_path / "rays.npz"),
                     "--out", str(tmp_path / f"{backend}.npz"), "--backend", backend, *extra]) == 0
        outs[backend] = np.load(tmp_path / f"{backend}.npz")
    np.testing.assert_array_equal(outs["warp"]["hit"], outs["embree"]["hit"])
    np.testing.assert_allclose(outs["warp"]["distance"], outs["embree"]["distance"], atol=1e-3)


def test_device_without_warp_backend_is_one_clear_error(tmp_path, capsys):
    np.savez(tmp_path / "rays.npz", origins=np.zeros((1, 3)), directions=np.ones((1, 3)))
    code = main(["cast", "office", "--rays", str(tmp_path / "rays.npz"), "--out",
                 str(tmp_path / "h.npz"), "--device", "cpu"])
    assert code == 2 and "only the warp backend has devices" in capsys.readouterr().err
    code = main(["lidar", "office", "--sensor", "VLP-16", "--out", str(tmp_path / "s.npz"),
                 "--backend", "warp", "--device", "tpu"])
    assert code == 2 and "allowed 'cpu', 'cuda'" in capsys.readouterr().err


def test_lidar_and_radar_commands_run_on_warp(tmp_path):
    assert main(["lidar", "office", "--sensor", "VLP-16", "--pose", "3 0 1.2 0 0 0",
                 "--out", str(tmp_path / "scan.npz"), "--backend", "warp", "--device", "cpu"]) == 0
    scan = np.load(tmp_path / "scan.npz")
    assert scan["hit"].mean() > 0.3
    assert main(["radar", "office", "--pose", "3 0 1.2 0 0 0", "--set", "azimuth.count=20",
                 "--out", str(tmp_path / "img.npz"), "--backend", "warp", "--device", "cpu"]) == 0
    assert np.load(tmp_path / "img.npz")["image"].max() > 0


def test_info_lists_the_backends(capsys):
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert "embree  available" in out and "warp    available: Warp " in out
    assert "optix   not available" in out and "RT cores" in out


def test_run_command_on_the_warp_backend(tmp_path):
    from rosbags.highlevel import AnyReader

    out = tmp_path / "run.mcap"
    assert main(["run", "office_demo", "--out", str(out), "--backend", "warp", "--device", "cpu", "--quiet"]) == 0
    with AnyReader([out]) as reader:  # an independent reader of the bag
        topics = {c.topic: c.msgcount for c in reader.connections}
    assert sum(topics.values()) > 50 and any("points" in t or "velodyne" in t for t in topics)
    assert main(["run", "office_demo", "--out", str(tmp_path / "x.mcap"), "--device", "cpu"]) == 2
