"""The lidar's fast paths give the same frames as the plain ones.

A ray table checked once lets every frame trace with `checked=True` and lazy normals; pieces are
taken by whichever thread is free. None of it may change a single value of a frame.
"""
from __future__ import annotations

import numpy as np
import pytest
import trimesh

from lidar_ros import LidarSimulator, load_sensor
from radarays_ros.io.lidar_clouds import FrameCloud
from radarays_ros.tracing import make_backend
from radarays_ros.world.mesh import TriMesh
from radarays_ros.world.scene import Scene
from radarays_ros.world.trajectory import Trajectory
from radarays_ros.world.transforms import pose_to_matrix

EVERYTHING_ON = {
    "noise": {"bias_distribution": "gaussian", "bias_sigma": 0.02, "sigma": 0.02, "dust_probability": 0.01,
              "resolution": 0.002},
    "surface": {"model": "blensor", "limits": [[0.10, 50.0], [0.80, 120.0]]},
}


def street():
    """Ground, a few buildings of different materials and a glass pane (a second trace round)."""
    scene = Scene()
    ground = trimesh.creation.box([200, 200, 1])
    scene.add_entity("ground::link::visual", TriMesh(ground.vertices, ground.faces), pose_to_matrix(0, 0, -2.3),
                     material="asphalt")
    for i, (x, y, material) in enumerate([(12, 3, "concrete"), (-8, 9, "brick"), (5, -14, "metal"), (-20, -6, "wood")]):
        box = trimesh.creation.box([4, 6, 8])
        scene.add_entity(f"b{i}::link::visual", TriMesh(box.vertices, box.faces), pose_to_matrix(x, y, 1), material=material)
    pane = trimesh.creation.box([0.02, 3, 2])
    scene.add_entity("pane::link::visual", TriMesh(pane.vertices, pane.faces), pose_to_matrix(4, 0, 0), material="glass")
    return scene


def frame_arrays(scan) -> dict:
    arrays = dict(scan.arrays())
    arrays.update({f"field_{k}": scan.fields[k] for k in scan.fields})
    arrays.update(normal=scan.normal, entity=scan.entity, material=scan.material, clean=scan.clean_range)
    return arrays


def assert_same_frames(a, b):
    fa, fb = frame_arrays(a), frame_arrays(b)
    for key in fa:
        np.testing.assert_array_equal(fa[key], fb[key], err_msg=key)


@pytest.mark.parametrize("sensor", ["VLP-16", "OS1-16"])
def test_checked_ray_table_gives_the_frames_of_the_fully_checked_path(sensor):
    scene = street()
    backend = make_backend("embree", scene, threads=2)
    cfg = load_sensor(sensor, EVERYTHING_ON)
    fast, plain = LidarSimulator(cfg, scene, backend, seed=4, sink=FrameCloud.of), LidarSimulator(cfg, scene, backend, seed=4)
    assert fast._table_ok
    plain._table_ok = False  # every frame through check_rays and eager normals
    pose = pose_to_matrix(0.3, -0.2, 0.1, 0.01, -0.02, 0.7)
    moving = Trajectory(np.array([0, 100_000_000]), np.stack([pose, pose_to_matrix(1.0, 0.2, 0.1, 0, 0, 0.9)]))
    for where in (pose, moving):
        a, b = fast.simulate(where), plain.simulate(where)
        assert a.hit.sum() > 0.3 * a.hit.size
        assert_same_frames(a, b)


def test_a_frame_does_not_depend_on_the_thread_count():
    scene = street()
    cfg = load_sensor("OS1-32", {**EVERYTHING_ON, "columns": 2048})  # 65536 rays: two pieces on two threads
    pose = pose_to_matrix(0, 0, 0, 0, 0, 0.4)
    one = LidarSimulator(cfg, scene, make_backend("embree", scene, threads=1), seed=2, sink=FrameCloud.of).simulate(pose)
    two = LidarSimulator(cfg, scene, make_backend("embree", scene, threads=2), seed=2, sink=FrameCloud.of).simulate(pose)
    assert_same_frames(one, two)


