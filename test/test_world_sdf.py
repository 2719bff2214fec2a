"""SDF worlds through load_world and the real Embree backend, checked against hand-computed distances."""
import math
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from radarays_ros.errors import WorldError
from radarays_ros.world.loader import load_world, model_entities, parse_sdf_string, add_entities
from radarays_ros.world.scene import Scene
from radarays_ros.world.entities import material_library
from support.tracing import cast


def write_world(tmp_path, body, name="w.sdf", version="1.9"):
    path = Path(tmp_path) / name
    path.write_text(f'<?xml version="1.0"?>\n<sdf version="{version}"><world name="test">{body}</world></sdf>\n')
    return path


def model(name, geometry, pose="0 0 0 0 0 0", static=True, extra="", link_pose="", visual_extra=""):
    return (f'<model name="{name}"><static>{str(static).lower()}</static><pose>{pose}</pose>{extra}'
            f'<link name="link">{link_pose}<visual name="visual"><geometry>{geometry}</geometry>{visual_extra}</visual></link></model>')


# -- primitives --------------------------------------------------------------------------------------
def test_distances_to_every_primitive(tmp_path):
    body = "".join([
        model("box", "<box><size>0.2 10 3</size></box>", "5 0 0 0 0 0"),
        model("cyl", "<cylinder><radius>0.5</radius><length>2</length></cylinder>", "0 3 0 0 0 0"),
        model("ball", "<sphere><radius>1</radius></sphere>", "0 0 5 0 0 0"),
        model("caps", "<capsule><radius>0.5</radius><length>1</length></capsule>", "0 -4 0 0 0 0"),
        model("ell", "<ellipsoid><radii>1 2 3</radii></ellipsoid>", "-10 0 0 0 0 0"),
        model("floor", "<plane><normal>0 0 1</normal><size>4 4</size></plane>", "0 0 -2 0 0 0"),
    ])
    scene = load_world(write_world(tmp_path, body))
    assert len(scene) == 6
    origin = np.zeros(3)
    hits = cast(scene, [origin, origin, origin, origin, origin, [0, -4, 5], [-10, 5, 0], [-10, 0, 8], [0, 0, 0], [3, 0, 0]],
                [[1, 0, 0], [0, 1, 0], [0, 0, 1], [0, -1, 0], [-1, 0, 0], [0, 0, -1], [0, -1, 0], [0, 0, -1], [0, 0, -1], [0, 0, -1]])
    d = hits.distance
    names = [scene.entity(int(e)).name if e >= 0 else None for e in hits.entity]
    assert d[0] == pytest.approx(4.9, abs=1e-5) and names[0] == "box::link::visual"
    assert d[1] == pytest.approx(2.5, abs=2e-3) and names[1] == "cyl::link::visual"
    assert d[2] == pytest.approx(4.0, abs=1e-2) and names[2] == "ball::link::visual"
    assert d[3] == pytest.approx(3.5, abs=2e-3) and names[3] == "caps::link::visual"  # side of the cylinder part
    assert d[4] == pytest.approx(9.0, abs=2e-2) and names[4] == "ell::link::visual"  # x radius 1
    assert d[5] == pytest.approx(5 - 1.0, abs=1e-2)  # capsule top: length/2 + radius = 1
    assert d[6] == pytest.approx(5 - 2.0, abs=2e-2)  # ellipsoid y radius 2
    assert d[7] == pytest.approx(8 - 3.0, abs=3e-2)  # ellipsoid z radius 3
    assert d[8] == pytest.approx(2.0, abs=1e-6) and names[8] == "floor::link::visual"
    assert not np.isfinite(d[9])  # the plane is a finite 4 m patch: x = 3 is outside it


