"""Launch files, params files, URDF/xacro and rviz configs: everything they name exists and fits.

launch/launch_ros are not installable here, so the launch files are parsed (ast) and every executable,
params file, URDF and rviz file they name is looked up in the package as setup.py installs it. The
processes they start are tested for real in test_ros_*_node*.py.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path
from xml.etree import ElementTree

import pytest
import yaml

from radarays_ros.radar.config import resolve_radar_config
from radarays_ros.sensors.units import RadarUnit

REPO = Path(__file__).resolve().parents[2]
LAUNCH_FILES = sorted((REPO / "launch").glob("*.launch.py"))
SHARE_FOLDERS = ("launch", "config", "urdf", "rviz", "worlds", "scenarios")
# share/radarays_ros folders installed from the package data (setup.py): where their files come from
FROM_PACKAGE_DATA = {"worlds": "radarays_ros/data/worlds", "scenarios": "radarays_ros/data/scenarios",
                     "config/ros/fastdds_large_messages.xml": "radarays_ros/data/ros/fastdds_large_messages.xml"}


def source_of(share_relative: str) -> Path:
    """The file of the source tree that setup.py installs at share/radarays_ros/<share_relative>."""
    for share, source in FROM_PACKAGE_DATA.items():
        if share_relative == share or share_relative.startswith(share + "/"):
            return REPO / (source + share_relative[len(share):])
    return REPO / share_relative


def console_scripts() -> dict[str, str]:
    text = (REPO / "setup.py").read_text()
    return dict(re.findall(r'"(\w+) = ([\w.]+:\w+)"', text))


def package_xml_depends() -> set[str]:
    root = ElementTree.parse(REPO / "package.xml").getroot()
    return {e.text for e in root if e.tag.endswith("depend")}


def calls(tree: ast.AST, name: str):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == name:
            yield node


def kwarg(call: ast.Call, key: str):
    for k in call.keywords:
        if k.arg == key and isinstance(k.value, ast.Constant):
            return k.value.value
    return None


def share_paths(tree: ast.AST) -> list[str]:
    """Paths PathJoinSubstitution([share, "a", "b"]) builds under our own package share."""
    out = []
    for call in calls(tree, "PathJoinSubstitution"):
        items = call.args[0].elts
        if isinstance(items[0], ast.Name) and items[0].id == "share":
            out.append("/".join(e.value for e in items[1:]))
    return out


def test_there_are_four_launch_files():
    assert [p.name for p in LAUNCH_FILES] == ["gazebo_sim.launch.py", "lidar.launch.py", "radar.launch.py",
                                              "rig.launch.py"]


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda p: p.name)
def test_launch_file_names_only_what_exists(path):
    tree = ast.parse(path.read_text(), filename=str(path))
    assert any(isinstance(n, ast.FunctionDef) and n.name == "generate_launch_description" for n in tree.body)
    scripts = console_scripts()
    depends = package_xml_depends()
    nodes = list(calls(tree, "Node"))
    assert nodes
    for node in nodes:
        package, executable = kwarg(node, "package"), kwarg(node, "executable")
        if package == "radarays_ros":
            assert executable in scripts, f"{path.name}: {executable} is not a console script in setup.py"
            module, function = scripts[executable].split(":")
            source = REPO / (module.replace(".", "/") + ".py")
            assert any(isinstance(n, ast.FunctionDef) and n.name == function
                       for n in ast.parse(source.read_text()).body)
        else:
            assert package in depends, f"{path.name}: {package} is not an exec_depend in package.xml"
    paths = share_paths(tree)
    assert paths
    for relative in paths:
        assert source_of(relative).exists(), f"{path.name} names {relative}, which the package does not ship"
        assert relative.split("/")[0] in SHARE_FOLDERS  # installed into share/radarays_ros by setup.py
    arguments = {c.args[0].value for c in calls(tree, "DeclareLaunchArgument")}
    assert {"rviz", "use_sim_time"} <= arguments
    if path.name in ("rig.launch.py", "gazebo_sim.launch.py"):
        assert {"world", "rig"} <= arguments
        assert "urdf/demo_robot.urdf.xacro" in paths and "rviz/rig.rviz" in paths
    if path.name == "gazebo_sim.launch.py":
        text = path.read_text()
        assert "/clock@rosgraph_msgs/msg/Clock[gz.msgs.Clock" in text and "gz_sim.launch.py" in text


def test_setup_installs_the_share_folders():
    text = (REPO / "setup.py").read_text()
    for folder in SHARE_FOLDERS:
        assert f'"{folder}"' in text
    assert '"resource/{PACKAGE}"' in text or "resource/" in text


# -- params files --------------------------------------------------------------------------------
PARAMS = sorted((REPO / "config" / "ros").glob("*.yaml"))


def test_a_params_file_for_every_preset():
    from lidar_ros import list_presets

    names = {p.stem for p in PARAMS}
    for preset in (p.stem for p in (REPO / "radarays_ros" / "data" / "radar").glob("*.yaml")):
        assert f"radar_{preset.lower()}" in names
    for preset in list_presets():
        assert "lidar_" + preset.lower().replace("-", "_").replace(".", "_") in names


@pytest.mark.parametrize("path", PARAMS, ids=lambda p: p.name)
def test_params_file_configures_a_valid_sensor(path):
    from lidar_ros import load_sensor

    data = yaml.safe_load(path.read_text())
    ((node, body),) = data.items()
    params = body["ros__parameters"]
    assert node in ("radar_node", "lidar_node", "sensor_rig")
    assert params.get("pose_source", "tf") in ("tf", "fixed", "gazebo")
    sensors = [(node.split("_")[0], params)] if node != "sensor_rig" else [
        (params[name]["type"], params[name]) for name in params.get("sensors", [])]
    if node == "sensor_rig" and not sensors:  # a rig of the sensors a Gazebo world declares in SDF
        assert params["gazebo"]["enable"] and params["gazebo"]["sdf_sensors"]
    for kind, p in sensors:
        overrides = _flatten(p.get("sensor", {}))
        if kind == "radar":
            resolve_radar_config(p["config"], overrides)
            outputs = p.get("output", {})
            for key, value in outputs.items():
                assert key in RadarUnit.output_params()
        else:
            load_sensor(p["config"], overrides)


def _flatten(d, prefix=""):
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


# -- URDF / xacro ----------------------------------------------------------------------------------
def expand(**mappings) -> ElementTree.Element:
    """The demo robot through xacro (PyPI xacro, the same processor as ROS' xacro command)."""
    import xacro

    doc = xacro.process_file(str(REPO / "urdf" / "demo_robot.urdf.xacro"), mappings=mappings)
    return ElementTree.fromstring(doc.toxml())


def test_demo_robot_expands_to_a_valid_urdf_tree():
    robot = expand()
    assert robot.tag == "robot" and robot.get("name") == "radarays_demo_robot"
    links = {l.get("name") for l in robot.findall("link")}
    joints = robot.findall("joint")
    children = [j.find("child").get("link") for j in joints]
    parents = {j.find("parent").get("link") for j in joints}
    assert parents | set(children) <= links
    assert len(children) == len(set(children))  # a tree: each link has one parent
    assert links - set(children) == {"base_link"}  # one root
    rig = yaml.safe_load((REPO / "config" / "ros" / "rig_demo.yaml").read_text())["sensor_rig"]["ros__parameters"]
    assert {rig[n]["frame_id"] for n in rig["sensors"]} <= links  # the rig's frames are the robot's sensor links
    for link in robot.findall("link"):
        for geometry in link.iter("geometry"):
            (shape,) = list(geometry)
            assert all(float(v) > 0 for k, v in shape.attrib.items() if k in ("radius", "length"))


def test_sensor_dimensions_and_frames():
    robot = expand()
    def cylinder(link):
        (c,) = robot.find(f"link[@name='{link}']").find("visual").iter("cylinder")
        return float(c.get("radius")), float(c.get("length"))
    assert cylinder("velodyne_base") == pytest.approx((0.05165, 0.0717))  # VLP-16: 103.3 mm x 71.7 mm
    assert cylinder("os1_base") == pytest.approx((0.0435, 0.0735))
    optical = robot.find("joint[@name='velodyne_joint']").find("origin").get("xyz").split()
    assert float(optical[2]) == pytest.approx(0.0377)


def test_robot_body_is_kept_out_of_its_sensors(tmp_path):
    """The ignore tags make the world loader skip the whole robot model."""
    from radarays_ros.world.loader import load_world

    urdf = tmp_path / "robot.urdf"
    robot = expand()
    urdf.write_text(ElementTree.tostring(robot, encoding="unicode"))
    assert len(load_world(urdf)) == 0
    (tags,) = [g for g in robot.findall("gazebo") if g.get("reference") is None and g.find("radarays_ignore") is not None]
    assert tags.find("rmagine_ignore") is not None
    untagged = tmp_path / "body.urdf"
    for g in robot.findall("gazebo"):
        robot.remove(g)
    untagged.write_text(ElementTree.tostring(robot, encoding="unicode"))
    assert len(load_world(untagged)) >= 5  # without the tags the body, mast and housings would be seen


def test_gazebo_variant_publishes_the_model_pose():
    robot = expand(gazebo="true")
    plugins = [p for g in robot.findall("gazebo") for p in g.findall("plugin")]
    assert [p.get("filename") for p in plugins] == ["gz-sim-pose-publisher-system"]
    assert plugins[0].find("publish_model_pose").text == "true"
    assert not [p for g in expand().findall("gazebo") for p in g.findall("plugin")]


# -- rviz ------------------------------------------------------------------------------------------
RVIZ = sorted((REPO / "rviz").glob("*.rviz"))


def gazebo_demo_topics() -> set[str]:
    """Where sensor_rig publishes the sensors declared in worlds/gz_radarays_demo.sdf (3-D lidars: points)."""
    from radarays_ros.gazebo.sensors import find_sensors
    from radarays_ros.ros.gazebo_link import sdf_topic

    topics = set()
    for spec in find_sensors(REPO / "radarays_ros" / "data" / "worlds" / "gz_radarays_demo.sdf"):
        outputs = RadarUnit.topics if spec.kind == "radar" else ("points",)
        topics |= {"/" + sdf_topic(spec.topic, spec.kind, relative) for relative in outputs}
    return topics


def scenario_topics() -> set[str]:
    """The sensor topics of the bags `radarays run scenarios/*.yaml` writes (sensor name / relative topic)."""
    from radarays_ros.sensors.topics import sensor_topic

    topics = set()
    for path in (REPO / "radarays_ros" / "data" / "scenarios").glob("*.yaml"):
        for name, sensor in yaml.safe_load(path.read_text())["sensors"].items():
            outputs = ("radar/image", "radar/points") if sensor["type"] == "radar" else ("points",)
            topics |= {sensor_topic(f"/{name}", relative) for relative in outputs}
    return topics


def test_gazebo_demo_topics_are_the_ones_its_params_file_names():
    assert gazebo_demo_topics() == {"/radar/image", "/radar/image_cartesian", "/radar/points", "/points",
                                    "/gpu_lidar/points"}


@pytest.mark.parametrize("path", RVIZ, ids=lambda p: p.name)
def test_rviz_displays_receive_sensor_data(path):
    from radarays_ros.sensors.topics import sensor_topic

    data = yaml.safe_load(path.read_text())
    displays = data["Visualization Manager"]["Displays"]
    published = {"radar.rviz": {"/" + t for t in RadarUnit.topics},
                 "lidar.rviz": {"/points", "/scan"},
                 "rig.rviz": ({sensor_topic("/radar", t) for t in RadarUnit.topics} | {"/velodyne/points", "/os1/points"}
                              | scenario_topics() | gazebo_demo_topics())}[path.name]
    sensor_topics = set()
    for d in displays:
        topic = d.get("Topic")
        if topic:
            sensor_topics.add(topic["Value"])
            assert topic["Reliability Policy"] == "Best Effort", f"{path.name}: {d['Name']} would receive nothing"
            assert d["Class"].startswith("rviz_default_plugins/")
    assert sensor_topics == published
    assert data["Visualization Manager"]["Global Options"]["Fixed Frame"] == "map"