def test_a_bad_ray_table_is_not_trusted():
    scene = street()
    cfg = load_sensor("VLP-16", {})
    sim = LidarSimulator(cfg, scene, make_backend("embree", scene, threads=1), sink=FrameCloud.of)
    bad = np.array(cfg.directions, copy=True).reshape(-1, 3)
    bad[0] *= 2.0  # not unit
    from lidar_ros.simulator import _valid_rays

    assert sim._table_ok and not _valid_rays(sim._origins, bad)
    bad[0] = np.nan
    assert not _valid_rays(sim._origins, bad)


@pytest.mark.parametrize("sensor,layout", [("OS1-16", "ouster"), ("OS1-16", "gazebo"), ("OS1-16", "xyzi"),
                                           ("VLP-16", "gazebo_cpu"), ("VLP-16", "velodyne")])
def test_cloud_written_with_the_frame_is_the_driver_cloud_byte_for_byte(sensor, layout):
    import dataclasses

    from radarays_ros.io.lidar_clouds import pointcloud_array, pointcloud_msg
    from rosbags.typesys import Stores, get_typestore

    scene = street()
    cfg = load_sensor(sensor, {**EVERYTHING_ON, "layout": layout, "range": {"min": 0.5, "max": 14.0}})
    scan = LidarSimulator(cfg, scene, make_backend("embree", scene, threads=2), seed=1, sink=FrameCloud.of).simulate(pose_to_matrix(0, 0, 0))
    assert 0 < scan.hit.sum() < scan.hit.size  # returns, misses and (max 14 m) returns pushed out by noise
    generic = pointcloud_array(dataclasses.replace(scan, cloud=None))
    built = pointcloud_array(scan)
    # written with the frame where the cloud's rows are the scan's rows (or its columns: velodyne)
    # in the same order; gazebo clouds mark misses ±inf (not the scan's NaN points): built afterwards
    in_place = {"ouster": True, "xyzi": True, "gazebo_cpu": False, "gazebo": False, "velodyne": True}[layout]
    assert (scan.cloud is not None) == in_place
    if in_place:
        assert built is scan.cloud
    assert built.dtype == generic.dtype and built.shape == generic.shape
    assert built.tobytes() == generic.tobytes()
    # the message reads back with an independent decoder, field by field
    store = get_typestore(Stores.ROS2_JAZZY)
    msg = store.deserialize_cdr(store.serialize_cdr(pointcloud_msg(scan), "sensor_msgs/msg/PointCloud2"),
                                "sensor_msgs/msg/PointCloud2")
    assert bytes(msg.data) == generic.tobytes() and not msg.is_dense
    # asking for another layout, ground truth or another stamp still builds a new array
    assert pointcloud_array(scan, ground_truth=("entity",)) is not scan.cloud
    assert pointcloud_array(scan, "xyzi" if layout != "xyzi" else "gazebo_cpu") is not scan.cloud
    if layout == "velodyne":
        other = pointcloud_array(scan, stamp_ns=scan.t0_ns)  # times relative to the first firing
        assert other is not scan.cloud and other.tobytes() == pointcloud_array(
            dataclasses.replace(scan, cloud=None), stamp_ns=scan.t0_ns).tobytes()
        assert pointcloud_array(scan, stamp_ns=scan.stamp_ns()) is scan.cloud


def fail_one_piece_then_recover(cfg, failing_piece):
    """A frame whose piece `failing_piece(a)` raises fails as a whole; a new simulator gives the good frame
    again, and the same simulator's next frame works. Returns that next frame."""
    scene = street()
    sim = LidarSimulator(cfg, scene, make_backend("embree", scene, threads=2), seed=3, sink=FrameCloud.of)
    good = sim.simulate(np.eye(4)).range.copy()
    surface = sim._surface_piece

    def failing(frame, rng, traced, a, b):
        if failing_piece(a):
            raise RuntimeError("piece failed")
        return surface(frame, rng, traced, a, b)

    sim._surface_piece = failing
    with pytest.raises(RuntimeError, match="piece failed"):
        sim.simulate(np.eye(4))
    sim._surface_piece = surface
    again = LidarSimulator(cfg, scene, sim.backend, seed=3, sink=FrameCloud.of)
    np.testing.assert_array_equal(again.simulate(np.eye(4)).range, good)
    after = sim.simulate(np.eye(4))  # a new cloud: the failed frame's was never completed
    assert np.isfinite(after.range).any()
    return after


