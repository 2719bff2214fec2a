"""The mirror beside a real headless Gazebo Harmonic server (`gz sim -s`, gz-sim 8.14, TPE physics, no
render engine), built from the release sources by scripts/setup_gz_harmonic.sh: the world from gz-sim 8's
own generate_world_sdf (material tags included), a model the server moves, one spawned through its
create service and one removed through its remove service, and a server killed and started again.
Positions are compared with what the server itself publishes (Pose_V, read by a client of our own)."""
from __future__ import annotations

import logging
import threading
import time
import uuid

import numpy as np
import pytest
from support.gz_harness import wait_for

from support import gz_harmonic
from support.netns_common import refuse
from radarays_ros.gazebo import protos
from radarays_ros.gazebo.mirror import GazeboMirror, MirrorConfig
from radarays_ros.gazebo.transport import GzTransportClient

pytestmark = pytest.mark.slow

SPAWNED = """<sdf version="1.11"><model name="visitor"><static>true</static><pose>3 -4 0.5 0 0 0</pose>
<link name="link"><visual name="visual"><geometry><box><size>1 1 1</size></box></geometry>
<radarays><material>glass</material></radarays></visual></link></model></sdf>"""


@pytest.fixture
def server(isolated_network, tmp_path):
    if not gz_harmonic.stage_complete("server"):
        refuse("gz sim end-to-end test", gz_harmonic.missing("server"))
    world = tmp_path / "e2e.sdf"
    world.write_text(gz_harmonic.e2e_world("e2e"))
    s = gz_harmonic.GzServer(world, f"radarays_e2e_{uuid.uuid4().hex[:8]}").start()
    yield s
    s.stop()


class ServerPoses:
    """What the server says: model world poses (top-level models: their pose is in the world) by stamp."""

    def __init__(self, client: GzTransportClient, world: str):
        self.lock = threading.Lock()
        self.by_stamp: dict[int, dict[str, np.ndarray]] = {}
        client.subscribe(f"/world/{world}/pose/info", self._on)

    def _on(self, payload, type_name):
        msg = protos.decode(type_name, payload)
        stamp = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nsec
        models = {p.name: np.array([p.position.x, p.position.y, p.position.z]) for p in msg.pose}
        with self.lock:
            self.by_stamp[stamp] = models
            if len(self.by_stamp) > 2000:
                del self.by_stamp[min(self.by_stamp)]

    def at(self, stamp: int, name: str) -> np.ndarray | None:
        with self.lock:
            models = self.by_stamp.get(stamp)
        return None if models is None or name not in models else models[name]


def entity_factory(sdf: str) -> bytes:
    _, msgs = gz_harmonic.import_bindings()
    from gz.msgs10.entity_factory_pb2 import EntityFactory

    return EntityFactory(sdf=sdf).SerializeToString()


def entity(name: str) -> bytes:
    gz_harmonic.import_bindings()
    from gz.msgs10.entity_pb2 import Entity

    return Entity(name=name, type=Entity.MODEL).SerializeToString()


