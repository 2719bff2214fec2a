"""Mesh files: own OBJ reader, COLLADA unit/up-axis, glTF node and material names, per-face materials."""
from pathlib import Path

import numpy as np
import pytest
import trimesh

from radarays_ros.world.loader import load_world
from radarays_ros.world.meshfiles import load_mesh, read_obj
from support.tracing import cast

DATA = Path(__file__).parent / "data" / "world"


# Two objects: a room (two walls, the second written as a quad with negative indices and a usemtl),
# and a table top written as a pentagon-free quad; face ids are the 'f' statement indices.
ROOM_OBJ = """# test map
mtllib nothing.mtl
o room
v 5 -5 -1
v 5 5 -1
v 5 5 3
v 5 -5 3
usemtl Plaster
f 1 2 3 4
v -5 -5 -1
v -5 5 -1
v -5 5 3
v -5 -5 3
usemtl GlassPane
f -4 -3 -2 -1
o table
g top
v 1 -1 0.8
v 2 -1 0.8
v 2 1 0.8
v 1.5 1.5 0.8
v 1 1 0.8
usemtl oak
f 9/1/1 10/2/2 11/3/3 12/4/4 13/5/5
"""


def test_obj_reader_keeps_face_order_names_and_polygons(tmp_path):
    path = tmp_path / "map.obj"
    path.write_text(ROOM_OBJ)
    mesh = read_obj(path)
    assert mesh.n_faces == 2 + 2 + 3  # quads fan into 2, the pentagon into 3
    assert mesh.face_ids.tolist() == [0, 0, 1, 1, 2, 2, 2]
    assert [mesh.part_names[p] for p in mesh.face_parts] == ["room"] * 4 + ["top"] * 3
    assert [mesh.mesh_material_names[m] for m in mesh.face_mesh_materials] == ["Plaster"] * 2 + ["GlassPane"] * 2 + ["oak"] * 3
    assert mesh.vertices[mesh.faces[2]].tolist() == [[-5, -5, -1], [-5, 5, -1], [-5, 5, 3]]  # negative indices


def test_bare_obj_map_is_one_entity_with_per_face_materials(tmp_path):
    path = tmp_path / "office_map.obj"
    path.write_text(ROOM_OBJ)
    lib = tmp_path / "lib.yaml"
    lib.write_text("materials:\n  wall_stone:\n    radar: {velocity: 0.001, A: 0.6, B: 0.3, C: 30}\n"
                   "assign:\n  - {mesh_material: 'Glass*', material: glass}\n  - {object: room, material: wall_stone}\n")
    scene = load_world(path, materials=lib)
    assert scene.entity_names() == ["office_map"]
    m = scene.materials
    hits = cast(scene, [[0, 0, 0], [0, 0, 0], [1.5, 0, 5]], [[1, 0, 0], [-1, 0, 0], [0, 0, -1]])
    assert hits.distance.tolist() == pytest.approx([5, 5, 4.2])
    # rules first (mesh_material Glass* beats object room); 'oak' is neither ruled nor a library name: default
    assert [m[int(i)].name for i in hits.material] == ["wall_stone", "glass", m.default]
    assert hits.face.tolist() == [0, 1, 2]  # face ids in the file's own order


def test_obj_usemtl_matching_a_library_name_needs_no_rule(tmp_path):
    path = tmp_path / "m.obj"
    path.write_text("v 3 -1 -1\nv 3 1 -1\nv 3 0 1\nusemtl Metal\nf 1 2 3\n")
    scene = load_world(path)
    hits = cast(scene, [[0, 0, 0]], [[1, 0, 0]])
    assert scene.materials[int(hits.material[0])].name == "metal"