def test_plane_normal_orients_the_patch(tmp_path):
    scene = load_world(write_world(tmp_path, model("p", "<plane><normal>1 0 0</normal><size>2 2</size></plane>", "3 0 0 0 0 0")))
    hits = cast(scene, [[0, 0, 0], [0, 0, 0.9], [0, 0, 1.1]], [[1, 0, 0]] * 3)
    assert hits.distance[0] == pytest.approx(3.0)
    assert hits.distance[1] == pytest.approx(3.0) and not np.isfinite(hits.distance[2])
    assert abs(hits.normal[0][0]) == pytest.approx(1.0)


def test_polyline_extrusion(tmp_path):
    geo = "<polyline><point>0 0</point><point>2 0</point><point>2 1</point><point>1 1</point><point>1 2</point><point>0 2</point><height>1.5</height></polyline>"
    scene = load_world(write_world(tmp_path, model("l", geo, "10 0 0 0 0 0")))
    hits = cast(scene, [[11.5, 1.5, 5], [10.5, 1.5, 5], [11.5, 0.5, 5], [8, 1.5, 0.5], [13, 1.5, 0.5]],
                [[0, 0, -1], [0, 0, -1], [0, 0, -1], [1, 0, 0], [-1, 0, 0]])
    assert not np.isfinite(hits.distance[0])  # the notch of the L
    assert hits.distance[1] == pytest.approx(3.5) and hits.distance[2] == pytest.approx(3.5)  # the top cap
    assert hits.distance[3] == pytest.approx(2.0) and hits.distance[4] == pytest.approx(2.0)  # outer wall, notch wall


def test_heightmap_from_grayscale_image(tmp_path):
    img = np.zeros((5, 5), np.uint8)
    img[:, 3:] = 255  # the +x columns are high
    Image.fromarray(img).save(tmp_path / "hm.png")
    geo = "<heightmap><uri>hm.png</uri><size>8 8 2</size><pos>0 0 -1</pos></heightmap>"
    scene = load_world(write_world(tmp_path, model("terrain", geo)))
    hits = cast(scene, [[-3, 0, 10], [3.5, 1, 10], [-3, 3.9, 10], [0, 4.5, 10]], [[0, 0, -1]] * 4)
    assert hits.distance[0] == pytest.approx(11.0)  # black: pos z = -1
    assert hits.distance[1] == pytest.approx(9.0)  # white: -1 + 2
    assert hits.distance[2] == pytest.approx(11.0)
    assert not np.isfinite(hits.distance[3])  # outside the 8 m square


# -- poses --------------------------------------------------------------------------------------------
def _rx(a):
    return np.array([[1, 0, 0], [0, math.cos(a), -math.sin(a)], [0, math.sin(a), math.cos(a)]])


def _ry(a):
    return np.array([[math.cos(a), 0, math.sin(a)], [0, 1, 0], [-math.sin(a), 0, math.cos(a)]])


def _rz(a):
    return np.array([[math.cos(a), -math.sin(a), 0], [math.sin(a), math.cos(a), 0], [0, 0, 1]])


def test_rpy_convention_moves_box_where_the_matrix_says(tmp_path):
    r, p, y = 0.3, 0.5, 0.9
    rod = "<box><size>4 0.2 0.2</size></box>"  # long axis along its own x
    scene = load_world(write_world(tmp_path, model("rod", rod, f"1 2 3 {r} {p} {y}")))
    axis = (_rz(y) @ _ry(p) @ _rx(r))[:, 0]  # SDF: R = Rz(yaw) Ry(pitch) Rx(roll)
    centre = np.array([1.0, 2.0, 3.0])
    start = centre + 10 * axis
    hits = cast(scene, [start, centre - 10 * axis], [-axis, axis])
    assert hits.distance == pytest.approx([8.0, 8.0], abs=1e-4)  # the rod's tips at ±2 m
    wrong = (_rx(r) @ _ry(p) @ _rz(y))[:, 0]  # the other order puts the tip elsewhere
    miss = cast(scene, [centre + 10 * wrong], [-wrong])
    assert not miss.distance[0] == pytest.approx(8.0, abs=0.05)


