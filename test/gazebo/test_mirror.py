"""The Gazebo mirror: pose composition, thresholds, and a real peer moving, spawning and deleting."""
from __future__ import annotations

import logging
import math
import time
from pathlib import Path

import numpy as np
import pytest
import trimesh
from support.gz_harness import FIXTURES, wait_for

from radarays_ros.errors import ConfigError
from radarays_ros.gazebo import protos
from radarays_ros.gazebo.mirror import GazeboMirror, MirrorConfig, model_sdf, moved_beyond, poses_to_matrices
from radarays_ros.gazebo.transport import GzTransportClient
from radarays_ros.radar import RadarConfig
from radarays_ros.tracing import make_backend
from radarays_ros.world.entities import add_entities
from radarays_ros.world.scene import Scene
from radarays_ros.world.sdf import model_entities
from radarays_ros.world.transforms import pose_to_matrix, quaternion_to_matrix

DOWN = np.array([[0.0, 0.0, -1.0]])


def down_distance(backend, x: float, y: float, z: float = 5.0) -> float:
    """Distance a ray from (x, y, z) straight down travels to the first surface."""
    return float(backend.trace(np.array([[x, y, z]]), DOWN).distance[0])


# -- pure parts ---------------------------------------------------------------------------------
def test_poses_to_matrices_matches_transforms():
    rng = np.random.default_rng(3)
    q = rng.normal(size=(20, 4))
    p = rng.normal(size=(20, 3))
    m = poses_to_matrices(p, q)
    for i in range(20):
        np.testing.assert_allclose(m[i, :3, :3], quaternion_to_matrix(*q[i]), atol=1e-12)
        np.testing.assert_allclose(m[i, :3, 3], p[i])
    np.testing.assert_allclose(poses_to_matrices(np.zeros((1, 3)), np.zeros((1, 4)))[0], np.eye(4))


def test_thresholds_one_millimetre_one_milliradian():
    old = np.repeat(np.eye(4)[None], 4, axis=0)
    new = np.stack([pose_to_matrix(0.0005, 0, 0), pose_to_matrix(0.002, 0, 0),
                    pose_to_matrix(0, 0, 0, 0, 0, 0.0005), pose_to_matrix(0, 0, 0, 0.002, 0, 0)])
    assert moved_beyond(old, new, 1e-3, 1e-3).tolist() == [False, True, False, True]


def test_mirror_config_is_validated():
    with pytest.raises(ConfigError, match="pose_topic 'poses'; allowed: pose/info, dynamic_pose/info"):
        MirrorConfig(pose_topic="poses")
    with pytest.raises(ConfigError, match="min_translation"):
        MirrorConfig(min_translation=float("nan"))
    with pytest.raises(ConfigError, match="max_rate_hz"):
        MirrorConfig(max_rate_hz=0)


def test_scene_message_model_becomes_the_same_entities_as_sdf():
    # scene.bin was recorded from the C++ peer: the arm model (rotated model, offset link and visual).
    scene_msg = protos.decode("gz.msgs.Scene", (FIXTURES / "scene.bin").read_bytes())
    arm = scene_msg.model[2]
    (spec,) = model_entities(model_sdf(arm))
    assert spec.name == "arm::upper::shell" and not spec.static
    # world pose = model (0,5,0, yaw 90deg) * link (1,0,0) * visual (0,0,0.5)
    expected = pose_to_matrix(0, 5, 0, 0, 0, math.pi / 2) @ pose_to_matrix(1, 0, 0) @ pose_to_matrix(0, 0, 0.5)
    np.testing.assert_allclose(spec.pose, expected, atol=1e-9)
    np.testing.assert_allclose(spec.mesh.vertices.max(axis=0), [0.2, 0.2, 0.2])


# -- against the peer ---------------------------------------------------------------------------
@pytest.fixture
def client(gz_peer):
    c = GzTransportClient(partition=gz_peer.partition, host_ip="127.0.0.1")
    yield c
    c.close()


