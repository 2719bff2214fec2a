"""Bad input: every case is one clear WorldError/ConfigError naming the file and element, or a documented warning."""
from pathlib import Path

import numpy as np
import pytest

from radarays_ros.errors import ConfigError, WorldError
from radarays_ros.world.loader import load_world


def write(tmp_path, text, name="w.sdf"):
    path = Path(tmp_path) / name
    path.write_text(text)
    return path


def world(body):
    return f'<?xml version="1.0"?>\n<sdf version="1.9">\n<world name="w">\n{body}\n</world>\n</sdf>\n'


def visual(geometry, name="v", extra=""):
    return f'<model name="m"><static>true</static><link name="l"><visual name="{name}"><geometry>{geometry}</geometry>{extra}</visual></link></model>'


def test_malformed_xml_names_file_and_line(tmp_path):
    path = write(tmp_path, world('<model name="m">\n<link name="l">\n</model>'))
    with pytest.raises(WorldError) as err:
        load_world(path)
    msg = str(err.value)
    assert str(path) in msg and "malformed XML" in msg
    assert ":6:" in msg  # the mismatched </model> is on line 6


def test_unknown_geometry_names_element_and_allowed(tmp_path):
    path = write(tmp_path, world(visual("<cone><radius>1</radius></cone>", name="hat")))
    with pytest.raises(WorldError) as err:
        load_world(path)
    msg = str(err.value)
    assert "<visual name='hat'>" in msg and "<cone>" in msg and "box" in msg and "heightmap" in msg and str(path) in msg


def test_missing_mesh_file(tmp_path):
    path = write(tmp_path, world(visual("<mesh><uri>meshes/gone.obj</uri></mesh>")))
    with pytest.raises(WorldError) as err:
        load_world(path)
    msg = str(err.value)
    assert "meshes/gone.obj" in msg and str(tmp_path / "meshes" / "gone.obj") in msg and "<visual name='v'>" in msg


def test_unresolvable_uri_strict_and_lenient(tmp_path, monkeypatch):
    monkeypatch.setenv("GZ_SIM_RESOURCE_PATH", str(tmp_path / "models"))
    body = '<include><uri>model://nowhere</uri></include>' + visual("<box><size>1 1 1</size></box>")
    path = write(tmp_path, world(body))
    with pytest.raises(WorldError) as err:
        load_world(path)
    msg = str(err.value)
    assert "model://nowhere" in msg and str(tmp_path / "models" / "nowhere") in msg and "<include>" in msg
    scene = load_world(path, strict=False)
    assert scene.entity_names() == ["m::l::v"] and scene.unresolved == ["model://nowhere"]
    assert any("model://nowhere" in w for w in scene.warnings)


def test_lenient_mesh_uri_recorded(tmp_path):
    path = write(tmp_path, world(visual("<mesh><uri>package://no_pkg/x.dae</uri></mesh>")))
    scene = load_world(path, strict=False)
    assert len(scene) == 0 and scene.unresolved == ["package://no_pkg/x.dae"]


@pytest.mark.parametrize("pose", ["0 0 nan 0 0 0", "0 0 0 inf 0 0"])
def test_nan_pose_names_element(tmp_path, pose):
    body = f'<model name="m"><pose>{pose}</pose><link name="l"><visual name="v"><geometry><box><size>1 1 1</size></box></geometry></visual></link></model>'
    with pytest.raises(WorldError) as err:
        load_world(write(tmp_path, world(body)))
    assert "<pose>" in str(err.value) and "'m'" in str(err.value) and "NaN or inf" in str(err.value)


def test_bad_pose_and_sizes(tmp_path):
    with pytest.raises(WorldError, match="expected 6"):
        load_world(write(tmp_path, world('<model name="m"><pose>1 2 3</pose></model>')))
    with pytest.raises(WorldError, match="box><size>"):
        load_world(write(tmp_path, world(visual("<box><size>1 nan 1</size></box>"))))
    with pytest.raises(WorldError, match="positive"):
        load_world(write(tmp_path, world(visual("<sphere><radius>-1</radius></sphere>"))))
    with pytest.raises(WorldError, match="needs <radius>"):
        load_world(write(tmp_path, world(visual("<cylinder><length>1</length></cylinder>"))))