def test_degrees_attribute_equals_radians(tmp_path):
    box = "<box><size>1 1 1</size></box>"
    body = (model("deg", box, "0 0 0 0 0 90", link_pose="<pose>4 0 0 0 0 0</pose>").replace("<pose>0 0 0 0 0 90</pose>", '<pose degrees="true">0 0 0 0 0 90</pose>'))
    scene = load_world(write_world(tmp_path, body))
    e = scene.entity("deg::link::visual")
    assert e.pose[:3, 3] == pytest.approx([0, 4, 0], abs=1e-9)
    assert cast(scene, [[0, 0, 0]], [[0, 1, 0]]).distance[0] == pytest.approx(3.5)


def test_relative_to_links_frames_and_nested_models(tmp_path):
    small = "<geometry><box><size>0.2 0.2 0.2</size></box></geometry>"
    body = f"""
    <model name="robot"><static>true</static><pose>10 0 0 0 0 0</pose>
      <link name="a"><pose>1 0 0 0 0 {math.pi / 2}</pose><visual name="v">{small}</visual></link>
      <link name="b"><pose relative_to="a">2 0 0 0 0 0</pose><visual name="v">{small}</visual></link>
      <frame name="f" attached_to="b"><pose>0 0 1 0 0 0</pose></frame>
      <link name="c"><pose relative_to="f">0 0 1 0 0 0</pose><visual name="v">{small}</visual></link>
      <model name="inner"><pose relative_to="a">0 -3 0 0 0 0</pose>
        <link name="l"><pose>1 0 0 0 0 0</pose><visual name="v">{small}</visual></link>
      </model>
      <link name="d"><pose relative_to="inner::l">0 0 5 0 0 0</pose>
        <visual name="v"><pose relative_to="__model__">0 0 7 0 0 0</pose>{small}</visual></link>
    </model>
    <model name="other"><static>true</static><pose relative_to="robot">0 0 20 0 0 0</pose>
      <link name="l"><visual name="v">{small}</visual></link></model>"""
    scene = load_world(write_world(tmp_path, body))
    pos = {e.name: e.pose[:3, 3] for e in scene.entities}
    assert pos["robot::a::v"] == pytest.approx([11, 0, 0], abs=1e-9)
    assert pos["robot::b::v"] == pytest.approx([11, 2, 0], abs=1e-9)  # a's x axis points along world y
    assert pos["robot::c::v"] == pytest.approx([11, 2, 2], abs=1e-9)
    assert pos["robot::inner::l::v"] == pytest.approx([14, 1, 0], abs=1e-9)  # (0,-3) in a = (+3, 0); l's x = world y
    assert pos["robot::d::v"] == pytest.approx([10, 0, 7], abs=1e-9)  # visual relative_to the model frame
    assert pos["other::l::v"] == pytest.approx([10, 0, 20], abs=1e-9)
    hits = cast(scene, [[11, 2, 10]], [[0, 0, -1]])
    assert hits.distance[0] == pytest.approx(10 - 2.1) and scene.entity(int(hits.entity[0])).name == "robot::c::v"


def test_quaternion_pose_and_nested_static_inheritance(tmp_path):
    s = math.sqrt(0.5)
    body = f"""<model name="outer"><static>true</static>
      <model name="inner"><pose rotation_format="quat_xyzw">0 0 0 0 0 {s} {s}</pose>
        <link name="l"><pose>2 0 0 0 0 0</pose><visual name="v"><geometry><box><size>1 1 1</size></box></geometry></visual></link>
      </model></model>
      <model name="mover"><link name="l"><visual name="v"><geometry><box><size>1 1 1</size></box></geometry></visual></link></model>"""
    scene = load_world(write_world(tmp_path, body))
    inner = scene.entity("outer::inner::l::v")
    assert inner.static and not scene.entity("mover::l::v").static
    assert inner.pose[:3, 3] == pytest.approx([0, 2, 0], abs=1e-9)


