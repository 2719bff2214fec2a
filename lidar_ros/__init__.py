"""lidar_ros: lidar models and presets on top of radarays_ros' world, tracing and io layers.

    config = load_sensor("VLP-16", {"rate_hz": 20})          # or a sensor YAML / Ouster JSON / Velodyne YAML
    sim = LidarSimulator(config, scene, backend, seed=0)
    scan = sim.simulate(pose_or_trajectory, t0_ns=0)         # LidarScan: [rows, cols] arrays
"""
from .config import LidarConfig, list_presets, load_sensor

__all__ = ["LidarConfig", "LidarScan", "LidarSimulator", "list_presets", "load_sensor"]


def __getattr__(name):  # the simulator pulls in the tracing layer; import it on first use
    if name in ("LidarSimulator", "LidarScan"):
        from . import scan, simulator

        return {"LidarSimulator": simulator.LidarSimulator, "LidarScan": scan.LidarScan}[name]
    raise AttributeError(name)
