"""The tracing interface's round trips: several hit attributes resolved in one call, the span and the
attribute names checked once in `Backend.trace_rays` before a backend's `_trace`."""
import numpy as np
import pytest
import trimesh

from radarays_ros.errors import TracingError
from radarays_ros.tracing import make_backend
from radarays_ros.tracing.backend import Backend, Hits, Rays
from radarays_ros.world.mesh import TriMesh
from radarays_ros.world.scene import Scene
from radarays_ros.world.transforms import pose_to_matrix


def scene_with_movers() -> tuple[Scene, list[int]]:
    """A wall, 20 small moving boxes (the merged layer) and a large moving ball (an instance layer)."""
    scene = Scene()
    box, wall = trimesh.creation.box([1.0, 1.0, 1.0]), trimesh.creation.box([1, 30, 30])
    scene.add_entity("wall", TriMesh(wall.vertices, wall.faces), pose_to_matrix(8, 0, 0), material="concrete")
    rng = np.random.default_rng(0)
    ids = [scene.add_entity(f"m{i}", TriMesh(box.vertices, box.faces), pose_to_matrix(*rng.uniform(2, 6, 1),
                            *rng.uniform(-4, 4, 2)), static=False, material="metal") for i in range(20)]
    ball = trimesh.creation.icosphere(4, 1.5)  # 5120 triangles: its own layer
    ids.append(scene.add_entity("ball", TriMesh(ball.vertices, ball.faces), pose_to_matrix(5, 2, 2), static=False))
    return scene, ids


class CountingResolver:
    """A resolver with `many`, counting its calls."""

    def __init__(self):
        self.calls = []

    def __call__(self, name):
        self.calls.append((name,))
        return np.full(3, len(name), np.int32)

    def many(self, names):
        self.calls.append(tuple(names))
        return [np.full(3, len(name), np.int32) for name in names]


def test_fields_resolves_what_is_missing_in_one_call_and_keeps_the_order():
    resolver = CountingResolver()
    hits = Hits(np.zeros(3, np.float32), resolve=resolver)
    entity, distance, material = hits.fields("entity", "distance", "material")
    assert resolver.calls == [("entity", "material")]  # one round trip for both
    assert distance is hits.distance and entity[0] == len("entity") and material[0] == len("material")
    assert hits.fields("material", "entity")[0] is material and len(resolver.calls) == 1  # kept, not resolved again
    hits.fields("face")  # a single missing attribute: the plain resolver
    assert resolver.calls[-1] == ("face",)


def test_fields_are_the_attributes_bit_for_bit_with_moving_layers():
    scene, ids = scene_with_movers()
    backend = make_backend("embree", scene, threads=1)
    d = np.random.default_rng(1).normal(size=(4000, 3)) * [1, 0.4, 0.4] + [2, 0, 0]
    o = np.zeros_like(d)
    one, other = backend.trace(o, d, want={"distance"}), backend.trace(o, d, want={"distance"})
    together = one.fields("distance", "normal", "entity", "face", "material")
    apart = (other.distance, other.normal, other.entity, other.face, other.material)
    for name in ("wall", "ball"):  # hits in the static and instance layers, and the merged boxes below
        assert (other.entity == scene.find(name)).sum() > 20, name
    assert np.isin(other.entity, ids[:-1]).sum() > 100
    for a, b in zip(together, apart):
        assert a.tobytes() == b.tobytes()


class OnlyTrace(Backend):
    """A backend that implements `_trace` alone."""

    name = "only-trace"

    def __init__(self, scene):
        super().__init__(scene)
        self.seen = None

    def _trace(self, rays, tmin, tmax, names):
        self.seen = (tmin, tmax, names)
        return Hits.misses(len(rays))


def test_trace_rays_checks_span_and_names_once_then_calls_trace():
    backend = OnlyTrace(Scene())
    rays = Rays(np.zeros((2, 3)), np.array([[1.0, 0, 0], [0, 1.0, 0]]))
    assert len(backend.trace_rays(rays, 1, 5, want={"ids"})) == 2
    assert backend.seen == (1.0, 5.0, frozenset({"ids", "distance"}))
    with pytest.raises(TracingError, match="tmin"):
        backend.trace_rays(rays, 5, 1)
    with pytest.raises(TracingError, match="unknown hit attribute"):
        backend.trace(rays.origins, rays.directions, want={"colour"})


def test_a_backend_without_trace_says_so():
    class Nothing(Backend):
        name = "nothing"

    with pytest.raises(NotImplementedError, match="nothing backend"):
        Nothing(Scene()).trace(np.zeros((1, 3)), np.array([[1.0, 0, 0]]))
