"""Cone sensors (ultrasonic/IR rangers, Kallin 2018) and ToF depth cameras against geometry, and their
messages (sensor_msgs/Range, Image 32FC1/16UC1, CameraInfo) read back from an .mcap with rosbags."""
from __future__ import annotations

import numpy as np
import pytest
import trimesh
from rosbags.highlevel import AnyReader
from rosbags.typesys import Stores, get_typestore

from lidar_ros import LidarSimulator, load_sensor
from radarays_ros.cli import main
from radarays_ros.errors import ConfigError
from radarays_ros.io.lidar_clouds import depth_image
from radarays_ros.tracing import make_backend
from radarays_ros.world.mesh import TriMesh
from radarays_ros.world.scene import Scene
from radarays_ros.world.transforms import pose_to_matrix

from support.frames_paths import frames, lidar_on  # noqa: F401  (frames: the host/device fixture)


def tilted_wall(distance: float, tilt_deg: float):
    """A large plane through (distance, 0, 0) whose normal is turned tilt_deg about z from −x."""
    scene = Scene()
    box = trimesh.creation.box([0.2, 200, 200])
    beta = np.radians(tilt_deg)
    centre = np.array([distance, 0, 0]) + 0.1 * np.array([np.cos(beta), np.sin(beta), 0])
    scene.add_entity("wall", TriMesh(box.vertices, box.faces), pose_to_matrix(*centre, 0, 0, beta), material="concrete")
    return scene, make_backend("embree", scene, threads=2)


@pytest.mark.parametrize("tilt_deg", [0.0, 5.0, 20.0])
def test_cone_reports_the_nearest_point_inside_the_cone(tilt_deg, frames):
    """Perpendicular distance d·cos β when the wall's normal lies inside the cone (β ≤ fov/2), else the
    cone's edge: d·cos β / cos(β − fov/2), in the direction of the edge nearest to the normal."""
    from radarays_ros.io.lidar_clouds import cone_reading

    d, fov = 2.0, np.radians(15.0)
    scene, backend = tilted_wall(d, tilt_deg)
    scan = lidar_on(frames, load_sensor("HC-SR04", {"per_ring": 360, "rings": 30}), scene, backend).simulate(np.eye(4))
    reading, azimuth, elevation = cone_reading(scan)
    beta = np.radians(tilt_deg)
    if beta <= fov / 2:
        expect, expect_az = d * np.cos(beta), beta
    else:
        expect, expect_az = d * np.cos(beta) / np.cos(beta - fov / 2), fov / 2
    assert reading == pytest.approx(expect, rel=2e-3)
    assert azimuth == pytest.approx(expect_az, abs=np.radians(0.3)) and elevation == pytest.approx(0.0, abs=np.radians(0.3))


def test_cone_with_nothing_inside_reads_infinity_and_writes_a_range_message(tmp_path):
    box = trimesh.creation.box([0.2, 10, 10])
    box.apply_translation([3.1, 0, 0])
    world = tmp_path / "wall.stl"
    box.export(world)
    for i, (pose, expect) in enumerate((("0 0 0 0 0 0", 3.0), ("0 0 0 0 0 3.1416", np.inf))):
        out = tmp_path / f"r{i}.mcap"  # an existing output is refused
        assert main(["lidar", str(world), "--sensor", "HC-SR04", "--pose", pose, "--out", str(out)]) == 0
        with AnyReader([out], default_typestore=get_typestore(Stores.ROS2_JAZZY)) as reader:
            (conn, _, raw), = [m for m in reader.messages() if m[0].topic == "/range"]
            msg = reader.deserialize(raw, conn.msgtype)
        assert conn.msgtype == "sensor_msgs/msg/Range" and msg.radiation_type == 0  # ULTRASOUND
        assert msg.field_of_view == pytest.approx(np.radians(15)) and (msg.min_range, msg.max_range) == pytest.approx((0.02, 4.0))
        assert msg.range == pytest.approx(expect, rel=1e-5) if np.isfinite(expect) else np.isposinf(msg.range)
    data_out = tmp_path / "r.npz"
    assert main(["lidar", str(world), "--sensor", "HC-SR04", "--out", str(data_out)]) == 0
    assert float(np.load(data_out)["cone_range"]) == pytest.approx(3.0, rel=1e-5)