def test_mirror_follows_moves_spawns_and_deletions(gz_peer, client, tmp_path):
    mirror = GazeboMirror(MirrorConfig(world=gz_peer.world), client=client).start()  # SDF from the service
    try:
        assert mirror.wait_ready(30)  # discovery and the first sync: generous on a busy machine (here and below)
        assert wait_for(lambda: mirror.alive)
        scene = mirror.scene
        assert set(scene.entity_names()) >= {"ground::link::visual", "box::link::visual", "arm::upper::shell"}
        backend = make_backend("embree", scene, threads=1)
        first_time = mirror.sim_time_ns
        assert first_time is not None and wait_for(lambda: mirror.sim_time_ns > first_time)  # Gazebo sim time

        # names compose into world poses: the arm's shell sits at model*link*visual = (0, 6, 0.5)
        shell = scene.entity("arm::upper::shell").pose
        np.testing.assert_allclose(shell[:3, 3], [0.0, 6.0, 0.5], atol=1e-5)  # SDF text: 6 digits
        assert down_distance(backend, 0.0, 6.0) == pytest.approx(5.0 - 0.7, abs=1e-4)
        assert down_distance(backend, 2.0, -3.0) == pytest.approx(5.0, abs=1e-4)  # ground

        gz_peer.send("move box 2 -3 0.5 0 0 0.7")
        assert wait_for(lambda: np.allclose(scene.entity("box::link::visual").pose[:3, 3], [2, -3, 0.5]))
        assert down_distance(backend, 2.0, -3.0) == pytest.approx(4.0, abs=1e-4)  # the box top at z = 1
        assert down_distance(backend, 5.0, 0.0) == pytest.approx(5.0, abs=1e-4)  # its old place is empty

        moves = mirror.moved
        gz_peer.send("move box 2.0004 -3 0.5 0 0 0.7")  # 0.4 mm: below the threshold
        updates = mirror.updates
        assert wait_for(lambda: mirror.updates > updates + 3)
        assert mirror.moved == moves

        gz_peer.send("spawn crate 100 -4 4 0.5 1 1 1")
        assert wait_for(lambda: scene.find("crate::link::visual") is not None)
        assert down_distance(backend, -4.0, 4.0) == pytest.approx(4.0, abs=1e-4)
        assert scene.entity("crate::link::visual").face_materials.min() >= 0  # the library assigned one

        mesh_path = tmp_path / "pillar.stl"
        trimesh.creation.box(extents=(0.5, 0.5, 3.0)).export(mesh_path)
        gz_peer.send(f"mesh pillar 200 {mesh_path} -6 -6 1.5")
        assert wait_for(lambda: scene.find("pillar::link::visual") is not None)
        assert down_distance(backend, -6.0, -6.0) == pytest.approx(2.0, abs=1e-4)  # top at z = 3

        gz_peer.send("delete crate")
        assert wait_for(lambda: scene.find("crate::link::visual") is None)
        assert down_distance(backend, -4.0, 4.0) == pytest.approx(5.0, abs=1e-4)
        backend.close()
    finally:
        mirror.close()


def test_dead_peer_is_survived_and_followed_again(gz_peer, client, caplog):
    caplog.set_level(logging.INFO, logger="radarays_ros.gazebo.mirror")
    mirror = GazeboMirror(MirrorConfig(world=gz_peer.world, stale_after_s=0.5), client=client).start()
    try:
        assert mirror.wait_ready(30) and wait_for(lambda: mirror.alive)
        gz_peer.send("spawn crate 100 -4 4 0.5 1 1 1")
        assert wait_for(lambda: mirror.scene.find("crate::link::visual") is not None)
        gz_peer.kill()
        assert wait_for(lambda: not mirror.alive, timeout=10)  # stale after 0.5 s; a busy machine notices later
        last = mirror.last_update
        assert wait_for(lambda: "stopped publishing poses" in caplog.text, timeout=10)
        stopped_lines = caplog.text.count("stopped publishing poses")

        # a sensor loop asks `alive` before each frame: nothing may be published during the outage
        assert not any(mirror.alive for _ in range(30) if time.sleep(0.01) is None)
        stale_frames = []

        def sensor_frame() -> bool:
            if not mirror.alive:
                return False
            if mirror.scene.find("crate::link::visual") is not None:
                stale_frames.append("the crate of the dead world")  # a frame of a scene not re-synced
            return True

        again = gz_peer.twin().start()  # a fresh Gazebo: no crate any more
        try:
            again.send("move box -1 -1 0.5 0 0 0")
            # a new process discovered and its tree re-read: generous on a busy machine
            assert wait_for(lambda: sensor_frame() and mirror.last_update > last, timeout=30, interval=0.002)
            assert stale_frames == []  # `alive` turned true only after the tree was re-read
            assert mirror.scene.find("crate::link::visual") is None
            assert wait_for(lambda: np.allclose(mirror.scene.entity("box::link::visual").pose[:3, 3], [-1, -1, 0.5]))
        finally:
            again.stop()
        assert caplog.text.count("stopped publishing poses") == stopped_lines
        warnings = [r for r in caplog.records if r.levelno >= logging.WARNING and r.name.endswith("mirror")]
        assert len(warnings) == 1, [r.getMessage() for r in warnings]  # one clear line for the outage
    finally:
        mirror.close()