def test_mirror_follows_a_real_gz_sim_server(server, caplog):
    caplog.set_level(logging.INFO, logger="radarays_ros.gazebo.mirror")
    client = GzTransportClient(partition=server.partition, host_ip="127.0.0.1")
    started = time.monotonic()
    assert wait_for(lambda: "/world/e2e/pose/info" in client.topics(), timeout=60), server.log()
    poses = ServerPoses(client, "e2e")
    mirror = GazeboMirror(MirrorConfig(world="e2e"), client=client).start()  # the world from generate_world_sdf
    try:
        assert mirror.wait_ready(30) and wait_for(lambda: mirror.alive, timeout=10), server.log()
        print(f"\nserver start to mirror alive: {time.monotonic() - started:.2f} s")
        scene = mirror.scene
        material = {name: scene.materials[int(scene.entity(name).face_materials[0])].name
                    for name in ("wall::link::visual", "ground::link::visual")}
        assert material == {"wall::link::visual": "metal", "ground::link::visual": "asphalt"}  # gz-sim 8's SDF tags
        assert "cannot be loaded" not in caplog.text

        # the mover: where the mirror has it is where the server said it was at that stamp. Checked until it has
        # moved 0.5 m (waited for, not a fixed 3 s: a busy machine slows the server's real-time factor, and 3 s of
        # wall time can then be less than the 1.25 s of sim time the mover needs for 0.5 m)
        checked, first, here = 0, None, None
        end = time.monotonic() + 60
        while time.monotonic() < end and not (checked > 10 and np.linalg.norm(here - first) > 0.5):
            with mirror._lock:
                mirror.refresh()
                stamp = mirror.liveness.last_stamp_ns
                here = scene.entity("mover::link::visual").pose[:3, 3].copy()
            said = poses.at(stamp, "mover")
            if said is not None:
                np.testing.assert_allclose(here, said, atol=1e-3)  # the 1 mm threshold
                first = here if first is None else first
                checked += 1
            time.sleep(0.05)
        assert checked > 10
        assert np.linalg.norm(here - first) > 0.5  # it really moved (0.4 m/s)
        assert wait_for(lambda: mirror.sim_time_ns is not None and mirror.sim_time_ns > 2_000_000_000, timeout=30)

        asked = time.monotonic()
        payload, _ = client.request("/world/e2e/create", entity_factory(SPAWNED), timeout=15)
        assert protos.decode("Boolean", payload).data
        assert wait_for(lambda: scene.find("visitor::link::visual") is not None, timeout=30)  # busy: generous
        print(f"create call to the model in the scene: {1000 * (time.monotonic() - asked):.0f} ms")
        np.testing.assert_allclose(scene.entity("visitor::link::visual").pose[:3, 3], [3, -4, 0.5], atol=1e-6)

        def visitor_material():
            return scene.materials[int(scene.entity("visitor::link::visual").face_materials[0])].name

        assert wait_for(lambda: visitor_material() == "glass", timeout=30)  # its tag, from generate_world_sdf

        payload, _ = client.request("/world/e2e/remove", entity("doomed"), timeout=15)
        assert protos.decode("Boolean", payload).data
        assert wait_for(lambda: scene.find("doomed::link::visual") is None, timeout=30)

        # gz-physics 7.8's TPE engine segfaults in the step after a removal (an upstream bug): the deletion
        # message comes first, and the kill below covers a server that is already gone as well.
        server.kill()  # a crash: no BYE
        assert wait_for(lambda: not mirror.alive, timeout=15)  # stale after 1 s; a busy machine notices later
        server.start()  # the same world again: the visitor is gone, the doomed box is back
        restarted = time.monotonic()
        assert wait_for(lambda: mirror.alive, timeout=60), server.log()
        print(f"restart to mirror alive again: {time.monotonic() - restarted:.2f} s")
        assert wait_for(lambda: scene.find("visitor::link::visual") is None and
                        scene.find("doomed::link::visual") is not None, timeout=30)
        assert mirror.sim_time_ns < 60_000_000_000
    finally:
        mirror.close()
        client.close()


ROBOT_URDF = """<?xml version="1.0"?>
<robot name="urdfbot" xmlns:gz="http://gazebosim.org/schema">
  <link name="base_link">
    <inertial><mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial>
    <visual><geometry><box size="0.5 0.5 0.2"/></geometry></visual>
    <collision><geometry><box size="0.5 0.5 0.2"/></geometry></collision>
  </link>
  <gazebo reference="base_link">
    <sensor name="roof_lidar" type="custom" gz:type="radarays_lidar">
      <update_rate>10</update_rate><topic>urdfbot/points</topic>
    </sensor>
  </gazebo>
</robot>"""


