"""The Warp backend on CUDA gives the CPU device's answers (skipped without a CUDA device; under
RADARAYS_EXPECT_CUDA=1 a missing device fails instead). Run on a GPU machine with:

    RADARAYS_EXPECT_CUDA=1 python -m pytest -q test/test_warp_cuda.py
"""
import numpy as np
import pytest

from support.warp import assert_same_hits, random_rays, require_cuda, require_warp

require_warp()

from radarays_ros.radar.config import RadarConfig  # noqa: E402
from radarays_ros.radar.warp_frame import WarpRadarSimulator  # noqa: E402
from radarays_ros.resources import shipped  # noqa: E402
from radarays_ros.tracing import make_backend  # noqa: E402
from radarays_ros.world.loader import load_world  # noqa: E402
from radarays_ros.world.transforms import pose_to_matrix  # noqa: E402


@pytest.fixture(autouse=True)
def cuda():
    require_cuda()


@pytest.mark.parametrize("world", ["office", "street"])
def test_cuda_traces_as_the_cpu_device_and_embree(world):
    scene = load_world(world)
    o, d = random_rays(scene, 50_000, seed=3)
    gpu = make_backend("warp", scene, device="cuda").trace(o, d)
    cpu = make_backend("warp", scene, device="cpu").trace(o, d)
    np.testing.assert_array_equal(gpu.hit, cpu.hit)
    np.testing.assert_allclose(gpu.distance[gpu.hit], cpu.distance[cpu.hit], atol=1e-5)
    assert_same_hits(gpu, make_backend("embree", scene).trace(o, d), d, scene=scene, origins=o)


def test_cuda_moving_entities():
    scene = load_world("street")
    cars = [e.id for e in scene.entities if e.model.startswith("car")]
    gpu, ref = make_backend("warp", scene, device="cuda"), make_backend("embree", scene)
    o, d = random_rays(scene, 20_000, seed=4)
    for step in range(3):
        scene.set_poses_array(cars, np.stack([pose_to_matrix(-6 + 3 * step + 2 * k, 2.0, 0, 0, 0, 0.3 * step)
                                              for k in range(len(cars))]))
        assert_same_hits(gpu.trace(o, d), ref.trace(o, d), d, scene=scene, origins=o)
    assert gpu.instance_builds == len(cars)  # built once, moved by pose only


def test_cuda_sweeps_moving_entities_as_the_cpu_device_and_embree():
    """Rays with times: the street's cars with twists (driving and turning), met where each ray's time puts them."""
    scene = load_world("street")
    cars = [e.id for e in scene.entities if e.model.startswith("car")]
    scene.set_twists(cars, np.tile([12.0, -3.0, 0.0], (len(cars), 1)), np.tile([0.0, 0.0, 0.8], (len(cars), 1)))
    o, d = random_rays(scene, 20_000, seed=5)
    times = np.random.default_rng(5).uniform(0.0, 0.25, len(o))
    gpu = make_backend("warp", scene, device="cuda").trace(o, d, times=times)
    cpu = make_backend("warp", scene, device="cpu").trace(o, d, times=times)
    np.testing.assert_array_equal(gpu.hit, cpu.hit)
    np.testing.assert_allclose(gpu.distance[gpu.hit], cpu.distance[cpu.hit], atol=1e-5)
    assert np.isin(gpu.entity, cars).sum() > 100 and (gpu.entity == cpu.entity).mean() > 0.999


def test_radar_device_frame_is_the_same_image_on_cuda_and_cpu():
    cfg = RadarConfig.from_yaml(shipped("example", "radarays_compat")).with_overrides(
        {"noise.ambient": "uniform", "noise.system_std": 1.0})
    scene = load_world("office")
    pose = pose_to_matrix(4.0, 0.3, 1.0, 0, 0, 0.2)
    gpu = WarpRadarSimulator(cfg, scene, make_backend("warp", scene, device="cuda")).simulate(pose)
    cpu = WarpRadarSimulator(cfg, scene, make_backend("warp", scene, device="cpu")).simulate(pose)
    # the same RNG draws; float32 atomics sum in thread order, so a pixel may round the other way
    assert np.mean(gpu.image != cpu.image) < 1e-3
    np.testing.assert_allclose(gpu.image_f32, cpu.image_f32, atol=0.05 * cpu.image_f32.max())