def test_mirror_with_world_file_and_given_scene(gz_peer, client, tmp_path):
    payload, type_name = client.request(f"/world/{gz_peer.world}/generate_world_sdf", timeout=30)  # discovery first
    world = tmp_path / "peer_world.sdf"
    world.write_text(protos.decode(type_name, payload).data)
    mirror = GazeboMirror(MirrorConfig(world=gz_peer.world, sdf=str(world), ignore=("arm",)), client=client)
    mirror.start()  # the file is loaded synchronously
    try:
        names = mirror.scene.entity_names()
        assert "box::link::visual" in names and "arm::upper::shell" not in names  # ignored stays out
        assert mirror.wait_ready(30)
        gz_peer.send("move box 0 -2 0.5 0 0 0")
        assert wait_for(lambda: np.allclose(mirror.scene.entity("box::link::visual").pose[:3, 3], [0, -2, 0.5]))
        assert mirror.scene.find("arm::upper::shell") is None
        # an ignored model (say, the robot carrying the sensors) is still followed as a frame
        np.testing.assert_allclose(mirror.frame_pose("arm::upper")[:3, 3], [0, 6, 0], atol=1e-9)
    finally:
        mirror.close()


def test_given_scene_is_used_as_is(gz_peer, client):
    scene = Scene()
    specs = model_entities('<model name="box"><link name="link"><visual name="visual"><geometry>'
                           '<box><size>1 1 1</size></box></geometry></visual></link></model>')
    add_entities(scene, specs)
    with GazeboMirror(MirrorConfig(world=gz_peer.world), scene=scene, client=client) as mirror:
        assert mirror.wait_ready(30)
        # the tree puts the box at (5, 0, 0.5); the given scene had it at the origin
        assert wait_for(lambda: np.allclose(scene.entity("box::link::visual").pose[:3, 3], [5, 0, 0.5]))
        # models the running world has and the given scene lacks (spawned before we looked) join it
        assert scene.find("ground::link::visual") is not None and scene.find("arm::upper::shell") is not None


class _CountingScene(Scene):
    """A Scene offering the vectorised pose setter the mirror prefers when present."""

    calls = 0

    def set_poses_array(self, ids, poses, keep_twists=False):
        self.calls += 1
        super().set_poses_array(ids, poses, keep_twists)