def test_collada_unit_applied_up_axis_as_gazebo(tmp_path):
    path = DATA / "quad_cm_yup.dae"
    gazebo = load_world(path)  # unit cm -> m; Y_UP ignored, as Gazebo's loader does
    hits = cast(gazebo, [[0.5, 0.5, 0], [50, 50, 0]], [[0, 0, 1], [0, 0, 1]])
    assert hits.distance[0] == pytest.approx(5.0) and not np.isfinite(hits.distance[1])
    e = gazebo.entity("quad_cm_yup")
    assert e.mesh.part_names == ["wallnode"] and e.mesh.mesh_material_names == ["Brick"]
    assert e.mesh.face_ids.tolist() == [0, 0]  # one polygon, fanned
    assert gazebo.materials[int(hits.material[0])].name == "brick"  # DAE material name matches the library
    applied = load_world(path, collada_up_axis="apply")  # Y_UP -> Z_UP: +y becomes +z, +z becomes -y
    hits = cast(applied, [[0.5, 0, 0.5]], [[0, -1, 0]])
    assert hits.distance[0] == pytest.approx(5.0)


def test_gltf_node_names_materials_and_transforms(tmp_path):
    window = trimesh.creation.box(extents=(0.1, 2, 2))
    window.visual = trimesh.visual.TextureVisuals(material=trimesh.visual.material.PBRMaterial(name="Glass_01"))
    door = trimesh.creation.box(extents=(0.1, 1, 2))
    door.visual = trimesh.visual.TextureVisuals(material=trimesh.visual.material.PBRMaterial(name="Paint"))
    s = trimesh.Scene()
    s.add_geometry(window, node_name="window", transform=trimesh.transformations.translation_matrix((4, 0, 0)))
    s.add_geometry(door, node_name="door", transform=trimesh.transformations.translation_matrix((0, 6, 0)))
    path = tmp_path / "house.glb"
    s.export(path)
    lib = tmp_path / "lib.yaml"
    lib.write_text("assign:\n  - {mesh_material: 'Glass*', material: glass}\n  - {object: door, material: wood}\n")
    scene = load_world(path, materials=lib)
    hits = cast(scene, [[0, 0, 0], [0, 0, 0]], [[1, 0, 0], [0, 1, 0]])
    assert hits.distance.tolist() == pytest.approx([3.95, 5.5])
    assert [scene.materials[int(i)].name for i in hits.material] == ["glass", "wood"]
    mesh = scene.entity("house").mesh
    assert sorted(mesh.part_names) == ["door", "window"]
    assert mesh.face_ids.tolist() == list(range(24))  # nodes in name order: door's 12 faces, then window's


def test_posed_scaled_mesh_and_submesh_in_sdf(tmp_path):
    (tmp_path / "map.obj").write_text(ROOM_OBJ)
    world = tmp_path / "w.sdf"
    world.write_text("""<sdf version="1.9"><world name="w">
      <model name="m"><static>true</static><pose>10 0 0 0 0 1.5707963267948966</pose><link name="l">
        <visual name="all"><geometry><mesh><uri>map.obj</uri><scale>2 1 1</scale></mesh></geometry></visual>
        <visual name="top"><pose>0 0 10 0 0 0</pose><geometry><mesh><uri>file://map.obj</uri>
          <submesh><name>top</name><center>true</center></submesh></mesh></geometry></visual>
      </link></model></world></sdf>""")
    scene = load_world(world)
    assert scene.entity("m::l::top").mesh.n_faces == 3
    # the x-scaled room, yawed 90°: its walls at local x = ±10 are now at world y = ±10
    hits = cast(scene, [[10, 0, 0], [10, 0, 20]], [[0, 1, 0], [0, 0, -1]])
    assert hits.distance[0] == pytest.approx(10.0)
    assert hits.distance[1] == pytest.approx(10.0) and scene.entity(int(hits.entity[1])).name == "m::l::top"


def test_ply_and_stl_keep_face_order(tmp_path):
    box = trimesh.creation.box(extents=(1, 1, 1))
    for suffix in ("ply", "stl"):
        path = tmp_path / f"b.{suffix}"
        box.export(path)
        mesh = load_mesh(path)
        assert mesh.n_faces == 12
        assert np.allclose(mesh.vertices[mesh.faces], box.vertices[box.faces])
        assert mesh.face_ids.tolist() == list(range(12))