def test_collision_switch(tmp_path):
    body = """<model name="m"><static>true</static><link name="l">
      <visual name="v"><geometry><box><size>1 1 1</size></box></geometry></visual>
      <collision name="c"><pose>0 0 5 0 0 0</pose><geometry><sphere><radius>1</radius></sphere></geometry></collision>
    </link></model>"""
    path = write_world(tmp_path, body)
    assert [e.name for e in load_world(path).entities] == ["m::l::v"]
    collision = load_world(path, geometry="collision")
    assert [e.name for e in collision.entities] == ["m::l::c"]
    assert collision.entity("m::l::c").pose[2, 3] == 5


# -- includes and URIs --------------------------------------------------------------------------------
CUBE_OBJ = """o cube
v -0.5 -0.5 -0.5
v 0.5 -0.5 -0.5
v 0.5 0.5 -0.5
v -0.5 0.5 -0.5
v -0.5 -0.5 0.5
v 0.5 -0.5 0.5
v 0.5 0.5 0.5
v -0.5 0.5 0.5
f 1 4 3 2
f 5 6 7 8
f 1 2 6 5
f 2 3 7 6
f 3 4 8 7
f 4 1 5 8
"""


def make_model_dir(root: Path, name: str, mesh_uri: str, scale="1 1 1", extra=""):
    d = root / name
    (d / "meshes").mkdir(parents=True)
    (d / "meshes" / "cube.obj").write_text(CUBE_OBJ)
    (d / "model.config").write_text(f'<?xml version="1.0"?><model><name>{name}</name><sdf version="1.6">old.sdf</sdf><sdf version="1.9">model.sdf</sdf></model>')
    (d / "model.sdf").write_text(
        f'<?xml version="1.0"?><sdf version="1.9"><model name="{name}"><pose>0 0 100 0 0 0</pose>{extra}'
        f'<link name="body"><visual name="shell"><geometry><mesh><uri>{mesh_uri}</uri><scale>{scale}</scale></mesh></geometry></visual></link></model></sdf>')
    (d / "old.sdf").write_text("this file is never read: model.config also names a newer version")
    return d


def test_include_model_uri_via_gz_sim_resource_path(tmp_path, monkeypatch):
    models = tmp_path / "models"
    make_model_dir(models, "crate", "meshes/cube.obj", scale="2 2 2")
    make_model_dir(models, "crate2", "model://crate2/meshes/cube.obj")
    monkeypatch.setenv("GZ_SIM_RESOURCE_PATH", f"/nonexistent:{models}")
    world_dir = tmp_path / "elsewhere"
    world_dir.mkdir()
    body = """
      <include><uri>model://crate</uri><name>crate_a</name><pose>5 0 0 0 0 0</pose><static>true</static></include>
      <include><uri>model://crate</uri><name>crate_b</name><pose>0 -5 0 0 0 0</pose></include>
      <include><uri>model://crate2</uri></include>"""
    scene = load_world(write_world(world_dir, body))
    assert sorted(scene.entity_names()) == ["crate2::body::shell", "crate_a::body::shell", "crate_b::body::shell"]
    assert scene.entity("crate_a::body::shell").static and not scene.entity("crate_b::body::shell").static
    assert scene.entity("crate2::body::shell").pose[2, 3] == 100  # no include pose: the model's own
    hits = cast(scene, [[0, 0, 0], [0, 0, 0]], [[1, 0, 0], [0, -1, 0]])
    assert hits.distance == pytest.approx([4.0, 4.0])  # scale 2: faces 1 m from the centre


