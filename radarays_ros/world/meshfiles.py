"""Mesh files -> TriMesh, keeping where every face came from.

Formats: .obj (own reader), .dae (pycollada), .ply/.stl/.glb/.gltf (trimesh).

Face order (`TriMesh.face_ids`, the face index reported by ray casts):

* OBJ: the index of the `f` statement in the file (0-based); a polygon fan-triangulated into k
  triangles gives k faces with the same id.
* DAE: polygons numbered in document order: visual-scene nodes depth-first (a node's own geometry
  before its children, as written), each node's `<instance_geometry>` in order, each geometry's
  primitives in order, polygons in order. A polygon of a polylist keeps one id.
* glTF/GLB: geometry nodes in name order, then each geometry's triangles in their order.
* PLY/STL: the file's triangle order.

Part names (`TriMesh.part_names`, matched by material rules `object:`): OBJ `o`/`g` name (the latest
statement; an `o` clears the group), DAE node name (or id; an unnamed node takes its nearest named
ancestor's, as Gazebo does), glTF node name. Mesh material names (`mesh_material:` rules): OBJ
`usemtl`, DAE material name (or id), glTF material name.

COLLADA: `<unit meter>` is applied, as Gazebo does. `<up_axis>` is NOT applied by Gazebo (gz-common's
ColladaLoader reads only the unit; gazebo-classic issue #1305), so by default it is ignored here too;
`collada_up_axis="apply"` rotates Y_UP/X_UP files to Z-up as Assimp-style viewers do.
Node transforms of DAE/glTF are applied (the mesh is returned in the file's root frame).
"""
from __future__ import annotations

import threading
from pathlib import Path

import numpy as np

from ..errors import WorldError
from .mesh import TriMesh

MESH_SUFFIXES = (".obj", ".dae", ".ply", ".stl", ".glb", ".gltf")
UP_AXIS_MODES = ("ignore", "apply")

_cache: dict[tuple, TriMesh] = {}
_cache_lock = threading.Lock()


def load_mesh(path: str | Path, submesh: str | None = None, center_submesh: bool = False,
              collada_up_axis: str = "ignore", what: str | None = None) -> TriMesh:
    """Read a mesh file (cached by path, modification time and options).

    `submesh` keeps only the faces of the part (node/object) with that name, as SDF `<submesh><name>`
    does; `center_submesh` moves that part's bounding-box centre to the origin. `what` prefixes errors
    (e.g. the SDF element that referenced the file).
    """
    path = Path(path)
    label = f"{what}: " if what else ""
    if collada_up_axis not in UP_AXIS_MODES:
        raise WorldError(f"{label}collada_up_axis '{collada_up_axis}': allowed values {', '.join(UP_AXIS_MODES)}")
    try:
        stat = path.stat()
    except OSError:
        raise WorldError(f"{label}mesh file {path} not found") from None
    if path.is_dir():
        raise WorldError(f"{label}mesh file {path} is a directory")
    key = (str(path.resolve()), stat.st_mtime_ns, stat.st_size, submesh, center_submesh, collada_up_axis)
    with _cache_lock:
        if key in _cache:
            return _cache[key]
    mesh = _read(path, collada_up_axis, label)
    if submesh is not None:
        mesh = _select_part(mesh, submesh, center_submesh, f"{label}{path}")
    with _cache_lock:
        _cache[key] = mesh
    return mesh


def clear_cache() -> None:
    with _cache_lock:
        _cache.clear()


def _read(path: Path, up_axis: str, label: str) -> TriMesh:
    suffix = path.suffix.lower()
    try:
        if suffix == ".obj":
            return read_obj(path)
        if suffix == ".dae":
            return read_dae(path, up_axis)
        if suffix in (".ply", ".stl", ".glb", ".gltf"):
            return read_with_trimesh(path)
    except WorldError as exc:
        raise WorldError(f"{label}{exc}") from None
    except Exception as exc:  # a parser library failed on a malformed file: name it, never crash
        raise WorldError(f"{label}mesh file {path}: cannot be read ({type(exc).__name__}: {exc})") from None
    raise WorldError(f"{label}mesh file {path}: unsupported format '{suffix}'; supported: {', '.join(MESH_SUFFIXES)}")


def _select_part(mesh: TriMesh, name: str, center: bool, where: str) -> TriMesh:
    if name not in mesh.part_names:
        raise WorldError(f"{where}: submesh '{name}' not found; parts: {', '.join(p for p in mesh.part_names if p) or '(none)'}")
    part = mesh.select_faces(mesh.face_parts == mesh.part_names.index(name))
    if center and part.n_faces:
        used = part.vertices[np.unique(part.faces)]
        middle = (used.min(axis=0) + used.max(axis=0)) / 2
        part = part._with(vertices=part.vertices - middle)
    return part