def test_recorded_messages_drive_the_mirror_without_a_network():
    scene = _CountingScene()
    mirror = GazeboMirror(MirrorConfig(world="w1", max_rate_hz=2.0), scene=scene, client=object())
    mirror.apply_scene_info(protos.decode("ignition.msgs.Scene", (FIXTURES / "scene.bin").read_bytes()))
    assert sorted(scene.entity_names()) == ["arm::upper::shell", "box::link::visual", "ground::link::visual"]
    mirror.on_poses((FIXTURES / "pose_v.bin").read_bytes(), "ignition.msgs.Pose_V")
    assert scene.calls == 0  # the recorded poses equal the tree's: nothing moved

    poses = protos.decode("gz.msgs.Pose_V", (FIXTURES / "pose_v.bin").read_bytes())
    box = next(p for p in poses.pose if p.id == 20)
    box.position.x, box.orientation.z, box.orientation.w = -2.0, math.sin(0.25), math.cos(0.25)
    mirror.on_poses(poses.SerializeToString(), "gz.msgs.Pose_V")
    assert scene.calls == 0  # within 0.5 s of the last update: held back by the 2 Hz cap
    assert wait_for(lambda: mirror.tick() or scene.calls == 1, timeout=2)
    assert mirror.moved == 1
    np.testing.assert_allclose(scene.entity("box::link::visual").pose, pose_to_matrix(-2, 0, 0.5, 0, 0, 0.5), atol=1e-12)

    np.testing.assert_allclose(mirror.frame_pose("box"), pose_to_matrix(-2, 0, 0.5, 0, 0, 0.5), atol=1e-12)
    arm_link = pose_to_matrix(0, 5, 0, 0, 0, math.pi / 2) @ pose_to_matrix(1, 0, 0)
    np.testing.assert_allclose(mirror.frame_pose("arm::upper"), arm_link, atol=1e-12)
    assert mirror.frame_pose("nope::link") is None

    mirror.on_deleted(protos.UInt32_V(data=[30]).SerializeToString(), "gz.msgs.UInt32_V")  # the model id only
    assert scene.find("arm::upper::shell") is None  # its whole subtree left
    assert mirror.frame_pose("arm::upper") is None


def test_refresh_applies_the_newest_poses_despite_the_cap():
    scene = _CountingScene()
    mirror = GazeboMirror(MirrorConfig(world="w1", max_rate_hz=0.01), scene=scene, client=object())  # 100 s
    mirror.apply_scene_info(protos.decode("gz.msgs.Scene", (FIXTURES / "scene.bin").read_bytes()))
    poses = protos.decode("gz.msgs.Pose_V", (FIXTURES / "pose_v.bin").read_bytes())
    box = next(p for p in poses.pose if p.id == 20)
    for x, applied in ((-2.0, 1), (-3.0, 1), (-4.0, 1)):  # the first is applied, the others held back
        box.position.x = x
        mirror.on_poses(poses.SerializeToString(), "gz.msgs.Pose_V")
        assert scene.calls == applied
    assert scene.entity("box::link::visual").pose[0, 3] == -2.0
    assert mirror.refresh() and scene.calls == 2 and not mirror.refresh()  # a frame is due: the newest
    assert scene.entity("box::link::visual").pose[0, 3] == -4.0


