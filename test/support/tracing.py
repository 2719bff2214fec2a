"""Test plumbing shared by the world tests: trace a few rays through a scene with the real backend."""
import numpy as np

from radarays_ros.tracing import make_backend


def cast(scene, origins, directions):
    """First hits of the given rays (any array-likes, one ray or many) on a fresh Embree backend."""
    backend = make_backend("embree", scene)
    try:
        return backend.trace(np.atleast_2d(np.asarray(origins, float)), np.atleast_2d(np.asarray(directions, float)))
    finally:
        backend.close()
