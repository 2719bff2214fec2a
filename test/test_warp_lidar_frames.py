"""Lidar frames in a Warp kernel (lidar_ros/warp_frame.py) on Warp's CPU device against the host path.

Against the host path on the same Warp backend (the same first-hit code): identical hit masks,
materials and clean ranges. Against the host path on Embree: identical hit masks on an analytic scene
with every material class; on the demo worlds up to the rays a CrossChecked trace counts as ties of
coincident faces. Noise: the device draws (Warp's RNG) have the configured statistics.
"""
import numpy as np
import pytest
import trimesh

from support.warp import CrossChecked, require_warp
from support.frames import assert_same_lidar_frames, every_output

require_warp()

from lidar_ros import LidarSimulator, load_sensor  # noqa: E402
from lidar_ros.warp_frame import WarpLidarSimulator, device_refusals  # noqa: E402
from radarays_ros.errors import ConfigError  # noqa: E402
from radarays_ros.io.lidar_clouds import FrameCloud, pointcloud_array  # noqa: E402
from radarays_ros.tracing import make_backend  # noqa: E402
from radarays_ros.world.loader import load_world  # noqa: E402
from radarays_ros.world.mesh import TriMesh  # noqa: E402
from radarays_ros.world.scene import Scene  # noqa: E402
from radarays_ros.world.trajectory import Trajectory  # noqa: E402
from radarays_ros.world.transforms import pose_to_matrix  # noqa: E402

CLEAN = {"noise": {"sigma": 0.0, "resolution": 0.0, "bias_sigma": 0.0, "dust_probability": 0.0},
         "surface": {"model": "root2", "limits": [[0.1, 12.0], [0.8, 40.0]]}}
POSE = pose_to_matrix(3.0, 0.5, 1.2, 0.0, 0.0, 0.4)


def box(extents, subdivide=0):
    mesh = trimesh.creation.box(extents)
    for _ in range(subdivide):
        mesh = mesh.subdivide()
    return TriMesh(mesh.vertices, mesh.faces)


def class_room() -> Scene:
    """A room (walls facing in) with a mirror, two glass panes, water and retroreflective sheeting,
    no coincident faces: every material class of the lidar, and a mirror seen through glass."""
    scene = Scene()
    room = trimesh.creation.box([30, 30, 8])
    room.invert()
    scene.add_entity("room", TriMesh(room.vertices, room.faces), pose_to_matrix(0, 0, 2), material="concrete")
    scene.add_entity("mirror", box([0.05, 6, 3]), pose_to_matrix(8, 2, 1.5, 0, 0, 0.3), material="mirror")
    scene.add_entity("glass1", box([0.02, 4, 3]), pose_to_matrix(-4, 1, 1.5, 0, 0, -0.2), material="glass")
    scene.add_entity("glass2", box([4, 0.02, 3]), pose_to_matrix(1, -5, 1.5), material="glass")
    scene.add_entity("pool", box([3, 3, 0.1]), pose_to_matrix(2, 4, -1.7), material="water")
    scene.add_entity("sign", box([0.05, 1, 1]), pose_to_matrix(-3, -7, 1.0, 0, 0, 1.2), material="retroreflective_sheeting")
    scene.add_entity("crate", box([1, 1, 1], 2), pose_to_matrix(5, -4, -1.5, 0, 0, 0.5), static=False, material="wood")
    return scene


def device_and_host(cfg, scene, backend, seed=3):
    return WarpLidarSimulator(cfg, scene, backend, seed=seed), LidarSimulator(cfg, scene, backend, seed=seed)


