"""sensor_rig following a running Gazebo: real rclpy node processes and the real C++ Ignition
Transport peer (test/gazebo/peer/gz_peer.cc), both in the ROS tests' private network namespace with
multicast switched on for lo (gz-transport discovery).

The peer plays Gazebo: a ground, a box at (5, 0, 0.5) and a rotated 'arm', poses at 50 Hz stamped
with its sim time (seconds since it started), moves on command.
"""
from __future__ import annotations

import time
import uuid
from pathlib import Path

import numpy as np
import pytest

from support import gz_harness
from support.ros_gazebo import cloud_xyz, gz_partition, refuse_gz_test, wait_message  # noqa: F401 (fixture)
from support.ros_harness import NodeProcess, Probe, diagnostics_values, stamp_ns, write_params
from support.waits import wait_for

pytestmark = pytest.mark.ros

SENSOR_WORLD = Path(__file__).parent / "data" / "peer_world_sensors.sdf"




@pytest.fixture
def peer(gz_partition):
    if not gz_harness.PEER.exists():
        refuse_gz_test(f"{gz_harness.PEER} is not built (bash scripts/setup_gz_peer.sh builds it)")
    p = gz_harness.Peer(world=f"w{uuid.uuid4().hex[:8]}", partition=gz_partition).start()
    yield p
    p.stop()


def box_face_points(xyz: np.ndarray, centre_xy, normal_axis: int) -> int:
    """Points on the box face (1 m wide, 0..1 m high) facing a sensor at (0, 0, 1): sensor frame."""
    other = 1 - normal_axis
    on_plane = np.abs(xyz[:, normal_axis] - centre_xy[normal_axis]) < 0.05
    within = np.abs(xyz[:, other] - centre_xy[other]) < 0.5
    above_ground = xyz[:, 2] > -0.98
    return int(np.count_nonzero(on_plane & within & above_ground))


def peer_clock(peer):
    """Gazebo's own sim time as the peer publishes it (/world/<w>/clock), read by a gz client."""
    from radarays_ros.gazebo import protos
    from radarays_ros.gazebo.transport import GzTransportClient

    client = GzTransportClient(partition=peer.partition, host_ip="127.0.0.1")
    latest = {}

    def on_clock(payload, type_name):
        sim = protos.decode(type_name or "Clock", payload).sim
        latest["ns"] = sim.sec * 1_000_000_000 + sim.nsec

    client.subscribe(f"/world/{peer.world}/clock", on_clock)
    return client, latest


