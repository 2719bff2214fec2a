"""The demo worlds: generated files are up to date, load cleanly, are small, and have their materials where expected."""
import filecmp
import importlib.util
from pathlib import Path

import numpy as np
import pytest

from radarays_ros.tracing import make_backend
from radarays_ros.world.loader import load_world

WORLDS = Path(__file__).resolve().parents[1] / "radarays_ros" / "data" / "worlds"


def test_committed_worlds_match_the_generator(tmp_path):
    spec = importlib.util.spec_from_file_location("generate_demo_worlds", WORLDS.parents[2] / "scripts" / "generate_demo_worlds.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for path in module.generate(tmp_path):
        rel = path.relative_to(tmp_path)
        assert filecmp.cmp(path, WORLDS / rel, shallow=False), f"worlds/{rel} is stale: run scripts/generate_demo_worlds.py"


@pytest.mark.parametrize("name, materials", [
    ("office", {"concrete", "glass", "wood", "metal", "mirror"}),
    ("street", {"asphalt", "concrete", "brick", "glass", "metal", "vegetation", "wood", "retroreflective_sheeting"}),
    ("hall", {"concrete", "metal", "wood", "sdf:partition_west::link::visual"}),
    ("street_clutter", {"asphalt", "concrete", "brick", "glass", "metal", "vegetation", "wood", "retroreflective_sheeting"}),
])
def test_demo_world_loads_small_and_with_its_materials(name, materials):
    scene = load_world(WORLDS / f"{name}.sdf")
    assert scene.warnings == [] and scene.unresolved == []
    assert 0 < scene.triangle_count < 50_000
    used = {scene.materials[int(i)].name for e in scene.entities for i in np.unique(e.face_materials)}
    assert materials <= used and "default" not in used
    assert any(e.mesh.source.endswith(".obj") for e in scene.entities)  # the mesh path is exercised


def first_hit(scene, origin, direction):
    backend = make_backend("embree", scene)
    hits = backend.trace(np.array([origin], float), np.array([direction], float))
    backend.close()
    return float(hits.distance[0]), scene.entity(int(hits.entity[0])).name, scene.materials[int(hits.material[0])].name


def test_office_geometry():
    scene = load_world(WORLDS / "office.sdf")
    assert first_hit(scene, [5.5, 0, 1.5], [0, -1, 0]) == pytest.approx((1.59, "window::link::pane", "glass"), abs=1e-4)
    assert first_hit(scene, [14, 0, 1.4], [0, 1, 0]) == pytest.approx((1.49, "mirror::link::glass_face", "mirror"), abs=1e-4)
    assert first_hit(scene, [10, 0, 1], [0, 1, 0]) == pytest.approx((1.1, "pillar::link::visual", "metal"), abs=2e-3)
    assert first_hit(scene, [2.5, 1.1, 2], [0, 0, -1]) == pytest.approx((1.25, "desk::link::visual", "wood"), abs=1e-4)


def test_hall_partitions_are_radar_transparent_lidar_visible():
    scene = load_world(WORLDS / "hall.sdf")
    dist, entity, material = first_hit(scene, [0, 0.5, 1.5], [-1, 0, 0])
    assert (dist, entity) == pytest.approx((11.95, "partition_west::link::visual"), abs=1e-4)
    m = scene.materials[scene.materials.id_of(material)]
    assert m.radar["velocity"] == 0.27 and m.lidar == scene.materials[scene.materials.id_of(scene.materials.default)].lidar


def test_street_sign_and_road():
    scene = load_world(WORLDS / "street.sdf")
    # the sign plate: model (6, 4.5, 0.15), plate 0.03 m behind the pole, 2.2 m up, 0.02 m thick, 0.6 m wide;
    # aimed 0.2 m beside the pole, whose front (radius 0.04) is coplanar with the plate's face at x = 5.96
    assert first_hit(scene, [0, 4.7, 2.35], [1, 0, 0]) == pytest.approx((5.96, "traffic_sign::link::plate", "retroreflective_sheeting"), abs=1e-4)
    assert first_hit(scene, [0, 0, 5], [0, 0, -1]) == pytest.approx((5.0, "road::link::visual", "asphalt"), abs=1e-4)


def test_gazebo_demo_world_loads_without_its_robot():
    scene = load_world(WORLDS / "gz_radarays_demo.sdf")
    assert scene.warnings == [] and scene.unresolved == []
    assert sorted(scene.entity_names()) == ["crate::link::visual", "ground::link::visual",
                                            "wall_east::link::visual", "wall_north::link::visual"]
    assert not any(name.startswith("robot::") for name in scene.entity_names())  # it carries the sensors
