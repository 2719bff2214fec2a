"""Our SDF tags in namespaced form (sdformat copies `prefix:element` without its "not defined in SDF"
warning): the same materials as the plain tags, in the shipped worlds too."""
from __future__ import annotations

import pytest

from radarays_ros.errors import WorldError
from radarays_ros.world.sdf import material_tags, parse_xml

PLAIN = """<sdf version="1.11"><world name="w"><model name="m"><link name="l">
  <visual name="a"><geometry><box><size>1 1 1</size></box></geometry><radarays><material>brick</material></radarays></visual>
  <visual name="b"><geometry><box><size>1 1 1</size></box></geometry>
    <radarays_material><velocity>0.2</velocity><ambient>1.0</ambient><diffuse>0.5</diffuse><specular>3.0</specular></radarays_material>
  </visual>
</link></model></world></sdf>"""

NAMESPACED = """<sdf version="1.11" xmlns:radarays="https://github.com/uos/radarays_ros" xmlns:gz="http://gazebosim.org/schema">
<world name="w"><model name="m"><link name="l">
  <visual name="a"><geometry><box><size>1 1 1</size></box></geometry><radarays:material>brick</radarays:material></visual>
  <visual name="b"><geometry><box><size>1 1 1</size></box></geometry>
    <gz:radarays_material><velocity>0.2</velocity><ambient>1.0</ambient><radarays:diffuse>0.5</radarays:diffuse><specular>3.0</specular></gz:radarays_material>
  </visual>
</link></model></world></sdf>"""


def test_namespaced_tags_give_the_plain_tags_materials():
    plain, spaced = material_tags(PLAIN), material_tags(NAMESPACED)
    assert plain["m::l::a"] == spaced["m::l::a"] == ("brick", None)
    (name_p, mat_p), (name_s, mat_s) = plain["m::l::b"], spaced["m::l::b"]
    assert name_p == name_s == "sdf:m::l::b" and mat_p.radar == mat_s.radar
    assert mat_s.radar == {"velocity": 0.2, "brdf": "radarays", "A": 1.0, "B": 0.5, "C": 3.0}


def test_undeclared_prefix_is_declared_for_the_reader_and_errors_name_the_prefixed_tag():
    text = NAMESPACED.replace(' xmlns:radarays="https://github.com/uos/radarays_ros" xmlns:gz="http://gazebosim.org/schema"', "")
    assert material_tags(text)["m::l::a"] == ("brick", None)  # as Gazebo's generate_world_sdf may hand it back
    assert parse_xml(b"<?xml version='1.0'?>\n<sdf><radarays:x/></sdf>", "s").tag.endswith("sdf")
    with pytest.raises(WorldError, match=r"<radarays:material>.*unknown material 'nope'"):
        material_tags(NAMESPACED.replace(">brick<", ">nope<"))


def test_shipped_worlds_use_only_namespaced_tags():
    """No plain `<radarays>` or `<radarays_material>` left in a shipped world (each one a Gazebo warning),
    and each world still assigns its materials."""
    from radarays_ros.resources import find_shipped

    for name in ("office", "hall", "street", "gz_radarays_demo"):
        path = find_shipped("world", name)
        text = path.read_text()
        assert "<radarays>" not in text and "<radarays_material>" not in text, name
        assert 'xmlns:radarays="' in text
        assert any(n for n, _ in material_tags(text, base_dir=path.parent).values()), name


def test_namespaced_ignore_tag_leaves_the_element_out():
    from radarays_ros.world.sdf import parse_sdf_string

    text = NAMESPACED.replace('<visual name="a">', '<visual name="a"><radarays:ignore/>')
    names = {e.name for e in parse_sdf_string(text, ".").entities}
    assert not any(n.endswith("::a") for n in names) and any(n.endswith("::b") for n in names)
    assert any(n.endswith("::a") for n in (e.name for e in parse_sdf_string(NAMESPACED, ".").entities))