def test_rig_follows_gazebo_moves_pauses_without_it_and_resumes(peer, tmp_path):
    params = write_params(tmp_path / "rig.yaml", "sensor_rig", {
        "gazebo": {"enable": True, "world": peer.world, "stale_after_s": 0.5},  # frames on the node's clock
        "pose_source": "gazebo", "diagnostics_period": 0.1, "sensors": ["top_lidar"],
        # mounted 1.05 m above the ground's link (at z = -0.05): the lidar at (0, 0, 1) in the world
        "top_lidar": {"type": "lidar", "config": "VLP-16", "frame_id": "top_lidar", "gazebo_parent": "ground::link",
                      "fixed_pose": [0.0, 0.0, 1.05, 0.0, 0.0, 0.0], "sensor": {"noise": {"sigma": 0.0}}},
    })
    with Probe() as probe, NodeProcess("radarays_ros.ros.sensor_rig", params_file=params) as node:
        clouds = probe.subscribe("/top_lidar/points", "sensor_msgs/msg/PointCloud2")
        diagnostics = probe.subscribe("/diagnostics", "diagnostic_msgs/msg/DiagnosticArray", qos="reliable")
        # the box at (5, 0, 0.5): its -x face 4.5 m ahead of the lidar (the world came from generate_world_sdf)
        msg, _ = wait_message(clouds, lambda m: box_face_points(cloud_xyz(m), (4.5, 0.0), 0) > 10, timeout=30)
        assert msg.header.frame_id == "top_lidar"

        peer.send("move box 0 -3 0.5 0 0 0")
        moved, _ = wait_message(clouds, lambda m: box_face_points(cloud_xyz(m), (0.0, -2.5), 1) > 10)
        assert box_face_points(cloud_xyz(moved), (4.5, 0.0), 0) == 0  # nothing left where it was

        peer.kill()  # Gazebo crashes: no BYE
        # generous: a loaded machine notices late, the test proves that it does
        assert wait_for(lambda: "stopped publishing poses" in node.output(), 30, 0.02), node.output()
        noticed = time.time_ns()  # the node's clock (no sim time here) is the system clock: stamps compare to it
        paused0 = None
        deadline = time.monotonic() + 30
        while True:  # wait for several paused timer ticks reported by the node itself
            values = diagnostics_values(diagnostics, "top_lidar")
            if values.get("gazebo_alive") == "false":
                paused0 = int(values["paused_ticks"]) if paused0 is None else paused0
                if int(values["paused_ticks"]) >= paused0 + 6:
                    break
            assert time.monotonic() < deadline, node.output()
            time.sleep(0.02)
        assert values["_level"] == 1 and "scans paused" in values["_message"]
        # judged by the scans' stamps, not by when they arrived: a scan finished (and stamped) before the outage
        # may still be on its way on a busy machine; a scan of a sweep that ended after the node noticed may not
        late = [stamp_ns(m.header) for m in clouds.messages() if stamp_ns(m.header) > noticed]
        assert not late, "a scan was published while Gazebo was away"

        restarted = time.monotonic_ns()
        again = gz_harness.Peer(peer.world, peer.partition).start()  # a fresh Gazebo: its sim time restarts
        try:
            # scans resume by themselves, of the new world (its box is back at (5, 0, 0.5))
            wait_message(clouds, lambda m: box_face_points(cloud_xyz(m), (4.5, 0.0), 0) > 10,
                         timeout=20, after_ns=restarted)
            assert node.alive(), node.output()
            out = node.output()  # before this Gazebo, too, goes away
        finally:
            again.stop()
    assert out.count("stopped publishing poses") == 1  # one clear line for the outage
    assert "is publishing poses" in out