def test_package_uri_via_ament_prefix_path(tmp_path, monkeypatch):
    share = tmp_path / "install" / "share" / "my_pkg" / "meshes"
    share.mkdir(parents=True)
    (share / "cube.obj").write_text(CUBE_OBJ)
    monkeypatch.setenv("AMENT_PREFIX_PATH", f"{tmp_path / 'nothing'}:{tmp_path / 'install'}")
    geo = "<mesh><uri>package://my_pkg/meshes/cube.obj</uri><scale>1 4 1</scale></mesh>"
    scene = load_world(write_world(tmp_path, model("m", geo, "0 10 0 0 0 0")))
    assert cast(scene, [[0, 0, 0]], [[0, 1, 0]]).distance[0] == pytest.approx(8.0)


def test_fuel_url_resolves_to_the_local_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    cache = tmp_path / ".gz" / "fuel" / "fuel.gazebosim.org" / "openrobotics" / "models"
    for version in ("1", "3"):
        make_model_dir(cache / "box", version, "meshes/cube.obj", scale=version + " 1 1")
    body = "<include><uri>https://fuel.gazebosim.org/1.0/OpenRobotics/models/box</uri><name>b</name><pose>5 0 0 0 0 0</pose></include>"
    scene = load_world(write_world(tmp_path, body))
    assert cast(scene, [[0, 0, 0]], [[1, 0, 0]]).distance[0] == pytest.approx(3.5)  # newest version: x scale 3


def test_model_directory_input(tmp_path):
    d = make_model_dir(tmp_path, "crate", "meshes/cube.obj")
    scene = load_world(d)
    assert scene.entity_names() == ["crate::body::shell"]


# -- ignore tags and materials -----------------------------------------------------------------------
def test_ignore_tags_and_globs(tmp_path):
    box = "<box><size>1 1 1</size></box>"
    body = (model("robot", box, extra="<rmagine_ignore/>") + model("sensor_rig", box).replace('<link name="link">', '<link name="link"><radarays_ignore/>')
            + model("keep", box) + model("drop_me", box) + model("also", box))
    scene = load_world(write_world(tmp_path, body), ignore=("drop_*", "also::link::visual"))
    assert scene.entity_names() == ["keep::link::visual"]


def test_radarays_material_tag_read_like_the_gazebo_plugin(tmp_path):
    tag = "<radarays_material><velocity>0.05</velocity><ambient>0.01</ambient><diffuse>0.04</diffuse><specular>1900</specular></radarays_material>"
    body = (model("win", "<box><size>1 1 1</size></box>", visual_extra=tag)
            + model("tbl", "<box><size>1 1 1</size></box>", "3 0 0 0 0 0", visual_extra="<radarays><material>wood</material></radarays>")
            + model("part", "<box><size>1 1 1</size></box>", "6 0 0 0 0 0", visual_extra="<radarays_material><velocity>0.1</velocity></radarays_material>"))
    scene = load_world(write_world(tmp_path, body))
    lib = scene.materials
    win = scene.entity("win::link::visual")
    mat = lib[int(win.face_materials[0])]
    assert mat.name == "sdf:win::link::visual"
    assert dict(mat.radar) == {"velocity": 0.05, "brdf": "radarays", "A": 0.01, "B": 0.04, "C": 1900.0}
    assert dict(mat.lidar) == dict(lib[lib.id_of(lib.default)].lidar)
    assert "w.sdf" in mat.origin
    assert set(scene.entity("tbl::link::visual").face_materials) == {lib.id_of("wood")}
    part = lib[int(scene.entity("part::link::visual").face_materials[0])]
    assert part.radar["A"] == 0.0 and part.radar["C"] == 0.0
    assert any("<ambient>" in w for w in scene.warnings)
    hits = cast(scene, [[-5, 0, 0]], [[1, 0, 0]])
    assert lib[int(hits.material[0])].name == "sdf:win::link::visual"


