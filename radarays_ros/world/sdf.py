"""SDFormat (1.6-1.11) worlds and models -> EntitySpecs.

Public API::

    parse_sdf_file(path, materials, **options) -> ParsedWorld
    parse_sdf_string(text, base_dir, materials, source="<string>", **options) -> ParsedWorld
    model_entities(model, pose=None, base_dir=None, materials=None, name=None, static=None,
                   report=None, **options) -> list[EntitySpec]

materials: a MaterialLibrary used as it is (e.g. a scene's own), or a YAML path / None: the shipped
library with that file merged over it. It supplies the names `<radarays><material>` may use and the
lidar part of `<radarays_material>` materials.
options: geometry="visual"|"collision", ignore=(globs on scoped names), resource_paths=(),
strict=True, collada_up_axis="ignore"|"apply".

What is read:

* `<world>` (or a file whose root holds `<model>`s), nested `<model>`, `<link>`, `<visual>` (or
  `<collision>` with geometry="collision"), `<include>` (uri, name, pose, static; model directories
  with model.config, .sdf files, URDF files), `<frame>`, `<joint>` frames, `<static>` (inherited).
* `<pose>`: "x y z roll pitch yaw" (R = Rz·Ry·Rx), `degrees="true"`, `rotation_format="quat_xyzw"`
  (7 numbers), `relative_to` naming a frame of the enclosing model (link, nested model, frame, joint,
  `__model__`, nested `a::b`) or, for models, of the world. Without relative_to: a model is relative to
  its parent model (or the world), a link to its model, a visual to its link, a frame to attached_to.
* geometry: box, cylinder, sphere, capsule, ellipsoid, plane (finite patch of `size` facing `normal`),
  mesh (uri, scale, submesh name/center), heightmap (grayscale image uri, size, pos), polyline
  (point*, height), empty.
* Materials: `<radarays_material><velocity/><ambient/><diffuse/><specular/></radarays_material>` in a
  visual, read as RadaRays' Gazebo plugin reads it (a missing value is 0.0): becomes the Material
  "sdf:<scoped visual name>" with radar {velocity, brdf: radarays, A: ambient, B: diffuse, C: specular}
  and the library default's lidar part. `<radarays><material>NAME</material></radarays>` names a library
  material (and wins over `<radarays_material>`). Everything else: the library's assign rules.
  Namespaced forms, which sdformat (Gazebo) copies without its "not defined in SDF" warning:
  `<radarays:material>NAME</radarays:material>`, `<radarays:radarays_material>` (or `gz:` as the prefix),
  with `xmlns:radarays="https://github.com/uos/radarays_ros"` on `<sdf>`; an undeclared prefix of ours is
  declared for the reader (a world handed back by Gazebo may lack it). The shipped worlds use these.
* Ignored: a model/link/visual holding `<rmagine_ignore/>`, `<radarays_ignore/>` or `<radarays:ignore/>`, and every scoped
  name (`model`, `model::link`, `model::link::visual`) matching one of the `ignore` globs.

Entity names are scoped: `model::link::visual`, nested `outer::inner::link::visual`.
Errors are WorldError naming file:line and the element. With strict=False an entity whose URI cannot be
resolved (or whose mesh or heightmap file cannot be read) is skipped and recorded in the report instead
(`UnresolvedResource` is the WorldError subclass of those cases); errors in the SDF itself (malformed
XML, unknown geometry, bad numbers, NaN poses, unknown frames) raise in both modes.

    material_tags(text, base_dir, materials, models=None, ...) -> dict[scoped visual name, (name, Material|None)]

reads only the material tags of a world or model (no geometry, no mesh files): the Gazebo mirror uses it
on `generate_world_sdf` answers and on spawned models' own model files.
"""
from __future__ import annotations

import copy
import fnmatch
import itertools
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from lxml import etree

from ..errors import ConfigError, WorldError
from . import primitives
from .entities import EntitySpec, LoadReport, material_library
from .heightmap import heightmap_mesh
from .materials import Material, MaterialLibrary
from .meshfiles import UP_AXIS_MODES, load_mesh
from .mesh import TriMesh
from .transforms import pose_to_matrix, quaternion_to_matrix
from .uris import ResourceResolver