def assert_same_geometry(a, b, ties: float = 0.0):
    """Identical hit masks, materials and entities, clean ranges and points within 1 mm; except, with
    `ties`, that fraction of pixels (a ray meeting coincident faces, e.g. a window pane's edge in its
    wall's plane: the device computes its world ray in another float32 order than numpy, and may meet
    the other face first, or pass the pane's edge on the other side)."""
    differ = (a.hit != b.hit) | (a.material != b.material) | (a.entity != b.entity)
    differ[a.hit & b.hit] |= np.abs(a.clean_range - b.clean_range)[a.hit & b.hit] > 1e-3
    assert differ.sum() <= int(ties * a.hit.size), f"{int(differ.sum())} pixels differ"
    assert a.hit.mean() > 0.3
    same = a.hit & ~differ
    np.testing.assert_allclose(a.clean_range[same], b.clean_range[same], atol=1e-3, rtol=0)
    np.testing.assert_allclose(a.xyz[same], b.xyz[same], atol=1e-3, rtol=0)


@pytest.mark.parametrize("sensor", ["VLP-16", "OS1-64"])
def test_every_material_class_matches_embree_exactly(sensor):
    scene = class_room()
    cfg = load_sensor(sensor, CLEAN)
    embree = make_backend("embree", scene, threads=1)
    device = WarpLidarSimulator(cfg, scene, make_backend("warp", scene, device="cpu"), seed=1)
    host = LidarSimulator(cfg, scene, embree, seed=1)
    moving = Trajectory(np.array([0, 100_000_000]), np.stack([pose_to_matrix(0.5, 0, 0.5, 0, 0, 0.1),
                                                             pose_to_matrix(1.5, 0.4, 0.6, 0, 0, 0.9)]))
    lib = scene.materials
    for where in (pose_to_matrix(0.5, 0, 0.5, 0, 0, 0.1), moving):
        a, b = device.simulate(where), host.simulate(where)
        assert_same_geometry(a, b)
        np.testing.assert_allclose(a.range[a.hit], b.range[b.hit], atol=1e-3, rtol=0)
        for name in ("reflectivity", "velodyne_intensity", "ouster_reflectivity", "ouster_signal"):
            fa, fb = a.fields[name].astype(np.float64), b.fields[name].astype(np.float64)
            np.testing.assert_allclose(fa, fb, rtol=1e-3, atol=1.0, err_msg=name)  # 1 count: float32 rounding
        seen = {lib.names[m] for m in np.unique(a.material[a.hit])}
        assert {"concrete", "wood", "retroreflective_sheeting"} <= seen  # returning classes
        for passing in ("water", "glass", "mirror"):  # absorbent, transparent, mirror: never the returning surface
            assert lib.id_of(passing) not in a.material
    assert (a.fields["reflectivity"] > 1).any()  # the retroreflector's gain reached the fields


@pytest.mark.parametrize("world, sensor", [("hall", "VLP-16"), ("office", "OS1-64"), ("street", "VLP-16")])
def test_demo_worlds_match_the_host_path(world, sensor):
    scene = load_world(world)
    cfg = load_sensor(sensor, CLEAN)
    warp = make_backend("warp", scene, device="cpu")
    device, same_tracer = device_and_host(cfg, scene, warp)
    checked = CrossChecked(make_backend("warp", scene, device="cpu"), make_backend("embree", scene, threads=1), scene)
    on_embree = LidarSimulator(cfg, scene, checked, seed=3)
    moving = Trajectory(np.array([0, 100_000_000]), np.stack([POSE, pose_to_matrix(3.8, 0.7, 1.2, 0, 0, 0.6)]))
    for where in (POSE, moving):
        a = device.simulate(where)
        b = same_tracer.simulate(where)
        assert_same_geometry(a, b, ties=1e-3)
        same = a.hit & b.hit & (a.entity == b.entity) & (a.material == b.material)
        same[same] = np.abs(a.clean_range - b.clean_range)[same] <= 1e-3  # not the ties above
        for name in ("clean_range", "range"):  # the same tracer: float32 ULPs, not millimetres
            assert ulps(getattr(a, name)[same], getattr(b, name)[same]).max() <= 32, name
        assert ulps(a.fields["reflectivity"][same], b.fields["reflectivity"][same]).max() <= 8
        checked.diverging = 0
        # Embree breaks ties of coincident faces its own way: only rays a cross-checked trace counts may differ
        assert_same_lidar_frames(a, on_embree.simulate(where), checked.diverging)


def ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Float32 units in the last place between a and b (same sign). Bounds: 32 for ranges (the world ray rotated
    in another float32 order; measured <= 16 on the demo worlds), 8 for reflectivity (rho = lambertian cos(theta) +
    constant with that ray's cos(theta); measured <= 5)."""
    return np.abs(a.astype(np.float32).view(np.int32).astype(np.int64) - b.astype(np.float32).view(np.int32))


def noisy_wall_frame(noise, seed=7, frames=1):
    scene = Scene()
    scene.add_entity("wall", box([0.2, 200, 200]), pose_to_matrix(10.1, 0, 0), material="concrete")
    cfg = load_sensor("VLP-16", {"noise": noise, "range": {"min": 0.5, "max": 100.0}})
    sim = WarpLidarSimulator(cfg, scene, make_backend("warp", scene, device="cpu"), seed=seed)
    return sim, [sim.simulate(np.eye(4)) for _ in range(frames)]


def test_range_noise_has_the_configured_statistics():
    sigma, bias_sigma = 0.05, 0.1
    sim, (scan,) = noisy_wall_frame({"sigma": sigma, "bias_sigma": bias_sigma, "resolution": 0.0})
    err = (scan.range - scan.clean_range)[scan.hit]
    laser = np.broadcast_to(scan.config.laser_index[:, None], scan.hit.shape)[scan.hit]
    assert scan.hit.sum() > 10000
    biases = sim.model.biases  # drawn once per run with numpy, as on the host path
    assert np.std(biases) > 0.02
    for k in range(sim.config.n_lasers):
        mine = err[laser == k]
        n = len(mine)
        assert abs(mine.mean() - biases[k]) < 5 * sigma / np.sqrt(n), k  # 5 standard errors
        assert abs(mine.std() - sigma) < 5 * sigma / np.sqrt(2 * n), k
    # relative noise sigma_rel * r^k and quantisation
    _, (scan,) = noisy_wall_frame({"relative_sigma": 0.01, "relative_exponent": 1.0, "resolution": 0.01})
    err = (scan.range - scan.clean_range)[scan.hit]
    expected = 0.01 * scan.clean_range[scan.hit]
    z = err / expected
    assert abs(z.mean()) < 0.05 and abs(z.std() - 1.0) < 0.05
    np.testing.assert_allclose(scan.range[scan.hit] / 0.01, np.rint(scan.range[scan.hit] / 0.01), atol=1e-3)


def test_dust_and_dropouts_have_the_configured_rates():
    _, (scan,) = noisy_wall_frame({"dust_probability": 0.2, "dust_min_range": 1.0})
    dust = scan.range < scan.clean_range - 1e-4
    rate = dust.sum() / scan.hit.sum()
    assert abs(rate - 0.2) < 0.02
    # dust ranges are uniform in [dust_min_range, r]: their fraction of the way is U(0, 1)
    u = (scan.range[dust] - 1.0) / (scan.clean_range[dust] - 1.0)
    assert abs(u.mean() - 0.5) < 0.02 and abs(u.var() - 1 / 12) < 0.01
    scene = Scene()
    scene.add_entity("wall", box([0.2, 200, 200]), pose_to_matrix(10.1, 0, 0), material="concrete")
    base = load_sensor("VLP-16", {"range": {"min": 0.5, "max": 100.0}})
    lost = load_sensor("VLP-16", {"range": {"min": 0.5, "max": 100.0}, "detection": {"dropout_probability": 0.1}})
    backend = make_backend("warp", scene, device="cpu")
    full, dropped = (WarpLidarSimulator(c, scene, backend).simulate(np.eye(4)).hit.sum() for c in (base, lost))
    assert abs(1 - dropped / full - 0.1) < 0.01


def test_angular_jitter_and_ambient_have_the_configured_statistics():
    scene = Scene()
    scene.add_entity("wall", box([0.2, 200, 200]), pose_to_matrix(10.1, 0, 0), material="concrete")  # face at x = 10
    backend = make_backend("warp", scene, device="cpu")
    sigma = 0.002
    still = {"noise": {"sigma": 0, "resolution": 0}, "range": {"max": 100.0}}
    cfg = load_sensor("VLP-16", {**still, "noise": {"angular_sigma": sigma, "sigma": 0, "resolution": 0}})
    scan = WarpLidarSimulator(cfg, scene, backend).simulate(np.eye(4))
    plain = WarpLidarSimulator(load_sensor("VLP-16", still), scene, backend).simulate(np.eye(4))
    # a ray at angle θ to the wall's normal meets it at r = 10 / cos θ; a tilt t in the plane of ray and
    # normal changes cos θ by -sin θ · t (the perpendicular part only to second order): t ~ N(0, σ)
    both = scan.hit & plain.hit
    cos0, cos1 = 10.0 / plain.clean_range[both], 10.0 / scan.clean_range[both]
    sin0 = np.sqrt(np.clip(1 - cos0**2, 0, 1))
    steep = sin0 > 0.4
    t = (cos0 - cos1)[steep] / sin0[steep]
    assert len(t) > 3000
    assert abs(t.mean()) < 5 * sigma / np.sqrt(len(t)) and abs(t.std() - sigma) < 0.05 * sigma
    # flat ambient: N(mu, mu) around ambient_level * min(rho, 1) on returns, ambient_sky elsewhere
    amb = scan.fields["ouster_ambient"].astype(np.float64) if "ouster_ambient" in scan.fields else None
    sky = amb[~scan.hit]
    mu = cfg.surface.ambient_sky
    assert len(sky) > 1000 and abs(sky.mean() - mu) < 5 * np.sqrt(mu / len(sky)) + 0.5
    assert abs(sky.var() - mu) < 0.1 * mu


def test_same_seed_same_bytes_and_new_frames_draw_new_noise():
    noise = {"sigma": 0.03, "dust_probability": 0.05, "angular_sigma": 0.001}
    scene = load_world("office")
    backend = make_backend("warp", scene, device="cpu")
    cfg = load_sensor("OS1-64", {"noise": noise})
    a = WarpLidarSimulator(cfg, scene, backend, seed=11, sink=FrameCloud.of)
    b = WarpLidarSimulator(cfg, scene, backend, seed=11, sink=FrameCloud.of)
    first, again = a.simulate(POSE), b.simulate(POSE)
    assert first.range.tobytes() == again.range.tobytes()
    assert pointcloud_array(first).tobytes() == pointcloud_array(again).tobytes()
    assert first.cloud is not None and first.cloud.tobytes() == again.cloud.tobytes()
    second = a.simulate(POSE)
    assert second.range.tobytes() != first.range.tobytes()
    other = WarpLidarSimulator(cfg, scene, backend, seed=12).simulate(POSE)
    assert other.range.tobytes() != first.range.tobytes()


def test_moving_entities_in_device_frames():
    scene = class_room()
    backend = make_backend("warp", scene, device="cpu")
    cfg = load_sensor("VLP-16", CLEAN)
    device, host = WarpLidarSimulator(cfg, scene, backend), LidarSimulator(cfg, scene, make_backend("embree", scene))
    crate = scene.find("crate")
    for step in range(3):
        scene.set_pose(crate, pose_to_matrix(3 + step, -2 + step, -1.5, 0, 0, 0.7 * step))
        a, b = device.simulate(np.eye(4)), host.simulate(np.eye(4))
        assert_same_geometry(a, b)
        assert crate in a.entity


def test_toolbox_ii_effects_refuse_device_frames_naming_the_keys():
    scene = load_world("hall")
    backend = make_backend("warp", scene, device="cpu")
    cfg = load_sensor("VLP-16", {"weather": {"fog_visibility_km": 0.5}, "signal": {"poisson": True}})
    assert device_refusals(cfg) == ["signal.poisson = True (device frames: host frames only)",
                                    "weather.fog_visibility_km = 0.5 (device frames: host frames only)"]
    with pytest.raises(ConfigError, match=r"not available in device frames: signal.poisson = True .*"
                                          r"weather.fog_visibility_km = 0.5"):
        WarpLidarSimulator(cfg, scene, backend)
    LidarSimulator(cfg, scene, backend).simulate(POSE)  # host frames run them
    assert not device_refusals(load_sensor("VLP-16"))
    assert device_refusals(load_sensor("VLP-16", realistic=True))  # --realistic turns toolbox II effects on
    with pytest.raises(ConfigError, match="needs the warp backend"):
        WarpLidarSimulator(load_sensor("VLP-16"), scene, make_backend("embree", scene))


def test_lidar_command_with_device_frames(tmp_path, capsys):
    from radarays_ros.cli import main

    outs = {}
    for frames in ("host", "device"):
        assert main(["lidar", "office", "--sensor", "VLP-16", "--pose", "3 0.5 1.2 0 0 0.4", "--set", "noise.sigma=0",
                     "--set", "noise.resolution=0", "--backend", "warp", "--device", "cpu", "--frames", frames,
                     "--out", str(tmp_path / f"{frames}.npz")]) == 0
        outs[frames] = np.load(tmp_path / f"{frames}.npz")
    np.testing.assert_array_equal(outs["device"]["hit"], outs["host"]["hit"])
    hit = outs["host"]["hit"]
    assert ulps(outs["device"]["range"][hit], outs["host"]["range"][hit]).max() <= 32  # the same tracer
    capsys.readouterr()
    assert main(["lidar", "office", "--sensor", "VLP-16", "--frames", "device", "--out", str(tmp_path / "x.npz")]) == 2
    assert "--frames device: frames 'device' needs the warp backend (backend: warp), got backend 'embree'" in capsys.readouterr().err
    assert main(["lidar", "office", "--sensor", "VLP-16", "--realistic", "--frames", "device", "--backend", "warp",
                 "--device", "cpu", "--out", str(tmp_path / "r.npz")]) == 2
    err = capsys.readouterr().err  # the first refused key: a long line may be shortened in its middle
    assert "not available in device frames: surface.texture_sigma = 0.25" in err and "--frames host" in err


@pytest.mark.parametrize("sensor, layout",
                         [("OS1-128", None), ("OS0-32", None), ("VLP-16", None), ("VLP-16", "gazebo")])
def test_reused_device_buffers_give_the_same_bytes_and_kept_scans_keep_them(sensor, layout):
    """The device buffers CUDA reuses from frame to frame (warp_frame._outputs), here on the CPU device:
    every output is the same bytes as with each frame's own buffers, for a scan read at once and for
    scans read only after later frames (their ground truth still on the device, or copied off when its
    slot was written again), and a scan read at once does not change with later frames."""
    scene = load_world("office")
    backend = make_backend("warp", scene, device="cpu")
    cfg = load_sensor(sensor, {"noise": {"sigma": 0.03, "dust_probability": 0.05, "angular_sigma": 0.001},
                               **({"layout": layout} if layout else {})})
    poses = [pose_to_matrix(3.0 + 0.3 * i, 0.5, 1.2, 0.0, 0.0, 0.4 + 0.2 * i) for i in range(3)]
    poses.append(Trajectory([0, 10**8], np.stack(poses[:2])))  # one pose per measurement column
    own = WarpLidarSimulator(cfg, scene, backend, seed=4, sink=FrameCloud.of)
    assert not own.reuse_device_buffers  # the CPU device's default: each frame its own buffers
    expected = [every_output(own.simulate(pose, 0)) for pose in poses]
    reused = WarpLidarSimulator(cfg, scene, backend, seed=4, sink=FrameCloud.of)
    reused.reuse_device_buffers = True
    first = reused.simulate(poses[0], 0)
    read_at_once = every_output(first)
    kept = [reused.simulate(pose, 0) for pose in poses[1:]]
    assert read_at_once == expected[0]
    assert every_output(first) == expected[0]
    for scan, bytes_before in zip(kept, expected[1:]):
        assert every_output(scan) == bytes_before
    assert len({out["range"] for out in expected}) == len(poses)  # the frames differ from each other


NOISE_KEYS = {"sigma": {"sigma": 0.03}, "relative_sigma": {"sigma": 0.0, "relative_sigma": 0.01},
              "dust_probability": {"sigma": 0.0, "dust_probability": 0.05},
              "angular_sigma": {"sigma": 0.0, "angular_sigma": 0.002},
              "dropout_probability": {"sigma": 0.0},
              "all, quantised": {"sigma": 0.03, "relative_sigma": 0.01, "dust_probability": 0.05, "angular_sigma": 0.002,
                                 "bias_sigma": 0.02, "resolution": 0.002}}


@pytest.mark.parametrize("key", sorted(NOISE_KEYS))
def test_noisy_device_frames_draw_what_the_host_draws(key):
    """The same seed, the same counter draws on both paths (radarays_ros/counter_random.py): with each noise key on,
    the host path and the device kernel on the same Warp backend give the same hit masks (dropouts, dust), and
    noisy ranges as close as their clean ranges (the noise adds no ULP: the draws and the terms are the same
    bytes); quantised, the same range bytes."""
    noise = {"resolution": 0.0, **NOISE_KEYS[key]}
    overrides = {"noise": noise, "range": {"min": 0.5, "max": 100.0}}
    if key in ("dropout_probability", "all, quantised"):
        overrides["detection"] = {"dropout_probability": 0.1}
    scene = load_world("office")
    warp = make_backend("warp", scene, device="cpu")
    cfg = load_sensor("VLP-16", overrides)
    device, host = device_and_host(cfg, scene, warp, seed=7)
    a, b = device.simulate(POSE), host.simulate(POSE)
    assert np.array_equal(a.hit, b.hit)
    same = a.hit
    clean = ulps(a.clean_range[same], b.clean_range[same])
    noisy = ulps(a.range[same], b.range[same])
    assert clean.max() <= 32  # the tracer's own bound (test_demo_worlds_match_the_host_path)
    if noise["resolution"] > 0:
        assert a.range.tobytes() == b.range.tobytes()
    else:
        assert noisy.max() <= clean.max() + 1
    if key == "dust_probability":  # dust returns (early by more than a millimetre) at the configured rate
        assert 0.03 < (a.range < a.clean_range - 1e-3)[a.hit].mean() < 0.07
    if key in ("angular_sigma", "dropout_probability"):  # the term acts: against the frame without it
        plain = WarpLidarSimulator(load_sensor("VLP-16", {"noise": {"sigma": 0.0, "resolution": 0.0}, "range": {
            "min": 0.5, "max": 100.0}}), scene, warp, seed=7).simulate(POSE)
        if key == "dropout_probability":
            assert 0.08 < 1 - a.hit.sum() / plain.hit.sum() < 0.12
        else:
            both = a.hit & plain.hit
            assert (a.clean_range[both] != plain.clean_range[both]).mean() > 0.5
    else:
        assert (a.range[same] != a.clean_range[same]).mean() > (0.03 if key == "dust_probability" else 0.5)


def test_flat_ambient_draws_what_the_host_draws():
    """The flat ambient's shot noise is the rays' AMBIENT_WORD counter draw on both paths (physics/intensity.py,
    warp_frame_kernels.py): the host and the device kernel on the same Warp backend give the same near_ir bytes,
    and the draws are noise around the means (not the means themselves)."""
    scene = load_world("office")
    warp = make_backend("warp", scene, device="cpu")
    cfg = load_sensor("OS1-64", {"columns": 512, "surface": {"ambient_level": 900.0, "ambient_sky": 120.0},
                                 "noise": {"sigma": 0.0, "resolution": 0.0}})
    device, host = device_and_host(cfg, scene, warp, seed=7)
    a, b = device.simulate(POSE), host.simulate(POSE)
    near_ir_device, near_ir_host = a.fields["ouster_ambient"], b.fields["ouster_ambient"]
    assert near_ir_device.dtype == near_ir_host.dtype == np.uint16
    assert near_ir_device.tobytes() == near_ir_host.tobytes()
    sky = near_ir_host[~b.hit].astype(np.float64)
    assert len(sky) > 1000 and sky.var() > 0.5 * 120.0  # shot noise around the sky's mean, as N(mu, mu)
