"""Small physical radar configs and scenes shared by the radar realism and receiver-chain tests."""
from __future__ import annotations

import math

import numpy as np

from radarays_ros.radar import RadarConfig
from radarays_ros.world.materials import MaterialLibrary
from radarays_ros.world.mesh import TriMesh
from radarays_ros.world.scene import Scene
from support.radar_scenes import box

EYE = np.eye(4)
NAMES = ("asphalt", "concrete", "metal", "vegetation", "glass", "brick")  # brick: rough (1 mm), no mirror part, no volume
LIB = MaterialLibrary.from_dict({"materials": {n: {"radar": {"velocity": 0.001, "brdf": "radarays", "A": 1.0, "B": 0.0, "C": 1}}
                                               for n in NAMES}, "default": "concrete"})
GHOST_EDGE = 0.15  # m: the edge of the corner of the ghost tests (trihedral_facing)
QUIET = {"noise_dbm": -150.0, "stc_range_m": 0.0, "leakage_dbm": None}


def physical(**sections) -> RadarConfig:
    """A small physical config: 16 azimuths, 0.02 m x 1500 bins, quiet receiver unless overridden."""
    base = {
        "sensor": {"model": "physical"},
        "azimuth": {"count": 16, "step_deg": -0.9},
        "range": {"resolution": 0.02, "bins": 1500},
        "antenna": {"samples_azimuth": 8, "samples_elevation": 16},
        "fmcw": {"bandwidth_hz": 1.0e9},
        "receiver": dict(QUIET),
        "scatter": {"specular_bounces": 0},
        "seed": 3,
    }
    for name, values in sections.items():
        base[name] = values if name == "seed" else {**base.get(name, {}), **values}
    return RadarConfig.from_dict(base, origin="test")


def scene(*items) -> Scene:
    """items: (mesh, pose, material)."""
    s = Scene(LIB)
    for i, (mesh, pose, material) in enumerate(items):
        s.add_entity(f"e{i}", mesh, pose, material=material)
    return s


def ground(material="asphalt", size=80.0):
    mesh, pose = box((size, size, 0.2), (0, 0, -1.6))  # top face at z = -1.5 (sensor 1.5 m above)
    return mesh, pose, material


def plate(distance, size, yaw=0.0, material="metal"):
    mesh, pose = box((0.01, size, size), (distance + 0.005, 0, 0), yaw)
    return mesh, pose, material


def trihedral(apex_distance: float, edge: float, material="metal"):
    """A triangular trihedral whose symmetry axis points at the sensor (origin) from (apex_distance, 0, 0)."""
    v = np.array([[0, 0, 0], [edge, 0, 0], [0, edge, 0], [0, 0, edge]], float)
    faces = np.array([[0, 1, 2], [0, 2, 3], [0, 3, 1]])
    axis = np.ones(3) / math.sqrt(3.0)
    target = np.array([-1.0, 0, 0])
    k = np.cross(axis, target)
    s, c = np.linalg.norm(k), float(axis @ target)
    kx = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]]) / s
    rot = np.eye(3) + s * kx + (1 - c) * kx @ kx
    pose = np.eye(4)
    pose[:3, :3] = rot
    pose[:3, 3] = (apex_distance, 0, 0)
    return TriMesh(v, faces), pose, material


def stage_inputs(cfg, world, pose, monkeypatch):
    """(clutter, glints, simulator) of one physical frame at `pose`: what the sensor stage was handed."""
    from radarays_ros.radar import RadarSimulator
    from radarays_ros.radar.physical import simulate as physical_simulate

    seen = {}
    run_stage = physical_simulate.run_stage

    def capture(clutter, glints, *args, **kwargs):
        seen["clutter"], seen["glints"] = clutter, glints
        return run_stage(clutter, glints, *args, **kwargs)

    monkeypatch.setattr(physical_simulate, "run_stage", capture)
    sim = RadarSimulator(cfg, world)
    sim.simulate(pose)
    return seen["clutter"], seen["glints"], sim


def trihedral_facing(apex, towards, edge=GHOST_EDGE, material="metal"):
    """A triangular trihedral at apex whose symmetry axis points at `towards`."""
    v = np.array([[0, 0, 0], [edge, 0, 0], [0, edge, 0], [0, 0, edge]], float)
    faces = np.array([[0, 1, 2], [0, 2, 3], [0, 3, 1]])
    axis = np.ones(3) / math.sqrt(3.0)
    target = (np.asarray(towards, float) - apex) / np.linalg.norm(np.asarray(towards, float) - apex)
    k = np.cross(axis, target)
    s, c = np.linalg.norm(k), float(axis @ target)
    kx = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]]) / s
    pose = np.eye(4)
    pose[:3, :3] = np.eye(3) + s * kx + (1 - c) * kx @ kx
    pose[:3, 3] = apex
    return TriMesh(v, faces), pose, material
