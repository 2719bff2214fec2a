"""The scenario runner: its bag read back with rosbags, message by message, against the scenario."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from rosbags.highlevel import AnyReader
from rosbags.typesys import Stores, get_typestore

from radarays_ros.cli import main as radarays_main
from radarays_ros.errors import ConfigError
from radarays_ros.scenario.config import DEFAULT_BAG_START_NS, load_scenario
from radarays_ros.scenario.runner import run_scenario
from radarays_ros.world.transforms import quaternion_to_matrix
from support.scenario import RADAR_SET, scenario_file

TYPESTORE = get_typestore(Stores.ROS2_JAZZY)
REPO = Path(__file__).resolve().parents[1]


def read_bag(path: Path) -> dict:
    """{topic: [(log_ns, msgtype, message)]} decoded by rosbags."""
    out: dict = {}
    with AnyReader([path], default_typestore=TYPESTORE) as reader:
        for conn, t, raw in reader.messages():
            out.setdefault(conn.topic, []).append((t, conn.msgtype, reader.deserialize(raw, conn.msgtype)))
    return out


def stamp(header) -> int:
    return header.stamp.sec * 1_000_000_000 + header.stamp.nanosec


def matrix(transform) -> np.ndarray:
    m = np.eye(4)
    q, t = transform.rotation, transform.translation
    m[:3, :3] = quaternion_to_matrix(q.x, q.y, q.z, q.w)
    m[:3, 3] = (t.x, t.y, t.z)
    return m


def test_bag_message_by_message(tmp_path):
    summary = run_scenario(scenario_file(tmp_path), tmp_path / "run.mcap", tmp_path / "pictures", quiet=True)
    bag = read_bag(tmp_path / "run.mcap")
    assert set(bag) == {"/tf_static", "/tf", "/clock", "/odom", "/radar/image", "/radar/points", "/lidar/points"}
    assert summary.frames == {"radar": 5, "lidar": 5}

    # /tf_static: each sensor's mount on base_link, once, at the start
    (static,) = bag["/tf_static"]
    mounts = {t.child_frame_id: (t.header.frame_id, matrix(t.transform)) for t in static[2].transforms}
    assert mounts["radar"][0] == "base_link" and np.allclose(mounts["radar"][1][:3, 3], [0.5, 0, 1.0])
    assert np.allclose(mounts["velodyne"][1][:3, 3], [0, 0, 1.5])

    # /clock and /tf at 20 Hz from 0 s; the base moves along +x at 2 m/s from x = -2
    clocks = [stamp_ for _, _, m in bag["/clock"] for stamp_ in [m.clock.sec * 10**9 + m.clock.nanosec]]
    assert clocks == [k * 50_000_000 for k in range(len(clocks))] and len(clocks) >= 10
    # REP-105: map -> odom (identity: no drift by default) -> base_link, and the same pose on /odom
    assert len(bag["/odom"]) == len(bag["/tf"]) == len(clocks)
    for (log_ns, msgtype, msg), (odom_ns, odom_type, odom) in zip(bag["/tf"], bag["/odom"]):
        map_odom, odom_base = msg.transforms
        assert msgtype == "tf2_msgs/msg/TFMessage" and (map_odom.header.frame_id, map_odom.child_frame_id) == ("map", "odom")
        assert (odom_base.header.frame_id, odom_base.child_frame_id) == ("odom", "base_link")
        assert stamp(map_odom.header) == stamp(odom_base.header) == log_ns == odom_ns
        assert np.allclose(matrix(map_odom.transform), np.eye(4))
        assert odom_base.transform.translation.x == pytest.approx(-2.0 + 2.0 * log_ns / 1e9, abs=1e-9)
        assert odom_type == "nav_msgs/msg/Odometry" and (odom.header.frame_id, odom.child_frame_id) == ("odom", "base_link")
        assert odom.pose.pose.position.x == odom_base.transform.translation.x
        if log_ns:
            assert odom.twist.twist.linear.x == pytest.approx(2.0, abs=1e-6)

    # radar: sweeps start every 0.1 s, logged when they end; the +x wall is 9.9 - x(t) - 0.5 ahead
    images = bag["/radar/image"]
    assert [stamp(m.header) for _, _, m in images] == [k * 100_000_000 for k in range(5)]
    assert [log for log, _, _ in images] == [(k + 1) * 100_000_000 for k in range(5)]
    for _, _, m in images:
        assert (m.encoding, m.height, m.width, m.header.frame_id) == ("mono8", 300, 40, "radar")
        polar = np.asarray(m.data, np.uint8).reshape(300, 40).T  # range_rows: rows are range bins
        x0 = -2.0 + 2.0 * stamp(m.header) / 1e9 + 0.5  # azimuth 0 fires at the sweep start
        assert (polar[0].argmax() + 0.5) * 0.05 == pytest.approx(9.9 - x0, abs=0.3)
    radar_points = [m for _, _, m in bag["/radar/points"]]
    assert len(radar_points) == 5 and all(m.header.frame_id == "radar" for m in radar_points)
    assert sum(m.width for m in radar_points) > 0

    # lidar: velodyne layout, stamped at the last firing; every return on a wall or on the crate. Each
    # point is placed in the world with the base pose at its own firing time (stamp + `time`): the sensor
    # sits at (x(t), 0, 1.5) with x(t) = -2 + 2 t and no rotation (mount and trajectory are pure shifts).
    velodyne = np.dtype({"names": ["x", "y", "z", "time"], "formats": ["<f4", "<f4", "<f4", "<f4"],
                         "offsets": [0, 4, 8, 18], "itemsize": 22})
    for _, _, m in bag["/lidar/points"]:
        assert m.header.frame_id == "velodyne" and m.point_step == 22
        assert [f.name for f in m.fields] == ["x", "y", "z", "intensity", "ring", "time"]
        pts = np.frombuffer(np.asarray(m.data, np.uint8).tobytes(), velodyne)
        pts = pts[np.isfinite(pts["x"])]
        assert len(pts) > 1000 and np.all(pts["time"] <= 0) and pts["time"].min() > -0.11
        t = stamp(m.header) / 1e9 + pts["time"].astype(np.float64)
        x, y, z = pts["x"] + (-2.0 + 2.0 * t), pts["y"].astype(np.float64), pts["z"] + 1.5
        on_wall = (np.minimum(np.abs(9.9 - np.abs(x)), np.abs(9.9 - np.abs(y))) < 0.02) & (z > -0.02) & (z < 2.02)
        on_crate = (x > 4.48) & (x < 5.52) & (y > -6.52) & (y < -5.48) & (z > -0.02) & (z < 1.02)
        assert np.all(on_wall | on_crate), np.c_[x, y, z][~(on_wall | on_crate)][:5]
        assert on_crate.sum() > 10  # the crate is in view (5 m ahead-right)
    assert len(summary.pictures) == 10 and all(p.is_file() for p in summary.pictures)


def test_moving_entity_seen_where_it_is(tmp_path):
    """The crate drives from (5, -6) along +y at 10 m/s; the lidar sees it where it is at each frame."""
    path = scenario_file(tmp_path, entities=[{"name": "crate", "trajectory": {
        "waypoints": [[5.0, -6.0, 0.5], [5.0, 6.0, 0.5]], "speed": 10.0}}],
        trajectory={"waypoints": [[0.0, 0.0], [0.001, 0.0]], "speed": 0.0001})
    run_scenario(path, tmp_path / "run.mcap", quiet=True)
    bag = read_bag(tmp_path / "run.mcap")
    ys = []
    for _, _, m in bag["/lidar/points"]:
        pts = np.frombuffer(np.asarray(m.data, np.uint8).tobytes(),
                            np.dtype({"names": ["x", "y", "z"], "formats": ["<f4"] * 3, "offsets": [0, 4, 8],
                                      "itemsize": 22}))
        near = np.isfinite(pts["x"]) & (np.abs(pts["x"] - 4.5) < 0.05)  # the crate's face towards the sensor
        assert near.sum() > 5
        ys.append(float(np.median(pts["y"][near])))
        t0 = stamp(m.header) - 100_000_000  # velodyne stamp = last firing ~ sweep start + 0.1 s
        assert ys[-1] == pytest.approx(-6.0 + 10.0 * t0 / 1e9, abs=0.6)
    assert np.all(np.diff(ys) > 0.5)


def test_trajectory_from_csv_and_from_a_bags_odometry_and_tf(tmp_path):
    from radarays_ros.io import messages
    from radarays_ros.io.bag import BagWriter
    from radarays_ros.world.transforms import pose_to_matrix

    (tmp_path / "path.csv").write_text("t,x,y,z,roll,pitch,yaw\n0,0,0,0,0,0,0\n1,1,2,0,0,0,1.0\n")
    csv = load_scenario(scenario_file(tmp_path, trajectory={"csv": "path.csv"})).trajectory
    assert np.allclose(csv.at([500_000_000])[0][:3, 3], [0.5, 1.0, 0.0])

    Odometry = TYPESTORE.types["nav_msgs/msg/Odometry"]
    PoseWithCovariance = TYPESTORE.types["geometry_msgs/msg/PoseWithCovariance"]
    TwistWithCovariance = TYPESTORE.types["geometry_msgs/msg/TwistWithCovariance"]
    Pose = TYPESTORE.types["geometry_msgs/msg/Pose"]
    Point = TYPESTORE.types["geometry_msgs/msg/Point"]
    Twist = TYPESTORE.types["geometry_msgs/msg/Twist"]
    with BagWriter(tmp_path / "odom.mcap") as bag:
        for k in range(5):
            t = k * 200_000_000
            q = messages.Quaternion(x=0.0, y=0.0, z=math.sin(0.1 * k), w=math.cos(0.1 * k))
            odom = Odometry(header=messages.header(t, "odom"), child_frame_id="base_link",
                            pose=PoseWithCovariance(pose=Pose(position=Point(x=float(k), y=0.0, z=0.0), orientation=q),
                                                    covariance=np.zeros(36)),
                            twist=TwistWithCovariance(twist=Twist(linear=messages.Vector3(x=0.0, y=0.0, z=0.0),
                                                                  angular=messages.Vector3(x=0.0, y=0.0, z=0.0)),
                                                      covariance=np.zeros(36)))
            bag.write("/odom", odom, t)
            bag.write("/tf", messages.tf_message([messages.transform_stamped(
                pose_to_matrix(0, float(k), 0), t, "map", "base_link")]), t)
    odom = load_scenario(scenario_file(tmp_path, trajectory={"bag": "odom.mcap", "topic": "/odom"})).trajectory
    pose = odom.at([300_000_000])[0]
    assert np.allclose(pose[:3, 3], [1.5, 0, 0]) and math.atan2(pose[1, 0], pose[0, 0]) == pytest.approx(0.3)
    tf = load_scenario(scenario_file(tmp_path, trajectory={"bag": "odom.mcap", "topic": "/tf", "frame": "base_link"})).trajectory
    assert np.allclose(tf.at([600_000_000])[0][:3, 3], [0, 3.0, 0])
    with pytest.raises(ConfigError, match="topic /nope not in .*odom.mcap"):
        load_scenario(scenario_file(tmp_path, trajectory={"bag": "odom.mcap", "topic": "/nope"}))


@pytest.mark.parametrize("change,message", [
    ({"sensorz": {}}, r"unknown key\(s\) \['sensorz'\]"),
    ({"sensors": {}}, "sensors must map"),
    ({"trajectory": {"waypoints": [[0, 0]]}}, "at least two"),
    ({"trajectory": {"waypoints": [[0, 0], [1, 0]], "csv": "x.csv"}}, "exactly one of"),
    ({"sensors": {"r": {"type": "sonar"}}}, "sensors.r.type = 'sonar': must be radar or lidar"),
    ({"sensors": {"../../x": {"type": "radar"}}}, r"sensors: name '../../x' is not a ROS name"),
    ({"odometry": {"drift": {"yaw_std": 1}}}, r"odometry.drift: unknown key\(s\) \['yaw_std'\]; allowed: translation_std"),
    ({"odometry": {"drift": {"translation_std": -1}}}, r"odometry.drift.translation_std = -1.0: out of range, allowed \[0.0, 10.0\]"),
    ({"sensors": {"r": {"type": "radar", "mount": [0, 0, 1]}}}, r"sensors.r.mount: expected \[x, y, z"),
    ({"duration": -1}, "duration = -1: must be >= 0"),
    ({"world": "nope.sdf"}, r"world = 'nope.sdf': .*nope.sdf not found \(paths are relative to the scenario file\)"),
    ({"materials": "mats.yaml"}, r"materials = 'mats.yaml': .*mats.yaml not found"),
    ({"trajectory": {"csv": "none.csv"}}, r"trajectory.csv: trajectory file .*none.csv not found"),
])
def test_bad_scenarios_name_the_key(tmp_path, change, message):
    with pytest.raises(ConfigError, match=message):
        load_scenario(scenario_file(tmp_path, **change))


def test_malformed_scenario_yaml_is_one_line_with_where(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("world: room.sdf\nsensors: {r: {type: radar}\n")
    with pytest.raises(ConfigError, match=r"broken.yaml: not valid YAML \(expected ',' or '}', .* at line 3, column 1\)$"):
        load_scenario(path)


def test_unknown_output_option_and_entity_name_the_key_and_the_choices(tmp_path):
    path = scenario_file(tmp_path, sensors={"radar": {"type": "radar", "output": {"layout": "x"}}})
    with pytest.raises(ConfigError, match=r"sensors.radar: output.layout: unknown output option; allowed: image_layout, "):
        run_scenario(path, tmp_path / "x.mcap", quiet=True)
    path = scenario_file(tmp_path, entities=[{"name": "truck", "trajectory": {"waypoints": [[0, 0], [1, 0]], "speed": 1.0}}])
    with pytest.raises(ConfigError, match=r"entities: no entity matches 'truck' .*; models: crate, walls$"):
        run_scenario(path, tmp_path / "x.mcap", quiet=True)


def test_bad_sensor_override_names_the_sensor(tmp_path):
    path = scenario_file(tmp_path, sensors={"radar": {"type": "radar", "set": {"beam.samples": 0}}})
    with pytest.raises(ConfigError, match="sensors.radar: .*beam.samples"):
        run_scenario(path, tmp_path / "x.mcap", quiet=True)


def test_cli_run_and_error(tmp_path, capsys):
    path = scenario_file(tmp_path, duration=0.2)
    assert radarays_main(["run", str(path), "--out", str(tmp_path / "cli.mcap")]) == 0
    err = capsys.readouterr().err
    assert "2/" in err or "frames" in err
    assert "wrote" in err and (tmp_path / "cli.mcap").is_file()
    assert radarays_main(["run", str(tmp_path / "missing.yaml"), "--out", str(tmp_path / "y.mcap")]) == 2
    assert capsys.readouterr().err.strip().count("\n") == 0


SHIPPED = sorted((REPO / "radarays_ros" / "data" / "scenarios").glob("*.yaml"))


def test_a_demo_for_every_bundled_world():
    worlds = {load_scenario(p).world.name for p in SHIPPED}
    assert {"office.sdf", "street.sdf", "hall.sdf"} <= worlds
    assert (REPO / "radarays_ros" / "data" / "scenarios" / "office_demo.yaml") in SHIPPED


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_shipped_scenarios_load(path):
    """Valid files whose sensors build and whose every sweep fits the trajectory (not run: CI time)."""
    from radarays_ros.radar.config import resolve_radar_config
    from radarays_ros.sensors.units import LidarUnit, RadarUnit
    from lidar_ros import load_sensor

    scenario = load_scenario(path)
    assert scenario.world.is_file() and scenario.sensors
    assert scenario.trajectory.start_ns <= scenario.start_ns < scenario.end_ns <= scenario.trajectory.end_ns
    for spec in scenario.sensors:
        if spec.kind == "radar":
            resolve_radar_config(spec.config, spec.overrides)
            for key in spec.output:
                assert key in RadarUnit.output_params()
        else:
            load_sensor(spec.config, spec.overrides)
            for key in spec.output:
                assert key in LidarUnit.output_params()


def test_readme_main_job_runs(tmp_path):
    """The README's first command (scenarios/office_demo.yaml with --pictures): 2.5 s of a 4 Hz radar and a 10 Hz
    VLP-16 (organized as the velodyne driver: 16 rings wide), every frame in the bag at its rate, a picture per frame."""
    assert radarays_main(["run", str(REPO / "radarays_ros" / "data" / "scenarios" / "office_demo.yaml"), "--out", str(tmp_path / "demo.mcap"),
                          "--pictures", str(tmp_path / "pictures")]) == 0
    bag = read_bag(tmp_path / "demo.mcap")
    radar, velodyne = bag["/radar/image"], bag["/velodyne/points"]
    start = DEFAULT_BAG_START_NS  # the trajectory starts at 0; the bag at 2024-01-01 (never stamp 0)
    assert [stamp(m.header) for _, _, m in radar] == [start + k * 250_000_000 for k in range(10)]
    assert len(velodyne) == 25 and all(m.header.frame_id == "velodyne" and (m.width, m.height) == (16, 1800) for _, _, m in velodyne)
    assert len(list((tmp_path / "pictures").glob("*.png"))) == 35


def test_topics_follow_one_naming_rule():
    from radarays_ros.sensors.topics import sensor_topic

    assert sensor_topic("/radar", "radar/image") == "/radar/image"  # the doubled name of old bags
    assert sensor_topic("/front", "radar/image") == "/front/radar/image"
    assert sensor_topic("/velodyne", "points") == "/velodyne/points"
    assert sensor_topic("/robot/radar", "radar/points") == "/robot/radar/points"
    assert sensor_topic("", "radar/image") == "radar/image"  # a node: relative to its namespace


def test_pictures_never_leave_their_folder():
    from radarays_ros.scenario.pictures import safe_file_name

    for name in ("../../x", "/etc/passwd", "a/b", "..", "", "ok_name-1.2"):
        safe = safe_file_name(name)
        assert safe and "/" not in safe and safe not in (".", "..") and not safe.startswith(".")
    assert safe_file_name("ok_name-1.2") == "ok_name-1.2"


def test_odometry_drift_grows_with_the_square_root_of_distance():
    """Straight 100 m drive in 1000 steps, 400 seeds: lateral error std = sigma_t sqrt(D), heading error
    std = sigma_yaw sqrt(D) (the random-walk model of odometry.py), within the sampling error of 400 draws."""
    from radarays_ros.scenario.odometry import OdometrySpec, odometry_poses
    from radarays_ros.world.transforms import pose_to_matrix

    truth = np.array([pose_to_matrix(0.1 * k, 0, 0) for k in range(1001)])
    lateral = [odometry_poses(truth, OdometrySpec(translation_std=0.05, seed=s))[-1][1, 3] for s in range(400)]
    assert np.std(lateral) == pytest.approx(0.05 * 10.0, rel=0.15) and abs(np.mean(lateral)) < 0.1
    yaws = [(lambda m: math.atan2(m[1, 0], m[0, 0]))(odometry_poses(truth, OdometrySpec(yaw_std_deg=1.0, seed=s))[-1])
            for s in range(400)]
    assert np.std(yaws) == pytest.approx(math.radians(1.0) * 10.0, rel=0.15)
    assert np.array_equal(odometry_poses(truth, OdometrySpec()), truth)


def test_drifting_odometry_in_the_bag_keeps_map_to_base_exact(tmp_path):
    drift = {"drift": {"translation_std": 0.2, "yaw_std_deg": 5.0}, "seed": 3}
    sensors = {"lidar": {"type": "lidar", "config": "VLP-16", "set": {"noise.sigma": 0.0, "columns": 90}}}
    run_scenario(scenario_file(tmp_path, odometry=drift, sensors=sensors, duration=1.0), tmp_path / "a.mcap", quiet=True)
    run_scenario(scenario_file(tmp_path, odometry=drift, sensors=sensors, duration=1.0), tmp_path / "b.mcap", quiet=True)
    run_scenario(scenario_file(tmp_path, odometry={**drift, "seed": 4}, sensors=sensors, duration=1.0),
                 tmp_path / "c.mcap", quiet=True)
    a, b, c = (read_bag(tmp_path / f"{n}.mcap") for n in "abc")
    errors = []
    for log_ns, _, msg in a["/tf"]:
        map_odom, odom_base = msg.transforms
        world_base = matrix(map_odom.transform) @ matrix(odom_base.transform)
        assert world_base[0, 3] == pytest.approx(-2.0 + 2.0 * log_ns / 1e9, abs=1e-6) and abs(world_base[1, 3]) < 1e-6
        errors.append(np.linalg.norm(matrix(odom_base.transform)[:3, 3] - world_base[:3, 3]))
    assert errors[0] == 0 and max(errors) > 0.01  # the odometry drifts away from the truth
    odom_a = [(m.pose.pose.position.x, m.pose.pose.position.y) for _, _, m in a["/odom"]]
    assert odom_a == [(m.pose.pose.position.x, m.pose.pose.position.y) for _, _, m in b["/odom"]]  # same seed
    assert odom_a != [(m.pose.pose.position.x, m.pose.pose.position.y) for _, _, m in c["/odom"]]
    assert a["/odom"][-1][2].pose.covariance[0] == pytest.approx(0.2 ** 2 * 2.0, rel=0.01)  # 2 m driven


def test_cli_out_safety(tmp_path, capsys):
    path = scenario_file(tmp_path, duration=0.2)
    assert radarays_main(["run", str(path), "--out", str(tmp_path / "m.bag"), "--quiet"]) == 2
    assert "ROS 1 bag" in capsys.readouterr().err and not (tmp_path / "m.bag").exists()
    keep = tmp_path / "keep"
    keep.mkdir()
    (keep / "data.txt").write_text("mine")
    for extra in ([], ["--overwrite"]):
        assert radarays_main(["run", str(path), "--out", str(keep), "--quiet", *extra]) == 2
        assert (keep / "data.txt").read_text() == "mine"
        assert capsys.readouterr().err.count("\n") == 1
    assert radarays_main(["run", str(path), "--out", str(tmp_path / "bag"), "--quiet"]) == 0
    assert radarays_main(["run", str(path), "--out", str(tmp_path / "bag"), "--quiet"]) == 2
    assert radarays_main(["run", str(path), "--out", str(tmp_path / "bag"), "--quiet", "--overwrite"]) == 0


def test_sensor_name_with_slashes_writes_pictures_inside_the_folder(tmp_path):
    sensors = {"robot/front": {"type": "lidar", "config": "VLP-16", "set": {"columns": 90}}}
    summary = run_scenario(scenario_file(tmp_path, sensors=sensors, duration=0.2), tmp_path / "x.mcap",
                           tmp_path / "pictures", quiet=True)
    assert summary.pictures and all(p.parent == tmp_path / "pictures" for p in summary.pictures)
    assert "/robot/front/points" in read_bag(tmp_path / "x.mcap")


def test_run_pictures_are_the_labelled_figures(tmp_path, monkeypatch):
    """--pictures writes the labelled figures, one per frame: the radar in Cartesian with range rings
    labelled in metres, a colour bar with units and a title naming sensor and stamp; the lidar top view on
    a metric grid. Each picture has its figure's size and is not blank."""
    from PIL import Image

    from radarays_ros.io.lidar_files import TopViewFigure
    from radarays_ros.io.radar_image import RadarFigure

    labels = []
    radar_save, lidar_save = RadarFigure.save, TopViewFigure.save

    def radar_spy(self, img, path, *args, **kwargs):
        out = radar_save(self, img, path, *args, **kwargs)
        labels.append(("radar", self._title.get_text(), [t.get_text() for t in self._axes.texts],
                       self.figure.axes[-1].get_ylabel()))
        return out

    def lidar_spy(self, path, scan, *args, **kwargs):
        out = lidar_save(self, path, scan, *args, **kwargs)
        labels.append(("lidar", self._axes.get_title(), self._axes.get_xlabel(), self.figure.axes[-1].get_ylabel()))
        return out

    monkeypatch.setattr(RadarFigure, "save", radar_spy)
    monkeypatch.setattr(TopViewFigure, "save", lidar_spy)
    summary = run_scenario(scenario_file(tmp_path), tmp_path / "run.mcap", tmp_path / "pictures", quiet=True)
    radar = sorted((tmp_path / "pictures").glob("radar_*.png"))
    lidar = sorted((tmp_path / "pictures").glob("lidar_*.png"))
    assert len(radar) == 5 and len(lidar) == 5 and len(summary.pictures) == 10
    for path, size in [(p, (792, 682)) for p in radar] + [(p, (944, 800)) for p in lidar]:
        picture = Image.open(path)
        assert picture.size == size
        grey = np.asarray(picture.convert("L"))
        assert len(np.unique(grey)) > 30 and grey.std() > 10  # an image, labels and a colour bar: not blank
    radar_labels = [entry for entry in labels if entry[0] == "radar"]
    assert [entry[1] for entry in radar_labels] == [f"radar  -  t = {0.1 * k:.3f} s  (40 az x 300 bins)" for k in range(5)]
    assert all("5 m" in entry[2] and "10 m" in entry[2] for entry in radar_labels)  # rings labelled in metres
    assert all("8 bit" in entry[3] for entry in radar_labels)  # the colour bar says its units
    lidar_labels = [entry for entry in labels if entry[0] == "lidar"]
    assert len(lidar_labels) == 5 and all(entry[1].startswith("VLP-16  stamp ") and "grid" in entry[2]
                                          and entry[3] == "height z (m)" for entry in lidar_labels)