# -- OBJ --------------------------------------------------------------------------------------------
def read_obj(path: str | Path) -> TriMesh:
    """Own OBJ reader: keeps face order, o/g/usemtl names, negative indices, fan-triangulated polygons."""
    path = Path(path)
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        raise WorldError(f"mesh file {path}: cannot be read ({exc})") from None
    vertex_rows: list[str] = []
    tri: list[tuple[int, int, int]] = []
    tri_poly: list[int] = []
    tri_part: list[int] = []
    tri_mat: list[int] = []
    parts: dict[str, int] = {"": 0}
    mats: dict[str, int] = {}
    part, mat, n_poly = 0, -1, 0
    obj_name = ""
    lines = text.replace("\\\n", " ").splitlines()
    for lineno, line in enumerate(lines, 1):
        line = line.strip()
        if not line or line[0] == "#":
            continue
        head, _, rest = line.partition(" ")
        if head == "v":
            vertex_rows.append(rest)
        elif head == "f":
            corners = []
            n_v = len(vertex_rows)
            for token in rest.split():
                try:
                    idx = int(token.split("/", 1)[0])
                except ValueError:
                    raise WorldError(f"mesh file {path}:{lineno}: bad face index '{token}'") from None
                idx = idx - 1 if idx > 0 else n_v + idx  # negative: relative to the vertices so far
                if idx < 0 or idx >= n_v:
                    raise WorldError(f"mesh file {path}:{lineno}: face index '{token}' out of range 1..{n_v}")
                corners.append(idx)
            if len(corners) < 3:
                raise WorldError(f"mesh file {path}:{lineno}: a face needs at least 3 vertices, got {len(corners)}")
            for k in range(1, len(corners) - 1):
                tri.append((corners[0], corners[k], corners[k + 1]))
                tri_poly.append(n_poly)
                tri_part.append(part)
                tri_mat.append(mat)
            n_poly += 1
        elif head == "o":
            obj_name = rest.strip()
            part = parts.setdefault(obj_name, len(parts))
        elif head == "g":
            group = " ".join(rest.split()) or obj_name
            part = parts.setdefault(group, len(parts))
        elif head == "usemtl":
            name = rest.strip()
            mat = mats.setdefault(name, len(mats)) if name else -1
    vertices = _parse_vertex_rows(vertex_rows, path)
    return TriMesh(
        vertices,
        np.asarray(tri, dtype=np.int64).reshape(-1, 3),
        np.asarray(tri_poly, dtype=np.int32),
        np.asarray(tri_part, dtype=np.int32),
        list(parts),
        np.asarray(tri_mat, dtype=np.int32),
        list(mats),
        source=str(path),
    )


def _parse_vertex_rows(rows: list[str], path: Path) -> np.ndarray:
    if not rows:
        return np.zeros((0, 3))
    try:
        # x y z [w] [r g b]: only the first three numbers are positions
        values = [r.split()[:3] for r in rows]
        arr = np.asarray(values, dtype=np.float64)
    except ValueError:
        raise WorldError(f"mesh file {path}: a 'v' line does not hold three numbers") from None
    if arr.ndim != 2 or arr.shape[1] != 3:
        raise WorldError(f"mesh file {path}: a 'v' line does not hold three numbers")
    if not np.all(np.isfinite(arr)):
        raise WorldError(f"mesh file {path}: vertex coordinates contain NaN or inf")
    return arr


# -- COLLADA ----------------------------------------------------------------------------------------
def read_dae(path: str | Path, up_axis: str = "ignore") -> TriMesh:
    """COLLADA via pycollada: node transforms, <unit meter> and (optionally) <up_axis> applied."""
    import collada  # lazy: pycollada is only needed for .dae

    path = Path(path)
    try:
        doc = collada.Collada(str(path), ignore=[collada.common.DaeUnsupportedError, collada.common.DaeBrokenRefError])
    except Exception as exc:
        raise WorldError(f"mesh file {path}: not a readable COLLADA file ({type(exc).__name__}: {exc})") from None
    builder = _Builder(str(path))
    scene = doc.scene
    if scene is not None:
        for node in scene.nodes:
            _walk_dae_node(node, np.eye(4), "", builder)
    mesh = builder.mesh()
    info = doc.assetInfo
    meter = float(info.unitmeter) if info is not None and info.unitmeter else 1.0
    fix = np.eye(4)
    fix[:3, :3] *= meter
    if up_axis == "apply" and info is not None:
        axis = str(info.upaxis or "Y_UP").upper()
        if axis.startswith("Y"):
            fix = _rotation(np.array([[1, 0, 0], [0, 0, -1], [0, 1, 0]])) @ fix  # Rx(+90°): y -> z
        elif axis.startswith("X"):
            fix = _rotation(np.array([[0, 0, -1], [0, 1, 0], [1, 0, 0]])) @ fix  # Ry(-90°): x -> z
    if not np.allclose(fix, np.eye(4)):
        mesh = mesh._with(vertices=mesh.vertices @ fix[:3, :3].T)
    return mesh


def _rotation(r: np.ndarray) -> np.ndarray:
    m = np.eye(4)
    m[:3, :3] = r
    return m