GEOMETRY_TYPES = ("box", "cylinder", "sphere", "capsule", "ellipsoid", "plane", "mesh", "heightmap", "polyline", "empty")
GEOMETRY_MODES = ("visual", "collision")
IGNORE_TAGS = ("rmagine_ignore", "radarays_ignore")
SUPPORTED_VERSIONS = ("1.6", "1.7", "1.8", "1.9", "1.10", "1.11")
MAX_INCLUDE_DEPTH = 16
MAX_INCLUDES = 2000
_BASE = "__radarays_base_dir"  # bookkeeping attributes put on included model elements
_SOURCE = "__radarays_source"


class UnresolvedResource(WorldError):
    """A URI that resolves nowhere, or a mesh/heightmap file that cannot be read (skippable with strict=False)."""


@dataclass
class ParsedWorld:
    name: str
    entities: list[EntitySpec] = field(default_factory=list)
    report: LoadReport = field(default_factory=LoadReport)


@dataclass
class _Options:
    library: MaterialLibrary
    resolver: ResourceResolver
    geometry: str = "visual"
    ignore: tuple = ()
    strict: bool = True
    collada_up_axis: str = "ignore"
    report: LoadReport = field(default_factory=LoadReport)
    includes: int = 0  # <include>s expanded so far (bounded: a fan-out of 8 over 6 levels is 262 144)


def _options(materials, geometry, ignore, resource_paths, strict, collada_up_axis, report) -> _Options:
    if geometry not in GEOMETRY_MODES:
        raise ConfigError(f"geometry '{geometry}': allowed values {', '.join(GEOMETRY_MODES)}")
    if collada_up_axis not in UP_AXIS_MODES:
        raise ConfigError(f"collada_up_axis '{collada_up_axis}': allowed values {', '.join(UP_AXIS_MODES)}")
    if isinstance(ignore, str):
        ignore = (ignore,)
    library = materials if isinstance(materials, MaterialLibrary) else material_library(materials)
    return _Options(library, ResourceResolver(resource_paths), geometry, tuple(ignore), bool(strict),
                    collada_up_axis, report if report is not None else LoadReport())


# -- entry points -----------------------------------------------------------------------------------
def parse_sdf_file(path, materials=None, *, geometry="visual", ignore=(), resource_paths=(), strict=True,
                   collada_up_axis="ignore") -> ParsedWorld:
    """Entities of an SDF world or model file. `materials`: a MaterialLibrary, a path or None (shipped)."""
    path = Path(path)
    try:
        text = path.read_bytes()
    except OSError as exc:
        raise WorldError(f"world file {path}: cannot be read ({exc.strerror or exc})") from None
    return parse_sdf_string(text, path.absolute().parent, materials, source=str(path), geometry=geometry, ignore=ignore,
                            resource_paths=resource_paths, strict=strict, collada_up_axis=collada_up_axis)


def parse_sdf_string(text, base_dir, materials=None, *, source="<string>", geometry="visual", ignore=(),
                     resource_paths=(), strict=True, collada_up_axis="ignore") -> ParsedWorld:
    """Entities of SDF text; relative URIs resolve against `base_dir`."""
    opts = _options(materials, geometry, ignore, resource_paths, strict, collada_up_axis, None)
    scope = _top_scope(text, base_dir, source, opts)
    name = scope.get("name") or Path(source).stem
    _expand_includes(scope, opts, depth=0)
    world = ParsedWorld(name, report=opts.report)
    frames = _Frames(scope, opts, world_scope=True)
    for child in scope:
        if child.tag == "model":
            pose = frames.pose(child.get("name", ""))
            world.entities += _model_specs(child, pose, "", False, opts)
        elif child.tag == "actor":
            opts.report.warn(f"{_where(child)}: actors (animated meshes) are not mirrored; skipped")
    if not world.entities:
        opts.report.warn(f"{source}: the world holds no geometry (no <{opts.geometry}> to load); the scene is empty")
    return world


def _top_scope(text, base_dir, source: str, opts: _Options):
    """The <world> (or the <sdf> holding models) of SDF text, stamped with its base directory."""
    root = parse_xml(text, source)
    base_dir = Path(base_dir).absolute() if base_dir is not None else Path.cwd()
    _stamp(root, base_dir, source)
    if root.tag != "sdf":
        if root.tag in ("model", "world"):
            wrapper = etree.Element("sdf")
            wrapper.append(root)
            root = wrapper
            _stamp(root, base_dir, source)
        else:
            raise WorldError(f"{source}:{root.sourceline}: root element <{root.tag}>; expected <sdf>")
    version = root.get("version")
    if version is not None and version not in SUPPORTED_VERSIONS:
        opts.report.warn(f"{source}: SDFormat version {version} is outside the tested 1.6-1.11; reading it anyway")
    worlds = root.findall("world")
    if len(worlds) > 1:
        opts.report.warn(f"{source}: {len(worlds)} <world> elements; only the first, '{worlds[0].get('name')}', is loaded")
    return worlds[0] if worlds else root