def test_user_library_rules_by_entity_glob(tmp_path):
    (tmp_path / "lib.yaml").write_text("materials:\n  wall_stone:\n    radar: {velocity: 0.001, A: 0.6, B: 0.3, C: 30}\n"
                                       "assign:\n  - {entity: 'wall*', material: wall_stone}\ndefault: concrete\n")
    body = model("wall_1", "<box><size>1 1 1</size></box>") + model("bench", "<box><size>1 1 1</size></box>", "3 0 0 0 0 0")
    scene = load_world(write_world(tmp_path, body), materials=tmp_path / "lib.yaml")
    lib = scene.materials
    assert set(scene.entity("wall_1::link::visual").face_materials) == {lib.id_of("wall_stone")}
    assert set(scene.entity("bench::link::visual").face_materials) == {lib.id_of("concrete")}
    assert "glass" in lib.names  # the shipped library is still there


# -- API used by the Gazebo mirror --------------------------------------------------------------------
def test_model_entities_and_add_entities_for_spawned_models(tmp_path):
    scene = load_world(write_world(tmp_path, model("ground", "<box><size>20 20 0.1</size></box>")))
    xml = """<sdf version="1.9"><model name="cart"><pose>99 99 99 0 0 0</pose><link name="l">
      <visual name="v"><geometry><box><size>1 1 1</size></box></geometry>
      <radarays_material><velocity>0</velocity><ambient>1</ambient><diffuse>1</diffuse><specular>2000</specular></radarays_material>
      </visual></link></model></sdf>"""
    pose = np.eye(4)
    pose[:3, 3] = (4, 0, 0.5)
    specs = model_entities(xml, pose, tmp_path, scene.materials, name="cart_1")
    assert [s.name for s in specs] == ["cart_1::l::v"] and specs[0].material_override == "sdf:cart_1::l::v"
    ids = add_entities(scene, specs)
    assert scene.entity(ids[0]).pose[:3, 3] == pytest.approx([4, 0, 0.5])
    hits = cast(scene, [[0, 0, 0.5]], [[1, 0, 0]])
    assert hits.distance[0] == pytest.approx(3.5) and scene.materials[int(hits.material[0])].radar["C"] == 2000
    with pytest.raises(WorldError, match="already"):
        add_entities(scene, specs)
    # an <include> (as Gazebo's spawn service gets it), with the model's own pose from the include
    make_model_dir(tmp_path / "models", "crate", "meshes/cube.obj")
    include = "<sdf version='1.9'><include><uri>models/crate</uri><name>crate_7</name><pose>0 -6 0.5 0 0 0</pose></include></sdf>"
    specs = model_entities(include, None, tmp_path, scene.materials, static=True)
    assert [(s.name, s.static) for s in specs] == [("crate_7::body::shell", True)]
    add_entities(scene, specs)
    assert cast(scene, [[0, 0, 0.5]], [[0, -1, 0]]).distance[0] == pytest.approx(5.5)


def test_parse_sdf_string_and_add_to_an_empty_scene(tmp_path):
    text = f'<sdf version="1.7"><world name="x">{model("m", "<box><size>1 1 1</size></box>", "2 0 0 0 0 0")}</world></sdf>'
    parsed = parse_sdf_string(text, tmp_path)
    assert parsed.name == "x" and [s.name for s in parsed.entities] == ["m::link::visual"]
    scene = Scene(material_library())
    add_entities(scene, parsed.entities)
    assert cast(scene, [[0, 0, 0]], [[1, 0, 0]]).distance[0] == pytest.approx(1.5)