@pytest.mark.parametrize("max_rate_hz", [1e6, 0.01])  # each message applied as it comes / held back until refresh
def test_a_frame_gets_the_pose_streams_velocities_and_zero_once_a_model_stops(max_rate_hz):
    """Pose_V messages 16 ms apart in sim time: the box moving 4 cm and turning 0.02 rad a message has (2.5 m/s,
    1.25 rad/s) when a frame asks (refresh), every other mirrored entity zero; no velocities before two messages or
    without a later stamp; once the box stands still (a message with its same pose), zero, not its last velocity.
    Between frames nothing is computed: the scene is told at the next refresh."""
    from radarays_ros.radar.physical.simulate import entity_motion

    scene = _CountingScene()
    mirror = GazeboMirror(MirrorConfig(world="w1", max_rate_hz=max_rate_hz), scene=scene, client=object())
    mirror.apply_scene_info(protos.decode("gz.msgs.Scene", (FIXTURES / "scene.bin").read_bytes()))
    poses = protos.decode("gz.msgs.Pose_V", (FIXTURES / "pose_v.bin").read_bytes())
    box = next(p for p in poses.pose if p.id == 20)
    entity, arm = scene.entity("box::link::visual"), scene.entity("arm::upper::shell")

    def send(ms, x, yaw):
        poses.header.stamp.sec, poses.header.stamp.nsec = 10 + ms // 1000, (ms % 1000) * 1_000_000
        box.position.x, box.orientation.z, box.orientation.w = x, math.sin(yaw / 2), math.cos(yaw / 2)
        mirror.on_poses(poses.SerializeToString(), "gz.msgs.Pose_V")

    send(0, -2.0, 0.5)
    assert not mirror.hand_velocities() and entity.twist is None  # one message: nothing to difference
    send(16, -1.96, 0.52)
    assert entity.twist is None  # not computed per message
    mirror.refresh()  # a frame asks
    velocity, angular = entity.twist
    np.testing.assert_allclose(velocity, [2.5, 0.0, 0.0], atol=1e-9)
    np.testing.assert_allclose(angular, [0.0, 0.0, 1.25], atol=1e-9)
    assert not np.any(arm.twist[0]) and not np.any(arm.twist[1])
    radar = type("Sim", (), {"scene": scene, "config": RadarConfig.from_dict({"sensor": {"model": "physical"}})})()
    motion = entity_motion(radar, 10**9)  # the radar reads it from its first frame
    np.testing.assert_allclose(motion.velocity[entity.id], [2.5, 0.0, 0.0], atol=1e-9)
    send(16, -1.92, 0.54)  # the same stamp again: no velocity to be had; the scene keeps what it was told
    mirror.refresh()
    assert not mirror.hand_velocities()
    send(32, -1.88, 0.56)
    mirror.refresh()
    np.testing.assert_allclose(entity.twist[0], [2.5, 0.0, 0.0], atol=1e-9)
    send(40, -1.86, 0.57)  # a message between frames (applied, or held back by the cap): the velocity stays
    np.testing.assert_allclose(entity.twist[0], [2.5, 0.0, 0.0], atol=1e-9)
    mirror.refresh()  # 2 cm in 8 ms
    np.testing.assert_allclose(entity.twist[0], [2.5, 0.0, 0.0], atol=1e-9)
    send(48, -1.86, 0.57)  # it stopped: zero, and it stays where it is
    mirror.refresh()
    assert not entity.twist[0].any() and not entity.twist[1].any()
    np.testing.assert_allclose(entity.pose[:3, 3], [-1.86, 0.0, 0.5], atol=1e-12)


def test_pose_messages_that_give_no_finite_velocity_give_none_and_one_error(caplog):
    """A box pose from the network with a NaN position: the scene refuses the pose (as before), and the frame that
    asks for velocities gets none (no exception in the frame's thread), with one error line."""
    scene = _CountingScene()
    mirror = GazeboMirror(MirrorConfig(world="w1", max_rate_hz=1e6), scene=scene, client=object())
    mirror.apply_scene_info(protos.decode("gz.msgs.Scene", (FIXTURES / "scene.bin").read_bytes()))
    poses = protos.decode("gz.msgs.Pose_V", (FIXTURES / "pose_v.bin").read_bytes())
    box = next(p for p in poses.pose if p.id == 20)
    for ms, x in ((0, -2.0), (16, math.nan)):
        poses.header.stamp.sec, poses.header.stamp.nsec = 10, ms * 1_000_000
        box.position.x = x
        try:
            mirror.on_poses(poses.SerializeToString(), "gz.msgs.Pose_V")
        except ConfigError:
            assert math.isnan(x)  # the scene's own check of the pose
    with caplog.at_level(logging.ERROR, logger="radarays_ros.gazebo.mirror"):
        assert not mirror.hand_velocities() and not mirror.hand_velocities()
    assert scene.entity("box::link::visual").twist is None
    assert len([r for r in caplog.records if "no entity velocities" in r.getMessage()]) == 1