def test_a_failing_piece_fails_the_frame_and_the_next_frame_works():
    cfg = load_sensor("OS1-32", {**EVERYTHING_ON, "columns": 2048})  # two pieces on two threads
    after = fail_one_piece_then_recover(cfg, lambda a: a > 0)  # the piece on the worker thread
    import dataclasses

    from radarays_ros.io.lidar_clouds import pointcloud_array

    # the next frame's cloud is the driver cloud of its own arrays
    assert after.cloud is not None
    assert after.cloud.tobytes() == pointcloud_array(dataclasses.replace(after, cloud=None)).tobytes()


@pytest.mark.parametrize("layout", ["ouster", "velodyne"])
def test_a_cloud_is_reused_only_after_its_consumer_releases_it(layout):
    """Explicit ownership: a kept scan's cloud (and views of it) is never overwritten, however many frames
    follow and whatever the garbage collector does; a released one is written again, byte-exact."""
    import gc

    from radarays_ros.io.lidar_clouds import pointcloud_array

    scene = street()
    sensor = "OS1-16" if layout == "ouster" else "VLP-16"
    cfg = load_sensor(sensor, {**EVERYTHING_ON, "layout": layout})
    sim = LidarSimulator(cfg, scene, make_backend("embree", scene, threads=2), seed=7, sink=FrameCloud.of)
    ref = LidarSimulator(cfg, scene, sim.backend, seed=7)  # no sink: clouds built afterwards
    poses = [pose_to_matrix(0.5 * i, 0, 0, 0, 0, 0.3 * i) for i in range(5)]
    kept = sim.simulate(poses[0])
    kept_bytes = kept.cloud.tobytes()
    xyz = sim.simulate(poses[1]).xyz  # only a view of the second cloud survives
    xyz_copy = xyz.copy()
    gc.collect()
    third = sim.simulate(poses[2])
    assert kept.cloud.tobytes() == kept_bytes
    np.testing.assert_array_equal(xyz, xyz_copy)
    address = third.cloud.__array_interface__["data"][0]
    third.release()
    assert third.cloud is None
    third.release()  # twice is harmless
    fourth = sim.simulate(poses[3])  # the released cloud is written again
    assert fourth.cloud.__array_interface__["data"][0] == address
    fifth = sim.simulate(poses[4])  # nothing released since: a new cloud
    assert fifth.cloud.__array_interface__["data"][0] != address
    assert kept.cloud.tobytes() == kept_bytes
    np.testing.assert_array_equal(xyz, xyz_copy)
    for i, scan in ((0, kept), (3, fourth), (4, fifth)):  # every frame equals one built without the sink
        for _ in range(i - ref._scans):
            ref.simulate(poses[ref._scans])
        assert pointcloud_array(scan).tobytes() == pointcloud_array(ref.simulate(poses[i])).tobytes()


def test_release_ignores_clouds_of_incomplete_frames_and_other_writers():
    cfg = load_sensor("VLP-16", EVERYTHING_ON)
    writer = FrameCloud.of(cfg)
    cloud, fresh = writer.new()
    assert fresh
    writer.release(cloud)  # never completed: not reused
    assert writer.new()[0] is not cloud
    other = FrameCloud.of(cfg)
    other_cloud, _ = other.new()
    other.done(other_cloud)
    writer.release(other_cloud)  # not this writer's
    assert writer.new()[0] is not other_cloud
    writer.done(cloud)
    writer.release(cloud)
    again, fresh = writer.new()
    assert again is cloud and not fresh