def material_tags(text, base_dir=None, materials=None, *, models=None, source="<string>", resource_paths=(),
                  report=None) -> dict[str, tuple[str, Material | None]]:
    """Material tags of every `<visual>` of SDF text (a world, or a file holding a model), by scoped name
    `model::link::visual`: (material name, its Material when `<radarays_material>` defined it, else None).
    Visuals without a tag are absent. No geometry or mesh file is read; `<include>`s are followed
    (leniently: one that resolves nowhere is recorded in `report`). `models`: top-level model names to
    read (None: all). Bad tag values raise WorldError as in a world load."""
    opts = _options(materials, "visual", (), resource_paths, False, "ignore", report)
    scope = _top_scope(text, base_dir, source, opts)
    if models is not None:
        wanted = set(models)
        for child in list(scope):
            named = child.get("name") if child.tag == "model" else (child.findtext("name") or "").strip()
            if child.tag in ("model", "include") and named and named not in wanted:
                scope.remove(child)  # other models: neither expanded nor read
    _expand_includes(scope, opts, depth=0)
    out: dict[str, tuple[str, Material | None]] = {}
    for model in scope.findall("model"):
        if models is None or model.get("name") in models:
            _collect_tags(model, "", opts, out)
    return out


def _collect_tags(model, prefix: str, opts: _Options, out: dict) -> None:
    scoped = f"{prefix}{model.get('name', '')}"
    for link in model.findall("link"):
        for shape in link.findall("visual"):
            name = f"{scoped}::{link.get('name', '')}::{shape.get('name') or 'visual'}"
            override, material = _material_tags(shape, name, opts)
            if override is not None:
                out[name] = (override, material)
    for nested in model.findall("model"):
        _collect_tags(nested, f"{scoped}::", opts, out)


def model_entities(model, pose=None, base_dir=None, materials=None, *, name=None, static=None, report=None,
                   geometry="visual", ignore=(), resource_paths=(), strict=True, collada_up_axis="ignore",
                   source="<model>") -> list[EntitySpec]:
    """Entities of one model given as XML text or an lxml element: `<model>`, `<include>`, or `<sdf>`
    holding one of those (as Gazebo's spawn service takes). `pose` (4x4, world frame) replaces the
    model's own `<pose>`; `name`/`static` override the model's. Used by the Gazebo mirror for spawned
    models. Pass a LoadReport as `report` to collect warnings and unresolved URIs."""
    opts = _options(materials, geometry, ignore, resource_paths, strict, collada_up_axis, report)
    if isinstance(model, (str, bytes)):
        element = parse_xml(model, source)
    else:
        element = copy.deepcopy(model)
    base_dir = Path(base_dir).absolute() if base_dir is not None else Path.cwd()
    _stamp(element, base_dir, source)
    if element.tag == "sdf":
        candidates = [c for c in element if c.tag in ("model", "include")]
        if len(candidates) != 1:
            raise WorldError(f"{source}: expected exactly one <model> or <include> in <sdf>, found {len(candidates)}")
        element = candidates[0]
    if element.tag not in ("model", "include"):
        raise WorldError(f"{source}:{element.sourceline}: <{element.tag}>; expected <model> or <include>")
    holder = etree.Element("world")
    _stamp(holder, base_dir, source)
    holder.append(element)
    _expand_includes(holder, opts, depth=0)
    models = [c for c in holder if c.tag == "model"]
    if not models:
        return []
    model_el = models[0]
    if name is not None:
        model_el.set("name", str(name))
    if static is not None:
        _set_child_text(model_el, "static", "true" if static else "false")
    if pose is None:
        pose = _Frames(holder, opts, world_scope=True).pose(model_el.get("name", ""))
    else:
        pose = np.asarray(pose, dtype=float)
        if pose.shape != (4, 4) or not np.all(np.isfinite(pose)):
            raise WorldError(f"{source}: pose of model '{model_el.get('name')}' must be a finite 4x4 matrix")
    return _model_specs(model_el, pose, "", False, opts)


