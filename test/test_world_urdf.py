"""URDF robots: joints at zero composing link poses, visual origins, package:// meshes, gazebo ignore tags."""
import math

import numpy as np
import pytest

from radarays_ros.errors import WorldError
from radarays_ros.tracing import make_backend
from radarays_ros.world.loader import load_world

CUBE_OBJ = "".join(f"v {x} {y} {z}\n" for x in (-0.5, 0.5) for y in (-0.5, 0.5) for z in (-0.5, 0.5)) + \
    "f 1 2 4 3\nf 5 7 8 6\nf 1 5 6 2\nf 3 4 8 7\nf 1 3 7 5\nf 2 6 8 4\n"

ROBOT = f"""<?xml version="1.0"?>
<robot name="bot">
  <link name="base_link">
    <visual><origin xyz="0 0 0.1"/><geometry><box size="1 1 0.2"/></geometry></visual>
  </link>
  <link name="arm">
    <visual name="upper"><origin xyz="0.5 0 0" rpy="0 {math.pi / 2} 0"/><geometry><cylinder radius="0.05" length="1"/></geometry></visual>
    <visual><origin xyz="1 0 0"/><geometry><mesh filename="package://bot_description/meshes/cube.obj" scale="0.2 0.2 0.2"/></geometry></visual>
  </link>
  <link name="radar"><visual><geometry><sphere radius="0.1"/></geometry></visual></link>
  <link name="footprint"/>
  <joint name="base_to_arm" type="revolute">
    <parent link="base_link"/><child link="arm"/>
    <origin xyz="0 0 1" rpy="0 0 {math.pi / 2}"/><axis xyz="0 0 1"/>
  </joint>
  <joint name="base_to_radar" type="fixed"><parent link="base_link"/><child link="radar"/><origin xyz="0 0 2"/></joint>
  <joint name="foot" type="fixed"><parent link="base_link"/><child link="footprint"/></joint>
  <gazebo reference="radar"><rmagine_ignore/></gazebo>
  <gazebo><static>true</static></gazebo>
</robot>
"""


@pytest.fixture
def robot_file(tmp_path, monkeypatch):
    meshes = tmp_path / "install" / "share" / "bot_description" / "meshes"
    meshes.mkdir(parents=True)
    (meshes / "cube.obj").write_text(CUBE_OBJ)
    monkeypatch.setenv("AMENT_PREFIX_PATH", str(tmp_path / "install"))
    path = tmp_path / "bot.urdf"
    path.write_text(ROBOT)
    return path


def test_urdf_links_joints_and_ignore(robot_file):
    scene = load_world(robot_file)
    assert sorted(scene.entity_names()) == ["bot::arm::upper", "bot::arm::visual_1", "bot::base_link::visual"]
    assert all(e.static for e in scene.entities)
    # the arm joint yaws 90°: the arm's x axis points along world y, 1 m up
    assert scene.entity("bot::arm::visual_1").pose[:3, 3] == pytest.approx([0, 1, 1], abs=1e-9)
    backend = make_backend("embree", scene)
    hits = backend.trace(np.array([[0, 1, 5.0], [0, 0.5, 5.0], [0, 0.02, 5.0]]), np.array([[0, 0, -1.0]] * 3))
    names = [scene.entity(int(i)).name for i in hits.entity]
    assert hits.distance[0] == pytest.approx(5 - 1.1) and names[0] == "bot::arm::visual_1"  # 0.2 m cube
    assert hits.distance[1] == pytest.approx(5 - 1.05, abs=1e-3) and names[1] == "bot::arm::upper"  # r = 0.05 rod
    assert hits.distance[2] == pytest.approx(5 - 1.05, abs=1e-3)  # rod starts at the joint; the radar sphere at z=2 is ignored


def test_urdf_ignore_glob_and_collision(robot_file):
    scene = load_world(robot_file, ignore=("bot::arm",))
    assert scene.entity_names() == ["bot::base_link::visual"]
    empty = load_world(robot_file, geometry="collision")
    assert len(empty) == 0 and any("empty" in w for w in empty.warnings)


def test_urdf_errors(tmp_path):
    bad = tmp_path / "bad.urdf"
    bad.write_text('<robot name="r"><link name="a"><visual><geometry><cone/></geometry></visual></link></robot>')
    with pytest.raises(WorldError, match=r"bad.urdf:1 <visual> of link 'a': unknown geometry <cone>; allowed: box"):
        load_world(bad)
    bad.write_text('<robot name="r"><link name="a"/><joint name="j" type="fixed"><parent link="a"/><child link="zz"/></joint></robot>')
    with pytest.raises(WorldError, match="<joint name='j'>"):
        load_world(bad)
    bad.write_text('<robot name="r"><link name="a"><visual><origin xyz="0 nan 0"/><geometry><box size="1 1 1"/></geometry></visual></link></robot>')
    with pytest.raises(WorldError, match="origin xyz"):
        load_world(bad)


def test_urdf_model_included_in_an_sdf_world(robot_file, tmp_path, monkeypatch):
    model_dir = tmp_path / "models" / "bot"
    model_dir.mkdir(parents=True)
    (model_dir / "bot.urdf").write_text(robot_file.read_text())
    (model_dir / "model.config").write_text('<model><name>bot</name><sdf version="1.9">bot.urdf</sdf></model>')
    monkeypatch.setenv("GZ_SIM_RESOURCE_PATH", str(tmp_path / "models"))
    world = tmp_path / "w.sdf"
    world.write_text('<sdf version="1.9"><world name="w"><include><uri>model://bot</uri><name>bot_1</name>'
                     '<pose>10 0 0 0 0 0</pose></include></world></sdf>')
    scene = load_world(world)
    assert scene.entity("bot_1::arm::visual_1").pose[:3, 3] == pytest.approx([10, 1, 1], abs=1e-9)
    assert "bot_1::radar::visual" not in scene.entity_names()