def test_pieces_run_on_two_threads_large_and_small():
    import threading

    scene = street()
    backend = make_backend("embree", scene, threads=2)
    for sensor, columns, both in (("OS1-32", 2048, True), ("VLP-16", None, True)):
        cfg = load_sensor(sensor, {**EVERYTHING_ON, **({"columns": columns} if columns else {})})
        sim = LidarSimulator(cfg, scene, backend, seed=1, sink=FrameCloud.of)
        surface, seen = sim._surface_piece, set()

        def recording(*args, surface=surface, seen=seen):
            seen.add(threading.get_ident())
            return surface(*args)

        sim._surface_piece = recording
        sim.simulate(np.eye(4))
        assert len(sim._pieces) == 2 and (len(seen) == 2) == both


# 4 sub-rays, dual returns and fog (bench_lidar's +effects sensors): a VLP-16 frame is two pieces of 14400 beams
EFFECTS = {"beam": {"divergence_mrad": 3.0, "sub_rays": 4, "return_mode": "dual"},
           "weather": {"fog_visibility_km": 0.5}, "detection": {"model": "snr", "dropout_probability": 0.001},
           "signal": {"poisson": True, "noise_floor": 2.0}}


def test_small_pieces_on_two_threads_give_the_frames_of_one_thread():
    """A VLP-16 frame's two pieces (2 x 14400 beams) run on two threads, each with its own random stream
    (jitter, then the surface model): the frames are those of one thread, bit for bit, second echoes
    included, for a fixed pose and a trajectory."""
    scene = street()
    noise = {**EVERYTHING_ON["noise"], "angular_sigma": 0.001}  # jitter drawn from each piece's stream
    pose = pose_to_matrix(0.3, -0.2, 0.1, 0.01, -0.02, 0.7)
    moving = Trajectory(np.array([0, 100_000_000]), np.stack([pose, pose_to_matrix(1.0, 0.2, 0.1, 0, 0, 0.9)]))
    for overrides in ({**EFFECTS, "noise": noise}, {"noise": noise}, EFFECTS):
        cfg = load_sensor("VLP-16", {**EVERYTHING_ON, **overrides})
        one = LidarSimulator(cfg, scene, make_backend("embree", scene, threads=1), seed=5, sink=FrameCloud.of)
        two = LidarSimulator(cfg, scene, make_backend("embree", scene, threads=2), seed=5, sink=FrameCloud.of)
        assert len(two._pieces) == 2
        for where in (pose, moving, pose):
            a, b = one.simulate(where), two.simulate(where)
            assert a.hit.sum() > 0.1 * a.hit.size
            assert_same_frames(a, b)
            if "beam" in overrides:
                assert a.second is not None and a.second.hit.any()
                assert_same_frames(a.second, b.second)
                assert a.normal.shape == (*a.range.shape, 3)  # one firing pose per beam, not per sub-ray


def test_a_failing_small_piece_fails_the_frame_and_the_next_frame_works():
    cfg = load_sensor("VLP-16", {**EVERYTHING_ON, **EFFECTS})
    fail_one_piece_then_recover(cfg, lambda a: a == 0)  # the piece on the calling thread, beside the worker's


