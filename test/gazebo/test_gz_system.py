"""The radarays system inside a real headless gz-sim 8 (`gz sim -s`, TPE, built by setup_gz_harmonic.sh with
gz-sim's Python bindings and python_system_loader): a world with the one `<plugin>` line, a radar and a lidar
declared as custom sensors. Their frames arrive on the sensors' gz topics as gz.msgs.Image /
gz.msgs.PointCloudPacked at their update rates in sim time (lockstep: no update time is skipped, however
slow the host), with Gazebo's frame ids, and show the world the server runs (the wall). Figures (printed):
frames per sim second, and the server's real-time factor with and without the system (short runs)."""
from __future__ import annotations

import subprocess
import threading
import time
import uuid

import numpy as np
import pytest
from support.gz_harness import wait_for

from support import gz_harmonic
from support.netns_common import refuse
from radarays_ros.gazebo.system import PLUGIN_LINE
from radarays_ros.gazebo.transport import GzTransportClient

pytestmark = pytest.mark.slow
MS = 1_000_000


def world(name: str, system: bool) -> str:
    plugin = PLUGIN_LINE if system else ""
    return gz_harmonic.world_head(name) + f"""    {plugin}
    <model name="ground"><static>true</static><link name="link">
      <visual name="visual"><geometry><plane><normal>0 0 1</normal><size>40 40</size></plane></geometry></visual>
    </link></model>
    <model name="wall"><static>true</static><pose>6 0 1 0 0 0</pose><link name="link">
      <visual name="visual"><geometry><box><size>0.4 8 2</size></box></geometry></visual></link></model>
    <model name="mover"><pose>0 3 0.5 0 0 0</pose><link name="link">
      <inertial><mass>1</mass></inertial>
      <visual name="visual"><geometry><box><size>1 1 1</size></box></geometry></visual></link>
      <plugin filename="gz-sim-velocity-control-system" name="gz::sim::systems::VelocityControl">
        <initial_linear>0.4 0 0</initial_linear></plugin></model>
    <model name="rig"><static>true</static><pose>0 0 1 0 0 0</pose><link name="base">
      <sensor name="radar" type="custom" gz:type="radarays_radar">
        <update_rate>4</update_rate><topic>rig/radar</topic>
        <radarays_radar><preset>radarays_default</preset></radarays_radar>
      </sensor>
      <sensor name="lidar" type="custom" gz:type="radarays_lidar">
        <update_rate>10</update_rate><topic>rig/lidar</topic><gz_frame_id>lidar_link</gz_frame_id>
        <radarays_lidar><preset>VLP-16</preset></radarays_lidar>
      </sensor>
    </link></model>
  </world>
</sdf>
"""


class Heard:
    """Decoded messages of one topic (gz.msgs10 classes), in arrival order."""

    def __init__(self, client, topic: str, cls):
        self.cls, self.lock, self.msgs = cls, threading.Lock(), []
        client.subscribe(topic, self._on)

    def _on(self, payload, _type):
        msg = self.cls()
        msg.ParseFromString(payload)
        with self.lock:
            self.msgs.append(msg)

    def all(self) -> list:
        with self.lock:
            return list(self.msgs)


def stamp_ns(msg) -> int:
    return msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nsec


def frame_id(msg) -> str:
    return next(d.value[0] for d in msg.header.data if d.key == "frame_id")


@pytest.fixture
def start_server(isolated_network, tmp_path):
    why = gz_harmonic.python_systems_missing()
    if why:
        refuse("radarays Gazebo system end-to-end test", why)
    gz_harmonic.import_bindings()
    started = []

    def start(name: str, system: bool):
        path = tmp_path / f"{name}.sdf"
        path.write_text(world(name, system))
        s = gz_harmonic.GzServer(path, f"radarays_sys_{uuid.uuid4().hex[:8]}",
                                 env=gz_harmonic.python_system_environment()).start()
        started.append(s)
        return s

    yield start
    for s in started:
        s.stop()


def run_for(client, world_name: str, seconds: float) -> Heard:
    """The server's WorldStatistics, heard for `seconds` of wall time once its clock runs (and on)."""
    from gz.msgs10.world_stats_pb2 import WorldStatistics

    stats = Heard(client, f"/world/{world_name}/stats", WorldStatistics)
    assert wait_for(lambda: stats.all(), timeout=60)
    time.sleep(seconds)
    return stats


def rtf(stats: list) -> float:
    """Sim time over real time between the first and last statistics message."""
    a, b = stats[0], stats[-1]
    sim = (b.sim_time.sec - a.sim_time.sec) + 1e-9 * (b.sim_time.nsec - a.sim_time.nsec)
    real = (b.real_time.sec - a.real_time.sec) + 1e-9 * (b.real_time.nsec - a.real_time.nsec)
    return sim / real


