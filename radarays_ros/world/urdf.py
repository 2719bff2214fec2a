"""URDF (and .xacro, when the xacro package is installed) -> an equivalent SDF `<model>` element.

The SDF reader then does the rest, so URDF and SDF share one path. Joints are taken at zero position:
a child link's pose is its parent's pose times the joint `<origin>`, composed from the root link (the
link that is no joint's child) at the model origin. Each link `<visual>` (or `<collision>`) keeps its
`<origin xyz rpy>` and geometry (box, cylinder, sphere, mesh with package:// URIs and `scale`).
Visual names: the URDF `name` attribute, else `visual` (`visual_1`, ... for further unnamed ones).
`<gazebo reference="LINK">` holding `<rmagine_ignore/>` or `<radarays_ignore/>` excludes that link;
`<gazebo>` without reference holding one excludes the robot; `<gazebo><static>true</static></gazebo>`
makes it static (a URDF robot is dynamic otherwise).
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from lxml import etree

from ..errors import WorldError
from .transforms import matrix_to_rpy, pose_to_matrix

URDF_GEOMETRY = ("box", "cylinder", "sphere", "mesh")


def urdf_to_sdf_model(path: str | Path, text: str | bytes | None = None) -> etree._Element:
    """SDF `<model>` element equivalent to a URDF file (or its already-read text)."""
    from .sdf import IGNORE_TAGS, parse_xml

    path = Path(path)
    if text is None:
        text = _read_urdf_text(path)
    robot = parse_xml(text, str(path))
    if robot.tag != "robot":
        raise WorldError(f"{path}:{robot.sourceline}: root element <{robot.tag}>; expected <robot>")
    name = robot.get("name") or path.stem
    for link in robot.findall("link"):
        if not link.get("name"):
            raise WorldError(f"{path}:{link.sourceline}: <link> needs a name attribute")
    links = {l.get("name"): l for l in robot.findall("link")}
    if not links:
        raise WorldError(f"{path}: <robot name='{name}'> has no <link>")
    children: dict[str, list] = {}
    is_child = set()
    for joint in robot.findall("joint"):
        parent = joint.find("parent")
        child = joint.find("child")
        where = f"{path}:{joint.sourceline} <joint name='{joint.get('name')}'>"
        if parent is None or child is None or parent.get("link") not in links or child.get("link") not in links:
            raise WorldError(f"{where}: needs <parent link=.../> and <child link=.../> naming links of the robot")
        children.setdefault(parent.get("link"), []).append((child.get("link"), _origin(joint.find("origin"), where)))
        is_child.add(child.get("link"))
    roots = [n for n in links if n not in is_child]
    if not roots:
        raise WorldError(f"{path}: the joints of <robot name='{name}'> form a cycle (no root link)")
    poses: dict[str, np.ndarray] = {}
    stack = [(r, np.eye(4)) for r in roots]
    while stack:
        link, pose = stack.pop()
        if link in poses:
            raise WorldError(f"{path}: link '{link}' is the child of more than one joint")
        poses[link] = pose
        stack += [(c, pose @ o) for c, o in children.get(link, [])]

    ignored_links, robot_ignored, static = set(), False, False
    for g in robot.findall("gazebo"):
        tagged = any(g.find(t) is not None for t in IGNORE_TAGS)
        if g.get("reference"):
            if tagged:
                ignored_links.add(g.get("reference"))
        else:
            robot_ignored |= tagged
            static |= (g.findtext("static") or "").strip().lower() in ("true", "1")

    model = etree.Element("model", name=name)
    if robot_ignored:
        etree.SubElement(model, "rmagine_ignore")
    etree.SubElement(model, "static").text = "true" if static else "false"
    for link_name, link in links.items():
        sdf_link = etree.SubElement(model, "link", name=link_name)
        etree.SubElement(sdf_link, "pose").text = _pose_text(poses[link_name])
        if link_name in ignored_links:
            etree.SubElement(sdf_link, "rmagine_ignore")
        for kind in ("visual", "collision"):
            for i, shape in enumerate(link.findall(kind)):
                where = f"{path}:{shape.sourceline} <{kind}> of link '{link_name}'"
                sdf_shape = etree.SubElement(sdf_link, kind, name=shape.get("name") or (kind if i == 0 else f"{kind}_{i}"))
                etree.SubElement(sdf_shape, "pose").text = _pose_text(_origin(shape.find("origin"), where))
                sdf_shape.append(_geometry(shape.find("geometry"), where))
                for extra in ("radarays_material", "radarays"):
                    if shape.find(extra) is not None:
                        sdf_shape.append(shape.find(extra))
    return model


def _read_urdf_text(path: Path) -> bytes:
    if path.suffix.lower() == ".xacro":
        try:
            import xacro
        except ImportError:
            raise WorldError(f"{path}: reading .xacro needs the 'xacro' package (pip install xacro)") from None
        try:
            return xacro.process_file(str(path)).toxml().encode()
        except Exception as exc:  # xacro raises its own types
            raise WorldError(f"{path}: xacro failed: {exc}") from None
    try:
        return path.read_bytes()
    except OSError as exc:
        raise WorldError(f"URDF file {path}: cannot be read ({exc.strerror or exc})") from None


def _numbers(text: str | None, n: int, where: str, default: tuple) -> list[float]:
    if text is None or not text.strip():
        if len(default) != n:
            raise WorldError(f"{where}: missing; expected {n} number(s)")
        return list(default)
    try:
        values = [float(t) for t in text.split()]
    except ValueError:
        raise WorldError(f"{where}: '{text}' is not {n} numbers") from None
    if len(values) != n or not all(math.isfinite(v) for v in values):
        raise WorldError(f"{where}: '{text}': expected {n} finite numbers")
    return values


def _origin(origin, where: str) -> np.ndarray:
    if origin is None:
        return np.eye(4)
    xyz = _numbers(origin.get("xyz"), 3, f"{where} <origin xyz>", (0, 0, 0))
    rpy = _numbers(origin.get("rpy"), 3, f"{where} <origin rpy>", (0, 0, 0))
    return pose_to_matrix(*xyz, *rpy)


def _pose_text(m: np.ndarray) -> str:
    return " ".join(repr(float(v)) for v in (*m[:3, 3], *matrix_to_rpy(m)))


def _geometry(geometry, where: str) -> etree._Element:
    if geometry is None or len(geometry) == 0:
        raise WorldError(f"{where}: no <geometry>; allowed: {', '.join(URDF_GEOMETRY)}")
    g = geometry[0]
    out = etree.Element("geometry")
    if g.tag == "box":
        etree.SubElement(etree.SubElement(out, "box"), "size").text = " ".join(map(str, _numbers(g.get("size"), 3, f"{where} <box size>", ())))
    elif g.tag in ("cylinder", "sphere"):
        el = etree.SubElement(out, g.tag)
        etree.SubElement(el, "radius").text = str(_numbers(g.get("radius"), 1, f"{where} <{g.tag} radius>", ())[0])
        if g.tag == "cylinder":
            etree.SubElement(el, "length").text = str(_numbers(g.get("length"), 1, f"{where} <cylinder length>", ())[0])
    elif g.tag == "mesh":
        if not g.get("filename"):
            raise WorldError(f"{where}: <mesh> without filename")
        el = etree.SubElement(out, "mesh")
        etree.SubElement(el, "uri").text = g.get("filename")
        etree.SubElement(el, "scale").text = " ".join(map(str, _numbers(g.get("scale"), 3, f"{where} <mesh scale>", (1, 1, 1))))
    else:
        raise WorldError(f"{where}: unknown geometry <{g.tag}>; allowed: {', '.join(URDF_GEOMETRY)}")
    return out
