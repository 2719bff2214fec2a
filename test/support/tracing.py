"""Test plumbing shared by the world tests: trace a few rays through a scene with the real backend."""
import numpy as np
import trimesh

from radarays_ros.tracing import make_backend
from radarays_ros.world.mesh import TriMesh
from radarays_ros.world.scene import Scene


def cast(scene, origins, directions):
    """First hits of the given rays (any array-likes, one ray or many) on a fresh Embree backend."""
    backend = make_backend("embree", scene)
    try:
        return backend.trace(np.atleast_2d(np.asarray(origins, float)), np.atleast_2d(np.asarray(directions, float)))
    finally:
        backend.close()


def sphere_rays(n: int, seed: int, spread: float):
    """A sphere of radius 3 in a scene, and n unit float32 rays from origins uniform in [-spread, spread]^3
    (spread < 3: every ray starts inside and hits; larger: some start outside and miss)."""
    scene = Scene()
    sphere = trimesh.creation.icosphere(subdivisions=4, radius=3.0)
    scene.add_entity("s", TriMesh(sphere.vertices, sphere.faces))
    rng = np.random.default_rng(seed)
    d = rng.normal(size=(n, 3))
    d = (d / np.linalg.norm(d, axis=1, keepdims=True)).astype(np.float32)
    o = rng.uniform(-spread, spread, size=(n, 3)).astype(np.float32)
    return scene, o, d