def parse_xml(text, source: str) -> etree._Element:
    """Parse XML; malformed input -> WorldError with file and line."""
    if isinstance(text, str):
        text = text.encode()
    text = _declare_our_prefixes(text)
    parser = etree.XMLParser(remove_comments=True, resolve_entities=False, no_network=True)
    try:
        root = etree.fromstring(text, parser)
    except etree.XMLSyntaxError as exc:
        line = exc.position[0] if exc.position else exc.lineno
        raise WorldError(f"{source}:{line}: malformed XML: {exc.msg}") from None
    if root is None:
        raise WorldError(f"{source}: empty document")
    return root


OUR_NAMESPACES = {"radarays": b"https://github.com/uos/radarays_ros", "gz": b"http://gazebosim.org/schema"}


def _declare_our_prefixes(text: bytes) -> bytes:
    """Declare `xmlns:radarays` / `xmlns:gz` on the root element when the document uses the prefix without
    declaring it: a world Gazebo hands back (generate_world_sdf) or a hand-written one still parses."""
    for prefix, uri in OUR_NAMESPACES.items():
        if b"<" + prefix.encode() + b":" in text and b"xmlns:" + prefix.encode() not in text:
            start = re.search(rb"<(?![?!])[A-Za-z_][\w.-]*", text)
            if start is not None:
                text = text[:start.end()] + b' xmlns:' + prefix.encode() + b'="' + uri + b'"' + text[start.end():]
    return text


# -- includes ---------------------------------------------------------------------------------------
def _stamp(element, base_dir: Path, source: str) -> None:
    element.set(_BASE, str(base_dir))
    element.set(_SOURCE, str(source))


def _origin(element) -> tuple[Path, str]:
    """(base directory for relative URIs, source file) of an element: its nearest stamped ancestor."""
    for el in itertools.chain([element], element.iterancestors()):
        if el.get(_BASE) is not None:
            return Path(el.get(_BASE)), el.get(_SOURCE, "")
    return Path.cwd(), "<sdf>"


def _where(element) -> str:
    _, source = _origin(element)
    qname = etree.QName(element)
    label = f"<{element.prefix}:{qname.localname}" if element.prefix else f"<{qname.localname}"
    if element.get("name"):
        label += f" name='{element.get('name')}'"
    return f"{source}:{element.sourceline} {label}>"


def _expand_includes(scope, opts: _Options, depth: int) -> None:
    """Replace every <include> under `scope` (world or model, recursively) by the model it names."""
    for inc in list(scope.iter("include")):
        if inc.getparent() is None or inc.getparent().tag not in ("world", "model"):
            continue
        if depth > MAX_INCLUDE_DEPTH:
            raise WorldError(f"{_where(inc)}: includes nested deeper than {MAX_INCLUDE_DEPTH} (a cycle?)")
        opts.includes += 1
        if opts.includes > MAX_INCLUDES:
            raise WorldError(f"{_where(inc)}: more than {MAX_INCLUDES} <include>s in one world")
        model = _load_include(inc, opts)
        parent = inc.getparent()
        if model is None:
            parent.remove(inc)
            continue
        _expand_includes(model, opts, depth + 1)
        parent.replace(inc, model)


def _load_include(inc, opts: _Options):
    base, _ = _origin(inc)
    uri = (inc.findtext("uri") or "").strip()
    if not uri:
        raise WorldError(f"{_where(inc)}: <include> without <uri>")
    try:
        target = opts.resolver.resolve(uri, base, what=f"{_where(inc)} <uri>")
        model_file = _model_file_of(target, _where(inc))
        model = _read_model_file(model_file, _where(inc))
    except WorldError as exc:
        if opts.strict:
            raise
        opts.report.unresolved.append(uri)
        opts.report.warn(f"skipped include: {exc}")
        return None
    if inc.find("name") is not None and (inc.findtext("name") or "").strip():
        model.set("name", inc.findtext("name").strip())
    if inc.find("pose") is not None:
        for old in model.findall("pose"):
            model.remove(old)
        pose = copy.deepcopy(inc.find("pose"))
        model.insert(0, pose)
        # the include's pose is written in the including file: keep its source for error messages
    if inc.find("static") is not None:
        _set_child_text(model, "static", inc.findtext("static"))
    if _has_ignore_tag(inc) and not _has_ignore_tag(model):
        model.append(etree.Element(IGNORE_TAGS[0]))
    if inc.find("placement_frame") is not None:
        opts.report.warn(f"{_where(inc)}: <placement_frame> is not supported; the model's own frame is placed")
    return model