def test_unknown_relative_to_frame_and_cycle(tmp_path):
    body = '<model name="m"><link name="a"><pose relative_to="ghost">0 0 0 0 0 0</pose></link></model>'
    with pytest.raises(WorldError, match="unknown frame 'ghost'.*frames here: a"):
        load_world(write(tmp_path, world(body)))
    body = ('<model name="m"><link name="a"><pose relative_to="b">0 0 0 0 0 0</pose></link>'
            '<link name="b"><pose relative_to="a">0 0 0 0 0 0</pose><visual name="v"><geometry><box><size>1 1 1</size></box></geometry></visual></link></model>')
    with pytest.raises(WorldError, match="cycle"):
        load_world(write(tmp_path, world(body)))


def test_degenerate_triangles_dropped_with_warning(tmp_path):
    (tmp_path / "m.obj").write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\nv 2 0 0\nf 1 2 3\nf 1 2 4\nf 2 2 3\n")
    scene = load_world(write(tmp_path, world(visual("<mesh><uri>m.obj</uri></mesh>"))))
    mesh = scene.entity("m::l::v").mesh
    assert mesh.n_faces == 1 and mesh.face_ids.tolist() == [0]
    assert any("dropped 2 degenerate" in w and "m::l::v" in w for w in scene.warnings)
    bare = load_world(tmp_path / "m.obj")
    assert any("dropped 2 degenerate" in w for w in bare.warnings)


def test_empty_world_loads_with_warning(tmp_path):
    scene = load_world(write(tmp_path, world("<light name='sun' type='directional'/>")))
    assert len(scene) == 0 and any("empty" in w for w in scene.warnings)
    from radarays_ros.tracing import make_backend

    hits = make_backend("embree", scene).trace(np.zeros((1, 3)), np.array([[1.0, 0, 0]]))
    assert not hits.hit[0]


def test_bad_radarays_material_values(tmp_path):
    tag = "<radarays_material><velocity>fast</velocity></radarays_material>"
    with pytest.raises(WorldError, match="<velocity> 'fast' is not a number"):
        load_world(write(tmp_path, world(visual("<box><size>1 1 1</size></box>", extra=tag))))
    tag = "<radarays><material>unobtainium</material></radarays>"
    with pytest.raises(WorldError, match="unknown material 'unobtainium'; known: .*concrete"):
        load_world(write(tmp_path, world(visual("<box><size>1 1 1</size></box>", extra=tag))))


def test_broken_mesh_files(tmp_path):
    (tmp_path / "bad.obj").write_text("v 0 0 0\nv 1 0 0\nf 1 2 9\n")
    with pytest.raises(WorldError, match=r"bad.obj:3: face index '9' out of range"):
        load_world(tmp_path / "bad.obj")
    (tmp_path / "bad.dae").write_text("<COLLADA><nothing")
    with pytest.raises(WorldError, match="bad.dae"):
        load_world(tmp_path / "bad.dae")
    (tmp_path / "bad.glb").write_bytes(b"glTF garbage")
    with pytest.raises(WorldError, match="bad.glb"):
        load_world(tmp_path / "bad.glb")


def test_bad_arguments_and_missing_world(tmp_path):
    with pytest.raises(WorldError, match="not found"):
        load_world(tmp_path / "nope.sdf")
    with pytest.raises(ConfigError, match="visual, collision"):
        load_world(tmp_path, geometry="both")
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(WorldError, match="not an SDF, URDF or mesh file"):
        load_world(tmp_path / "notes.txt")
    with pytest.raises(WorldError, match="without model.config or model.sdf"):
        load_world(tmp_path)


def test_include_cycle_is_reported(tmp_path, monkeypatch):
    d = tmp_path / "loop"
    d.mkdir()
    (d / "model.sdf").write_text('<sdf version="1.9"><model name="loop"><include><uri>model://loop</uri></include></model></sdf>')
    monkeypatch.setenv("GZ_SIM_RESOURCE_PATH", str(tmp_path))
    with pytest.raises(WorldError, match="cycle"):
        load_world(write(tmp_path, world("<include><uri>model://loop</uri></include>")))