def test_unresolvable_spawned_mesh_is_skipped_with_a_warning(caplog):
    scene = Scene()
    mirror = GazeboMirror(MirrorConfig(world="w1"), scene=scene, client=object())
    mirror.apply_scene_info(protos.Scene(name="w1"))
    msg = protos.Scene(name="w1")
    model = msg.model.add(name="statue", id=50)
    model.pose.position.x, model.pose.orientation.w = 3.0, 1.0
    link = model.link.add(name="link", id=51)
    link.visual.add(name="body", id=52).geometry.mesh.filename = "model://nowhere/statue.dae"
    link.visual[0].geometry.type = protos.Geometry.MESH
    box = link.visual.add(name="plinth", id=53)
    box.geometry.type = protos.Geometry.BOX
    box.geometry.box.size.x = box.geometry.box.size.y = box.geometry.box.size.z = 1.0
    with caplog.at_level(logging.WARNING, logger="radarays_ros.gazebo.mirror"):
        mirror.on_spawned(msg.SerializeToString(), "gz.msgs.Scene")
    assert scene.entity_names() == ["statue::link::plinth"]
    assert "model://nowhere/statue.dae" in caplog.text and "model://nowhere/statue.dae" in scene.unresolved
    np.testing.assert_allclose(mirror.frame_pose("statue::link")[:3, 3], [3, 0, 0])


# -- material tags of spawned models ------------------------------------------------------------
STATUE_SDF = """<?xml version="1.0"?><sdf version="1.9"><model name="statue"><link name="link">
  <visual name="body"><geometry><mesh><uri>model://statue/meshes/cube.obj</uri></mesh></geometry>
    <radarays_material><velocity>0.0</velocity><ambient>0.2</ambient><diffuse>0.7</diffuse><specular>1234</specular></radarays_material>
  </visual>
  <visual name="plinth"><geometry><box><size>1 1 1</size></box></geometry><radarays><material>metal</material></radarays></visual>
  <visual name="not_spawned"><geometry><box><size>1 1 1</size></box></geometry><radarays><material>glass</material></radarays></visual>
</link></model></sdf>"""

CUBE_OBJ = "".join(f"v {x} {y} {z}\n" for x in (-0.5, 0.5) for y in (-0.5, 0.5) for z in (-0.5, 0.5)) + \
    "f 1 3 4 2\nf 5 6 8 7\nf 1 2 6 5\nf 3 7 8 4\nf 1 5 7 3\nf 2 4 8 6\n"


def _statue_models(root: Path) -> Path:
    (root / "statue" / "meshes").mkdir(parents=True)
    (root / "statue" / "meshes" / "cube.obj").write_text(CUBE_OBJ)
    (root / "statue" / "model.config").write_text('<model><name>statue</name><sdf version="1.9">model.sdf</sdf></model>')
    (root / "statue" / "model.sdf").write_text(STATUE_SDF)
    return root


def _spawn_message(name: str, model_id: int, x: float, mesh_uri: str) -> protos.Scene:
    msg = protos.Scene(name="w1")
    model = msg.model.add(name=name, id=model_id)
    model.pose.position.x, model.pose.position.z, model.pose.orientation.w = x, 0.5, 1.0
    link = model.link.add(name="link", id=model_id + 1)
    body = link.visual.add(name="body", id=model_id + 2)
    body.geometry.type = protos.Geometry.MESH
    body.geometry.mesh.filename = mesh_uri
    plinth = link.visual.add(name="plinth", id=model_id + 3)
    plinth.pose.position.y, plinth.pose.orientation.w = 3.0, 1.0
    plinth.geometry.type = protos.Geometry.BOX
    plinth.geometry.box.size.x = plinth.geometry.box.size.y = plinth.geometry.box.size.z = 1.0
    return msg


@pytest.mark.parametrize("by", ["model_uri", "absolute_path"])
def test_spawned_model_takes_the_tags_of_its_model_file(tmp_path, by):
    models = _statue_models(tmp_path / "models")
    uri = "model://statue/meshes/cube.obj" if by == "model_uri" else str(models / "statue" / "meshes" / "cube.obj")
    scene = Scene()
    mirror = GazeboMirror(MirrorConfig(world="w1", resource_paths=(str(models),)), scene=scene, client=object())
    mirror.apply_scene_info(protos.Scene(name="w1"))
    mirror.on_spawned(_spawn_message("statue_2", 60, 4.0, uri).SerializeToString(), "gz.msgs.Scene")  # renamed
    assert sorted(scene.entity_names()) == ["statue_2::link::body", "statue_2::link::plinth"]
    backend = make_backend("embree", scene, threads=1)
    hits = backend.trace(np.array([[0.0, 0.0, 0.5], [4.0, 3.0, 5.0]]), np.array([[1.0, 0, 0], [0, 0, -1.0]]))
    backend.close()
    assert hits.distance.tolist() == pytest.approx([3.5, 4.0])
    body, plinth = (scene.materials[int(i)] for i in hits.material)
    assert body.name == "sdf:statue_2::link::body"
    assert dict(body.radar) == {"velocity": 0.0, "brdf": "radarays", "A": 0.2, "B": 0.7, "C": 1234.0}
    assert plinth.name == "metal"