def test_include_inside_a_model_relative_to_a_link_with_overrides(tmp_path, monkeypatch):
    make_model_dir(tmp_path / "models", "crate", "meshes/cube.obj")  # its own pose z = 100, not static
    monkeypatch.setenv("GZ_SIM_RESOURCE_PATH", str(tmp_path / "models"))
    body = f"""<model name="outer"><pose>10 0 0 0 0 {math.pi / 2}</pose>
      <link name="base"><pose>1 0 0 0 0 0</pose></link>
      <include><uri>model://crate</uri><name>c</name><static>true</static>
        <pose relative_to="base">2 0 0 0 0 0</pose></include>
    </model>"""
    scene = load_world(write_world(tmp_path, body))
    e = scene.entity("outer::c::body::shell")
    assert e.static  # the include's <static> wins over the model file's
    # outer (10,0,0) yawed 90°, base at x=1, the include 2 m further along base's x: world (10, 3, 0)
    assert e.pose[:3, 3] == pytest.approx([10, 3, 0], abs=1e-9)
    hits = cast(scene, [[10, 0, 0]], [[0, 1, 0]])
    assert hits.distance[0] == pytest.approx(2.5) and scene.entity(int(hits.entity[0])).name == e.name


def test_material_tags_without_geometry(tmp_path, monkeypatch):
    from radarays_ros.world.sdf import material_tags

    make_model_dir(tmp_path / "models", "crate", "gone.obj",  # the mesh is never read
                   extra="")
    sdf_file = tmp_path / "models" / "crate" / "model.sdf"
    sdf_file.write_text(sdf_file.read_text().replace(
        "</mesh></geometry>", "</mesh></geometry><radarays_material><velocity>0.1</velocity><ambient>0.5</ambient>"
        "<diffuse>0.25</diffuse><specular>42</specular></radarays_material>"))
    monkeypatch.setenv("GZ_SIM_RESOURCE_PATH", str(tmp_path / "models"))
    text = f"""<sdf version="1.9"><world name="w">
      <include><uri>model://crate</uri><name>crate_9</name></include>
      <include><uri>model://not_there</uri><name>skipped</name></include>
      {model("table", "<box><size>1 1 1</size></box>", visual_extra="<radarays><material>wood</material></radarays>")}
      {model("plain", "<box><size>1 1 1</size></box>")}
    </world></sdf>"""
    tags = material_tags(text, tmp_path, models={"crate_9", "table", "plain"})
    assert sorted(tags) == ["crate_9::body::shell", "table::link::visual"]
    name, material = tags["crate_9::body::shell"]
    assert name == "sdf:crate_9::body::shell" and material.radar == {"velocity": 0.1, "brdf": "radarays", "A": 0.5, "B": 0.25, "C": 42.0}
    assert tags["table::link::visual"] == ("wood", None)
    assert sorted(material_tags(text, tmp_path, models={"table"})) == ["table::link::visual"]
    with pytest.raises(WorldError, match="<specular> 'x' is not a number"):
        material_tags(text.replace("<radarays><material>wood</material></radarays>",
                                   "<radarays_material><specular>x</specular></radarays_material>"), tmp_path)


def test_heightmap_pos_offset_and_image_rows(tmp_path):
    img = np.zeros((3, 3), np.uint8)
    img[0, :] = 255  # image row 0 is the +y edge (north up, as Gazebo reads heightmaps)
    Image.fromarray(img).save(tmp_path / "north.png")
    geo = "<heightmap><uri>north.png</uri><size>4 4 1</size><pos>10 -5 2</pos></heightmap>"
    scene = load_world(write_world(tmp_path, model("t", geo)))
    # grid x in 8..12, y in -7..-3; row 0 (white) at y = -3, row 2 (black) at y = -7
    hits = cast(scene, [[10, -3 - 1e-3, 10], [10, -7 + 1e-3, 10], [10, -5, 10], [7.9, -5, 10], [10, -2.9, 10]], [[0, 0, -1]] * 5)
    assert hits.distance[0] == pytest.approx(10 - 3, abs=1e-3)  # pos z 2 + white 1
    assert hits.distance[1] == pytest.approx(10 - 2, abs=1e-3)  # pos z 2 + black 0
    assert hits.distance[2] == pytest.approx(10 - 2, abs=1e-6)  # the middle row is black too
    assert not hits.hit[3] and not hits.hit[4]  # outside the 4 m square around (10, -5)