def test_bag_time_moves_every_stamp_and_no_data(tmp_path):
    """bag_time shifts stamps and log times of every message (header stamps, /clock, /tf, livox's absolute
    per-point timestamps) by one offset and changes no other byte; the default never stamps 0 (tf2 reads it
    as "latest", a /clock at 0 as "not started"); a trajectory with absolute times keeps them."""
    sensors = {"radar": {"type": "radar", "config": "radarays_default", "set": RADAR_SET, "max_frames": 2},
               "lidar": {"type": "lidar", "config": "VLP-16", "set": {"noise.sigma": 0.0}, "max_frames": 2},
               "livox": {"type": "lidar", "config": "Mid-360", "set": {"noise.sigma": 0.0}, "max_frames": 1}}
    bags = {}
    for name, bag_time in (("trajectory", "trajectory"), ("auto", "auto"), ("given", 1.7e9 + 0.25)):
        run_scenario(scenario_file(tmp_path, sensors=sensors, duration=0.3, bag_time=bag_time),
                     tmp_path / f"{name}.mcap", quiet=True)
        bags[name] = read_bag(tmp_path / f"{name}.mcap")
    shifts = {"auto": DEFAULT_BAG_START_NS, "given": 1_700_000_000_250_000_000}
    base = bags["trajectory"]
    assert stamp(base["/radar/image"][0][2].header) == 0  # what the bag_time default avoids
    for name, shift in shifts.items():
        bag = bags[name]
        assert set(bag) == set(base)
        for topic, messages_ in base.items():
            assert [t + shift for t, _, _ in messages_] == [t for t, _, _ in bag[topic]], topic
        for (_, _, a), (_, _, b) in zip(base["/clock"], bag["/clock"]):
            assert b.clock.sec * 10**9 + b.clock.nanosec == a.clock.sec * 10**9 + a.clock.nanosec + shift
        for (_, _, a), (_, _, b) in zip(base["/tf"], bag["/tf"]):
            assert [stamp(t.header) - shift for t in b.transforms] == [stamp(t.header) for t in a.transforms]
        assert stamp(bag["/tf_static"][0][2].transforms[0].header) == shift
        for topic in ("/radar/image", "/radar/points", "/lidar/points", "/odom"):
            for (_, _, a), (_, _, b) in zip(base[topic], bag[topic]):
                assert stamp(b.header) == stamp(a.header) + shift, topic
                if hasattr(a, "data"):  # velodyne `time` is relative to the stamp: the same bytes
                    assert bytes(a.data) == bytes(b.data), topic
        (_, _, a), = base["/livox/points"]
        (_, _, b), = bag["/livox/points"]
        assert stamp(b.header) == stamp(a.header) + shift
        offsets = {f.name: f.offset for f in a.fields}
        dtype = np.dtype({"names": ["x", "timestamp"], "formats": ["<f4", "<f8"],
                          "offsets": [offsets["x"], offsets["timestamp"]], "itemsize": a.point_step})
        pa, pb = (np.frombuffer(bytes(m.data), dtype) for m in (a, b))
        assert np.array_equal(pa["x"], pb["x"], equal_nan=True)
        # float64 ns as the driver writes them: exact to a few hundred ns at 1.7e18
        np.testing.assert_allclose(pb["timestamp"] - shift, pa["timestamp"], atol=512)
        assert pa["timestamp"].min() >= 0 and pb["timestamp"].min() >= shift


