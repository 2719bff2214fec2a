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

import re
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
    """Own OBJ reader: keeps face order, o/g/usemtl names, negative indices, fan-triangulated polygons.

    One pass over the lines collects vertex and face text (and where o/g/usemtl change); the numbers
    are then parsed in bulk with numpy, so large maps load at a few seconds per million faces.
    """
    path = Path(path)
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        raise WorldError(f"mesh file {path}: cannot be read ({exc})") from None
    vertex_rows: list[str] = []
    face_rows: list[str] = []
    face_lines: list[int] = []  # line number of each face, for error messages
    face_nv: list[int] = []  # vertices defined before each face (negative indices count back from there)
    changes: list[tuple[int, int, int]] = []  # (first face, part, material) whenever o/g/usemtl change
    parts: dict[str, int] = {"": 0}
    mats: dict[str, int] = {}
    part, mat, obj_name = 0, -1, ""
    for lineno, line in enumerate(text.replace("\\\n", " ").splitlines(), 1):
        head = line[:2]
        if head == "v ":
            vertex_rows.append(line[2:])
        elif head == "f ":
            face_rows.append(line[2:])
            face_lines.append(lineno)
            face_nv.append(len(vertex_rows))
        else:
            line = line.strip()
            if not line or line[0] == "#":
                continue
            key, _, rest = line.partition(" ")
            if key == "v":
                vertex_rows.append(rest)
            elif key == "f":
                face_rows.append(rest)
                face_lines.append(lineno)
                face_nv.append(len(vertex_rows))
            elif key == "o":
                obj_name = rest.strip()
                part = parts.setdefault(obj_name, len(parts))
            elif key == "g":
                part = parts.setdefault(" ".join(rest.split()) or obj_name, len(parts))
            elif key == "usemtl":
                name = rest.strip()
                mat = mats.setdefault(name, len(mats)) if name else -1
            else:
                continue
            if key in ("o", "g", "usemtl"):
                changes.append((len(face_rows), part, mat))
    vertices = _parse_vertex_rows(vertex_rows, path)
    faces, polygon = _parse_face_rows(face_rows, np.asarray(face_nv, np.int64), face_lines, path)
    n_poly = len(face_rows)
    poly_part = np.zeros(n_poly, np.int32)
    poly_mat = np.full(n_poly, -1, np.int32)
    for first, p, m in changes:  # later changes overwrite from their first face on
        poly_part[first:] = p
        poly_mat[first:] = m
    return TriMesh(vertices, faces, polygon.astype(np.int32), poly_part[polygon], list(parts), poly_mat[polygon],
                   list(mats), source=str(path))


def _parse_face_rows(rows: list[str], n_vertices: np.ndarray, lines: list[int], path: Path):
    """Fan-triangulated 0-based faces and the polygon index of each triangle."""
    if not rows:
        return np.zeros((0, 3), np.int64), np.zeros(0, np.int64)
    joined = " ".join(rows)
    if "/" in joined:
        joined = re.sub(r"/\S*", "", joined)  # v/vt/vn -> v
    try:
        flat = np.array(joined.split(), dtype=np.int64)
    except ValueError:
        bad = next(i for i, r in enumerate(rows) if not all(_is_int(t.split("/")[0]) for t in r.split()))
        raise WorldError(f"mesh file {path}:{lines[bad]}: bad face '{rows[bad].strip()}'; expected vertex indices") from None
    counts = np.fromiter(map(len, map(str.split, rows)), dtype=np.int64, count=len(rows))
    small = np.flatnonzero(counts < 3)
    if len(small):
        i = int(small[0])
        raise WorldError(f"mesh file {path}:{lines[i]}: a face needs at least 3 vertices, got {int(counts[i])}")
    nv = np.repeat(n_vertices, counts)
    idx = np.where(flat > 0, flat - 1, nv + flat)  # negative: relative to the vertices defined so far
    bad = np.flatnonzero((flat == 0) | (idx < 0) | (idx >= nv))
    if len(bad):
        poly = int(np.searchsorted(np.cumsum(counts), bad[0], side="right"))
        raise WorldError(f"mesh file {path}:{lines[poly]}: face index '{int(flat[bad[0]])}' out of range 1..{int(nv[bad[0]])}")
    return _fan(counts, idx)


def _is_int(token: str) -> bool:
    try:
        int(token)
        return True
    except ValueError:
        return False


def _parse_vertex_rows(rows: list[str], path: Path) -> np.ndarray:
    if not rows:
        return np.zeros((0, 3))
    try:
        counts = np.fromiter(map(len, map(str.split, rows)), dtype=np.int64, count=len(rows))
        if np.all(counts == 3):
            arr = np.array(" ".join(rows).split(), dtype=np.float64).reshape(-1, 3)
        else:  # x y z [w] [r g b]: only the first three numbers are positions
            arr = np.asarray([r.split()[:3] for r in rows], dtype=np.float64)
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
    if isinstance(node, collada.scene.NodeNode):  # <instance_node>: the referenced node, placed here
        _walk_dae_node(node.node, parent, inherited_name, builder)
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
    """Fan-triangulate polygons given per-polygon corner counts; returns (faces, polygon index).

    A polygon with fewer than 3 corners yields no triangle but keeps its place in the numbering."""
    counts = np.asarray(counts, dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64) if len(counts) else np.zeros(0, np.int64)
    n_tri = np.maximum(counts - 2, 0)
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