def _walk_dae_node(node, parent: np.ndarray, inherited_name: str, builder: "_Builder") -> None:
    import collada

    if isinstance(node, collada.scene.GeometryNode):
        _add_dae_geometry(node, parent, inherited_name, builder)
        return
    if not isinstance(node, collada.scene.Node):
        return  # cameras, lights
    matrix = parent @ np.asarray(node.matrix, dtype=np.float64)
    xml = getattr(node, "xmlnode", None)
    name = (xml.get("name") if xml is not None else None) or node.id or inherited_name
    for child in node.children:
        _walk_dae_node(child, matrix, name, builder)


def _add_dae_geometry(geom_node, matrix: np.ndarray, node_name: str, builder: "_Builder") -> None:
    import collada

    symbols = {}
    for m in geom_node.materials:
        target = m.target
        symbols[m.symbol] = (getattr(target, "name", None) or getattr(target, "id", None) or m.symbol) if target else m.symbol
    geometry = geom_node.geometry
    for prim in geometry.primitives:
        if isinstance(prim, collada.triangleset.TriangleSet):
            idx = np.asarray(prim.vertex_index, dtype=np.int64).reshape(-1, 3)
            counts = np.full(len(idx), 3)
            flat = idx.reshape(-1)
        elif isinstance(prim, collada.polylist.Polylist):  # Polygons derives from Polylist
            counts = np.asarray(prim.vcounts, dtype=np.int64)
            flat = np.asarray(prim.vertex_index, dtype=np.int64).reshape(-1)
        else:
            continue  # lines carry no surface
        verts = np.asarray(prim.vertex, dtype=np.float64).reshape(-1, 3) if prim.vertex is not None else np.zeros((0, 3))
        faces, poly = _fan(counts, flat)
        verts = verts @ matrix[:3, :3].T + matrix[:3, 3]
        material = symbols.get(prim.material, prim.material or "")
        builder.add(verts, faces, poly, node_name or geometry.name or geometry.id or "", material)


def _fan(counts: np.ndarray, flat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Fan-triangulate polygons given per-polygon corner counts; returns (faces, polygon index)."""
    counts = counts[counts >= 3] if np.any(counts < 3) else counts
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64) if len(counts) else np.zeros(0, np.int64)
    n_tri = counts - 2
    poly = np.repeat(np.arange(len(counts)), n_tri)
    k = np.arange(int(n_tri.sum())) - np.repeat(np.cumsum(n_tri) - n_tri, n_tri)
    first = np.repeat(starts, n_tri)
    faces = np.stack([flat[first], flat[first + k + 1], flat[first + k + 2]], axis=1) if len(poly) else np.zeros((0, 3), np.int64)
    return faces, poly


class _Builder:
    """Accumulates pieces (vertices, faces, polygon ids, part, material) into one TriMesh."""

    def __init__(self, source: str):
        self.source = source
        self.pieces: list[tuple] = []
        self.parts: dict[str, int] = {}
        self.mats: dict[str, int] = {}
        self.next_id = 0

    def add(self, verts, faces, poly_ids, part: str, material: str | None) -> None:
        part_id = self.parts.setdefault(part, len(self.parts))
        mat_id = self.mats.setdefault(material, len(self.mats)) if material else -1
        ids = np.asarray(poly_ids, dtype=np.int64) + self.next_id
        self.next_id += int(poly_ids.max()) + 1 if len(poly_ids) else 0
        self.pieces.append((verts, faces, ids, part_id, mat_id))

    def mesh(self) -> TriMesh:
        if not self.pieces:
            return TriMesh(np.zeros((0, 3)), np.zeros((0, 3), np.int64), source=self.source)
        verts, faces, ids, parts, mats = [], [], [], [], []
        offset = 0
        for v, f, i, p, m in self.pieces:
            verts.append(v)
            faces.append(np.asarray(f, dtype=np.int64) + offset)
            ids.append(i)
            parts.append(np.full(len(f), p, np.int32))
            mats.append(np.full(len(f), m, np.int32))
            offset += len(v)
        return TriMesh(np.concatenate(verts), np.concatenate(faces), np.concatenate(ids), np.concatenate(parts),
                       list(self.parts) or [""], np.concatenate(mats), list(self.mats), source=self.source)


# -- PLY, STL, glTF ---------------------------------------------------------------------------------
def read_with_trimesh(path: str | Path) -> TriMesh:
    """PLY/STL/glTF/GLB through trimesh (process=False keeps the file's face order)."""
    import trimesh

    path = Path(path)
    loaded = trimesh.load(str(path), force="scene", process=False)
    builder = _Builder(str(path))
    graph = loaded.graph
    for node in sorted(graph.nodes_geometry):
        transform, geom_name = graph[node]
        geom = loaded.geometry.get(geom_name)
        if geom is None or not hasattr(geom, "faces") or len(geom.faces) == 0:
            continue
        verts = np.asarray(geom.vertices, dtype=np.float64)
        verts = verts @ np.asarray(transform)[:3, :3].T + np.asarray(transform)[:3, 3]
        material = getattr(getattr(geom.visual, "material", None), "name", None)
        part = "" if len(graph.nodes_geometry) == 1 and node == geom_name and path.suffix.lower() in (".ply", ".stl") else node
        builder.add(verts, np.asarray(geom.faces, dtype=np.int64), np.arange(len(geom.faces)), part, material)
    return builder.mesh()
