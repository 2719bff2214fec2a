"""Lidar physics: what happens where a lidar ray meets a surface, and what the sensor reports.

    materials.py     LidarMaterials: the `lidar:` part of each material (LiMOX classes, reflectivity)
    reflectivity.py  ρ(θ): Lambertian, angle table, constant (LiMOX §4.1); reflectivity.reflectivity()
    interaction.py   trace_lidar: transparent / absorbent / mirror / returning surfaces (BlenSor §3.5)
    foliage.py       tree crowns as leaf volumes: Beer–Lambert leaf depths (G·LAD); leaf_angles.py, leaf_sharing.py
    detection.py     range–reflectivity detection limit r_L(ρ) (LiMOX §4.2, BlenSor §3.2)
    noise.py         per-laser bias, per-ray and relative Gaussian, dust, quantisation, jitter
    intensity.py     reflectivity, Velodyne/Ouster calibrated reflectivity, Ouster signal and ambient
    config.py        SurfaceConfig, NoiseConfig (frozen, validated)
    model.py         SurfaceModel: hits -> Returns (detection, noise, intensity)

Typical use per scan::

    mats = LidarMaterials.from_library(scene.materials)           # once
    model = SurfaceModel(SurfaceConfig.from_dict(...), NoiseConfig.from_dict(...), n_lasers, seed)
    dirs = jitter_directions(dirs, model.noise.angular_sigma, rng)  # before tracing
    hits = trace_lidar(backend, origins, dirs, mats, tmin=min_range, tmax=max_range)
    ret = model.apply(hits, laser_index, rng)                       # xyz = origin + ret.range * dir
"""
from .config import DETECTION_MODELS, NoiseConfig, SurfaceConfig

# the models pull in compiled.py (numba) and the tracing layer: loaded on first use, so reading a sensor
# file (lidar_ros.config, `radarays --help`) does not start the compiler
_LAZY = {"DetectionLimit": "detection", "LidarHits": "interaction", "trace_lidar": "interaction",
         "CLASS_NAMES": "materials", "LidarMaterials": "materials", "Returns": "model", "SurfaceModel": "model",
         "jitter_directions": "noise"}  # reflectivity(): lidar_ros.physics.reflectivity.reflectivity (the module's name)


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "CLASS_NAMES",
    "DETECTION_MODELS",
    "DetectionLimit",
    "LidarHits",
    "LidarMaterials",
    "NoiseConfig",
    "Returns",
    "SurfaceConfig",
    "SurfaceModel",
    "jitter_directions",
    "trace_lidar",
]