def test_official_client_follows_a_real_server_by_default(server, monkeypatch):
    """gz.transport13 (OfficialClient) with the mirror's defaults: the world from generate_world_sdf, which
    takes 150-1300 ms on gz-sim 8 (fixed 0.1 s request slices never got it), then live poses. With the
    server's /clock and pose streams followed no request was answered until the client paused its
    subscriptions for a request (client.py's module doc)."""
    from radarays_ros.gazebo.client import OfficialClient

    for key in ("GZ_PARTITION", "IGN_PARTITION"):  # the bindings read them when their Node is made
        monkeypatch.setenv(key, server.partition)
    for key in ("GZ_IP", "IGN_IP"):
        monkeypatch.setenv(key, "127.0.0.1")
    try:
        gz_harmonic.import_bindings()
    except (ImportError, OSError) as exc:
        refuse("official client against gz sim", f"the bindings do not import: {exc}")
    client = OfficialClient()
    assert wait_for(lambda: "/world/e2e/pose/info" in client.topics(), timeout=60), server.log()
    started = time.monotonic()
    mirror = GazeboMirror(MirrorConfig(world="e2e"), client=client).start()
    try:
        assert mirror.wait_ready(30) and wait_for(lambda: mirror.alive, timeout=10), server.log()
        print(f"\nofficial client: mirror alive {time.monotonic() - started:.2f} s after start")
        scene = mirror.scene
        wall = scene.entity("wall::link::visual")
        assert scene.materials[int(wall.face_materials[0])].name == "metal"  # the generate_world_sdf tags
        first = scene.entity("mover::link::visual").pose[:3, 3].copy()

        def moved() -> float:
            with mirror._lock:
                mirror.refresh()
                return float(np.linalg.norm(scene.entity("mover::link::visual").pose[:3, 3] - first))

        # 0.4 m/s: the poses kept coming. Waited for, not read after a fixed 2 s: a busy machine slows the
        # server's real-time factor, and 2 s of wall time can be less than the 0.75 s of sim time 0.3 m take
        assert wait_for(lambda: moved() > 0.3, timeout=30), moved()
    finally:
        mirror.close()
        client.close()


def test_generate_world_sdf_with_a_urdf_robot_spawned_the_ros_way(server):
    """ros_gz_sim create hands the URDF text to /world/<w>/create; gz-sim keeps it as an <include>, and
    generate_world_sdf then needs expand_include_tags to give SDF that parses, with the robot and its sensor."""
    from radarays_ros.gazebo.scene_sdf import declare_prefixes, world_sdf_request
    from radarays_ros.gazebo.sensors import find_sensors
    from radarays_ros.world.sdf import parse_xml

    client = GzTransportClient(partition=server.partition, host_ip="127.0.0.1")
    try:
        assert wait_for(lambda: "/world/e2e/pose/info" in client.topics(), timeout=60), server.log()
        payload, _ = client.request("/world/e2e/create", entity_factory(ROBOT_URDF), timeout=15)
        assert protos.decode("Boolean", payload).data

        def world_text() -> str:
            payload, type_name = client.request("/world/e2e/generate_world_sdf", world_sdf_request(), timeout=15)
            return declare_prefixes(protos.decode(type_name or "StringMsg", payload).data)

        # the server creates the robot in a later step: asked again until the robot is in (waited for, not a
        # fixed 1 s, which a busy machine can outlast)
        wait_for(lambda: "urdfbot" in world_text(), 30, 0.5)
        text = world_text()
        parse_xml(text, "generate_world_sdf")  # raises WorldError on malformed XML
        assert "name='urdfbot'" in text or 'name="urdfbot"' in text  # gz-sim writes single quotes
        assert [s.name for s in find_sensors(text)] == ["roof_lidar"]
    finally:
        client.close()


def test_tpe_survives_removing_a_spawned_model_not_one_from_the_world_file(server):
    """What the README states about gz-sim 8.14 + gz-physics 7.8 TPE (upstream, measured 3 of 3 each way): a model
    spawned through /world/<w>/create and removed leaves the server running; removing a model that came with the
    world file ('doomed', static; the same for a dynamic box and the VelocityControl mover) kills it with SIGSEGV
    in the following steps. Should upstream fix it, this fails and the README sentence goes."""
    client = GzTransportClient(partition=server.partition, host_ip="127.0.0.1")
    try:
        assert wait_for(lambda: "/world/e2e/pose/info" in client.topics(), timeout=60), server.log()
        payload, _ = client.request("/world/e2e/create", entity_factory(SPAWNED), timeout=5)
        assert protos.decode("Boolean", payload).data
        time.sleep(1.5)
        payload, _ = client.request("/world/e2e/remove", entity("visitor"), timeout=5)
        assert protos.decode("Boolean", payload).data
        time.sleep(4.0)
        assert server.proc.poll() is None, server.log()  # a spawned model's removal: still running
        payload, _ = client.request("/world/e2e/remove", entity("doomed"), timeout=5)
        assert protos.decode("Boolean", payload).data
        assert wait_for(lambda: server.proc.poll() is not None, timeout=10), "the server survived: update the README"
        assert server.proc.returncode == -11, server.log()  # SIGSEGV
    finally:
        client.close()
