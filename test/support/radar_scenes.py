"""Small analytic scenes for the radar tests (imported by test_radar_*.py; holds no tests itself)."""
from __future__ import annotations

import numpy as np
import trimesh

from radarays_ros.radar import RadarConfig
from radarays_ros.world.materials import MaterialLibrary
from radarays_ros.world.mesh import TriMesh
from radarays_ros.world.scene import Scene
from radarays_ros.world.transforms import pose_to_matrix

MATERIALS = {
    "metal": {"radar": {"velocity": 0.0, "brdf": "radarays", "A": 1.0, "B": 1.0, "C": 2000}},
    "flat_metal": {"radar": {"velocity": 0.0, "brdf": "radarays", "A": 1.0, "B": 0.0, "C": 1}},
    "glass": {"radar": {"velocity": 0.05, "brdf": "radarays", "A": 1.0, "B": 0.0, "C": 1}},
    "slow": {"radar": {"velocity": 0.1, "brdf": "radarays", "A": 1.0, "B": 0.0, "C": 1}},
    "wall_stone": {"radar": {"velocity": 0.001, "brdf": "radarays", "A": 0.6, "B": 0.3, "C": 30}},
    "diffuse_half": {"radar": {"velocity": 0.0, "brdf": "radarays", "A": 0.5, "B": 0.0, "C": 1}},
    "ghost": {"radar": {"velocity": 0.3, "brdf": "radarays", "A": 1.0, "B": 1.0, "C": 1}},
}


def library(extra: dict | None = None) -> MaterialLibrary:
    return MaterialLibrary.from_dict({"materials": {**MATERIALS, **(extra or {})}, "default": "metal"})


def box(size, centre=(0, 0, 0), yaw=0.0) -> tuple[TriMesh, np.ndarray]:
    b = trimesh.creation.box(size)
    return TriMesh(b.vertices, b.faces), pose_to_matrix(*centre, 0, 0, yaw)


def scene_with(*items, lib: MaterialLibrary | None = None) -> Scene:
    """items: (name, size, centre, material[, yaw])."""
    scene = Scene(lib or library())
    for item in items:
        name, size, centre, material = item[:4]
        yaw = item[4] if len(item) > 4 else 0.0
        mesh, pose = box(size, centre, yaw)
        scene.add_entity(name, mesh, pose, material=material)
    return scene


def wall_x(distance: float, material: str = "metal", thickness: float = 0.2, name: str = "wall", span: float = 40.0):
    """A wall whose near face is the plane x = distance (facing the sensor at the origin)."""
    sign = 1.0 if distance > 0 else -1.0
    return (name, (thickness, span, span), (distance + sign * thickness / 2, 0, 0), material)


def config(**sections) -> RadarConfig:
    """A small, fast config: 8 azimuths, 0.05 m x 200 bins, narrow beam, no noise; overrides by section."""
    base = {
        "azimuth": {"count": 8, "step_deg": -45.0},
        "range": {"resolution": 0.05, "bins": 200},
        "beam": {"width_deg": 0.5, "samples": 20},
        "tracing": {"passes": 1},
        "kernel": {"type": "none"},
        "noise": {"ambient": "none"},
        "returns": {"keep": True},
        "seed": 7,
    }
    for name, values in sections.items():
        if name == "seed":
            base["seed"] = values
        else:
            base[name] = {**base.get(name, {}), **values}
    return RadarConfig.from_dict(base, origin="test")
