"""`radarays radar|lidar --out X.mcap` hold the bytes a node publishes: both come from the sensor units of
radarays_ros.sensors (a node sends `to_cdr(msg)` = TYPESTORE.serialize_cdr, the bag stores the same)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import trimesh

from radarays_ros.cli import main
from radarays_ros.io.messages import TYPESTORE
from radarays_ros.radar.config import resolve_radar_config
from radarays_ros.sensors.topics import sensor_topic
from radarays_ros.sensors.units import LidarUnit, RadarUnit
from radarays_ros.tracing import make_backend
from radarays_ros.world.loader import load_world
from radarays_ros.world.transforms import pose_to_matrix

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "radarays_ros" / "data" / "examples"
T0_NS = 2_000_000_000


@pytest.fixture(scope="module")
def room(tmp_path_factory) -> Path:
    """A closed 20 m x 12 m room with a pillar: every ray hits something, at many ranges."""
    walls = trimesh.creation.box([20.0, 12.0, 6.0])
    walls.invert()  # normals inward
    pillar = trimesh.creation.box([0.6, 0.6, 6.0])
    pillar.apply_translation([3.0, 1.0, 0.0])
    path = tmp_path_factory.mktemp("world") / "room.stl"
    trimesh.util.concatenate([walls, pillar]).export(path)
    return path


def bag_messages(path: Path) -> dict[str, list[bytes]]:
    """{topic: [CDR bytes, in log order]} read with the mcap reader (no rosbags on this side)."""
    from mcap.reader import make_reader

    out: dict[str, list[bytes]] = {}
    with open(path, "rb") as f:
        for _, channel, message in make_reader(f).iter_messages(log_time_order=True):
            out.setdefault(channel.topic, []).append(bytes(message.data))
    return out


def cdr(msg) -> bytes:
    return bytes(TYPESTORE.serialize_cdr(msg, msg.__msgtype__))


def test_radar_mcap_holds_the_messages_of_the_radar_unit(tmp_path, room):
    out = tmp_path / "radar.mcap"
    settings = ["beam.samples=8", "azimuth.count=64", "seed=11"]
    assert main(["radar", str(room), "--pose", "0.5 -1 1 0 0 0.3", "--t-ns", str(T0_NS),
                 "--config", str(EXAMPLES / "radarays_compat.yaml"), "--layout", "azimuth_rows",
                 "--encoding", "32FC1", "--frame-id", "nav", "--out", str(out),
                 *[w for s in settings for w in ("--set", s)]]) == 0

    scene = load_world(str(room))
    config = resolve_radar_config(EXAMPLES / "radarays_compat.yaml", dict(s.split("=") for s in settings))
    unit = RadarUnit("", scene, make_backend("embree", scene), config=config, frame_id="nav",
                     output={"image_layout": "azimuth_rows", "image_encoding": "32FC1"})
    result = unit.simulate(pose_to_matrix(0.5, -1.0, 1.0, 0.0, 0.0, 0.3), T0_NS)
    expected = {"/" + sensor_topic("", rel): [cdr(m)] for rel, m in unit.messages(result, T0_NS).items()}

    written = bag_messages(out)
    assert set(expected) == {"/radar/image", "/radar/points"}
    assert {t: written[t] for t in expected} == expected
    assert np.frombuffer(expected["/radar/image"][0], np.uint8).any()  # a real frame, not an empty one


@pytest.mark.parametrize("sensor, extra", [
    ("VLP-16", ["--ground-truth", "--seed", "5"]),  # noise drawn from the seed; ground-truth fields in the cloud
    ("LMS1xx", ["--seed", "9"]),  # a 2D sensor: /points and /scan
])
def test_lidar_mcap_holds_the_messages_of_the_lidar_unit(tmp_path, room, sensor, extra):
    out = tmp_path / "lidar.mcap"
    args = ["lidar", str(room), "--sensor", sensor, "--pose", "-1 0.5 1.2 0 0 0.4", "--t0", "2", "--scans", "2",
            "--out", str(out), *extra]
    assert main(args) == 0

    scene = load_world(str(room))
    seed = int(extra[extra.index("--seed") + 1])
    truth = ["clean_range", "entity", "material", "normal", "incidence_rad"] if "--ground-truth" in extra else []
    unit = LidarUnit("", scene, make_backend("embree", scene), config=sensor, seed=seed,
                     output={"ground_truth": truth})
    pose = pose_to_matrix(-1.0, 0.5, 1.2, 0.0, 0.0, 0.4)
    expected: dict[str, list[bytes]] = {}
    for k in range(2):  # what a node with a fixed pose publishes for the sweeps starting at 2 s and 2 s + period
        t0 = T0_NS + k * unit.period_ns
        for rel, msg in unit.messages(unit.simulate(pose, t0), t0).items():
            expected.setdefault("/" + sensor_topic("", rel), []).append(cdr(msg))

    written = bag_messages(out)
    assert set(expected) == set(written) - {"/tf_static"}
    assert written == {**expected, "/tf_static": written["/tf_static"]}
    assert written["/points"][0] != written["/points"][1]  # two different sweeps (noise and time differ)