def test_depth_camera_sees_a_wall_at_constant_depth_through_a_pinhole(tmp_path, frames):
    """A wall square to the optical axis at 2 m: depth (optical z) = 2 m at every pixel; pixel (u, v) sees the
    point ((u − cx)/fx·2, (v − cy)/fy·2, 2) in the optical frame; CameraInfo carries K and P."""
    from radarays_ros.io.lidar_clouds import depth_image, depth_msgs

    scene, backend = tilted_wall(2.0, 0.0)
    cfg = load_sensor("ToF-camera-320x240", {"noise": {}})
    scan = lidar_on(frames, cfg, scene, backend).simulate(np.eye(4))
    depth = depth_image(scan)
    assert depth.shape == (240, 320) and depth.dtype == np.float32
    np.testing.assert_allclose(depth, 2.0, rtol=1e-5)
    fx = 320 / (2 * np.tan(np.radians(35)))
    u, v = np.meshgrid(np.arange(320), np.arange(240))
    np.testing.assert_allclose(scan.xyz[..., 0], (u - 159.5) / fx * 2.0, atol=1e-4)  # optical x: right
    np.testing.assert_allclose(scan.xyz[..., 1], (v - 119.5) / fx * 2.0, atol=1e-4)  # optical y: down
    np.testing.assert_allclose(scan.xyz[..., 2], 2.0, atol=1e-4)
    assert scan.config.frame_id == "camera_depth_optical_frame"
    mm = depth_image(scan, "16UC1")
    assert mm.dtype == np.uint16 and (mm == 2000).all()
    image, info = depth_msgs(scan)
    assert image.encoding == "32FC1" and image.step == 320 * 4
    np.testing.assert_allclose(info.k, [fx, 0, 159.5, 0, fx, 119.5, 0, 0, 1])
    store = get_typestore(Stores.ROS2_JAZZY)  # an independent round trip through CDR
    back = store.deserialize_cdr(store.serialize_cdr(image, "sensor_msgs/msg/Image"), "sensor_msgs/msg/Image")
    np.testing.assert_array_equal(np.frombuffer(bytes(back.data), "<f4").reshape(240, 320), depth)


def test_depth_camera_misses_are_infinite_and_edges_give_flying_pixels():
    """A plate at 1 m before a wall at 3 m: with the footprint sampled (4 sub-rays, mixed) some edge pixels
    read depths between the two, the flying pixels of real ToF cameras; the sky reads +inf."""
    from radarays_ros.io.lidar_clouds import depth_image

    scene = Scene()
    for name, size, x in (("wall", [0.2, 4, 40], 3.1), ("plate", [0.02, 0.5, 0.5], 1.01)):
        box = trimesh.creation.box(size)
        scene.add_entity(name, TriMesh(box.vertices, box.faces), pose_to_matrix(x, 0, 0), material="concrete")
    backend = make_backend("embree", scene, threads=2)
    thin = depth_image(LidarSimulator(load_sensor("ToF-camera-320x240", {"noise": {}}), scene, backend).simulate(np.eye(4)))
    wide_cfg = load_sensor("ToF-camera-320x240", {"noise": {}, "beam.sub_rays": 4, "beam.divergence_mrad": 8.0})
    wide = depth_image(LidarSimulator(wide_cfg, scene, backend).simulate(np.eye(4)))
    finite = np.isfinite(thin)
    assert np.isposinf(thin[~finite]).all() and (~finite).any()  # beside the 4 m wide wall: nothing
    assert not np.any((thin > 1.05) & (thin < 2.95))
    flying = (wide > 1.05) & (wide < 2.95)
    # only along the plate's outline: where the pixel's footprint (radius 4 mrad) reaches across the edge
    d = wide_cfg.directions.astype(float)
    y, z = d[..., 1] / d[..., 0], d[..., 2] / d[..., 0]  # where the pixel's axis meets the plate's plane x = 1
    outside = np.hypot(np.maximum(np.abs(y) - 0.25, 0), np.maximum(np.abs(z) - 0.25, 0))
    inside = np.minimum(0.25 - np.abs(y), 0.25 - np.abs(z))
    to_edge = np.where(outside > 0, outside, np.maximum(inside, 0))
    assert flying.sum() > 100 and np.all(to_edge[flying] < 1.0 * np.tan(0.004) * 1.05)


def test_depth_camera_bag_has_image_camera_info_and_the_optical_tf(tmp_path):
    box = trimesh.creation.box([0.2, 20, 20])
    box.apply_translation([2.1, 0, 0])
    world = tmp_path / "wall.stl"
    box.export(world)
    out = tmp_path / "d.mcap"
    assert main(["lidar", str(world), "--sensor", "ToF-camera-320x240", "--set", "encoding=16UC1", "--set", "noise.sigma=0", "--out", str(out)]) == 0
    msgs = {}
    with AnyReader([out], default_typestore=get_typestore(Stores.ROS2_JAZZY)) as reader:
        for conn, _, raw in reader.messages():
            msgs[conn.topic] = (conn.msgtype, reader.deserialize(raw, conn.msgtype))
    kind, image = msgs["/depth/image"]
    assert kind == "sensor_msgs/msg/Image" and image.encoding == "16UC1" and image.header.frame_id == "camera_depth_optical_frame"
    assert (np.frombuffer(bytes(image.data), "<u2") == 2000).all()
    assert msgs["/depth/camera_info"][0] == "sensor_msgs/msg/CameraInfo"
    world_tf, optical = msgs["/tf_static"][1].transforms
    assert (world_tf.child_frame_id, optical.header.frame_id, optical.child_frame_id) == (
        "camera_link", "camera_link", "camera_depth_optical_frame")
    q = optical.transform.rotation  # REP-103 optical frame: (-0.5, 0.5, -0.5, 0.5) up to sign
    assert np.allclose(np.abs([q.x, q.y, q.z, q.w]), 0.5)


