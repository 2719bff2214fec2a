"""`frames: device` in scenarios (and the sensor units a node builds): whole radar and lidar frames in Warp
kernels on Warp's CPU device, against the same scenario's host frames on the same Warp backend (the same first
hits), read back from the bags: radar pixels within 1 count (float32 device sums against float64 host sums may
round a value at .5 either way; test_device_support.py bounds the values), the same lidar hits, points within
32 float32 ULP of the cloud's extent (the world ray rotated in another float32 order)."""
import numpy as np
import pytest

from support.warp import require_warp
from support.warp_scenario import clouds, images, scenario

require_warp()

from radarays_ros.errors import ConfigError  # noqa: E402
from radarays_ros.resources import shipped  # noqa: E402
from radarays_ros.scenario.config import load_scenario  # noqa: E402
from radarays_ros.scenario.runner import run_scenario  # noqa: E402
from radarays_ros.sensors.params import FRAMES_PARAM  # noqa: E402
from radarays_ros.sensors.units import make_unit  # noqa: E402
from radarays_ros.tracing import make_backend  # noqa: E402
from radarays_ros.world.loader import load_world  # noqa: E402


def test_scenario_with_device_frames_matches_the_host_frames_bag(tmp_path):
    device_bag, host_bag = tmp_path / "device.mcap", tmp_path / "host.mcap"
    from radarays_ros.cli import main

    assert main(["run", scenario(tmp_path, "device"), "--out", str(device_bag), "--backend", "warp", "--device", "cpu",
                 "--quiet"]) == 0
    run_scenario(scenario(tmp_path, "host"), host_bag, quiet=True, backend="warp", backend_options={"device": "cpu"})
    got, want = images(device_bag), images(host_bag)
    assert len(got) == len(want) >= 2
    for a, b in zip(got, want):
        assert a.max() > 0
        assert np.abs(a - b).max() <= 1
    for a, b in zip(clouds(device_bag), clouds(host_bag)):
        hit_a, hit_b = np.isfinite(a[:, 0]), np.isfinite(b[:, 0])
        assert hit_a.mean() > 0.3
        np.testing.assert_array_equal(hit_a, hit_b)
        extent = np.abs(b[hit_b]).max()
        assert np.abs(a[hit_a] - b[hit_b]).max() <= 32 * np.spacing(np.float32(extent))


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