def test_lidar_device_frame_is_the_same_on_cuda_and_cpu():
    from lidar_ros import load_sensor
    from lidar_ros.warp_frame import WarpLidarSimulator

    cfg = load_sensor("OS1-128", {"noise": {"sigma": 0.02, "dust_probability": 0.01, "angular_sigma": 0.0005}})
    scene = load_world("office")
    pose = pose_to_matrix(3.0, 0.5, 1.2, 0, 0, 0.4)
    gpu = WarpLidarSimulator(cfg, scene, make_backend("warp", scene, device="cuda"), seed=4).simulate(pose)
    cpu = WarpLidarSimulator(cfg, scene, make_backend("warp", scene, device="cpu"), seed=4).simulate(pose)
    # the same RNG draws per beam; the compilers may contract float32 operations differently, so a ray
    # through a tie of coincident faces may go the other way
    assert np.mean(gpu.hit != cpu.hit) < 1e-3
    both = gpu.hit & cpu.hit
    assert np.mean(np.abs(gpu.range[both] - cpu.range[both]) < 1e-3) > 0.999


def test_lidar_device_frames_on_cuda_reuse_their_buffers_without_changing_a_byte():
    """CUDA keeps a device lidar frame's buffers from frame to frame (warp_frame._outputs): every output
    is the bytes of frames with their own buffers, for scans read at once and scans kept and read after
    later frames (ground truth copied off a reused buffer)."""
    from support.frames import every_output

    from lidar_ros import load_sensor
    from lidar_ros.warp_frame import WarpLidarSimulator
    from radarays_ros.io.lidar_clouds import FrameCloud
    from radarays_ros.world.trajectory import Trajectory

    cfg = load_sensor("OS1-128", {"noise": {"sigma": 0.02, "dust_probability": 0.01, "angular_sigma": 0.0005}})
    scene = load_world("office")
    backend = make_backend("warp", scene, device="cuda")
    poses = [pose_to_matrix(3.0 + 0.3 * i, 0.5, 1.2, 0, 0, 0.4 + 0.2 * i) for i in range(3)]
    poses.append(Trajectory([0, 10**8], np.stack(poses[:2])))
    own = WarpLidarSimulator(cfg, scene, backend, seed=4, sink=FrameCloud.of)
    own.reuse_device_buffers = False
    expected = [every_output(own.simulate(pose, 0)) for pose in poses]
    reused = WarpLidarSimulator(cfg, scene, backend, seed=4, sink=FrameCloud.of)
    assert reused.reuse_device_buffers  # CUDA's default
    first = reused.simulate(poses[0], 0)
    assert every_output(first) == expected[0]
    kept = [reused.simulate(pose, 0) for pose in poses[1:]]
    assert every_output(first) == expected[0]
    for scan, bytes_before in zip(kept, expected[1:]):
        assert every_output(scan) == bytes_before


def test_top_level_on_cuda_with_hundreds_of_movers():
    import trimesh

    from radarays_ros.world.mesh import TriMesh
    from radarays_ros.world.scene import Scene

    scene = Scene()
    rng = np.random.default_rng(3)
    for k in range(300):
        b = trimesh.creation.box(rng.uniform(0.2, 1.5, 3))
        scene.add_entity(f"m{k}", TriMesh(b.vertices, b.faces),
                         pose_to_matrix(*rng.uniform(-20, 20, 2), rng.uniform(0, 3), *rng.uniform(-3, 3, 3)), static=False)
    o, d = random_rays(scene, 20_000, seed=5)
    gpu = make_backend("warp", scene, device="cuda")  # the top level this Warp release gets (bvh from 1.3.2)
    assert_same_hits(gpu.trace(o, d), make_backend("embree", scene).trace(o, d), d, scene=scene, origins=o)


def test_scenario_with_device_frames_on_cuda_matches_the_embree_bag(tmp_path):
    # what a user runs: `radarays run` with `frames: device` on the GPU, read back from the bag
    from support.warp_scenario import clouds, images, scenario
    from support.frames import column_correlations

    from radarays_ros.cli import main
    from radarays_ros.scenario.runner import run_scenario

    device_bag, host_bag = tmp_path / "cuda.mcap", tmp_path / "embree.mcap"
    assert main(["run", scenario(tmp_path, "device"), "--out", str(device_bag), "--backend", "warp",
                 "--device", "cuda", "--quiet"]) == 0
    run_scenario(scenario(tmp_path, "host"), host_bag, quiet=True, backend="embree")
    got, want = images(device_bag), images(host_bag)
    assert len(got) == len(want) >= 2
    for a, b in zip(got, want):
        assert a.max() > 0 and np.median(column_correlations(a, b)) >= 0.99
    for a, b in zip(clouds(device_bag), clouds(host_bag)):
        hit_a, hit_b = np.isfinite(a[:, 0]), np.isfinite(b[:, 0])
        assert hit_a.mean() > 0.3 and (hit_a != hit_b).mean() < 1e-3
        both = hit_a & hit_b
        assert np.mean(np.abs(a[both] - b[both]).max(axis=1) < 1e-3) > 0.999
