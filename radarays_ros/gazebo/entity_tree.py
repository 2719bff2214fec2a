"""The Gazebo entity tree the mirror keeps: model -> link -> visual nodes (nested models too) with
entity ids, scoped names and parent-relative poses, as Gazebo's Scene and Pose_V messages give them,
and which visual node is which Scene entity.

World poses are composed up the tree (model · link · visual). For the pose stream the tree is also
held as arrays (`TreeArrays`): one 4x4 per node, parents, depth levels, so a Pose_V composes with a
few numpy calls per depth level instead of a Python walk per entity.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..world.transforms import quaternions_to_matrices


@dataclass
class Node:
    id: int
    name: str  # scoped
    parent: int | None  # entity id of the parent node, None for a top-level model
    kind: str  # model | link | visual
    local: np.ndarray  # 4x4 parent <- node
    static: bool = False
    children: list[int] = field(default_factory=list)


class TreeArrays:
    """The tree as arrays, rebuilt when it changes: local poses, parents, depth levels, visual rows."""

    def __init__(self, nodes: dict[int, Node], entity_of: dict[int, int]):
        self.ids = np.array(sorted(nodes), dtype=np.int64)
        row = {i: r for r, i in enumerate(self.ids.tolist())}
        self.local = np.stack([nodes[i].local for i in self.ids.tolist()]) if len(self.ids) else np.zeros((0, 4, 4))
        parent = np.array([row.get(nodes[i].parent, -1) for i in self.ids.tolist()], dtype=np.int64)
        depth = np.zeros(len(self.ids), dtype=np.int64)
        for r in range(len(self.ids)):  # depth by walking up (trees are shallow)
            p, d = parent[r], 0
            while p >= 0:
                p, d = parent[p], d + 1
            depth[r] = d
        self.parent = parent
        self.levels = [np.flatnonzero(depth == d) for d in range(1, int(depth.max()) + 1)] if len(depth) else []
        visual_ids = [i for i in self.ids.tolist() if i in entity_of]
        self.entity_rows = np.array([row[i] for i in visual_ids], dtype=np.int64)
        self.entity_ids = np.array([entity_of[i] for i in visual_ids], dtype=np.int64)
        self.applied: np.ndarray | None = None  # last poses given to the scene, per entity row
        self.raw = np.full((len(self.ids), 7), np.nan)  # last position + quaternion read per row (NaN: none yet)
        self.bodies: list | None = None  # pose bytes of the last message applied (unchanged ones are skipped)
        # the entity rows' world poses at the last two messages applied, with their stamps (sim ns; 0: none): the
        # velocities a frame asks for (GazeboMirror.refresh) are their difference
        self.last: tuple[np.ndarray, int] | None = None
        self.before: tuple[np.ndarray, int] | None = None
        self.handed = 0  # the stamp of the last message whose velocities the scene was given

    def world(self) -> np.ndarray:
        out = self.local.copy()
        for rows in self.levels:
            out[rows] = out[self.parent[rows]] @ self.local[rows]
        return out


class EntityTree:
    """Nodes by entity id and by scoped name, and the Scene entity of each mirrored visual."""

    def __init__(self):
        self.nodes: dict[int, Node] = {}
        self.by_name: dict[str, int] = {}  # scoped name -> node id
        self.entity_of: dict[int, int] = {}  # visual node id -> scene entity id
        self.mirrored: set[str] = set()  # entity names that correspond to Gazebo visuals
        self._arrays: TreeArrays | None = None

    def clear(self) -> None:
        self.nodes.clear()
        self.by_name.clear()
        self.entity_of.clear()
        self.mirrored.clear()
        self._arrays = None

    def changed(self) -> None:
        """The tree or its entity ids changed: the arrays are rebuilt when next asked for."""
        self._arrays = None

    def arrays(self) -> TreeArrays:
        if self._arrays is None:
            self._arrays = TreeArrays(self.nodes, self.entity_of)
            for r, node_id in enumerate(self._arrays.ids.tolist()):
                self.nodes[node_id].local = self._arrays.local[r]  # a view: pose updates reach both
        return self._arrays

    def add_model(self, model, parent: int | None = None, prefix: str = "") -> list[int]:
        """Nodes of a Scene Model message (recursively); returns the ids of its visuals."""
        scoped = prefix + model.name
        self._put(Node(model.id, scoped, parent, "model", pose_matrix(model.pose), model.is_static))
        visuals = []
        for link in model.link:
            self._put(Node(link.id, f"{scoped}::{link.name}", model.id, "link", pose_matrix(link.pose)))
            for visual in link.visual:
                self._put(Node(visual.id, f"{scoped}::{link.name}::{visual.name}", link.id, "visual",
                               pose_matrix(visual.pose)))
                visuals.append(visual.id)
        for nested in model.model:
            visuals += self.add_model(nested, model.id, scoped + "::")
        return visuals

    def _put(self, node: Node) -> None:
        self.nodes[node.id] = node
        self.by_name[node.name] = node.id
        if node.parent in self.nodes:
            self.nodes[node.parent].children.append(node.id)
        self._arrays = None

    def link_visual(self, visual_id: int, scene) -> bool:
        """Map a visual node to the Scene entity of the same scoped name; False when the scene lacks it."""
        node = self.nodes[visual_id]
        entity = scene.find(node.name)
        if entity is None:
            return False
        self.entity_of[visual_id] = entity
        self.mirrored.add(node.name)
        return True

    def world_pose(self, node_id: int) -> np.ndarray:
        pose = np.eye(4)
        node = self.nodes.get(node_id)
        while node is not None:
            pose = node.local @ pose
            node = self.nodes.get(node.parent) if node.parent is not None else None
        return pose

    def remove_subtree(self, node_id: int, scene) -> None:
        """Drop a node, its descendants and their Scene entities."""
        node = self.nodes.pop(node_id, None)
        if node is None:
            return
        if self.by_name.get(node.name) == node_id:
            del self.by_name[node.name]
        for child in node.children:
            self.remove_subtree(child, scene)
        if node.parent in self.nodes and node_id in self.nodes[node.parent].children:
            self.nodes[node.parent].children.remove(node_id)
        entity = self.entity_of.pop(node_id, None)
        if entity is not None and scene.find(node.name) is not None:
            scene.remove_entity(entity)
        self.mirrored.discard(node.name)
        self._arrays = None


def visual_ids(model) -> list[int]:
    """Entity ids of every visual of a Scene Model message, nested models included."""
    ids = [v.id for link in model.link for v in link.visual]
    for nested in model.model:
        ids += visual_ids(nested)
    return ids


def pose_matrix(pose) -> np.ndarray:
    """4x4 of a gz.msgs.Pose."""
    p, q = pose.position, pose.orientation
    return poses_to_matrices(np.array([[p.x, p.y, p.z]]), np.array([[q.x, q.y, q.z, q.w]]))[0]


def poses_to_matrices(positions: np.ndarray, quaternions_xyzw: np.ndarray) -> np.ndarray:
    """(N,3) positions and (N,4) x,y,z,w quaternions -> (N,4,4). An all-zero quaternion (an unset
    protobuf field) means identity; others are normalised."""
    q = np.array(quaternions_xyzw, dtype=np.float64)
    norm = np.linalg.norm(q, axis=1)
    unset = norm < 1e-12
    q[unset] = (0.0, 0.0, 0.0, 1.0)
    q /= np.where(unset, 1.0, norm)[:, None]
    out = np.zeros((len(q), 4, 4))
    out[:, :3, :3] = quaternions_to_matrices(q)
    out[:, :3, 3] = positions
    out[:, 3, 3] = 1.0
    return out


def moved_beyond(old: np.ndarray, new: np.ndarray, min_translation: float, min_rotation: float) -> np.ndarray:
    """(N,) bool: poses whose translation changed by more than min_translation or whose rotation
    changed by more than min_rotation (angle of old_R^T new_R).

    Compared without square roots and arccos (few numpy calls: this runs for every pose message):
    |d|^2 > t^2, and angle > a  <=>  trace(old_R^T new_R) = 1 + 2 cos(angle) < 1 + 2 cos(a) on [0, pi]."""
    d = new[:, :3, 3] - old[:, :3, 3]
    moved = np.einsum("ni,ni->n", d, d) > min_translation * min_translation
    if min_rotation < math.pi:  # no rotation is larger than pi
        moved |= np.einsum("nij,nij->n", old[:, :3, :3], new[:, :3, :3]) < 1.0 + 2.0 * math.cos(min_rotation)
    return moved