def test_rotation_is_the_float32_sum_of_three_products_in_order():
    """world_rays (a compiled loop) gives, per component, the float32 sum r_i0·x + r_i1·y + r_i2·z (+ t_i) in
    that order, bit for bit as three numpy passes do, also on a non-contiguous slice of the table; the starts
    are direction·tmin + origin in float32."""
    from lidar_ros import simulator

    rng = np.random.default_rng(8)
    v = rng.normal(size=(3, 50_000)).astype(np.float32)
    r, t = rng.normal(size=(3, 3)).astype(np.float32), rng.normal(size=3).astype(np.float32)
    turned, want = np.empty((50_000, 3), np.float32), np.empty((50_000, 3), np.float32)
    for i in range(3):
        acc = v[0] * r[i, 0]
        acc += v[1] * r[i, 1]
        acc += v[2] * r[i, 2]
        turned[:, i] = acc
        want[:, i] = acc + t[i]
    origins, dirs, starts = simulator.world_rays(v, r, t, v)
    assert origins.tobytes() == want.tobytes() and dirs.tobytes() == turned.tobytes() and starts is None
    origins, dirs, _ = simulator.world_rays(v[:, 100:900], r, t)
    assert dirs.tobytes() == turned[100:900].tobytes() and origins.tobytes() == np.tile(t, (800, 1)).tobytes()
    np.testing.assert_allclose(want, v.T.astype(np.float64) @ r.T.astype(np.float64) + t, rtol=1e-5, atol=1e-5)
    # the rays' starts at tmin: direction·tmin + origin in float32 (tracing.backend.ray_start)
    tmin = 0.37
    origins, dirs, starts = simulator.world_rays(v[:, :4000], r, t, v[:, 10:4010], tmin,
                                                 starts_out=np.empty((4000, 3), np.float32))
    assert origins.tobytes() == want[10:4010].tobytes() and dirs.tobytes() == turned[:4000].tobytes()
    assert starts.tobytes() == (dirs * np.float32(tmin) + origins).tobytes()
    with pytest.raises(ValueError, match="origins_t must be"):
        simulator.world_rays(v[:, :4001], r, t, v[:, :1000])


def test_echo_reflectivity_is_the_float32_sum_in_sub_ray_order():
    """form_echoes sums w_i·ρ_i of a beam's sub-rays over a C-contiguous (K, N) array (its fast layout): bit for
    bit the float32 sum w_0ρ_0 + w_1ρ_1 + … in sub-ray order, as the sums were before, misses adding nothing."""
    from lidar_ros.physics.echoes import form_echoes

    rng = np.random.default_rng(3)
    n, k = 5000, 4
    ranges = (rng.uniform(1, 60, (n, 1)) + rng.uniform(0, 0.2, (n, k))).astype(np.float32)  # one surface each
    ranges[rng.random((n, k)) < 0.2] = np.inf
    rho = rng.uniform(0, 1, (n, k)).astype(np.float32) ** 3
    w = np.array([0.1, 0.37, 0.23, 0.3], np.float32)
    parts = np.where(np.isfinite(ranges), rho * w, np.float32(0.0))
    want = parts[:, 0].copy()
    for i in range(1, k):
        want += parts[:, i]
    for mode in ("strongest", "dual"):
        assert form_echoes(ranges, rho, w, 0.5, mode)[0].reflectivity.tobytes() == want.tobytes()


def test_material_gathers_read_the_tables_as_np_take_does():
    """materials.gather (np.intp ids, fancy indexing) gives np.take's values: -1 (a miss) reads the last row,
    an id past the table fails with the explanatory error."""
    from lidar_ros.physics.materials import LidarMaterials, gather
    from radarays_ros.errors import ConfigError

    materials = LidarMaterials.from_library(street().materials)
    ids = np.random.default_rng(4).integers(-1, len(materials), 10_000).astype(np.int32)
    for table in (materials._cls_ext, materials._not_first_ext, materials._lambertian_ext, materials._constant_ext):
        got = gather(table, ids)
        assert got.dtype == table.dtype and got.tobytes() == np.take(table, ids).tobytes()
    with pytest.raises(ConfigError, match="material id"):
        materials.not_returning(np.array([len(materials) + 3], np.int32))


