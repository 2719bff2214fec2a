"""Radar frames in Warp kernels (radar/warp_frame.py) on Warp's CPU device against the host path on the same Warp
backend (the same first hits: trace per backend, the tracers' agreement is test_warp_backend's and test_warp_sensors'),
per pixel with the bounds of test_device_support.py: energy within 1e-4 relative plus 1e-6 of the frame's maximum
(float32 atomics on the device, float64 sums on the host), output values within 1e-4 relative plus 1e-4, so uint8
pixels within 1 count (a value at .5 may round either way); the noise the two paths draw from other generators by
its statistics."""
import numpy as np
import pytest

from support.warp import require_warp

require_warp()

from radarays_ros.errors import ConfigError  # noqa: E402
from radarays_ros.radar.config import RadarConfig  # noqa: E402
from radarays_ros.radar.simulator import RadarSimulator  # noqa: E402
from radarays_ros.radar.warp_frame import WarpRadarSimulator  # noqa: E402
from radarays_ros.resources import shipped  # noqa: E402
from radarays_ros.tracing import make_backend  # noqa: E402
from radarays_ros.world.loader import load_world  # noqa: E402
from radarays_ros.world.transforms import pose_to_matrix  # noqa: E402

POSE = pose_to_matrix(4.0, 0.3, 1.0, 0, 0, 0.2)


def compat(**overrides) -> RadarConfig:
    return RadarConfig.from_yaml(shipped("example", "radarays_compat")).with_overrides({"azimuth.count": 60, **overrides})


def frames(world: str, cfg: RadarConfig):
    scene = load_world(world)
    backend = make_backend("warp", scene, device="cpu")
    return WarpRadarSimulator(cfg, scene, backend).simulate(POSE), RadarSimulator(cfg, scene, backend=backend).simulate(POSE)


def assert_same_frame(device, host):
    """Per pixel within the bounds of the module docstring."""
    assert host.energy.max() > 0
    for a, b, atol in ((device.energy, host.energy, 1e-6 * host.energy.max()), (device.image_f32, host.image_f32, 1e-4)):
        excess = np.abs(a - b) - (1e-4 * np.abs(b) + atol)
        assert excess.max() <= 0, f"{int((excess > 0).sum())} pixels beyond the bound, worst by {excess.max():.3g}"
    assert np.abs(device.image.astype(np.int16) - host.image).max() <= 1


@pytest.mark.parametrize("world, overrides", [
    ("office", {}),  # glass and a mirror: refraction and ghosts over 4 passes
    ("hall", {}),  # radar-transparent partitions
    ("office", {"returns.multipath": True, "returns.occlusion_test": True, "tracing.passes": 3}),
    ("street", {"kernel.type": "none", "output.normalisation": "global"}),
    ("hall", {"kernel.type": "gaussian", "output.normalisation": "gazebo", "output.radar_equation": True}),
])
def test_device_frames_match_the_host_path(world, overrides):
    device, host = frames(world, compat(**overrides))
    assert (host.energy.max(axis=1) > 0).sum() > 30
    assert_same_frame(device, host)
    np.testing.assert_array_equal(device.azimuth_time_ns, host.azimuth_time_ns)


def test_db_normalisation_matches_the_host_path():
    device, host = frames("office", compat(**{"output.normalisation": "db"}))
    assert_same_frame(device, host)


def test_same_seed_same_bytes_and_noise_with_the_host_statistics():
    cfg = compat(**{"noise.ambient": "uniform", "noise.system_std": 2.0})
    scene = load_world("office")
    backend = make_backend("warp", scene, device="cpu")
    a = WarpRadarSimulator(cfg, scene, backend).simulate(POSE)
    b = WarpRadarSimulator(cfg, scene, backend).simulate(POSE)
    assert a.image.tobytes() == b.image.tobytes()
    second = WarpRadarSimulator(cfg, scene, backend)
    second.simulate(POSE)
    assert second.simulate(POSE).image.tobytes() != a.image.tobytes()  # a new frame draws new noise
    host = RadarSimulator(cfg, scene, backend=make_backend("embree", scene, threads=1)).simulate(POSE)
    # other generators, the same noise model: row means (range profile of signal + noise) agree
    np.testing.assert_allclose(a.image_f32.mean(axis=0), host.image_f32.mean(axis=0), rtol=0.1, atol=1.0)
    assert abs(a.image_f32.mean() - host.image_f32.mean()) < 0.02 * host.image_f32.mean()


def test_moving_entities_in_device_frames():
    import trimesh

    from radarays_ros.world.mesh import TriMesh

    scene = load_world("hall")
    box = trimesh.creation.box([1.0, 1.0, 2.0])
    mover = scene.add_entity("cart", TriMesh(box.vertices, box.faces), pose_to_matrix(7, 0.3, 1.0), static=False,
                             material="metal")
    backend = make_backend("warp", scene, device="cpu")
    cfg = compat()
    before = WarpRadarSimulator(cfg, scene, backend).simulate(POSE)
    scene.set_pose(mover, pose_to_matrix(5.5, -1.0, 1.0, 0, 0, 0.5))
    device = WarpRadarSimulator(cfg, scene, backend).simulate(POSE)
    host = RadarSimulator(cfg, scene, backend=backend).simulate(POSE)
    assert_same_frame(device, host)
    assert not np.array_equal(device.energy, before.energy)


@pytest.mark.parametrize("overrides, message", [
    ({"noise.ambient": "perlin"}, "noise.ambient = 'perlin'"),
    ({"returns.keep": True}, "returns.keep = True"),
])
def test_host_only_features_are_refused_with_one_clear_error(overrides, message):
    scene = load_world("hall")
    with pytest.raises(ConfigError, match=message):
        WarpRadarSimulator(compat(**overrides), scene, make_backend("warp", scene, device="cpu"))
    with pytest.raises(ConfigError, match="needs the warp backend"):
        WarpRadarSimulator(compat(), scene, make_backend("embree", scene))


def test_radar_command_with_device_frames(tmp_path):
    from radarays_ros.cli import main

    outs = {}
    for frames in ("host", "device"):
        assert main(["radar", "office", "--pose", "4 0.3 1 0 0 0.2", "--config", str(shipped("example", "radarays_compat")),
                     "--set", "azimuth.count=40", "--backend", "warp",
                     "--device", "cpu", "--frames", frames, "--out", str(tmp_path / f"{frames}.npz")]) == 0
        outs[frames] = np.load(tmp_path / f"{frames}.npz")
    assert outs["device"]["image"].max() > 0
    assert np.abs(outs["device"]["image"].astype(np.int16) - outs["host"]["image"]).max() <= 1  # both on warp's CPU
    assert main(["radar", "office", "--pose", "0 0 1 0 0 0", "--frames", "device", "--out", str(tmp_path / "x.npz")]) == 2
    assert main(["radar", "office", "--pose", "0 0 1 0 0 0", "--frames", "device", "--backend", "warp", "--device", "cpu",
                 "--out", str(tmp_path / "x.npz")]) == 2  # the default config's Perlin noise is host-only