NESTED_DAE = """<?xml version="1.0" encoding="utf-8"?>
<COLLADA xmlns="http://www.collada.org/2005/11/COLLADASchema" version="1.4.1">
  <asset><unit name="meter" meter="1"/><up_axis>Z_UP</up_axis></asset>
  <library_effects>
    <effect id="fx"><profile_COMMON><technique sid="t"><lambert><diffuse><color>0.5 0.5 0.5 1</color></diffuse></lambert></technique></profile_COMMON></effect>
  </library_effects>
  <library_materials>
    <material id="m_glass" name="Glass"><instance_effect url="#fx"/></material>
    <material id="m_brick" name="Brick"><instance_effect url="#fx"/></material>
  </library_materials>
  <library_geometries>
    <geometry id="g" name="panel"><mesh>
      <source id="pos"><float_array id="pos_a" count="18">0 -1 -1  0 0 -1  0 0 1  0 -1 1  0 1 -1  0 1 1</float_array>
        <technique_common><accessor source="#pos_a" count="6" stride="3">
          <param name="X" type="float"/><param name="Y" type="float"/><param name="Z" type="float"/>
        </accessor></technique_common></source>
      <vertices id="v"><input semantic="POSITION" source="#pos"/></vertices>
      <polylist material="glass_sym" count="1"><input semantic="VERTEX" source="#v" offset="0"/><vcount>4</vcount><p>0 1 2 3</p></polylist>
      <polylist material="brick_sym" count="1"><input semantic="VERTEX" source="#v" offset="0"/><vcount>4</vcount><p>1 4 5 2</p></polylist>
    </mesh></geometry>
  </library_geometries>
  <library_visual_scenes><visual_scene id="s">
    <node id="parent" name="turntable"><rotate>0 0 1 90</rotate>
      <node id="child" name="panel_node"><translate>5 0 0</translate>
        <instance_geometry url="#g"><bind_material><technique_common>
          <instance_material symbol="glass_sym" target="#m_glass"/>
          <instance_material symbol="brick_sym" target="#m_brick"/>
        </technique_common></bind_material></instance_geometry>
      </node>
    </node>
  </visual_scene></library_visual_scenes>
  <scene><instance_visual_scene url="#s"/></scene>
</COLLADA>
"""


def test_collada_nested_node_transforms_and_per_face_materials(tmp_path):
    """A panel 5 m along a child node's x, under a parent rotated 90° about z: the panel stands on the
    plane y = 5; its first polygon (Glass, local y < 0) covers world x in [0, 1], the second
    (Brick) x in [-1, 0]. Material and face id of each hit come from the polygon that was hit."""
    path = tmp_path / "panel.dae"
    path.write_text(NESTED_DAE)
    scene = load_world(path)
    hits = cast(scene, [[0.5, 0, 0], [-0.5, 0, 0.5], [1.5, 0, 0]], [[0, 1, 0]] * 3)
    assert hits.distance[:2].tolist() == pytest.approx([5.0, 5.0]) and not hits.hit[2]
    assert [scene.materials[int(m)].name for m in hits.material[:2]] == ["glass", "brick"]
    assert hits.face[:2].tolist() == [0, 1]  # polygons in document order
    np.testing.assert_allclose(np.abs(hits.normal[:2]), [[0, 1, 0]] * 2, atol=1e-6)
    mesh = scene.entity("panel").mesh
    assert mesh.part_names == ["panel_node"] and mesh.mesh_material_names == ["Glass", "Brick"]


@pytest.mark.parametrize("suffix", ["glb", "gltf"])
def test_gltf_rotated_node_transform(tmp_path, suffix):
    slab = trimesh.creation.box(extents=(0.1, 2, 2))  # thin in x until its node turns it 90° about z
    s = trimesh.Scene()
    turn = trimesh.transformations.rotation_matrix(np.pi / 2, (0, 0, 1))
    turn[:3, 3] = (0, -6, 0)
    s.add_geometry(slab, node_name="slab", transform=turn)
    path = tmp_path / f"slab.{suffix}"
    s.export(path)
    scene = load_world(path)
    hits = cast(scene, [[0, 0, 0], [0.9, 0, 0], [1.1, 0, 0]], [[0, -1, 0]] * 3)
    # rotated: 2 m wide in x, 0.1 m thick in y, near face at y = -5.95 (unrotated it would be y = -5)
    assert hits.distance[:2].tolist() == pytest.approx([5.95, 5.95]) and not hits.hit[2]
