"""SDF text from what Gazebo sends: a Scene message's model as an SDF `<model>` (for the world layer
to build entities from exactly as it builds them from a world file), and gz-sim's generate_world_sdf
answer made well-formed XML.

gz-sim 8 writes elements such as `<gz:...>` into its generated world without declaring the `gz`
namespace prefix (an XML namespace error for any conforming parser); `declare_prefixes` declares
every undeclared prefix on the root element, so the rest of the text, `<radarays>` tags included,
is read as written.
"""
from __future__ import annotations

import re

from . import protos
from .entity_tree import pose_matrix

_ROOT = re.compile(r"<([A-Za-z_][\w.\-]*(?::[\w.\-]+)?)(?=[\s/>])")
_ELEMENT_PREFIX = re.compile(r"</?([A-Za-z_][\w.\-]*):[A-Za-z_]")
_ATTRIBUTE_PREFIX = re.compile(r"\s([A-Za-z_][\w.\-]*):[A-Za-z_][\w.\-]*\s*=")
_DECLARED = re.compile(r"xmlns:([A-Za-z_][\w.\-]*)\s*=")


def declare_prefixes(text: str) -> str:
    """`text` with a namespace declaration (xmlns:P="urn:undeclared:P") on its root element for each
    prefix P used but declared nowhere; unchanged when there is none (or no root element)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    used = set(_ELEMENT_PREFIX.findall(text)) | set(_ATTRIBUTE_PREFIX.findall(text))
    missing = sorted(used - set(_DECLARED.findall(text)) - {"xml", "xmlns"})
    if not missing:
        return text
    body_start = _skip_prolog(text)
    root = _ROOT.search(text, body_start)
    if root is None:
        return text
    declarations = "".join(f' xmlns:{p}="urn:undeclared:{p}"' for p in missing)
    return text[: root.end()] + declarations + text[root.end():]


def _skip_prolog(text: str) -> int:
    """Index after the XML declaration, processing instructions, comments and doctype before the root."""
    position = 0
    while True:
        match = re.compile(r"\s*(<\?.*?\?>|<!--.*?-->|<!DOCTYPE[^>]*>)", re.S).match(text, position)
        if match is None:
            return position
        position = match.end()


def model_sdf(model) -> str:
    """SDF text of a Scene Model message (links, visuals, geometry, nested models), for the world
    layer to build entities from exactly as it builds them from a world file."""
    parts = [f'<model name="{_xml(model.name)}"><static>{"true" if model.is_static else "false"}</static>']
    parts.append(f"<pose>{_pose_text(model.pose)}</pose>")
    for link in model.link:
        parts.append(f'<link name="{_xml(link.name)}"><pose>{_pose_text(link.pose)}</pose>')
        for visual in link.visual:
            geometry = _geometry_sdf(visual.geometry)
            if geometry is None:
                continue
            parts.append(f'<visual name="{_xml(visual.name)}"><pose>{_pose_text(visual.pose)}</pose>'
                         f"<geometry>{geometry}</geometry></visual>")
        parts.append("</link>")
    for nested in model.model:
        parts.append(model_sdf(nested))
    parts.append("</model>")
    return "".join(parts)


def _xml(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace('"', "&quot;")


def _pose_text(pose) -> str:
    from ..world.transforms import matrix_to_rpy

    m = pose_matrix(pose)
    r, p, y = matrix_to_rpy(m[:3, :3])
    return " ".join(repr(float(v)) for v in (*m[:3, 3], r, p, y))


def _vec(v, n: int = 3) -> str:
    return " ".join(repr(float(getattr(v, a))) for a in "xyz"[:n])


def _geometry_sdf(g) -> str | None:
    G = protos.Geometry
    if g.type == G.BOX:
        return f"<box><size>{_vec(g.box.size)}</size></box>"
    if g.type == G.CYLINDER:
        return f"<cylinder><radius>{g.cylinder.radius!r}</radius><length>{g.cylinder.length!r}</length></cylinder>"
    if g.type == G.SPHERE:
        return f"<sphere><radius>{g.sphere.radius!r}</radius></sphere>"
    if g.type == G.CAPSULE:
        return f"<capsule><radius>{g.capsule.radius!r}</radius><length>{g.capsule.length!r}</length></capsule>"
    if g.type == G.ELLIPSOID:
        return f"<ellipsoid><radii>{_vec(g.ellipsoid.radii)}</radii></ellipsoid>"
    if g.type == G.PLANE:
        normal = _vec(g.plane.normal) if g.plane.HasField("normal") else "0 0 1"
        return f"<plane><normal>{normal}</normal><size>{_vec(g.plane.size, 2)}</size></plane>"
    if g.type == G.MESH:
        mesh = g.mesh
        scale = _vec(mesh.scale) if mesh.HasField("scale") else "1 1 1"
        submesh = ""
        if mesh.submesh:
            submesh = (f"<submesh><name>{_xml(mesh.submesh)}</name>"
                       f"<center>{'true' if mesh.center_submesh else 'false'}</center></submesh>")
        return f"<mesh><uri>{_xml(mesh.filename)}</uri><scale>{scale}</scale>{submesh}</mesh>"
    return None  # image, heightmap, lines...: nothing a ray tracer can use from the message


def world_sdf_request(expand_include_tags: bool = True) -> bytes:
    """A serialized gz.msgs.SdfGeneratorConfig for generate_world_sdf: with expand_include_tags the answer is
    the whole world as plain SDF (an `<include>` kept as such loses a spawned URDF robot's content)."""
    if not expand_include_tags:
        return b""
    # Protobuf wire format, hand-written (our protos do not carry SdfGeneratorConfig): field 2
    # global_entity_gen_config { field 1 expand_include_tags: gz.msgs.Boolean { field 2 data: true } }.
    boolean = b"\x10\x01"
    entity_config = b"\x0a" + bytes([len(boolean)]) + boolean
    return b"\x12" + bytes([len(entity_config)]) + entity_config