def test_sensor_units_publish_range_depth_and_second_return_topics():
    """The runtime shared by nodes and bags (radarays_ros.sensors.units) offers the new topics."""
    from radarays_ros.sensors.units import make_unit

    scene, backend = tilted_wall(2.0, 0.0)
    cone = make_unit("lidar", "sonar", scene, backend, config="HC-SR04")
    assert cone.topics == {"points": "sensor_msgs/msg/PointCloud2", "range": "sensor_msgs/msg/Range"}
    out = cone.messages(cone.simulate(np.eye(4), 0), 0)
    assert out["range"].range == pytest.approx(2.0, rel=1e-5)
    cam = make_unit("lidar", "tof", scene, backend, config="ToF-camera-320x240", overrides={"noise": {}})
    out = cam.messages(cam.simulate(np.eye(4), 0), 0)
    assert out["depth/image"].encoding == "32FC1" and out["depth/camera_info"].width == 320
    dual = make_unit("lidar", "os", scene, backend, config="OS1-32",
                     overrides={"beam": {"divergence_mrad": 5.0, "sub_rays": 4, "return_mode": "dual"}})
    assert "points2" in dual.topics
    out = dual.messages(dual.simulate(np.eye(4), 0), 0)
    assert out["points2"].height == 32 and out["points2"].point_step == 48


def test_a_unit_places_an_ouster_by_its_point_frame():
    """Nodes, rigs and scenarios give the pose of frame_id (os_lidar for Ouster), the frame the cloud is in:
    rays are cast from the os_sensor pose that implies, so a wall 4 m ahead of os_lidar reads x = 4 there."""
    from radarays_ros.sensors.units import make_unit
    from radarays_ros.world.trajectory import Trajectory

    scene, backend = tilted_wall(4.0, 0.0)
    unit = make_unit("lidar", "os", scene, backend, config="OS1-32", overrides={"noise": {}})
    assert unit.frame_id == "os_lidar"
    for pose in (np.eye(4), Trajectory([0, 200_000_000], [np.eye(4), np.eye(4)])):
        scan = unit.simulate(pose, 0)
        ahead = scan.hit & (np.abs(scan.xyz[..., 1]) < 0.5) & (scan.xyz[..., 0] > 0)
        assert ahead.sum() > 20
        np.testing.assert_allclose(scan.xyz[..., 0][ahead], 4.0, atol=1e-3)


# -- multipath in a concave corner (lidar_ros/physics/multipath.py) --------------------------------------
def corner_scene():
    """Wall A: the plane x = 3 for y <= 1; wall B: the plane y = 1 for x <= 3; a concave corner at (3, 1)."""
    scene = Scene()
    for name, size, xyz in (("a", [0.2, 4.0, 6.0], (3.1, -1.0, 0.0)), ("b", [3.0, 0.2, 6.0], (1.5, 1.1, 0.0))):
        box = trimesh.creation.box(size)
        scene.add_entity(name, TriMesh(box.vertices, box.faces), pose_to_matrix(*xyz), material="concrete")
    return scene, make_backend("embree", scene, threads=2)