def model_file_of(target: Path, where: str = "model") -> Path:
    """The SDF/URDF file of a model directory (the newest `<sdf>` named by model.config, else model.sdf
    or model.urdf), or `target` itself when it is a file."""
    return _model_file_of(Path(target), where)


def _model_file_of(target: Path, where: str) -> Path:
    if target.is_file():
        return target
    config = target / "model.config"
    if config.is_file():
        root = parse_xml(config.read_bytes(), str(config))
        choices = [(c.get("version", "0"), (c.text or "").strip()) for c in root.findall("sdf") if (c.text or "").strip()]
        if choices:
            choices.sort(key=lambda vc: tuple(int(x) for x in vc[0].split(".") if x.isdigit()))
            path = target / choices[-1][1]
            if not path.is_file():
                raise WorldError(f"{config}: names model file '{choices[-1][1]}', which does not exist")
            return path
    for name in ("model.sdf", "model.urdf"):
        if (target / name).is_file():
            return target / name
    raise WorldError(f"{where}: {target} is a directory without model.config or model.sdf")


def _read_model_file(path: Path, where: str):
    if path.suffix.lower() in (".urdf", ".xacro"):
        from .urdf import urdf_to_sdf_model

        model = urdf_to_sdf_model(path)
    else:
        root = parse_xml(path.read_bytes(), str(path))
        model = root if root.tag == "model" else root.find("model")
        if model is None:
            raise WorldError(f"{where}: {path} holds no <model>")
    _stamp(model, path.parent, str(path))
    return model


def _set_child_text(element, tag: str, text) -> None:
    child = element.find(tag)
    if child is None:
        child = etree.SubElement(element, tag)
    child.text = str(text)


# -- frames -----------------------------------------------------------------------------------------
def parse_pose(pose_el, what: str | None = None) -> np.ndarray:
    """4x4 matrix of a <pose> element (None -> identity)."""
    if pose_el is None:
        return np.eye(4)
    what = what or _where(pose_el)
    text = (pose_el.text or "").replace(",", " ").split()
    try:
        values = [float(t) for t in text]
    except ValueError:
        raise WorldError(f"{what}: pose '{pose_el.text}' is not numbers; expected 'x y z roll pitch yaw'") from None
    if not values:
        return np.eye(4)
    fmt = pose_el.get("rotation_format", "euler_rpy")
    if fmt not in ("euler_rpy", "quat_xyzw"):
        raise WorldError(f"{what}: rotation_format '{fmt}'; allowed: euler_rpy, quat_xyzw")
    want = 7 if fmt == "quat_xyzw" else 6
    if len(values) != want:
        raise WorldError(f"{what}: pose '{pose_el.text.strip()}' has {len(values)} numbers; expected {want}")
    if not all(math.isfinite(v) for v in values):
        raise WorldError(f"{what}: pose '{pose_el.text.strip()}' contains NaN or inf; expected finite numbers")
    degrees = (pose_el.get("degrees", "false").strip().lower() in ("true", "1"))
    if fmt == "quat_xyzw":
        m = np.eye(4)
        try:
            m[:3, :3] = quaternion_to_matrix(*values[3:])
        except ConfigError as exc:
            raise WorldError(f"{what}: {exc}") from None
        m[:3, 3] = values[:3]
        return m
    if degrees:
        values[3:] = [math.radians(v) for v in values[3:]]
    return pose_to_matrix(*values)


