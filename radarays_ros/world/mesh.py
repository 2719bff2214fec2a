"""The triangle mesh every world source is turned into.

A `TriMesh` is in its own (entity) frame. Besides vertices and faces it remembers, per face, where the
face came from: its index in the source file (`face_ids`), the mesh-internal part it belongs to (OBJ
object/group, glTF/DAE node) and the mesh's own material name. Materials are resolved from those.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .transforms import MAX_COORDINATE_M
from ..errors import WorldError


@dataclass
class TriMesh:
    vertices: np.ndarray  # (V, 3) float64
    faces: np.ndarray  # (F, 3) int64 vertex indices
    face_ids: np.ndarray | None = None  # (F,) index of each face in the source file's own order
    face_parts: np.ndarray | None = None  # (F,) index into part_names
    part_names: list[str] = field(default_factory=lambda: [""])
    face_mesh_materials: np.ndarray | None = None  # (F,) index into mesh_material_names, -1 = none
    mesh_material_names: list[str] = field(default_factory=list)
    source: str = ""

    def __post_init__(self):
        self.vertices = np.ascontiguousarray(self.vertices, dtype=np.float64).reshape(-1, 3)
        self.faces = np.ascontiguousarray(self.faces, dtype=np.int64).reshape(-1, 3)
        n = len(self.faces)
        if self.face_ids is None:
            self.face_ids = np.arange(n, dtype=np.int32)
        if self.face_parts is None:
            self.face_parts = np.zeros(n, dtype=np.int32)
        if self.face_mesh_materials is None:
            self.face_mesh_materials = np.full(n, -1, dtype=np.int32)
        self.face_ids = np.asarray(self.face_ids, dtype=np.int32)
        self.face_parts = np.asarray(self.face_parts, dtype=np.int32)
        self.face_mesh_materials = np.asarray(self.face_mesh_materials, dtype=np.int32)
        if n and (self.faces.min() < 0 or self.faces.max() >= len(self.vertices)):
            raise WorldError(f"{self.source or 'mesh'}: face indices out of range 0..{len(self.vertices) - 1}")
        if not np.all(np.isfinite(self.vertices)):
            raise WorldError(f"{self.source or 'mesh'}: vertices contain NaN or inf")
        if len(self.vertices) and float(np.abs(self.vertices).max()) > MAX_COORDINATE_M:
            raise WorldError(f"{self.source or 'mesh'}: vertices beyond ±{MAX_COORDINATE_M:g} m (a size or scale "
                             "too large for float32 tracing)")

    @property
    def n_faces(self) -> int:
        return len(self.faces)

    def radius(self) -> float:
        """The largest distance of a vertex from the mesh's origin (0 for none): the sphere about its entity's
        origin that the mesh stays in however the entity turns (the backends' swept boxes)."""
        return float(np.sqrt((self.vertices ** 2).sum(axis=1).max())) if len(self.vertices) else 0.0

    def triangles(self) -> np.ndarray:
        """(F, 3, 3) corner coordinates."""
        return self.vertices[self.faces]

    def scaled(self, scale) -> "TriMesh":
        """A copy with vertices multiplied by a scalar or a per-axis (3,) scale."""
        s = np.broadcast_to(np.asarray(scale, dtype=np.float64), (3,))
        faces = self.faces
        if np.prod(s) < 0:  # mirroring flips the winding; keep outward normals outward
            faces = faces[:, ::-1]
        with np.errstate(over="ignore", invalid="ignore"):  # inf from a huge scale: refused by the vertex check
            return self._with(vertices=self.vertices * s, faces=faces)

    def transformed(self, matrix: np.ndarray) -> "TriMesh":
        """A copy with a 4x4 transform applied to the vertices."""
        v = self.vertices @ matrix[:3, :3].T + matrix[:3, 3]
        faces = self.faces if np.linalg.det(matrix[:3, :3]) >= 0 else self.faces[:, ::-1]
        return self._with(vertices=v, faces=faces)

    def drop_degenerate(self, min_area: float = 1e-14) -> tuple["TriMesh", int]:
        """Remove zero-area triangles (Embree would never hit them); returns (mesh, number removed)."""
        tri = self.triangles()
        area2 = np.linalg.norm(np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]), axis=1)
        keep = area2 > 2 * min_area
        removed = int((~keep).sum())
        if not removed:
            return self, 0
        return self.select_faces(keep), removed

    def select_faces(self, mask) -> "TriMesh":
        return self._with(
            faces=self.faces[mask],
            face_ids=self.face_ids[mask],
            face_parts=self.face_parts[mask],
            face_mesh_materials=self.face_mesh_materials[mask],
        )

    def _with(self, **changes) -> "TriMesh":
        values = dict(
            vertices=self.vertices,
            faces=self.faces,
            face_ids=self.face_ids,
            face_parts=self.face_parts,
            part_names=self.part_names,
            face_mesh_materials=self.face_mesh_materials,
            mesh_material_names=self.mesh_material_names,
            source=self.source,
        )
        values.update(changes)
        return TriMesh(**values)

    @staticmethod
    def concatenate(meshes: list["TriMesh"], source: str = "") -> "TriMesh":
        """Join meshes; face ids continue in order, part and material names are merged."""
        if not meshes:
            return TriMesh(np.zeros((0, 3)), np.zeros((0, 3), dtype=np.int64), source=source)
        verts, faces, ids, parts, mats = [], [], [], [], []
        part_names: list[str] = []
        mat_names: list[str] = []
        v_off = f_off = 0
        for m in meshes:
            verts.append(m.vertices)
            faces.append(m.faces + v_off)
            ids.append(m.face_ids + f_off)
            part_map = np.array([_index_of(part_names, n) for n in m.part_names], dtype=np.int32)
            parts.append(part_map[m.face_parts] if len(m.face_parts) else m.face_parts)
            mat_map = np.array([_index_of(mat_names, n) for n in m.mesh_material_names] + [-1], dtype=np.int32)
            mats.append(mat_map[m.face_mesh_materials])  # -1 indexes the appended -1
            v_off += len(m.vertices)
            f_off += int(m.face_ids.max()) + 1 if len(m.face_ids) else 0
        return TriMesh(
            np.concatenate(verts),
            np.concatenate(faces),
            np.concatenate(ids),
            np.concatenate(parts),
            part_names or [""],
            np.concatenate(mats),
            mat_names,
            source=source,
        )


def _index_of(names: list[str], name: str) -> int:
    if name not in names:
        names.append(name)
    return names.index(name)