def test_radar_and_lidar_on_gz_topics_in_lockstep(start_server):
    from gz.msgs10.image_pb2 import Image
    from gz.msgs10.pointcloud_packed_pb2 import PointCloudPacked

    server = start_server("radarays_system", system=True)
    client = GzTransportClient(partition=server.partition, host_ip="127.0.0.1")
    try:
        radar = Heard(client, "/rig/radar", Image)
        lidar = Heard(client, "/rig/lidar", PointCloudPacked)
        heard_stats = run_for(client, "radarays_system", 12.0)
        assert wait_for(lambda: len(radar.all()) >= 3 and len(lidar.all()) >= 5, timeout=60), server.log()
        radar_msgs, lidar_msgs = radar.all(), lidar.all()
        # the statistics read after the frames, not when the 12 s ended: on a busy machine the wait above can
        # run on, and frames newer than the last statistics then were not stamped ahead of the server's clock
        stats = heard_stats.all()

        # every update time in sim time, none skipped (lockstep), each stamped in sim time
        for msgs, period in ((radar_msgs, 250 * MS), (lidar_msgs, 100 * MS)):
            stamps = [stamp_ns(m) for m in msgs]
            assert np.diff(stamps).tolist() == [period] * (len(stamps) - 1), server.log()
        last_sim = stats[-1].sim_time.sec * 1_000_000_000 + stats[-1].sim_time.nsec
        assert stamp_ns(lidar_msgs[-1]) <= last_sim + 200 * MS

        # Gazebo's frame ids: the <gz_frame_id>, else the scoped sensor name
        assert {frame_id(m) for m in radar_msgs} == {"rig::base::radar"}
        assert {frame_id(m) for m in lidar_msgs} == {"lidar_link"}

        # the world the server runs: the wall's face 5.8 m ahead of the lidar
        cloud = lidar_msgs[-1]
        offsets = {f.name: f.offset for f in cloud.field}
        raw = np.frombuffer(cloud.data, np.uint8).reshape(-1, cloud.point_step)
        xyz = np.stack([raw[:, offsets[n]:offsets[n] + 4].copy().view("<f4")[:, 0] for n in "xyz"], axis=1)
        ahead = np.isfinite(xyz).all(axis=1) & (np.abs(np.arctan2(xyz[:, 1], xyz[:, 0])) < np.radians(2)) & \
            (np.abs(xyz[:, 2]) < 0.2) & (np.linalg.norm(xyz, axis=1) > 0.1)
        assert np.median(xyz[ahead, 0]) == pytest.approx(5.8, abs=0.05)
        image = radar_msgs[-1]
        assert image.width * image.height > 0 and len(image.data) == image.step * image.height
        # the mover's velocity comes from the physics (its components enabled by the system's pre_update): the
        # 0.4 m/s its VelocityControl drives it at
        assert "velocities of 1 of 1 moving links from the physics (fastest: mover::link at 0.40 m/s)" in server.log(), \
            server.log()
        assert image.pixel_format_type in (1, 13)  # L_INT8 (mono8) or R_FLOAT32 (32FC1)

        # Gazebo's own tools see them: `gz topic -i` names the publisher's message type
        env = gz_harmonic.environment()
        env.update(GZ_PARTITION=server.partition, GZ_IP="127.0.0.1")
        for topic, gz_type in (("/rig/lidar", "gz.msgs.PointCloudPacked"), ("/rig/radar", "gz.msgs.Image")):
            info = subprocess.run(["gz", "topic", "-i", "-t", topic], env=env, capture_output=True, text=True,
                                  timeout=30)
            assert gz_type in info.stdout, info.stdout + info.stderr

        sim_s = (stamp_ns(lidar_msgs[-1]) - stamp_ns(lidar_msgs[0])) / 1e9
        with_system = rtf(stats)
        print(f"\nradarays system, lockstep: {len(lidar_msgs) - 1} lidar frames in {sim_s:.2f} s of sim time "
              f"({(len(lidar_msgs) - 1) / sim_s:.2f} Hz, update_rate 10), radar {len(radar_msgs)} frames "
              f"(update_rate 4); real-time factor {with_system:.2f}")
    finally:
        client.close()

    server.stop()
    bare = start_server("radarays_bare", system=False)
    client = GzTransportClient(partition=bare.partition, host_ip="127.0.0.1")
    try:
        bare_stats = run_for(client, "radarays_bare", 6.0).all()
        print(f"the same world without the system: real-time factor {rtf(bare_stats):.2f}")
    finally:
        client.close()