class _Frames:
    """Poses of the named frames of one scope (a model, or the world) in that scope's frame."""

    def __init__(self, scope, opts: _Options, world_scope: bool = False):
        self.scope = scope
        self.opts = opts
        self.world_scope = world_scope
        self.entries: dict[str, tuple] = {}
        self.cache: dict[str, np.ndarray] = {}
        self._nested: dict[str, _Frames] = {}
        own = "world" if world_scope else "__model__"
        for child in scope:
            name = child.get("name")
            if not name:
                continue
            if child.tag in ("model", "link"):
                self.entries[name] = (child, own)
            elif child.tag == "frame":
                self.entries[name] = (child, child.get("attached_to") or own)
            elif child.tag == "joint" and not world_scope:
                self.entries[name] = (child, (child.findtext("child") or own).strip())

    def pose(self, name: str, stack: tuple = ()) -> np.ndarray:
        if name in ("", "__model__") or (self.world_scope and name == "world"):
            return np.eye(4)
        if name in self.cache:
            return self.cache[name]
        if "::" in name and name not in self.entries:
            head, rest = name.split("::", 1)
            element, _ = self._entry(head, stack)
            if element.tag != "model":
                raise WorldError(f"{_where(element)}: frame '{name}': '{head}' is not a nested model")
            nested = self._nested.setdefault(head, _Frames(element, self.opts))
            return self.pose(head, stack) @ nested.pose(rest)
        if name in stack:
            raise WorldError(f"{_where(self.scope)}: pose frames form a cycle: {' -> '.join(stack + (name,))}")
        element, default = self._entry(name, stack)
        pose_el = element.find("pose")
        relative_to = (pose_el.get("relative_to") if pose_el is not None else None) or default
        if relative_to == name:
            raise WorldError(f"{_where(element)}: pose is relative_to itself")
        result = self.pose(relative_to, stack + (name,)) @ parse_pose(pose_el, f"{_where(pose_el if pose_el is not None else element)} of '{name}'")
        self.cache[name] = result
        return result

    def _entry(self, name: str, stack: tuple):
        if name not in self.entries:
            known = ", ".join(sorted(self.entries)) or "(none)"
            raise WorldError(f"{_where(self.scope)}: unknown frame '{name}'"
                             + (f" (referenced by '{stack[-1]}')" if stack else "") + f"; frames here: {known}")
        return self.entries[name]


# -- models -----------------------------------------------------------------------------------------
def _flag(element, tag: str) -> bool:
    return (element.findtext(tag) or "").strip().lower() in ("true", "1")


def _has_ignore_tag(element) -> bool:
    """`<rmagine_ignore/>`, `<radarays_ignore/>` or the namespaced `<radarays:ignore/>` among the children."""
    return _ours(element, *IGNORE_TAGS, "ns:ignore") is not None


def _ignored(element, scoped: str, opts: _Options) -> bool:
    if _has_ignore_tag(element):
        return True
    return any(fnmatch.fnmatchcase(scoped, pattern) for pattern in opts.ignore)


def _model_specs(model, world_pose: np.ndarray, prefix: str, parent_static: bool, opts: _Options) -> list[EntitySpec]:
    name = model.get("name")
    if not name:
        raise WorldError(f"{_where(model)}: <model> without a name")
    scoped = f"{prefix}{name}"
    if _ignored(model, scoped, opts):
        return []
    static = parent_static or _flag(model, "static")
    frames = _Frames(model, opts)
    specs: list[EntitySpec] = []
    for child in model:
        if child.tag == "link":
            link_name = child.get("name")
            if not link_name:
                raise WorldError(f"{_where(child)}: <link> without a name")
            link_scoped = f"{scoped}::{link_name}"
            if _ignored(child, link_scoped, opts):
                continue
            link_pose = world_pose @ frames.pose(link_name)
            for shape in child.findall(opts.geometry):
                spec = _shape_spec(shape, link_scoped, link_pose, world_pose, frames, static, opts)
                if spec is not None:
                    specs.append(spec)
        elif child.tag == "model":
            specs += _model_specs(child, world_pose @ frames.pose(child.get("name", "")), f"{scoped}::", static, opts)
    return specs


def _shape_spec(shape, link_scoped, link_pose, model_pose, frames: _Frames, static, opts: _Options) -> EntitySpec | None:
    shape_name = shape.get("name") or shape.tag
    scoped = f"{link_scoped}::{shape_name}"
    if _ignored(shape, scoped, opts):
        return None
    pose_el = shape.find("pose")
    relative_to = pose_el.get("relative_to") if pose_el is not None else None
    frame = model_pose @ frames.pose(relative_to) if relative_to else link_pose
    pose = frame @ parse_pose(pose_el, f"{_where(pose_el)} of '{scoped}'" if pose_el is not None else None)
    try:
        mesh = _geometry_mesh(shape, scoped, opts)
    except UnresolvedResource as exc:  # errors in the SDF itself raise in both modes
        if opts.strict:
            raise
        opts.report.warn(f"skipped '{scoped}': {exc}")
        return None
    if mesh is None:
        return None
    mesh, dropped = mesh.drop_degenerate()
    if dropped:
        opts.report.warn(f"'{scoped}': dropped {dropped} degenerate (zero-area) triangle(s) of {mesh.source or 'its mesh'}")
    if mesh.n_faces == 0:
        opts.report.warn(f"'{scoped}': no triangles left; entity skipped")
        return None
    override, material = _material_tags(shape, scoped, opts) if opts.geometry == "visual" else (None, None)
    return EntitySpec(scoped, mesh, pose, static, override, material, link_offset=np.linalg.inv(link_pose) @ pose)


