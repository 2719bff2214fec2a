"""lidar_ros: lidar models and presets on top of radarays_ros' world and tracing layers (io sits above).

    config = load_sensor("VLP-16", {"rate_hz": 20})          # or a sensor YAML / Ouster JSON / Velodyne YAML
    sim = LidarSimulator(config, scene, backend, seed=0)     # sink=FrameCloud.of: write the driver cloud in place
    scan = sim.simulate(pose_or_trajectory, t0_ns=0)         # LidarScan: [rows, cols] arrays
    scan.release()                                           # done with it: its cloud buffer may be reused

Effects (beam footprint and echoes, detection curve, photons, ambient, weather, glass, ToF) are sections of
the sensor file, off by default (lidar_ros/physics/effects_config.py); load_sensor(..., realistic=True)
turns a moderate set on.
"""
from .config import LidarConfig, list_presets, load_sensor

__all__ = ["LidarConfig", "LidarScan", "LidarSimulator", "list_presets", "load_sensor"]


def __getattr__(name):  # the simulator pulls in the tracing layer; import it on first use
    if name in ("LidarSimulator", "LidarScan"):
        from . import scan, simulator

        return {"LidarSimulator": simulator.LidarSimulator, "LidarScan": scan.LidarScan}[name]
    raise AttributeError(name)