@pytest.mark.parametrize("sink", [FrameCloud.of, None])
def test_points_and_counts_in_one_pass_give_the_field_by_field_frames(monkeypatch, sink):
    """An Ouster frame's window, points and uint16 fields written in one pass (_points_in_window with fields)
    against the field-by-field copies: the same scan arrays, cloud, ground truth and pieces' returns, with
    returns that noise pushed out of the window (zeroed, ambient kept) in every piece."""
    import dataclasses

    import lidar_ros.simulator as simulator
    from radarays_ros.io.lidar_clouds import pointcloud_array

    scene = street()
    backend = make_backend("embree", scene, threads=2)
    # 0.5 m of range noise and a window ending inside the street: many returns leave it on either side
    cfg = load_sensor("OS1-16", {**EVERYTHING_ON, "noise": {**EVERYTHING_ON["noise"], "sigma": 0.5},
                                 "range": {"min": 3.0, "max": 12.0}})
    pose = pose_to_matrix(0.3, -0.2, 0.1, 0.01, -0.02, 0.7)
    fused_calls = []
    window_kernel = simulator._points_in_window

    def counting(*args):  # the pushed-out count of each call with fields
        pushed_out = window_kernel(*args)
        if args[11].size:
            fused_calls.append(pushed_out)
        return pushed_out

    monkeypatch.setattr(simulator, "_points_in_window", counting)
    fused = LidarSimulator(cfg, scene, backend, seed=5, sink=sink).simulate(pose)
    assert len(fused_calls) == len(LidarSimulator(cfg, scene, backend)._pieces) and min(fused_calls) > 0
    monkeypatch.setattr(simulator, "_photon_fields", lambda *args: None)
    plain = LidarSimulator(cfg, scene, backend, seed=5, sink=sink).simulate(pose)
    assert_same_frames(fused, plain)
    for name in ("clean_range", "entity", "material", "cos_incidence", "normal_world"):
        np.testing.assert_array_equal(getattr(fused, name), getattr(plain, name), err_msg=name)
    if sink is not None:
        assert fused.cloud.tobytes() == plain.cloud.tobytes()
        assert fused.cloud.tobytes() == pointcloud_array(dataclasses.replace(fused, cloud=None)).tobytes()
    pushed = [p.dropped for p in fused.ground_truth_source._parts]
    for fused_part, plain_part in zip(fused.ground_truth_source._parts, plain.ground_truth_source._parts):
        np.testing.assert_array_equal(fused_part.dropped, plain_part.dropped)
        for name in ("ouster_signal", "ouster_reflectivity", "ouster_ambient"):  # the sources, zeroed in place
            np.testing.assert_array_equal(getattr(fused_part.ret, name), getattr(plain_part.ret, name), err_msg=name)
    signal = np.concatenate([p.ret.ouster_signal[p.dropped] for p in fused.ground_truth_source._parts])
    ambient = np.concatenate([p.ret.ouster_ambient[p.dropped] for p in fused.ground_truth_source._parts])
    assert all(d is not None for d in pushed) and not signal.any() and ambient.any()


def test_the_overlap_shared_by_range_noise_and_photon_fields_gives_the_frames_of_two(monkeypatch):
    """SurfaceModel.apply computes O(r) of the clean ranges once for the SNR range noise and the photon fields
    (Returns.overlap_factor): an OS1 --realistic frame is the frame of each computing its own."""
    from lidar_ros.physics.model import SurfaceModel
    from lidar_ros.physics.overlap import range_overlap

    scene = street()
    backend = make_backend("embree", scene, threads=2)
    cfg = load_sensor("OS1-64", {"columns": 512, "rate_hz": 10}, realistic=True)
    assert cfg.surface.overlap_range_m > 0 and cfg.noise.snr_sigma and cfg.effects.signal.noise_floor > 0
    pose = pose_to_matrix(0.3, -0.2, 0.1, 0.01, -0.02, 0.7)
    shared = LidarSimulator(cfg, scene, backend, seed=6, sink=FrameCloud.of).simulate(pose)
    parts = shared.ground_truth_source._parts
    for part in parts:  # computed once, from the clean ranges as the fields read them
        assert part.ret.overlap_factor is not None and part.ret._signal_overlap is part.ret.overlap_factor
        expected = range_overlap(part.ret.clean_range, cfg.surface.overlap_range_m)
        assert part.ret.overlap_factor.tobytes() == expected.tobytes()
    monkeypatch.setattr(SurfaceModel, "_clean_overlap", lambda self, clean: None)
    apart = LidarSimulator(cfg, scene, backend, seed=6, sink=FrameCloud.of).simulate(pose)
    assert all(p.ret.overlap_factor is None for p in apart.ground_truth_source._parts)
    assert_same_frames(shared, apart)
    assert shared.cloud.tobytes() == apart.cloud.tobytes()