def test_sensors_declared_in_sdf_run_on_their_links_topics_and_frames(peer, tmp_path):
    urdf = tmp_path / "rider.urdf"  # a robot description's <gazebo> block; Gazebo runs it as model 'box'
    urdf.write_text("""<robot name="rider" xmlns:gz="http://gazebosim.org/schema"><link name="link"/>
      <gazebo reference="link"><sensor name="urdf_laser" type="custom" gz:type="radarays_lidar">
        <pose>0 0 0.8 0 0 0</pose><topic>urdf_laser/scan</topic><gz_frame_id>laser_link</gz_frame_id>
        <radarays_lidar><preset>URG-04LX</preset></radarays_lidar></sensor></gazebo></robot>""")
    params = write_params(tmp_path / "rig.yaml", "sensor_rig", {
        "gazebo": {"enable": True, "world": peer.world, "sdf": str(SENSOR_WORLD), "clock": "gazebo",
                   "sensor_files": [str(urdf)], "urdf_model": "box"},
    })
    client, sim = peer_clock(peer)
    try:
        with Probe() as probe, NodeProcess("radarays_ros.ros.sensor_rig", params_file=params) as node:
            box = probe.subscribe("/box_lidar/points", "sensor_msgs/msg/PointCloud2")
            radar = probe.subscribe("/radar/image", "sensor_msgs/msg/Image")
            scan = probe.subscribe("/arm_scan/scan", "sensor_msgs/msg/LaserScan")
            urdf_scan = probe.subscribe("/urdf_laser/scan", "sensor_msgs/msg/LaserScan")
            tf = probe.subscribe("/tf", "tf2_msgs/msg/TFMessage", qos="reliable")

            def ground_height(msg) -> float:
                xyz = cloud_xyz(msg)
                return float(np.median(xyz[xyz[:, 2] < -1.0, 2]))

            # the lidar rides 1 m above the box's link (box centre at z = 0.5): the ground 1.5 m below it
            first, _ = wait_message(box, lambda m: abs(ground_height(m) + 1.5) < 0.02, timeout=30)
            assert first.header.frame_id == "box_lidar_frame"
            peer.send("move box 0 -3 1.5 0 0 0")  # lifted by 1 m: the sensor follows its link
            wait_message(box, lambda m: abs(ground_height(m) + 2.5) < 0.02)
            msgs = box.wait(3)
            # stamps are Gazebo's sim time (gazebo.clock: gazebo; seconds since the peer started), not the wall clock:
            # a scan within 1 s of the peer's clock as it arrives (waited for, not sampled once: on a busy machine
            # the newest scan in the inbox may trail the clock by more than a second; a wall-clock stamp never fits)
            wait_message(box, lambda m: sim.get("ns") is not None and abs(stamp_ns(m.header) - sim["ns"]) < 1.0e9,
                         timeout=30)
            stamps = [stamp_ns(m.header) for m in msgs]
            # <update_rate>5</update_rate>: sweeps on a 200 ms grid of that time
            assert all(d % 200_000_000 == 0 and d > 0 for d in np.diff(stamps))

            image = radar.wait(1, timeout=30)[-1]
            assert image.header.frame_id == "yard_radar_link" and (image.height, image.width) == (300, 40)
            laser = scan.wait(1, timeout=30)[-1]
            assert laser.header.frame_id == "upper" and laser.range_max == pytest.approx(30.0)  # gpu_lidar's <range>
            assert urdf_scan.wait(1, timeout=30)[-1].header.frame_id == "laser_link"  # URDF link -> box::link
            # the SDF sensors' frames on /tf (rviz places them): the lifted box's lidar 1 m above its link
            def lidar_frames(msg) -> list:
                return [t for t in msg.transforms if t.child_frame_id == "box_lidar_frame"]

            def lifted(msg) -> bool:
                return any(np.all(np.abs(np.array([t.transform.translation.x, t.transform.translation.y,
                                                   t.transform.translation.z]) - [0.0, -3.0, 2.5]) < 0.05)
                           for t in lidar_frames(msg))

            # waited for, not sampled once: on a busy machine /tf can trail the clouds by a few frames
            wait_message(tf, lifted, timeout=30)
            placed = [t for m in tf.messages() for t in lidar_frames(m)]
            assert placed and {t.header.frame_id for t in placed} == {"map"}
            assert {t.child_frame_id for m in tf.messages() for t in m.transforms} >= {"yard_radar_link", "upper"}
            assert node.alive(), node.output()
            out = node.output()
        # a bad parameter names its SDF block (file and line); the other sensors run regardless
        assert "peer_world_sensors.sdf:24 <sensor name='broken'>" in out and "rnge" in out
    finally:
        client.close()


def test_demo_rig_without_gazebo_waits_and_publishes_nothing(gz_partition):
    """The shipped Gazebo rig on the example world, Gazebo not running: the SDF sensors are set up
    from the file, the node says it waits, and no scan of a world that is not running goes out."""
    demo = Path(__file__).resolve().parents[2] / "config" / "ros" / "rig_gazebo_demo.yaml"
    world = Path(__file__).resolve().parents[2] / "radarays_ros" / "data" / "worlds" / "gz_radarays_demo.sdf"
    with Probe() as probe, NodeProcess("radarays_ros.ros.sensor_rig", "-p", f"gazebo.sdf:={world}",
                                       "-p", "diagnostics_period:=0.1", params_file=demo) as node:
        inboxes = [probe.subscribe(topic, kind) for topic, kind in (
            ("/radar/image", "sensor_msgs/msg/Image"), ("/points", "sensor_msgs/msg/PointCloud2"),
            ("/gpu_lidar/points", "sensor_msgs/msg/PointCloud2"))]
        diagnostics = probe.subscribe("/diagnostics", "diagnostic_msgs/msg/DiagnosticArray", qos="reliable")
        deadline = time.monotonic() + 30
        while True:  # each SDF sensor reports itself paused for a while
            values = [diagnostics_values(diagnostics, name) for name in ("radar", "lidar", "gpu_lidar")]
            paused = all(v.get("gazebo_alive") == "false" and int(v["paused_ticks"]) >= 6 for v in values)
            if paused and "waiting for Gazebo world 'radarays_demo'" in node.output():  # after a service timeout
                break
            assert time.monotonic() < deadline and node.alive(), node.output()
            time.sleep(0.05)
        assert all(len(inbox) == 0 for inbox in inboxes)
        out = node.output()
    assert "sensor radar: radar navtech_cir204 on Gazebo link robot::chassis" in out
    assert "sensor gpu_lidar: lidar gazebo_gpu_lidar on Gazebo link robot::mast" in out
    assert out.count("waiting for Gazebo world 'radarays_demo'") == 1