def test_spawned_model_without_a_model_file_keeps_the_rules(tmp_path):
    mesh = tmp_path / "loose.obj"  # no model.config / model.sdf above it
    mesh.write_text(CUBE_OBJ)
    scene = Scene()
    mirror = GazeboMirror(MirrorConfig(world="w1"), scene=scene, client=object())
    mirror.apply_scene_info(protos.Scene(name="w1"))
    mirror.on_spawned(_spawn_message("loose", 70, 4.0, str(mesh)).SerializeToString(), "gz.msgs.Scene")
    lib = scene.materials
    assert {lib[int(m)].name for e in scene.entities for m in e.face_materials} == {lib.default}


def test_spawned_model_tags_from_generate_world_sdf(gz_peer, client, tmp_path):
    models = _statue_models(tmp_path / "models")
    config = MirrorConfig(world=gz_peer.world, resource_paths=(str(models),))
    with GazeboMirror(config, client=client) as mirror:
        assert mirror.wait_ready(30) and wait_for(lambda: mirror.alive)
        scene = mirror.scene
        # a box spawned from an SDF string: its tag exists only in Gazebo's SDF of the world
        gz_peer.send("spawn crate 100 -4 4 0.5 1 1 1 0.01 0.3 0.6 777")

        def crate_material():
            entity = scene.find("crate::link::visual")
            return None if entity is None else scene.materials[int(scene.entity(entity).face_materials[0])]

        assert wait_for(lambda: crate_material() is not None and crate_material().name == "sdf:crate::link::visual")
        assert dict(crate_material().radar) == {"velocity": 0.01, "brdf": "radarays", "A": 0.3, "B": 0.6, "C": 777.0}
        # a mesh spawned by model:// URI: tags from the model's own file (the peer's SDF has none)
        gz_peer.send("mesh statue 200 model://statue/meshes/cube.obj 6 -6 0.5")
        assert wait_for(lambda: scene.find("statue::link::visual") is not None)
        backend = make_backend("embree", scene, threads=1)
        hits = backend.trace(np.array([[-4.0, 4.0, 5.0], [6.0, -6.0, 5.0]]), DOWN.repeat(2, axis=0))
        backend.close()
        assert hits.distance.tolist() == pytest.approx([4.0, 4.0], abs=1e-4)
        assert scene.materials[int(hits.material[0])].radar["C"] == 777.0  # the re-added crate is traced
        # the peer's statue visual is "visual", not "body": the file's tags do not apply to it
        assert scene.materials[int(hits.material[1])].name == scene.materials.default
        # the crate still follows its pose after its entity was replaced
        gz_peer.send("move crate -4 5 0.5 0 0 0")
        assert wait_for(lambda: np.allclose(scene.entity("crate::link::visual").pose[:3, 3], [-4, 5, 0.5]))


def test_quick_restart_is_noticed_by_sim_time_going_back(gz_peer, client, caplog):
    caplog.set_level(logging.INFO, logger="radarays_ros.gazebo.mirror")
    # stale_after_s far longer than the restart: only the Pose_V stamps can tell
    mirror = GazeboMirror(MirrorConfig(world=gz_peer.world, stale_after_s=30), client=client).start()
    try:
        assert mirror.wait_ready(30) and wait_for(lambda: mirror.alive)
        gz_peer.send("spawn crate 100 -4 4 0.5 1 1 1")
        assert wait_for(lambda: mirror.scene.find("crate::link::visual") is not None)
        assert wait_for(lambda: mirror.sim_time_ns > 300_000_000)  # the old world ran a while
        gz_peer.kill()
        again = gz_peer.twin().start()  # a fresh Gazebo, sim time from 0, no crate
        try:
            # a new process discovered and its tree re-read: generous on a busy machine
            assert wait_for(lambda: mirror.scene.find("crate::link::visual") is None, timeout=30)
            assert wait_for(lambda: mirror.alive, timeout=15)
            again.send("move box -1 -1 0.5 0 0 0")
            assert wait_for(lambda: np.allclose(mirror.scene.entity("box::link::visual").pose[:3, 3], [-1, -1, 0.5]))
        finally:
            again.stop()
        assert "sim time went back" in caplog.text
        warnings = [r for r in caplog.records if r.levelno >= logging.WARNING and r.name.endswith("mirror")]
        assert warnings == [], [r.getMessage() for r in warnings]  # it never went stale
    finally:
        mirror.close()