def hand_corner_bias(u: float, v: float, fx: float, fy: float, cx: float, cy: float, width: int, height: int,
                     albedo: float = 0.3, step: float = 0.005) -> float:
    """The one-bounce mean-path bias of pixel (u, v) on wall A, integrated over wall B's area by hand:
    dA at Q gets E = I·cosθ_in/|Q|², radiates ρ/π of it, lights P with cosθ_Q·cosθ_P/|PQ|² dA, relative to
    the direct light I·cosθ_P,dir/r_P²; bias = Σ w·(|Q| + |PQ| − r_P)/2 / (1 + Σ w)."""
    d = np.array([1.0, -(u - cx) / fx, -(v - cy) / fy])
    d /= np.linalg.norm(d)
    r_p = 3.0 / d[0]
    p = r_p * d
    x, z = np.meshgrid(np.arange(step / 2, 3.0, step), np.arange(-3.0 + step / 2, 3.0, step), indexing="ij")
    q = np.stack([x, np.ones_like(x), z], -1).reshape(-1, 3)
    # lit (and seen) only inside the camera's image
    pu, pv = cx - fx * q[:, 1] / q[:, 0], cy - fy * q[:, 2] / q[:, 0]
    q = q[(pu >= -0.5) & (pu <= width - 0.5) & (pv >= -0.5) & (pv <= height - 0.5)]
    dist_q = np.linalg.norm(q, axis=1)
    pq = np.linalg.norm(p - q, axis=1)
    cos_in = 1.0 / dist_q  # wall B's normal is -y, Q at y = 1
    cos_q = (1.0 - p[1]) / pq
    cos_p = (3.0 - q[:, 0]) / pq  # wall A's normal is -x
    w = albedo / np.pi * cos_in / dist_q**2 * cos_q * cos_p / pq**2 * r_p**2 / d[0] * step * step
    excess = dist_q + pq - r_p
    return float(0.5 * (w * excess).sum() / (1.0 + w.sum()))


def test_a_concave_corner_reads_long_by_the_one_bounce_bias():
    scene, backend = corner_scene()
    base = {"noise": {}, "tof.multipath_patches": 1024}
    clean = LidarSimulator(load_sensor("ToF-camera-320x240", {"noise": {}}), scene, backend).simulate(np.eye(4))
    cfg = load_sensor("ToF-camera-320x240", {**base, "tof.multipath": True})
    biased = LidarSimulator(cfg, scene, backend).simulate(np.eye(4))
    info = cfg.planar_info
    assert np.array_equal(clean.hit, biased.hit) and clean.hit.all()
    bias = (biased.range - clean.range).astype(np.float64)
    assert (bias > 0).all()  # every pixel of a concave corner reads long
    # wall A is seen right of the corner's column (u = cx − fx·tan(atan(1/3)) ≈ 83); a few cm of bias at most,
    # largest some way from the corner: nearer, the bounce is stronger but its extra path shorter
    for u in (130, 160, 200, 280, 319):
        expected = hand_corner_bias(u, 120, info["fx"], info["fy"], info["cx"], info["cy"], cfg.cols, cfg.rows)
        assert bias[120, u] == pytest.approx(expected, rel=0.04), u
    assert 0.005 < bias[120, 160] < 0.03
    # the depth image carries it: depth = range · d_x
    depth = depth_image(biased)
    np.testing.assert_allclose(depth[120, 160], biased.range[120, 160] * cfg.directions[120, 160, 0], rtol=1e-6)


def test_a_flat_wall_has_no_multipath_and_the_cw_phasor_matches_its_formula():
    from lidar_ros.physics.multipath import multipath_bias

    scene = Scene()
    box = trimesh.creation.box([0.2, 20.0, 20.0])
    scene.add_entity("wall", TriMesh(box.vertices, box.faces), pose_to_matrix(3.1, 0, 0), material="concrete")
    backend = make_backend("embree", scene, threads=2)
    cfg = load_sensor("ToF-camera-320x240", {"noise": {}, "tof.multipath": True})
    flat = LidarSimulator(cfg, scene, backend).simulate(np.eye(4))
    plain = LidarSimulator(load_sensor("ToF-camera-320x240", {"noise": {}}), scene, backend).simulate(np.eye(4))
    np.testing.assert_array_equal(flat.range, plain.range)  # coplanar points do not light each other
    # two facing points: the CW range is the phase of 1 + w·e^{ik(L - 2r)} over 2k
    points = np.array([[3.0, 0.0, 0.0], [2.0, 1.0, 0.0]])
    normals = np.array([[-1.0, 0.0, 0.0], [0.0, -1.0, 0.0]])
    ranges = np.linalg.norm(points, axis=1)
    cos_direct = np.array([1.0, 1.0 / ranges[1]])
    f = 20e6
    got = multipath_bias(points, normals, ranges, cos_direct, np.array([1]), np.array([0.01]), f)
    pq = np.linalg.norm(points[0] - points[1])
    cos_q = (points[0] - points[1]) @ normals[1] / pq  # Q = point 1 faces P
    cos_p = (points[1] - points[0]) @ normals[0] / pq
    w = 0.01 * cos_q * cos_p / pq**2 * ranges[0] ** 2
    k = 2 * np.pi * f / 299_792_458.0
    expected = np.angle(1 + w * np.exp(1j * k * (ranges[1] + pq - ranges[0]))) / (2 * k)
    assert got[0] == pytest.approx(expected, rel=1e-9) and got[0] > 0
    with pytest.raises(ConfigError, match="tof.multipath"):
        load_sensor("VLP-16", {"tof.multipath": True})