def _geometry_mesh(shape, scoped: str, opts: _Options) -> TriMesh | None:
    geometry = shape.find("geometry")
    where = _where(shape)
    if geometry is None:
        raise WorldError(f"{where}: no <geometry>")
    kinds = [c for c in geometry if isinstance(c.tag, str)]
    if not kinds:
        raise WorldError(f"{where}: empty <geometry>; allowed: {', '.join(GEOMETRY_TYPES)}")
    polylines = [c for c in kinds if c.tag == "polyline"]
    if polylines:
        height = _numbers(polylines[0], "height", 1, where)[0]
        pts = [[_vec(p, 2, f"{where} <polyline><point>") for p in pl.findall("point")] for pl in polylines]
        return _wrap_primitive(lambda: primitives.polyline(pts, height), where)
    g = kinds[0]
    tag = g.tag
    if tag == "box":
        return _wrap_primitive(lambda: primitives.box(_numbers(g, "size", 3, where)), where)
    if tag == "cylinder":
        return _wrap_primitive(lambda: primitives.cylinder(*_numbers(g, "radius", 1, where), *_numbers(g, "length", 1, where)), where)
    if tag == "sphere":
        return _wrap_primitive(lambda: primitives.sphere(*_numbers(g, "radius", 1, where)), where)
    if tag == "capsule":
        return _wrap_primitive(lambda: primitives.capsule(*_numbers(g, "radius", 1, where), *_numbers(g, "length", 1, where)), where)
    if tag == "ellipsoid":
        return _wrap_primitive(lambda: primitives.ellipsoid(_numbers(g, "radii", 3, where)), where)
    if tag == "plane":
        normal = _numbers(g, "normal", 3, where, default=(0, 0, 1))
        return _wrap_primitive(lambda: primitives.plane(normal, _numbers(g, "size", 2, where, default=(1, 1))), where)
    if tag == "mesh":
        return _mesh_geometry(g, where, opts)
    if tag == "heightmap":
        uri = (g.findtext("uri") or "").strip()
        if not uri:
            raise WorldError(f"{where}: <heightmap> without <uri>")
        size = _numbers(g, "size", 3, where, default=(1, 1, 1))
        pos = _numbers(g, "pos", 3, where, default=(0, 0, 0))
        if size[0] <= 0 or size[1] <= 0 or size[2] < 0:
            raise WorldError(f"{where} <heightmap><size>: {list(size)}; expected x, y > 0 and z >= 0")
        path = _resolve(uri, g, opts, f"{where} <heightmap><uri>")
        try:
            return heightmap_mesh(path, size, pos, what=f"{where} <heightmap>")
        except WorldError as exc:  # the image is missing or unreadable
            raise UnresolvedResource(str(exc)) from None
    if tag == "empty":
        return None
    raise WorldError(f"{where}: unknown geometry <{tag}>; allowed: {', '.join(GEOMETRY_TYPES)}")


def _wrap_primitive(build, where: str) -> TriMesh:
    try:
        return build()
    except WorldError as exc:
        if str(exc).startswith(where):
            raise
        raise WorldError(f"{where}: {exc}") from None


def _mesh_geometry(g, where: str, opts: _Options) -> TriMesh:
    uri = (g.findtext("uri") or "").strip()
    if not uri:
        raise WorldError(f"{where}: <mesh> without <uri>")
    scale = _numbers(g, "scale", 3, where, default=(1, 1, 1))
    if np.any(np.asarray(scale) == 0):
        raise WorldError(f"{where}: <scale> {scale} has a zero component")
    path = _resolve(uri, g, opts, f"{where} <mesh><uri>")
    sub = g.find("submesh")
    sub_name = (sub.findtext("name") or "").strip() if sub is not None else ""
    center = sub is not None and (sub.findtext("center") or "").strip().lower() in ("true", "1")
    try:
        mesh = load_mesh(path, submesh=sub_name or None, center_submesh=center, collada_up_axis=opts.collada_up_axis, what=where)
    except WorldError as exc:  # unreadable mesh file, or a submesh it does not hold
        raise UnresolvedResource(str(exc)) from None
    return mesh if np.allclose(scale, 1.0) else mesh.scaled(scale)


