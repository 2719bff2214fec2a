"""Load any world source into a Scene: `load_world(path, ...)`.

Public API (radarays_ros.world.loader)::

    load_world(path, materials=None, geometry="visual", ignore=(), resource_paths=(), strict=True,
               collada_up_axis="ignore") -> Scene
    add_entities(scene, specs) -> list[int]                        (from .entities)
    EntitySpec(name, mesh, pose, static, material_override, material)   (from .entities)
    LoadReport(warnings, unresolved)                               (from .entities)
    material_library(materials) -> MaterialLibrary                 (shipped library, `materials` merged over it)
    parse_sdf_file / parse_sdf_string / model_entities / ParsedWorld (from .sdf)
    urdf_to_sdf_model(path) -> lxml <model> element                (from .urdf)
    load_mesh(path, submesh=None, center_submesh=False, collada_up_axis="ignore") -> TriMesh (from .meshfiles)
    ResourceResolver(resource_paths=()).resolve(uri, base_dir)     (from .uris)

`path` may be:

* the name of a shipped world (`office`, `street`, `hall`, `gz_radarays_demo`; `world_path`);
* an SDF world or model file (.sdf, .world, or any XML whose root is <sdf>);
* a model directory (holding model.config and/or model.sdf);
* a URDF file (.urdf, or .xacro with the xacro package);
* a bare mesh map (.ply/.stl/.obj/.dae/.glb/.gltf): ONE static entity named after the file stem at the
  origin, its TriMesh keeping per-face part names and mesh material names for the assign rules.

`materials`: None (the shipped library, package data materials/default.yaml), a YAML path, or a
MaterialLibrary; a given library is merged over the shipped one (its materials replace same-named ones,
its assign rules come first, its default wins). `geometry`: "visual" (what Gazebo's sensors see) or
"collision". `ignore`: globs on scoped names (`model`, `model::link`, `model::link::visual`).
`resource_paths`: searched before the environment's (see uris.py). `strict=False` skips entities whose
URI cannot be resolved or whose mesh/heightmap file cannot be read, and lists them in `scene.unresolved`
and `scene.warnings` instead of raising; errors in the file itself (malformed XML, unknown geometry,
bad numbers, NaN poses, unknown frames) raise WorldError in both modes. Non-fatal findings (degenerate triangles dropped, empty world,
missing <radarays_material> values, ...) always go to `scene.warnings`.
"""
from __future__ import annotations

import fnmatch
from pathlib import Path

import numpy as np

from ..errors import ConfigError, WorldError
from ..resources import find_shipped, not_shipped
from .entities import EntitySpec, LoadReport, add_entities, material_library
from .meshfiles import MESH_SUFFIXES, UP_AXIS_MODES, load_mesh
from .scene import Scene
from .sdf import GEOMETRY_MODES, ParsedWorld, model_entities, parse_sdf_file, parse_sdf_string, parse_xml
from .uris import ResourceResolver
from .urdf import urdf_to_sdf_model

__all__ = [
    "EntitySpec", "LoadReport", "ParsedWorld", "ResourceResolver", "add_entities", "load_mesh", "load_world",
    "material_library", "model_entities", "parse_sdf_file", "parse_sdf_string", "urdf_to_sdf_model",
]

SDF_SUFFIXES = (".sdf", ".world")
URDF_SUFFIXES = (".urdf", ".xacro")


def load_world(path, materials=None, geometry: str = "visual", ignore=(), resource_paths=(), strict: bool = True,
               collada_up_axis: str = "ignore") -> Scene:
    """A Scene of every entity in a world file, model directory, URDF or mesh map (see module doc)."""
    if geometry not in GEOMETRY_MODES:
        raise ConfigError(f"geometry '{geometry}': allowed values {', '.join(GEOMETRY_MODES)}")
    if collada_up_axis not in UP_AXIS_MODES:
        raise ConfigError(f"collada_up_axis '{collada_up_axis}': allowed values {', '.join(UP_AXIS_MODES)}")
    path = world_path(path)
    library = material_library(materials)
    options = dict(geometry=geometry, ignore=ignore, resource_paths=resource_paths, strict=strict,
                   collada_up_axis=collada_up_axis)
    suffix = path.suffix.lower()
    if path.is_dir():
        parsed = _load_model_dir(path, library, options)
    elif suffix in MESH_SUFFIXES:
        parsed = _load_mesh_map(path, collada_up_axis, ignore)
    elif suffix in URDF_SUFFIXES or (suffix not in SDF_SUFFIXES and _root_tag(path) == "robot"):
        parsed = _load_urdf(path, library, options)
    else:
        parsed = parse_sdf_file(path, library, **options)
    scene = Scene(library, source=str(path))
    scene.warnings.extend(parsed.report.warnings)
    scene.unresolved.extend(dict.fromkeys(parsed.report.unresolved))
    add_entities(scene, parsed.entities)
    return scene


def world_path(source) -> Path:
    """A world file or model directory as given, else the shipped world of that name ('office');
    WorldError listing the shipped worlds when it is neither."""
    path = Path(source).expanduser()
    if path.exists():
        return path
    shipped = find_shipped("world", str(source))
    if shipped is not None:
        return shipped
    raise WorldError(not_shipped("world", str(source), f"world {path}: file or directory not found"))


def _root_tag(path: Path) -> str:
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError as exc:
        raise WorldError(f"world {path}: cannot be read ({exc.strerror or exc})") from None
    text = head.decode(errors="replace")
    for tag in ("robot", "sdf"):
        if f"<{tag}" in text:
            return tag
    allowed = ", ".join(SDF_SUFFIXES + URDF_SUFFIXES + MESH_SUFFIXES)
    raise WorldError(f"world {path}: not an SDF, URDF or mesh file (by suffix or content); allowed: {allowed}, or a model directory")


def _load_mesh_map(path: Path, up_axis: str, ignore) -> ParsedWorld:
    report = LoadReport()
    if any(fnmatch.fnmatchcase(path.stem, g) for g in ((ignore,) if isinstance(ignore, str) else ignore)):
        report.warn(f"{path}: the map entity '{path.stem}' matches an ignore glob; the scene is empty")
        return ParsedWorld(path.stem, [], report)
    mesh = load_mesh(path, collada_up_axis=up_axis)
    mesh, dropped = mesh.drop_degenerate()
    if dropped:
        report.warn(f"'{path.stem}': dropped {dropped} degenerate (zero-area) triangle(s) of {path}")
    if mesh.n_faces == 0:
        report.warn(f"{path}: the mesh holds no triangles; the scene is empty")
        return ParsedWorld(path.stem, [], report)
    return ParsedWorld(path.stem, [EntitySpec(path.stem, mesh, np.eye(4), True)], report)


def _load_model_dir(path: Path, library, options) -> ParsedWorld:
    from .sdf import model_file_of

    model_file = model_file_of(path, f"model directory {path}")
    if model_file.suffix.lower() in URDF_SUFFIXES:
        return _load_urdf(model_file, library, options)
    return parse_sdf_file(model_file, library, **options)


def _load_urdf(path: Path, library, options) -> ParsedWorld:
    from lxml import etree

    model = urdf_to_sdf_model(path)
    report = LoadReport()
    specs = model_entities(etree.tostring(model), None, path.parent, library, report=report, source=str(path), **options)
    if not specs:
        report.warn(f"{path}: the robot holds no geometry to load; the scene is empty")
    return ParsedWorld(model.get("name"), specs, report)
