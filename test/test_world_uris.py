"""URI resolution: every scheme and search variable, checked against the file that must be found."""
from pathlib import Path

import pytest

from radarays_ros.errors import WorldError
from radarays_ros.world.uris import ResourceResolver


@pytest.fixture
def tree(tmp_path):
    for rel in ("legacy/lamp/model.sdf", "ign/chair/model.sdf", "sdfpath/sofa/model.sdf", "world_dir/meshes/m.obj",
                "world_dir/models/table/model.sdf", "abs/x.stl",
                ".gz/fuel/fuel.gazebosim.org/openrobotics/models/cone/2/model.sdf",
                ".gz/fuel/fuel.gazebosim.org/openrobotics/models/cone/10/model.sdf"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    return tmp_path


@pytest.mark.parametrize("var, uri, expected", [
    ("GAZEBO_MODEL_PATH", "model://lamp/model.sdf", "legacy/lamp/model.sdf"),
    ("IGN_GAZEBO_RESOURCE_PATH", "model://chair", "ign/chair"),
    ("SDF_PATH", "model://sofa/model.sdf", "sdfpath/sofa/model.sdf"),
])
def test_legacy_resource_variables(tree, var, uri, expected):
    folder = expected.split("/")[0]
    resolver = ResourceResolver(env={var: f"/nowhere:file://{tree / folder}", "HOME": str(tree)})
    assert resolver.resolve(uri) == tree / expected


def test_schemes_relative_absolute_and_fuel(tree):
    resolver = ResourceResolver(env={"HOME": str(tree)})
    world_dir = tree / "world_dir"
    assert resolver.resolve("meshes/m.obj", world_dir) == world_dir / "meshes" / "m.obj"
    assert resolver.resolve("file://meshes/m.obj", world_dir) == world_dir / "meshes" / "m.obj"
    assert resolver.resolve(f"file://{tree}/abs/x.stl", world_dir) == tree / "abs" / "x.stl"
    assert resolver.resolve(str(tree / "abs" / "x.stl")) == tree / "abs" / "x.stl"
    assert resolver.resolve("model://table", world_dir) == world_dir / "models" / "table"  # next to the world
    # model://NAME found in the Fuel cache by name: the newest version (numerically: 10 > 2)
    fuel = tree / ".gz/fuel/fuel.gazebosim.org/openrobotics/models/cone"
    assert resolver.resolve("model://cone/model.sdf") == fuel / "10" / "model.sdf"
    assert resolver.resolve("https://fuel.gazebosim.org/1.0/OpenRobotics/models/cone/2/files/model.sdf") == fuel / "2" / "model.sdf"
    with pytest.raises(WorldError, match=r"cannot resolve URI 'model://nothing'.*GZ_SIM_RESOURCE_PATH"):
        resolver.resolve("model://nothing", world_dir, what="w.sdf:3 <include> <uri>")
    with pytest.raises(WorldError, match="ftp://x"):
        resolver.resolve("ftp://x/y")
