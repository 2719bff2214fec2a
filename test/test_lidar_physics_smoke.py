"""The interface the lidar sensors use: names exist and a glass pane in front of a wall is looked through."""
import numpy as np
import trimesh

from lidar_ros.physics import LidarMaterials, NoiseConfig, Returns, SurfaceConfig, SurfaceModel, trace_lidar
from radarays_ros.tracing import make_backend
from radarays_ros.world.materials import MaterialLibrary
from radarays_ros.world.mesh import TriMesh
from radarays_ros.world.scene import Scene


def test_glass_then_wall_through_the_public_interface():
    scene = Scene(MaterialLibrary.load())
    for name, x, material in (("pane", 5.0, "glass"), ("wall", 10.0, "concrete")):
        box = trimesh.creation.box(extents=[0.02, 10, 10])
        pose = np.eye(4)
        pose[0, 3] = x
        scene.add_entity(name, TriMesh(box.vertices, box.faces), pose, material=material)
    backend = make_backend("embree", scene)
    hits = trace_lidar(backend, np.zeros((2, 3)), np.array([[1.0, 0, 0], [-1.0, 0, 0]]),
                       LidarMaterials.from_library(scene.materials))
    assert np.isclose(hits.range[0], 9.99, atol=1e-4) and np.isinf(hits.range[1])
    returns = SurfaceModel(SurfaceConfig(), NoiseConfig(), 1, 0).apply(hits, np.zeros(2, int), np.random.default_rng(0))
    assert isinstance(returns, Returns)
    assert returns.hit.tolist() == [True, False] and np.isnan(returns.range[1])