def _resolve(uri: str, element, opts: _Options, what: str) -> Path:
    base, _ = _origin(element)
    try:
        return opts.resolver.resolve(uri, base, what=what)
    except WorldError as exc:
        if not opts.strict:
            opts.report.unresolved.append(uri)
        raise UnresolvedResource(str(exc)) from None


def _numbers(element, tag: str, n: int, where: str, default=None) -> tuple[float, ...]:
    child = element.find(tag)
    if child is None or not (child.text or "").strip():
        if default is None:
            raise WorldError(f"{where}: <{element.tag}> needs <{tag}> ({n} number{'s' if n > 1 else ''})")
        return tuple(float(x) for x in default)
    return _vec(child, n, f"{where} <{element.tag}><{tag}>")


def _vec(child, n: int, what: str) -> tuple[float, ...]:
    try:
        values = tuple(float(t) for t in (child.text or "").split())
    except ValueError:
        raise WorldError(f"{what}: '{child.text}' is not {n} numbers") from None
    if len(values) != n or not all(math.isfinite(v) for v in values):
        raise WorldError(f"{what}: '{(child.text or '').strip()}': expected {n} finite number(s)")
    return values


# -- materials --------------------------------------------------------------------------------------
RADARAYS_MATERIAL_KEYS = ("velocity", "ambient", "diffuse", "specular")


OUR_PREFIXES = ("radarays", "gz")  # namespace prefixes of our tags (declared on <sdf> with xmlns:PREFIX="...")


def _ours(element, *names: str):
    """The first child of `element` named one of `names`, plain (`<radarays_material>`) or in one of our
    namespaces (`<radarays:radarays_material>`, `<gz:radarays>`): sdformat copies namespaced elements without
    its "not defined in SDF" warning, plain ones with it. `<radarays:material>` is asked for as 'ns:material'."""
    for child in element:
        if not isinstance(child.tag, str):
            continue
        qname = etree.QName(child)
        if qname.namespace is None:
            if qname.localname in names:
                return child
        elif child.prefix in OUR_PREFIXES and (qname.localname in names or f"ns:{qname.localname}" in names):
            return child
    return None


def _text_of(element, key: str) -> str:
    found = _ours(element, key, f"ns:{key}")
    return (found.text or "").strip() if found is not None else ""


def _material_tags(shape, scoped: str, opts: _Options) -> tuple[str | None, Material | None]:
    ours = _ours(shape, "radarays")  # <radarays><material>NAME</material></radarays>
    named = _ours(shape, "ns:material")  # <radarays:material>NAME</radarays:material>
    for where, name in ((ours, _text_of(ours, "material") if ours is not None else ""),
                        (named, (named.text or "").strip() if named is not None else "")):
        if not name:
            continue
        if name not in opts.library.names:
            raise WorldError(f"{_where(where)} of '{scoped}': unknown material '{name}'; known: {', '.join(opts.library.names)}")
        return name, None
    tag = _ours(shape, "radarays_material")
    if tag is None:
        return None, None
    values = {}
    for key in RADARAYS_MATERIAL_KEYS:
        text = _text_of(tag, key)
        if not text:
            values[key] = 0.0  # the plugin's sdf Get<float> of a missing child is 0
            opts.report.warn(f"{_where(tag)} of '{scoped}': no <{key}>; 0.0 used, as RadaRays' Gazebo plugin does")
            continue
        try:
            values[key] = float(text)
        except ValueError:
            raise WorldError(f"{_where(tag)} of '{scoped}': <{key}> '{text}' is not a number") from None
        if not math.isfinite(values[key]):
            raise WorldError(f"{_where(tag)} of '{scoped}': <{key}> is {text}; expected a finite number")
    library = opts.library
    lidar = dict(library[library.id_of(library.default)].lidar)
    name = f"sdf:{scoped}"
    _, source = _origin(tag)
    radar = {"velocity": values["velocity"], "brdf": "radarays", "A": values["ambient"], "B": values["diffuse"], "C": values["specular"]}
    return name, Material(name, radar, lidar, origin=f"{source}:{tag.sourceline} <radarays_material> of '{scoped}'")
