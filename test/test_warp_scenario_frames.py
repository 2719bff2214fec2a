"""`frames: device` in scenarios (and the sensor units a node builds): whole radar and lidar frames in Warp
kernels on Warp's CPU device, against the same scenario on Embree's host path, read back from the bags."""
import numpy as np
import pytest
import yaml
from rosbags.highlevel import AnyReader
from rosbags.typesys import Stores, get_typestore

from test_warp_support import require_warp
from test_warp_sensors import column_correlations

require_warp()

from radarays_ros.errors import ConfigError  # noqa: E402
from radarays_ros.resources import shipped  # noqa: E402
from radarays_ros.scenario.config import load_scenario  # noqa: E402
from radarays_ros.scenario.runner import run_scenario  # noqa: E402
from radarays_ros.sensors.units import FRAMES_PARAM, make_unit  # noqa: E402
from radarays_ros.tracing import make_backend  # noqa: E402
from radarays_ros.world.loader import load_world  # noqa: E402

TYPESTORE = get_typestore(Stores.ROS2_JAZZY)


def scenario(tmp_path, frames: str, **sensor_changes) -> str:
    data = {
        "world": str(shipped("world", "office")),
        "duration": 0.5,
        "trajectory": {"waypoints": [[2.0, 0.0], [6.0, 0.0]], "speed": 2.0},
        "sensors": {
            "radar": {"type": "radar", "config": str(shipped("example", "radarays_compat")),
                      "set": {"azimuth.count": 60}, "mount": [0, 0, 1.0, 0, 0, 0.2], "frames": frames, "max_frames": 3},
            "lidar": {"type": "lidar", "config": "VLP-16", "set": {"noise.sigma": 0.0, "noise.resolution": 0.0},
                      "mount": [0, 0, 1.2, 0, 0, 0], "frames": frames, "max_frames": 3},
        },
    }
    for name, changes in sensor_changes.items():
        data["sensors"][name].update(changes)
    path = tmp_path / f"{frames}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return str(path)


def topic_messages(path, topic: str) -> list:
    """The bag's messages on `topic`, decoded by rosbags (not our writer's code)."""
    with AnyReader([path], default_typestore=TYPESTORE) as reader:
        conns = [c for c in reader.connections if c.topic == topic]
        return [reader.deserialize(raw, conn.msgtype) for conn, _, raw in reader.messages(connections=conns)]


def images(path) -> list[np.ndarray]:
    """The bag's radar images as arrays [azimuth, range] (range_rows layout: rows are range bins)."""
    return [np.frombuffer(bytes(m.data), np.uint8).reshape(m.height, m.width).T.astype(np.float64)
            for m in topic_messages(path, "/radar/image")]


def clouds(path) -> list[np.ndarray]:
    """The bag's lidar points (N, 3) float32, read through each cloud's own field offsets."""
    out = []
    for m in topic_messages(path, "/lidar/points"):
        offsets = {f.name: f.offset for f in m.fields}
        rows = np.frombuffer(bytes(m.data), np.uint8).reshape(-1, m.point_step)
        out.append(np.stack([rows[:, offsets[k]:offsets[k] + 4].copy().view(np.float32)[:, 0] for k in "xyz"], 1))
    return out


def test_scenario_with_device_frames_matches_the_embree_bag(tmp_path):
    device_bag, host_bag = tmp_path / "device.mcap", tmp_path / "host.mcap"
    from radarays_ros.cli import main

    assert main(["run", scenario(tmp_path, "device"), "--out", str(device_bag), "--backend", "warp", "--device", "cpu",
                 "--quiet"]) == 0
    run_scenario(scenario(tmp_path, "host"), host_bag, quiet=True, backend="embree")
    got, want = images(device_bag), images(host_bag)
    assert len(got) == len(want) >= 2
    for a, b in zip(got, want):
        assert a.max() > 0
        assert np.median(column_correlations(a, b)) >= 0.99
    for a, b in zip(clouds(device_bag), clouds(host_bag)):
        hit_a, hit_b = np.isfinite(a[:, 0]), np.isfinite(b[:, 0])
        assert hit_a.mean() > 0.3
        assert (hit_a != hit_b).mean() < 1e-3  # ties of coincident faces (test_warp_lidar_frames.py)
        both = hit_a & hit_b
        assert np.mean(np.abs(a[both] - b[both]).max(axis=1) < 1e-3) > 0.999


def test_frames_key_is_checked(tmp_path):
    with pytest.raises(ConfigError, match=r"sensors.radar.frames = 'gpu': allowed host .* or device"):
        load_scenario(scenario(tmp_path, "gpu"))
    assert load_scenario(scenario(tmp_path, "device")).sensors[0].frames == "device"
    with pytest.raises(ConfigError, match=r"sensors.radar: frames 'device' needs the warp backend"):
        run_scenario(scenario(tmp_path, "device"), tmp_path / "x.mcap", quiet=True, backend="embree")
    with pytest.raises(ConfigError, match="noise.ambient = 'perlin'"):  # a host-only radar feature, named
        run_scenario(scenario(tmp_path, "device", radar={"config": "radarays_default"}), tmp_path / "y.mcap",
                     quiet=True, backend="warp", backend_options={"device": "cpu"})


def test_units_take_the_frames_parameter():
    from lidar_ros.warp_frame import WarpLidarSimulator
    from radarays_ros.radar.warp_frame import WarpRadarSimulator

    assert FRAMES_PARAM.value == "host" and FRAMES_PARAM.choices == ("host", "device")
    scene = load_world("hall")
    backend = make_backend("warp", scene, device="cpu")
    radar = make_unit("radar", "r", scene, backend, config=str(shipped("example", "radarays_compat")), frames="device")
    lidar = make_unit("lidar", "l", scene, backend, config="VLP-16", frames="device")
    assert isinstance(radar.simulator, WarpRadarSimulator) and isinstance(lidar.simulator, WarpLidarSimulator)
    lidar.reconfigure(lidar.with_overrides({"rate_hz": 20}))
    assert isinstance(lidar.simulator, WarpLidarSimulator)
    with pytest.raises(ConfigError, match=r"r: frames = 'gpu': .*allowed one of host, device"):
        make_unit("radar", "r", scene, backend, frames="gpu")
    with pytest.raises(ConfigError, match="needs the warp backend"):
        make_unit("lidar", "l", scene, make_backend("embree", scene), frames="device")