def test_bag_time_keeps_absolute_trajectory_times_and_refuses_bad_values(tmp_path):
    from radarays_ros.scenario.config import bag_start_ns

    (tmp_path / "path.csv").write_text("t,x,y,z,roll,pitch,yaw\n1700000000,0,0,0,0,0,0\n1700000010,1,0,0,0,0,0\n")
    scenario = load_scenario(scenario_file(tmp_path, trajectory={"csv": "path.csv"}, bag_time="auto"))
    assert scenario.stamp_offset_ns() == 0  # already absolute (a recorded trajectory): kept
    assert bag_start_ns("now", 0, now_ns=123) == 123 and bag_start_ns("auto", 0) == DEFAULT_BAG_START_NS
    for bad, message in ((0, "bag_time = 0: must be > 0"), ("later", "bag_time = 'later': expected auto, now, trajectory"),
                         (5e9, "bag_time = 5000000000.0: expected a finite number of at most 4e")):
        with pytest.raises(ConfigError, match=message):
            load_scenario(scenario_file(tmp_path, bag_time=bad))


def test_driver_names_table_follows_the_drivers():
    """The default names of velodyne_pointcloud, livox_ros_driver2 and ouster-ros (sensors/topics.py)."""
    from radarays_ros.sensors.topics import driver_names

    assert driver_names("velodyne") == ({"points": "velodyne_points"}, "velodyne")
    assert driver_names("livox")[0] == {"points": "livox/lidar", "imu": "livox/imu"}
    assert driver_names("ouster")[0]["imu"] == "ouster/imu" and driver_names("ouster")[1] == "os_lidar"
    assert driver_names("gazebo") is None