def test_world_reset_in_recorded_stamps_asks_for_a_resync():
    scene = Scene()
    mirror = GazeboMirror(MirrorConfig(world="w1"), scene=scene, client=object())
    mirror.apply_scene_info(protos.decode("gz.msgs.Scene", (FIXTURES / "scene.bin").read_bytes()))
    poses = protos.decode("gz.msgs.Pose_V", (FIXTURES / "pose_v.bin").read_bytes())
    for sec in (5, 6, 6):  # forward (and a repeated stamp): nothing to do
        poses.header.stamp.sec = sec
        mirror.on_poses(poses.SerializeToString(), "gz.msgs.Pose_V")
        assert not mirror._needs_resync
    poses.header.stamp.sec, poses.header.stamp.nsec = 0, 16_000_000  # a reset world starts again at 0
    mirror.on_poses(poses.SerializeToString(), "gz.msgs.Pose_V")
    assert mirror._needs_resync and mirror.sim_time_ns == 16_000_000


def test_gazebo_absent_at_start_is_one_line_then_followed(gz_peer, caplog):
    caplog.set_level(logging.INFO, logger="radarays_ros.gazebo.mirror")
    gz_peer.kill()  # no Gazebo on the network yet
    client = GzTransportClient(partition=gz_peer.partition, host_ip="127.0.0.1")
    mirror = GazeboMirror(MirrorConfig(world=""), client=client).start()  # world found by discovery
    try:
        assert not any(mirror.alive for _ in range(40) if time.sleep(0.01) is None)
        assert not mirror.wait_ready(0.2) and len(mirror.scene) == 0
        peer = gz_peer.twin().start()
        try:
            assert mirror.wait_ready(30) and wait_for(lambda: mirror.alive)
            assert mirror.world == gz_peer.world
            peer.send("move box 3 3 0.5 0 0 0")
            assert wait_for(lambda: np.allclose(mirror.scene.entity("box::link::visual").pose[:3, 3], [3, 3, 0.5]))
            warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING and r.name.endswith("mirror")]
            assert len(warnings) == 1 and "no Gazebo world found" in warnings[0], warnings
        finally:
            peer.stop()
    finally:
        mirror.close()
        client.close()


def test_the_last_held_back_message_is_applied_by_the_mirror_thread():
    scene = _CountingScene()
    mirror = GazeboMirror(MirrorConfig(world="w1", max_rate_hz=4.0), scene=scene, client=object())
    mirror.apply_scene_info(protos.decode("gz.msgs.Scene", (FIXTURES / "scene.bin").read_bytes()))
    poses = protos.decode("gz.msgs.Pose_V", (FIXTURES / "pose_v.bin").read_bytes())
    box = next(p for p in poses.pose if p.id == 20)
    for x in (-2.0, -3.0, -4.0):  # the first is applied at once, the newest of the others is held back
        box.position.x = x
        mirror.on_poses(poses.SerializeToString(), "gz.msgs.Pose_V")
    assert scene.calls == 1 and scene.entity("box::link::visual").pose[0, 3] == -2.0
    mirror._wait_for_work(0.3)  # one pass of the mirror thread's loop, after the 0.25 s cap
    assert scene.calls == 2 and scene.entity("box::link::visual").pose[0, 3] == -4.0
    assert mirror._pending is None