def ground_depth(msg) -> float:
    """How far below the sensor the ground lies: the median depth of the returns more than 1.2 m below it."""
    z = cloud_xyz(msg)[:, 2]
    ground = z[z < -1.2]
    return -float(np.median(ground)) if len(ground) else 0.0


def test_sensor_on_a_moving_gazebo_link_is_posed_per_column(peer, tmp_path):
    """A lidar riding on a box that Gazebo lifts at 1.5 m/s: within one 0.1 s sweep the ground drops
    away by 0.15 m in the sensor frame, column by column (motion distortion, as with tf poses)."""
    speed = 1.5
    params = write_params(tmp_path / "rig.yaml", "sensor_rig", {
        "gazebo": {"enable": True, "world": peer.world}, "pose_source": "gazebo", "sensors": ["rider"],
        "rider": {"type": "lidar", "config": "VLP-16", "frame_id": "rider", "gazebo_parent": "box::link",
                  "fixed_pose": [0.0, 0.0, 1.0, 0.0, 0.0, 0.0], "sensor": {"noise": {"sigma": 0.0}}},
    })
    with Probe() as probe, NodeProcess("radarays_ros.ros.sensor_rig", params_file=params) as node:
        clouds = probe.subscribe("/rider/points", "sensor_msgs/msg/PointCloud2")
        clouds.wait(1, timeout=30)  # running, the box at rest
        start = time.monotonic()
        lifting = True
        slopes = []
        while lifting:
            elapsed = time.monotonic() - start
            lifting = elapsed < 2.0
            peer.send(f"move box 0 -3 {0.5 + speed * min(elapsed, 2.0):.4f} 0 0 0")
            time.sleep(0.005)  # the pace of the commands, not an assertion
        # the sweeps of the lift are read once a sweep from the top (the box at rest at z = 3.5) has arrived, so
        # that all of them are in (waited for, not read right after the commands: a busy node publishes late)
        wait_message(clouds, lambda m: ground_depth(m) > 1.5 + speed * 2.0 - 0.1, timeout=30)
        for msg in clouds.messages():
            fields = {f.name: f.offset for f in msg.fields}
            raw = np.asarray(msg.data, np.uint8).tobytes()
            dtype = np.dtype({"names": ["z", "t"], "formats": ["<f4", "<f4"],
                              "offsets": [fields["z"], fields["time"]], "itemsize": msg.point_step})
            pts = np.frombuffer(raw, dtype)
            ground = np.isfinite(pts["z"]) & (pts["z"] < -1.2)
            if np.count_nonzero(ground) < 500:
                continue
            slope = np.polyfit(pts["t"][ground].astype(float), pts["z"][ground].astype(float), 1)[0]
            depth = -float(np.median(pts["z"][ground]))
            if 1.5 + 0.5 < depth < 1.5 + speed * 2.0 - 0.3:  # sweeps well inside the lift
                slopes.append(slope)
        assert node.alive(), node.output()
    assert len(slopes) >= 3, slopes
    # the ground's z in the sensor frame falls as the sensor rises: dz/dt = -speed
    assert np.median(slopes) == pytest.approx(-speed, rel=0.35), slopes