@pytest.mark.parametrize("mode", ["sweep", "frame"])
def test_a_sweeping_lidar_sees_a_scenario_mover_where_it_is_at_each_firing(tmp_path, mode):
    """The crate drives from (5, -6) along +y at 10 m/s, given its twist by the runner. Its face (x = 4.5) in each
    cloud, decoded by rosbags: the middle of its points is where the crate's centre is when the sweep sees it (the
    points' own `time` after the stamp) with timing.moving_entities sweep; with frame, where it was at the frame's
    start (the first firing), 6-15 cm behind (the sweep reaches its bearing, -50 to -20 degrees, 6-14 ms later)."""
    path = scenario_file(tmp_path, entities=[{"name": "crate", "trajectory": {
        "waypoints": [[5.0, -6.0, 0.5], [5.0, 6.0, 0.5]], "speed": 10.0}}],
        trajectory={"waypoints": [[0.0, 0.0], [0.001, 0.0]], "speed": 0.0001},
        sensors={"lidar": {"type": "lidar", "config": "VLP-16", "mount": [0.0, 0, 1.5, 0, 0, 0], "frame_id": "velodyne",
                           "set": {"noise.sigma": 0.0, "timing.moving_entities": mode}}})
    run_scenario(path, tmp_path / "run.mcap", quiet=True)
    dtype = np.dtype({"names": ["x", "y", "z", "time"], "formats": ["<f4"] * 4, "offsets": [0, 4, 8, 18],
                      "itemsize": 22})
    for _, _, m in read_bag(tmp_path / "run.mcap")["/lidar/points"]:
        pts = np.frombuffer(np.asarray(m.data, np.uint8).tobytes(), dtype)
        seen_s = stamp(m.header) * 1e-9 + pts["time"].astype(np.float64)
        centre = -6.0 + 10.0 * seen_s  # the crate's centre y when each point's laser fired
        face = (np.abs(pts["x"] - 4.5) < 0.05) & (pts["z"] > -1.45) & (np.abs(pts["y"] - centre) < 0.7)  # not floor, walls
        assert face.sum() > 50
        middle = (pts["y"][face].min() + pts["y"][face].max()) / 2
        seen = seen_s[face].mean() if mode == "sweep" else seen_s[np.isfinite(pts["x"])].min()
        assert middle == pytest.approx(-6.0 + 10.0 * seen, abs=0.02)
        if mode == "frame":  # not where the crate was when its points were taken
            assert abs(middle - (-6.0 + 10.0 * seen_s[face].mean())) > 0.05
