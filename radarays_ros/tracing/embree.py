"""Embree (CPU) backend through embreex.

embreex has no instancing, so moving entities is handled in three kinds of layer:

* the static layer: every entity that is static when the backend is created, in world coordinates,
  in one BVH that is never rebuilt. A static entity that is later moved or removed is *masked*: rays
  that hit it are continued past the hit (rare, cheap), and a moved one joins a dynamic layer.
* the merged dynamic layer: small moving entities (and small ones added later), posed into world
  coordinates in one small BVH that is rebuilt lazily, at the next trace after something in it moved:
  all its vertices posed in one batched transform (`_Movers`), then Embree's build of the new buffer.
* instance layers: each large moving entity (>= INSTANCE_MIN_TRIANGLES) has its own BVH in its own
  frame, built once; moving it costs nothing, rays are transformed into its frame instead.

* swept entities (rays with times, while an entity's twist moves it): every such entity's mesh in its own frame,
  shifted to its own slot, in one BVH built once per set of swept entities (`_Slots`); each (ray, entity) pair
  whose segment meets the entity's swept box is moved into its frame at the ray's time and into its slot, and
  all pairs go to Embree in one call.

So a pose update costs O(1) (a flag or a matrix), and the work it causes is proportional to the
triangles of the small movers, never to the static world or to large moving meshes. Each dynamic
layer is only asked about rays whose segment meets its world bounding box. Every buffer goes to Embree
in one copy (`embree_upload.py`; embreex's own mesh class copies element by element).

Normals are Embree's geometric normals, world-frame (rotated back for instances), made unit and
turned to face the ray (rmagine's Embree path uses object-space normals for instances: not here).
embreex releases the GIL inside `run`, so rays are traced in chunks on a thread pool, and each worker
also does its chunk's post-processing.
"""
from __future__ import annotations

import threading

import numpy as np

from ..compiled import inlined, kernel
from ..errors import TracingError
from ..threads import run_all, span_threads, thread_count
from ..world.scene import Entity, Scene
from ..world.twist_pose import poses_after, swept_boxes
from .backend import Backend, Hits, Rays, ray_start_inlined, register_backend
from .embree_upload import MeshBuffers, upload

try:  # optional heavy dependency, imported once with a clear message if missing
    from embreex import rtcore as _rtcore
    from embreex import rtcore_scene as _rtcore_scene
except ImportError as exc:  # pragma: no cover - embreex is a hard dependency of the package
    _IMPORT_ERROR: Exception | None = exc
else:
    _IMPORT_ERROR = None

BLOCKED_MARGIN_M, BLOCKED_MARGIN = 0.01, 1e-4  # blocked(): each ray traced this far past its reach (_blocked)
INSTANCE_MIN_TRIANGLES = 2000  # moving meshes this large get their own BVH instead of a rebuild per move
_MIN_CHUNK = 4096  # below this, thread hand-off costs more than it saves
_MAX_RETRACE = 32  # passes through masked static entities before giving up (counts as a miss)
_SKIP = 1e-4  # metres to step past a masked hit before continuing
_STATIC, _MERGED = 0, 1  # layer codes; instance k has code 2 + k in a trace's snapshot


class _Layer:
    """One BVH over triangles of some entities, with per-triangle id tables.

    `local=True` keeps an entity's own frame (an instance layer; with `shifts`, (k, 3), each entity's
    frame moved by its row: the swept entities' slots, _Slots); otherwise vertices are posed into
    the world frame. The tables carry one extra last row describing a miss, so that indexing them
    with Embree's primitive id -1 yields -1 directly (no masking on the hot path).
    """

    def __init__(self, device, entities: list[Entity], local: bool = False, shifts: np.ndarray | None = None):
        """Each entity's vertices are posed (float64, as `vertices @ R.T + t`) and cast straight into
        Embree's vertex buffer, its faces shifted and cast straight into the index buffer, its ids into
        one table: no concatenated float64 world, no cast copies (measured, 2 M triangles, 2026-11-28:
        0.44 s before Embree's build starts, 0.08 s now; Embree's own build is 0.6-0.8 s). The bits are
        those of the concatenate-then-cast path (test_tracing_perf_buffers.py)."""
        if shifts is not None and not all(e.mesh.n_faces for e in entities):
            raise ValueError("_Layer: shifts (one per entity) need entities that all have triangles")
        entities = [e for e in entities if e.mesh.n_faces]
        self.n_triangles = sum(e.mesh.n_faces for e in entities)
        self.scene = None
        if not self.n_triangles:
            return
        n_vertices = sum(len(e.mesh.vertices) for e in entities)
        tables = np.empty((3, self.n_triangles + 1), np.int32)  # entity, face, material; miss row last
        tables[:, -1] = -1  # the tables' last row: primitive id -1
        self.scene = _rtcore_scene.EmbreeScene(device)
        with MeshBuffers(self.scene, n_vertices, self.n_triangles) as mesh:
            v0 = f0 = 0
            for k, e in enumerate(entities):
                v1, f1 = v0 + len(e.mesh.vertices), f0 + e.mesh.n_faces
                rows = mesh.vertices[v0:v1, :3]
                if local:  # (shifted: the float64 sum, then one cast on the way into the buffer)
                    rows[...] = e.mesh.vertices if shifts is None else e.mesh.vertices + shifts[k]
                else:  # the float64 product and sum, then one cast on the way into the buffer
                    np.add(e.mesh.vertices @ e.pose[:3, :3].T, e.pose[:3, 3], out=rows, casting="same_kind")
                np.add(e.mesh.faces, v0, out=mesh.indices[f0:f1], casting="unsafe")  # int64 -> int32 as astype
                tables[0, f0:f1] = e.id
                tables[1, f0:f1] = e.mesh.face_ids
                tables[2, f0:f1] = e.face_materials
                v0, f0 = v1, f1
            self.bounds = _bounds(mesh.vertices[:, :3])
            mesh.attach()
        self.prim_entity, self.prim_face, self.prim_material = tables

    @classmethod
    def of_arrays(cls, device, vertices, indices, prim_entity, prim_face, prim_material) -> "_Layer":
        """A layer from its buffers as they are: (V, 3) float32 vertices, (F, 3) int32 indices and the
        (F + 1,) int32 id tables whose last row is the miss row (F > 0)."""
        layer = cls.__new__(cls)
        layer.n_triangles = len(indices)
        layer._build(device, vertices, indices, prim_entity, prim_face, prim_material)
        return layer

    def _build(self, device, vertices, indices, prim_entity, prim_face, prim_material) -> None:
        self.prim_entity, self.prim_face, self.prim_material = prim_entity, prim_face, prim_material
        self.bounds = _bounds(vertices)
        self.scene = _rtcore_scene.EmbreeScene(device)
        upload(self.scene, vertices, indices)  # embreex's TriangleMesh's buffers, in one copy each

    def run(self, origins, directions, tfar):
        """(distance, primitive, Embree's unnormalised normal Ng) per ray, in this layer's frame.

        Where nothing is hit: primitive -1, distance = tfar, Ng = 0."""
        if self.scene is None:
            return tfar.copy(), np.full(len(origins), -1, np.int32), np.zeros((len(origins), 3), np.float32)
        out = self.scene.run(origins, directions, dists=tfar, output=1)
        return out["tfar"], out["primID"], out["Ng"]

    def occluded(self, origins, directions, tfar) -> np.ndarray:
        """(N,) bool: whether each ray meets a triangle of this layer at a distance in [0, tfar] (Embree's occlusion
        query: any hit, the walk stops at the first found; embreex answers 0 for those, -1 for the others)."""
        if self.scene is None:
            return np.zeros(len(origins), bool)
        return self.scene.run(origins, directions, dists=tfar, query="OCCLUDED") != -1


class _Movers:
    """The merged dynamic layer's small moving entities, and what stays while the same ones are in it.

    The index buffer, the per-triangle id tables and each entity's vertices stacked by vertex count are
    made once per membership (an entity added, removed or turned into a mover); a move then costs one
    batched transform per vertex count, one scatter into the vertex buffer and Embree's build of the
    new BVH, instead of Python work per entity (measured: 500 boxes, 29 us per entity before).

    Bit for bit the per-entity transform: `np.matmul` over a (k, V, 3) stack runs the BLAS product of
    each (V, 3) @ (3, 3) pair with the same shapes and strides as `vertices @ R.T` of one entity (BLAS
    may fuse multiply-adds, so a hand-written sum would differ in the last bit); the translation is
    added after it as before. So the buffers, the BVH and every hit are what `_Layer` made from the
    same entities (test_tracing_movers.py compares them)."""

    def __init__(self, entities: list[Entity]):
        self.entities = [e for e in entities if e.mesh.n_faces]
        counts = np.array([len(e.mesh.vertices) for e in self.entities], np.int64)
        starts = np.concatenate([[0], np.cumsum(counts)])
        self.n_vertices = int(starts[-1])
        self.indices = self.poses = None  # poses: (k, 4, 4) of the last layer made
        self.vertices = np.empty((self.n_vertices, 3), np.float32)  # of the last layer made, at `poses`
        if not self.entities:
            return
        faces = [e.mesh.faces + starts[k] for k, e in enumerate(self.entities)]
        self.indices = np.concatenate(faces).astype(np.int32)
        info = np.concatenate([np.column_stack([np.full(e.mesh.n_faces, e.id), e.mesh.face_ids, e.face_materials])
                               for e in self.entities] + [[[-1, -1, -1]]]).astype(np.int32)
        self.tables = tuple(np.ascontiguousarray(info[:, k]) for k in range(3))
        by_count: dict[int, list[int]] = {}
        for k, count in enumerate(counts.tolist()):
            by_count.setdefault(count, []).append(k)
        self.groups = []  # (entity positions, (k, V, 3) float64 vertices, their rows in the vertex buffer)
        for count, members in by_count.items():
            members = np.array(members, np.intp)
            stack = np.stack([self.entities[k].mesh.vertices for k in members])
            rows = (starts[members][:, None] + np.arange(count)).reshape(-1)
            self.groups.append((members, stack, rows))

    def layer(self, device, previous: _Layer | None = None) -> _Layer | None:
        """The layer of these entities at their current poses; `previous` (this set's last layer) as it
        is when no pose changed since it was made (a pose stream repeats the poses of still movers).
        Only the entities whose pose changed are posed again: the others' float32 vertices are kept
        from the last layer (a Gazebo stream moves a few of many)."""
        if self.indices is None:
            return None
        poses = np.concatenate([e.pose for e in self.entities]).reshape(-1, 4, 4)  # 2.8x np.stack's speed here
        changed = None if self.poses is None else (poses != self.poses).reshape(len(poses), 16).any(axis=1)
        if changed is not None and not changed.any() and previous is not None:
            return previous
        self.poses = poses
        self._pose_into(self.vertices, poses, changed)
        return _Layer.of_arrays(device, self.vertices, self.indices, *self.tables)

    def world_vertices(self, poses: np.ndarray) -> np.ndarray:
        """(V, 3) float64 vertices of the entities at `poses` ((k, 4, 4), in entity order), in buffer order."""
        world = np.empty((self.n_vertices, 3))
        self._pose_into(world, poses)
        return world

    def _pose_into(self, world: np.ndarray, poses: np.ndarray, changed: np.ndarray | None = None) -> None:
        """Write the vertices of the entities at `poses` into `world` (V, 3), cast to its dtype (as
        `astype`); with `changed` ((k,) bool) only those entities' rows. A sub-stack is multiplied as the
        whole stack is: the same BLAS product per entity, the same bits."""
        for members, stack, rows in self.groups:
            if changed is not None:
                moved = changed[members]
                if not moved.any():
                    continue
                if not moved.all():
                    members, stack = members[moved], stack[moved]
                    rows = rows.reshape(len(moved), -1)[moved].reshape(-1)
            p = poses[members]
            posed = np.matmul(stack, p[:, :3, :3].swapaxes(1, 2))
            posed += p[:, None, :3, 3]
            world[rows] = posed.reshape(-1, 3)


@kernel
def _bounds(vertices):
    """(2, 3) float32 lowest and highest coordinates of (V, 3) float32 vertices (V > 0): numpy's
    min/max along axis 0 of a 3-wide array is a strided reduction, 20x slower here."""
    box = np.empty((2, 3), np.float32)
    for k in range(3):
        box[0, k] = box[1, k] = vertices[0, k]
    for i in range(1, vertices.shape[0]):
        for k in range(3):
            box[0, k] = min(box[0, k], vertices[i, k])
            box[1, k] = max(box[1, k], vertices[i, k])
    return box


class _Instance:
    """A large moving entity: its BVH in its own frame and its current pose."""

    def __init__(self, device, entity: Entity):
        self.layer = _Layer(device, [entity], local=True)
        self.pose = entity.pose

    def snapshot(self) -> tuple[_Layer, np.ndarray, np.ndarray, np.ndarray] | None:
        """(layer, rotation, translation, world bounds) for one trace, or None if it has no triangles."""
        if self.layer.scene is None:
            return None
        r = self.pose[:3, :3].astype(np.float32)
        t = self.pose[:3, 3].astype(np.float32)
        lo, hi = self.layer.bounds
        corners = np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])
        world = corners @ r.T + t
        return self.layer, r, t, np.stack([world.min(axis=0), world.max(axis=0)]).astype(np.float32)


@inlined
def _segment_in_box(o, d, far, lower, upper):
    """(near, stop): the part [near, stop] of the segment o + t d, t in [0, far], inside the box [lower, upper]
    (the slab test in float32; near > stop: it misses). A ray parallel to a slab and starting on its plane gives
    0 * inf = NaN on that axis, which then imposes no constraint (a spare candidate, never a lost hit)."""
    near, stop = np.float32(0.0), far
    for k in range(3):
        inv = np.float32(1) / d[k]
        a = (lower[k] - o[k]) * inv
        b = (upper[k] - o[k]) * inv
        if not (np.isnan(a) or np.isnan(b)):
            near = max(near, min(a, b))
            stop = min(stop, max(a, b))
    return near, stop


def _rays_meeting_box(origins, directions, tfar, box):
    """(indices, their origins, directions and tfar) of the rays whose segment [0, tfar] meets an
    axis-aligned box (slab test): the others cannot hit inside it."""
    n = len(origins)
    picked, o, d, far = np.empty(n, np.intp), np.empty((n, 3), np.float32), np.empty((n, 3), np.float32), np.empty(n, np.float32)
    count = _gather_meeting_box(origins, directions, tfar, box, picked, o, d, far)
    return picked[:count], o[:count], d[:count], far[:count]


@kernel
def _gather_meeting_box(origins, directions, tfar, box, picked, o, d, far):
    """The slab test (_segment_in_box) per ray, then the ray's index and values gathered in order."""
    count = 0
    of, df = origins.reshape(-1), directions.reshape(-1)
    for i in range(origins.shape[0]):
        near, stop = _segment_in_box(of[3 * i:3 * i + 3], df[3 * i:3 * i + 3], tfar[i], box[0], box[1])
        if near <= stop:
            picked[count], far[count] = i, tfar[i]
            for k in range(3):
                o[count, k], d[count, k] = of[3 * i + k], df[3 * i + k]
            count += 1
    return count


@kernel
def _take_closer(rays, cdist, cprim, cng, code, dist, prim, ng, layer_of):
    """Hits of a layer (cdist, cprim, cng for the rays `rays`) replace the current ones where they exist
    (each layer was traced with the best distance so far as tfar: any hit is closer)."""
    for j in range(rays.shape[0]):
        if cprim[j] >= 0:
            i = rays[j]
            dist[i], prim[i], layer_of[i] = cdist[j], cprim[j], code
            ng[i, 0], ng[i, 1], ng[i, 2] = cng[j, 0], cng[j, 1], cng[j, 2]


_SLOT_REACH = 20.0  # metres a pair's ray may reach from its entity's origin in the first slots made (_Slots)
_SWEEP_CHUNK = 256  # consecutive rays whose segments' common box is tested against each swept entity's box first


class _Slots:
    """The swept entities' meshes, each in its own frame shifted to its own slot, in one BVH: the rays of every
    (ray, entity) pair of a trace, moved into their entity's frame at their time and then into its slot, go to
    Embree in one call instead of one call per entity (measured, 500 swept boxes, VLP-16: 358 calls a frame,
    then a third of its CPU in the calls and the loop around them). Slots lie on a cubic grid `spacing` apart;
    a pair's ray is traced only over the part of its segment inside the entity's swept box (`_into_slots`),
    which in the entity's frame stays within that box's diagonal of its origin: so it can meet no other slot
    while that diagonal is at most `reach` (spacing = reach + the largest radius: _Sweep makes new slots
    otherwise). Built once per set of swept entities (a car that stops or starts changes the set)."""

    def __init__(self, device, key: tuple, entities: list, reach: float):
        self.key, self.entities = key, entities  # the swept ids it was made for; those with triangles, in order
        self.ids = tuple(e.id for e in entities)
        self.radius = radius = np.array([e.mesh.radius() for e in entities])
        self.reach = float(reach)
        self.spacing = self.reach + float(radius.max()) + 1.0
        side = max(1, int(np.ceil(len(entities) ** (1 / 3))))
        grid = np.stack(np.unravel_index(np.arange(len(entities)), (side, side, side)), axis=1)
        self.offsets = (grid - (side - 1) / 2) * self.spacing  # (k, 3) float64, centred on 0
        self.layer = _Layer(device, entities, local=True, shifts=self.offsets)


class _Sweep:
    """The entities a trace of rays with times meets where their twist takes them by each ray's time
    (world/twist_pose.py), snapshotted for that trace: their poses and twists, the world box each stays in over
    the rays' times (twist_pose.swept_boxes) and their meshes in one BVH of slots (_Slots)."""

    def __init__(self, slots: _Slots, poses: np.ndarray, velocity: np.ndarray, angular: np.ndarray, times: np.ndarray):
        self.times, self.slots = times, slots
        self.layers = [slots.layer]
        self.rotation, self.position = poses[:, :3, :3], poses[:, :3, 3]
        self.velocity, self.angular = velocity, angular
        boxes = swept_boxes(self.rotation, self.position, velocity, angular, slots.radius, float(times.min()),
                            float(times.max()))
        self.boxes = np.ascontiguousarray(boxes, np.float32)
        self.offsets = np.ascontiguousarray(slots.offsets, np.float32)

    def diagonal(self) -> float:
        """The longest diagonal of the swept boxes: how far from its entity's origin a pair's ray may be traced."""
        return float(np.linalg.norm(self.boxes[:, 1].astype(np.float64) - self.boxes[:, 0], axis=1).max())

    def pairs(self, o, d, dist) -> tuple[np.ndarray, np.ndarray]:
        """(ray, entity) index pairs, sorted by entity then ray, of the rays whose segment [0, dist] meets an
        entity's box (one compiled pass: chunks of consecutive rays, which lie close together, are tested
        as a whole against each box before their rays are)."""
        n = len(o)
        rays, boxes = np.empty(4 * n + 1024, np.intp), np.empty(4 * n + 1024, np.intp)
        count = _segments_meeting_boxes(o, d, dist, self.boxes, _SWEEP_CHUNK, rays, boxes)
        if count > len(rays):  # a crowd of boxes along the rays: again with room for all
            rays, boxes = np.empty(count, np.intp), np.empty(count, np.intp)
            _segments_meeting_boxes(o, d, dist, self.boxes, _SWEEP_CHUNK, rays, boxes)
        key = np.sort(boxes[:count].astype(np.int64) * n + rays[:count])
        return key % n, key // n


@kernel
def _into_slots(o, d, dist, rays, owners, rot, shift, boxes, offsets, o_slot, d_slot, near, far):
    """Each pair's ray (rays[j] of o, d, dist; its entity owners[j] posed by rot[j], shift[j]) as the part of its
    segment [0, dist] inside the entity's swept box, [near, near + far], moved into the entity's frame and its slot:
    R^T (x + near d - p) + offset, R^T d (float32). A segment that misses the box gets far = -1 (no hit)."""
    for j in range(rays.shape[0]):
        i, e = rays[j], owners[j]
        lo, hi = _segment_in_box(o[i], d[i], dist[i], boxes[e, 0], boxes[e, 1])
        near[j] = lo
        far[j] = hi - lo if lo <= hi else np.float32(-1.0)
        x0, x1, x2 = o[i, 0] + lo * d[i, 0] - shift[j, 0], o[i, 1] + lo * d[i, 1] - shift[j, 1], o[i, 2] + lo * d[i, 2] - shift[j, 2]
        for k in range(3):
            o_slot[j, k] = rot[j, 0, k] * x0 + rot[j, 1, k] * x1 + rot[j, 2, k] * x2 + offsets[e, k]
            d_slot[j, k] = rot[j, 0, k] * d[i, 0] + rot[j, 1, k] * d[i, 1] + rot[j, 2, k] * d[i, 2]


@kernel
def _take_closest_pairs(rays, near, cdist, cprim, cng, rot, code, dist, prim, ng, layer_of):
    """The pairs' hits (at near + cdist along their world ray; Ng back to the world frame by rot) replace the
    rays' current hits where closer (of several pairs of one ray, the closest; on a tie the later pair)."""
    for j in range(rays.shape[0]):
        if cprim[j] < 0:
            continue
        i = rays[j]
        t = near[j] + cdist[j]
        if t <= dist[i]:
            dist[i], prim[i], layer_of[i] = t, cprim[j], code
            for k in range(3):
                ng[i, k] = rot[j, k, 0] * cng[j, 0] + rot[j, k, 1] * cng[j, 1] + rot[j, k, 2] * cng[j, 2]


@kernel
def _segments_meeting_boxes(origins, directions, dist, boxes, chunk, rays, owners):
    """Writes (ray, box) of every ray segment [0, dist] meeting a box (_segment_in_box) into rays/owners while they have room; returns how many there are."""
    count = 0
    n = origins.shape[0]
    for c0 in range(0, n, chunk):
        c1 = min(c0 + chunk, n)
        lo = np.full(3, np.inf, np.float32)
        hi = np.full(3, -np.inf, np.float32)
        for i in range(c0, c1):
            for k in range(3):
                end = origins[i, k] + directions[i, k] * dist[i]
                lo[k] = min(lo[k], origins[i, k], end)
                hi[k] = max(hi[k], origins[i, k], end)
        for j in range(boxes.shape[0]):
            if (boxes[j, 0, 0] > hi[0] or boxes[j, 1, 0] < lo[0] or boxes[j, 0, 1] > hi[1] or boxes[j, 1, 1] < lo[1]
                    or boxes[j, 0, 2] > hi[2] or boxes[j, 1, 2] < lo[2]):
                continue
            for i in range(c0, c1):
                near, stop = _segment_in_box(origins[i], directions[i], dist[i], boxes[j, 0], boxes[j, 1])
                if near <= stop:
                    if count < rays.shape[0]:
                        rays[count], owners[count] = i, j
                    count += 1
    return count


class EmbreeBackend(Backend):
    name = "embree"
    SWEEPS_ENTITIES = True

    def __init__(self, scene: Scene, threads: int | None = None):
        if _IMPORT_ERROR is not None:
            raise TracingError(f"the embree backend needs embreex (pip install embreex): {_IMPORT_ERROR}")
        super().__init__(scene)
        self.threads = thread_count(threads or None)  # spans run on the kept "trace" pool (radarays_ros/threads.py)
        self._device = _rtcore.EmbreeDevice()
        self.static_rebuilds = 0  # stays 0: the static layer is built once (tests check this)
        self.dynamic_rebuilds = 0
        self.instance_builds = 0
        with scene.lock:
            static = [e for e in scene.entities if e.static]
            self._static = _Layer(self._device, static)
            self._static_ids = {e.id for e in static}
            self._masked = np.zeros(0, bool)  # indexed by entity id: static entities to look through
            self._merged_ids: set[int] = set()
            self._movers: _Movers | None = None  # the merged layer's fixed parts; None when its members changed
            self._instances: dict[int, _Instance | None] = {}  # None until built at the next sync
            self._dynamic: _Layer | None = None
            self._dirty = False
            # rays with times: the merged movers without the swept ones (their ids, _Movers, layer), and the
            # swept entities' meshes in their slots (_Slots, kept while the same ones sweep)
            self._unswept: tuple[frozenset, _Movers, _Layer | None] | None = None
            self._slots: _Slots | None = None
            for e in scene.entities:
                if not e.static:
                    self._place_moving(e)
            scene.subscribe(self)

    # -- scene listener -----------------------------------------------------------------------
    def on_entity_added(self, entity: Entity) -> None:
        with self._lock:
            self._place_moving(entity)

    def on_entity_removed(self, entity: Entity) -> None:
        with self._lock:
            if entity.id in self._static_ids:
                self._mask(entity.id)
            if entity.id in self._merged_ids:
                self._merged_ids.discard(entity.id)
                self._movers = self._unswept = None
                self._dirty = True
            self._instances.pop(entity.id, None)
            if self._slots is not None and entity.id in self._slots.ids:
                self._slots = None

    def on_entities_moved(self, entities: list) -> None:
        """A batch of moves: the merged movers only mark their layer stale (one set test each)."""
        with self._lock:
            merged = self._merged_ids
            others = [e for e in entities if e.id not in merged]
            if len(others) < len(entities):
                self._dirty = True
            for entity in others:
                self._moved(entity)

    def _moved(self, entity: Entity) -> None:
        if entity.id in self._instances:
            instance = self._instances[entity.id]
            if instance is not None:
                instance.pose = entity.pose  # O(1): rays are transformed at trace time
        elif entity.id in self._merged_ids:
            self._dirty = True
        elif entity.id in self._static_ids:  # look through the baked copy, trace the moved one
            self._mask(entity.id)
            self._place_moving(entity)

    def _place_moving(self, entity: Entity) -> None:
        if entity.mesh.n_faces >= INSTANCE_MIN_TRIANGLES:
            self._instances[entity.id] = None
        else:
            self._merged_ids.add(entity.id)
            self._movers = self._unswept = None
            self._dirty = True

    def _mask(self, entity_id: int) -> None:
        if len(self._masked) <= entity_id:
            self._masked = np.concatenate([self._masked, np.zeros(entity_id + 1 - len(self._masked), bool)])
        self._masked[entity_id] = True

    def _sync(self, timed: bool = False):
        """A consistent snapshot for one trace: merged layer, masked ids, instance snapshots, and for rays
        with times (`timed`) the swept entities (_Swept: those with a twist that moves them), which the
        merged layer and the instances then leave out."""
        with self.scene.lock, self._lock:
            if self._dirty:
                if self._movers is None:
                    self._movers = _Movers([self.scene.entity(i) for i in sorted(self._merged_ids)])
                layer = self._movers.layer(self._device, self._dynamic)
                self._dirty = False
                self.dynamic_rebuilds += layer is not self._dynamic
                self._dynamic = layer
            for entity_id, instance in self._instances.items():
                if instance is None:
                    self._instances[entity_id] = _Instance(self._device, self.scene.entity(entity_id))
                    self.instance_builds += 1
            swept_ids = {i for i in self.scene.sweeping_ids() if i in self._merged_ids or i in self._instances} if timed \
                else set()
            instances = [s for i, s in ((i, inst.snapshot()) for i, inst in self._instances.items())
                         if s is not None and i not in swept_ids]
            if not swept_ids:
                return self._dynamic, self._masked.copy(), instances, None
            return self._unswept_layer(swept_ids), self._masked.copy(), instances, self._swept(swept_ids)

    def _unswept_layer(self, swept_ids: set) -> _Layer | None:
        """The merged movers' layer without the swept ones (kept while the same ones sweep; called in _sync)."""
        key = frozenset(swept_ids & self._merged_ids)
        if not key:
            return self._dynamic
        if self._unswept is None or self._unswept[0] != key:
            self._unswept = (key, _Movers([self.scene.entity(i) for i in sorted(self._merged_ids - key)]), None)
        key, movers, previous = self._unswept
        layer = movers.layer(self._device, previous)
        self._unswept = (key, movers, layer)
        return layer

    def _swept(self, swept_ids: set) -> tuple | None:
        """(slots, poses (k, 4, 4), velocities, angular velocities (k, 3)) of the swept entities with triangles, in
        id order, as they are now (called in _sync); None when none has triangles."""
        key = tuple(sorted(swept_ids))
        slots = self._slots
        if slots is None or slots.key != key:
            entities = [e for e in (self.scene.entity(i) for i in key) if e.mesh.n_faces]
            slots = self._slots = _Slots(self._device, key, entities, reach=_SLOT_REACH) if entities else None
        if slots is None:
            return None
        entities = slots.entities
        poses = np.concatenate([e.pose for e in entities]).reshape(-1, 4, 4)
        velocity = np.concatenate([e.twist[0] for e in entities]).reshape(-1, 3)
        angular = np.concatenate([e.twist[1] for e in entities]).reshape(-1, 3)
        return slots, poses, velocity, angular

    # -- tracing --------------------------------------------------------------------------------
    def _trace(self, rays: Rays, tmin: float, tmax: float, names: frozenset) -> Hits:
        """Ids are always gathered on first access (cheap); normals during the trace when wanted, else
        kept as Embree's Ng and a scale until read; the cosines of incidence come from the same scale."""
        far = np.float32(min(float(tmax) - tmin, 1e30))  # rays start at tmin: each span shifts its origins
        return self._trace_within(rays, tmin, far, names)

    def _blocked(self, rays: Rays, reach: np.ndarray) -> np.ndarray:
        """Backend.blocked, each ray walked through the BVH only up to its own reach, not past the longest (measured on
        a navtech_ras6 frame's occlusion rays of the 1 M city, one core: 21.3 ms; each ray to its reach: 12.4 ms; as
        Embree's occlusion query: 10.4 ms).
        A world of static entities only (none moved, no movers, instances or swept entities): Embree's occlusion
        query (any hit, not the first) with tfar the largest float32 under reach: a float32 distance t is <= that
        tfar exactly when t < reach. Otherwise a trace of every layer with tfar a little past the reach: the margin
        (1 cm + 1e-4 of the reach) is far beyond the float32 rounding of the layers' box tests and of a ray moved into
        an instance's frame (which may cull a segment ending on the hit itself), so a first hit under reach is found
        on every layer; a hit found past reach compares as a miss."""
        snapshot = self._sync(timed=rays.times is not None)
        dynamic, masked, instances, swept = snapshot
        if (dynamic is None or dynamic.scene is None) and not masked.any() and not instances and swept is None:
            return self._occluded_static(rays, reach)
        far = np.minimum(reach + (BLOCKED_MARGIN_M + BLOCKED_MARGIN * reach), 1e30).astype(np.float32)
        return np.asarray(self._trace_within(rays, 0.0, far, frozenset(), snapshot).distance) < reach

    def _occluded_static(self, rays: Rays, reach: np.ndarray) -> np.ndarray:
        """_blocked in a world of static entities only: Embree's occlusion query of the static layer, split over the
        trace threads as a trace is."""
        n = len(rays)
        out = np.zeros(n, bool)
        if self._static.scene is None:
            return out
        far = occlusion_far(reach)

        def span(ab):
            a, b = ab
            out[a:b] = self._static.occluded(rays.origins[a:b], rays.directions[a:b], far[a:b].copy())
        threads = span_threads(self.threads)
        if threads == 1 or n < 2 * _MIN_CHUNK:
            span((0, n))
        else:
            bounds = chunk_bounds(n, threads)
            run_all("trace", span, zip(bounds[:-1], bounds[1:]), threads)
        return out & (reach > 0.0)

    def _trace_within(self, rays: Rays, tmin: float, far, names: frozenset, snapshot=None) -> Hits:
        """_trace up to far from tmin: one float32 for every ray, or an (N,) float32 array, each ray's own (snapshot:
        the trace's _sync, when the caller took it)."""
        o, d = rays.origins, rays.directions
        lazy_normals = "normal" not in names
        dynamic, masked, instances, swept = snapshot or self._sync(timed=rays.times is not None)
        n = len(o)
        if n == 0:
            return Hits.misses(0)
        result = _Result(n, lazy_normals)
        sweep = self._sweep_of(swept, rays.times) if swept is not None else None
        job = (o, d, far, np.float32(tmin), dynamic, masked if masked.any() else None, instances, result, sweep,
               rays.starts_at(tmin))
        threads = span_threads(self.threads)  # 1 inside a frame's side-by-side tasks (threads.spans_inline)
        if threads == 1 or n < 2 * _MIN_CHUNK:
            self._trace_span(job, 0, n)
        else:  # each worker traces AND post-processes its span: numpy releases the GIL too
            bounds = chunk_bounds(n, threads)
            run_all("trace", lambda ab: self._trace_span(job, *ab), zip(bounds[:-1], bounds[1:]), threads)
        layers = [self._static, dynamic] + [inst[0] for inst in instances] + (sweep.layers if sweep else [])
        return Hits(result.distance, None if lazy_normals else result.normal, resolve=_IdLookup(result, layers))

    def _sweep_of(self, swept: tuple, times: np.ndarray) -> _Sweep:
        """The trace's _Sweep; its slots made again further apart when a swept box outgrows them (_Slots)."""
        slots, poses, velocity, angular = swept
        sweep = _Sweep(slots, poses, velocity, angular, times)
        if sweep.diagonal() > slots.reach:
            with self._lock:
                slots = self._slots = _Slots(self._device, slots.key, slots.entities,
                                             reach=max(_SLOT_REACH, 2 * sweep.diagonal()))
            sweep = _Sweep(slots, poses, velocity, angular, times)
        return sweep

    def _trace_span(self, job, a: int, b: int) -> None:
        o_all, d_all, far, tmin, dynamic, masked, instances, result, sweep, starts = job
        o, d = o_all[a:b], d_all[a:b]
        if np.ndim(far):  # each ray's own far
            far = far[a:b]
        if tmin:  # the caller's starts at this tmin (Rays.starts), or made here
            o = starts[a:b] if starts is not None else _shifted(o, d, tmin)
        layer = result.layer[a:b]
        if dynamic is not None and dynamic.scene is not None and masked is None:
            dist, prim, ng = self._movers_first(dynamic, o, d, far, layer)
        else:
            dist, prim, ng = self._static_then_movers(dynamic, masked, o, d, far, layer)
        for k, (inst, r, t, box) in enumerate(instances):
            self._closer_in(inst, r, t, box, _MERGED + 1 + k, o, d, dist, prim, ng, layer)
        if sweep is not None:
            self._closer_swept(sweep, a, b, _MERGED + 1 + len(instances), o, d, dist, prim, ng, layer)
        result.prim[a:b] = prim
        eager = result.normal is not None
        _finish_span(dist, prim, ng, d, tmin, result.distance[a:b], result.scale[a:b], result.cosine[a:b],
                     result.normal[a:b] if eager else _NO_NORMALS)
        if not eager:  # kept for a normal computed on first access (Hits.normal)
            result.parts.append((a, b, ng, result.scale[a:b]))

    def _static_then_movers(self, movers: _Layer | None, masked, o, d, far, layer_of):
        """(distance, primitive, Ng) of the closest hits in the static layer (looking through masked
        entities) and then the merged movers' layer, traced up to the static hit (a mover at the same
        distance wins: Embree accepts t <= tfar)."""
        dist, prim, ng = self._static.run(o, d, _tfar(far, len(o)))
        if masked is not None and self._static.scene is not None:
            dist, prim, ng = self._look_through(o, d, dist, prim, ng, masked, far)
        if movers is not None and movers.scene is not None:
            self._closer_in(movers, None, None, movers.bounds, _MERGED, o, d, dist, prim, ng, layer_of)
        return dist, prim, ng

    def _movers_first(self, movers: _Layer, o, d, far, layer_of):
        """What `_static_then_movers` gives without masked entities, with the movers traced first: the
        large static BVH is then walked only up to each ray's mover hit. Its tfar there is the float32
        just below the mover's distance, so a static surface wins only when strictly closer, as before
        (measured, 500 boxes, VLP-16 rays, one thread: 9.2-9.6 -> 8.1-8.4 ms CPU; the same hits:
        test_tracing_movers.py)."""
        tfar = _tfar(far, len(o))
        cand, oc, dc, cfar = _rays_meeting_box(o, d, tfar, movers.bounds)
        if len(cand):
            cdist, cprim, cng = movers.run(oc, dc, cfar)
            hit = np.flatnonzero(cprim >= 0)
            tfar[cand[hit]] = np.nextafter(cdist[hit], np.float32(0))
        dist, prim, ng = self._static.run(o, d, tfar)
        if len(cand):
            cprim[prim[cand] >= 0] = -1  # the static surface was strictly closer: it stays
            _take_closer(cand, cdist, cprim, cng, np.int16(_MERGED), dist, prim, ng, layer_of)
        return dist, prim, ng

    @staticmethod
    def _closer_in(layer: _Layer, r, t, box, code: int, o, d, dist, prim, ng, layer_of) -> None:
        """Replace hits by closer ones in `layer` (posed by r, t when it is an instance), in place."""
        cand, oc, dc, far = _rays_meeting_box(o, d, dist, box)
        if not len(cand):
            return
        if r is not None:  # world -> instance frame: x_local = R^T (x - t); row vectors: (x - t) @ R
            oc, dc = np.ascontiguousarray((oc - t) @ r), np.ascontiguousarray(dc @ r)
        cdist, cprim, cng = layer.run(oc, dc, far)
        if r is not None:  # the normals of the hits back to the world frame (cng is this call's own array)
            closer = cprim >= 0
            cng[closer] = cng[closer] @ r.T
        _take_closer(cand, cdist, cprim, cng, np.int16(code), dist, prim, ng, layer_of)

    @staticmethod
    def _closer_swept(sweep: _Sweep, a: int, b: int, code: int, o, d, dist, prim, ng, layer_of) -> None:
        """Replace hits of rays a..b (o, d, dist: theirs) by closer ones on the swept entities (layer code `code`:
        their slots), each ray traced in the entity's frame at the ray's time, x_local = R(t)^T (x - p(t))
        (world/twist_pose.py), over its segment's part in the entity's swept box, all pairs in one call;
        normals back with R(t)."""
        ray, box = sweep.pairs(o, d, dist)
        if not len(ray):
            return
        rot, shift = poses_after(sweep.rotation[box], sweep.position[box], sweep.velocity[box], sweep.angular[box],
                                 sweep.times[a:b][ray])
        n = len(ray)
        o_slot, d_slot = np.empty((n, 3), np.float32), np.empty((n, 3), np.float32)
        near, far = np.empty(n, np.float32), np.empty(n, np.float32)
        _into_slots(o, d, dist, ray, box, rot, shift, sweep.boxes, sweep.offsets, o_slot, d_slot, near, far)
        cdist, cprim, cng = sweep.slots.layer.run(o_slot, d_slot, far)
        _take_closest_pairs(ray, near, cdist, cprim, cng, rot, np.int16(code), dist, prim, ng, layer_of)

    def _look_through(self, o, d, dist, prim, ng, masked, far):
        """Continue rays whose static hit belongs to a masked (moved/removed) static entity."""
        dist, prim, ng = dist.copy(), prim.copy(), ng.copy()
        for _ in range(_MAX_RETRACE):
            ent = self._static.prim_entity[prim]
            # ids past the mask's end were never moved: clip the index, the bound test drops them
            inside = (ent >= 0) & (ent < len(masked))
            again = np.flatnonzero(inside & masked[np.clip(ent, 0, len(masked) - 1)])
            if not len(again):
                return dist, prim, ng
            start = dist[again] + np.float32(_SKIP)
            o2 = o[again] + d[again] * start[:, None]
            limit = far[again] if np.ndim(far) else far
            rd, rp, rn = self._static.run(o2, d[again], np.maximum(limit - start, np.float32(0)))
            dist[again] = np.where(rp >= 0, rd + start, limit)
            prim[again] = rp
            ng[again] = rn
        prim[again] = -1  # pathological stack of masked surfaces: report a miss, never a fake hit
        dist[again] = far[again] if np.ndim(far) else far
        ng[again] = 0
        return dist, prim, ng

class _RowsResult:
    """The primitive and layer ids of some rows of a _Result (what _IdLookup.many reads)."""

    def __init__(self, result: _Result, rows: np.ndarray):
        self.prim, self.layer = result.prim[rows], result.layer[rows]


def chunk_bounds(n: int, threads: int) -> np.ndarray:
    """Span boundaries of a batch of n rays on `threads` workers (which take the spans in order as
    they finish one): 1 to 4 spans per worker, a multiple of the thread count, each of at least
    _MIN_CHUNK rays. Rays cost very different amounts (sky rays miss at the root, ground rays walk
    the BVH), so a worker that drew a cheap span takes another; with spans a multiple of the
    workers no worker is left with an extra span while the others idle (3 spans on 2 threads:
    one thread traces two thirds)."""
    per_thread = max(1, min(4, n // (threads * _MIN_CHUNK)))
    return np.linspace(0, n, threads * per_thread + 1).astype(int)


class _Result:
    """Preallocated per-trace outputs that the worker threads fill span by span."""

    def __init__(self, n: int, lazy_normals: bool = False):
        self.distance = np.empty(n, np.float32)
        self.normal = None if lazy_normals else np.empty((n, 3), np.float32)
        self.parts: list = []  # lazy normals: (a, b, Ng, scale) of each span
        self.scale = np.empty(n, np.float32)  # signed 1/|Ng|: scale * Ng is the unit normal facing the ray
        self.cosine = np.empty(n, np.float32)  # the cosine of incidence, -(Ng . d) * scale
        self.prim = np.empty(n, np.int32)
        self.layer = np.zeros(n, np.int16)  # which layer the primitive id belongs to (0 = static)
        self._cosines_given: list = []  # (lo, hi) of the rows of `cosine` handed out as they are (cosines)
        self._lock = threading.Lock()

    def cosines(self, lo: int, hi: int) -> np.ndarray:
        """The cosines of incidence of rays lo..hi, an array no other caller holds: `cosine`'s own rows the first
        time they are asked for (a frame's pieces each ask for theirs once: no copy), a copy when some of them were
        handed out before (a caller may write into its array)."""
        with self._lock:
            if any(a < hi and lo < b for a, b in self._cosines_given):
                return self.cosine[lo:hi].copy()
            self._cosines_given.append((lo, hi))
            return self.cosine[lo:hi]

    def lazy_normal(self, lo: int = 0, hi: int | None = None) -> np.ndarray:
        """Unit normals of rays lo..hi from the kept spans (Ng, scale)."""
        hi = len(self.distance) if hi is None else hi
        normal = np.empty((hi - lo, 3), np.float32)
        for a, b, ng, scale in self.parts:
            a2, b2 = max(a, lo), min(b, hi)
            if a2 < b2:
                np.multiply(ng[a2 - a:b2 - a], scale[a2 - a:b2 - a, None], out=normal[a2 - lo:b2 - lo])
        return normal

    def normal_rows(self, rows: np.ndarray) -> np.ndarray:
        """Unit normals of the rays `rows` only (int64, each in 0..n), the bits of `normal`/`lazy_normal`."""
        if self.normal is not None:
            return self.normal[rows]
        out = np.zeros((len(rows), 3), np.float32)
        for a, b, ng, scale in self.parts:
            _scaled_rows(ng, scale, rows, a, b, out)
        return out


@kernel
def _scaled_rows(ng, scale, rows, a, b, out):
    """out[j] = ng[r] * scale[r] (float32, as np.multiply) for r = rows[j] - a of the span a..b."""
    for j in range(rows.shape[0]):
        r = rows[j] - a
        if 0 <= r < b - a:
            for i in range(3):
                out[j, i] = ng[r, i] * scale[r]


def _shifted(o: np.ndarray, d: np.ndarray, tmin: np.float32) -> np.ndarray:
    """o + d * tmin (rays start at tmin): one new array, the float32 product then the sum."""
    out = np.empty_like(o)
    _shift_kernel(o, d, np.float32(tmin), out)
    return out


@kernel
def _shift_kernel(o, d, tmin, out):
    """out = ray_start(o, d, tmin) over the flat views of C-contiguous (N, 3) arrays."""
    of, df, flat = o.reshape(-1), d.reshape(-1), out.reshape(-1)
    for i in range(flat.shape[0]):
        flat[i] = ray_start_inlined(of[i], df[i], tmin)


_NO_NORMALS = np.empty((0, 3), np.float32)


def occlusion_far(reach: np.ndarray) -> np.ndarray:
    """(N,) float32 tfar of Embree's occlusion query for "a surface closer than reach" (float64 metres): the largest
    float32 under each reach, so a float32 distance t <= tfar exactly when t < reach; 0 for a reach of 0 (not
    below: embreex reads a negative tfar as a hit), whose answer the caller makes False."""
    far = reach.astype(np.float32)  # the nearest float32, then the largest under reach
    far = np.where(far >= reach, np.nextafter(far, np.float32(-np.inf)), far).astype(np.float32)
    return np.maximum(far, np.float32(0.0))


def _tfar(far, n: int) -> np.ndarray:
    """A fresh (n,) float32 tfar for Embree (it writes each hit's distance into it): the trace's one far, or a copy
    of the rays' own."""
    return np.full(n, far, np.float32) if np.ndim(far) == 0 else np.array(far, np.float32)


@kernel
def _finish_span(dist, prim, ng, d, tmin, distance, scale, cosine, normal):
    """Per ray of a traced span: its distance from the ray's true origin (inf for a miss), and the scale
    s with s * Ng the unit normal facing the ray (0 for a miss: Ng = 0); cosine = -(Ng . d) * s = |d . n|,
    the cosine of incidence (float32 -(Ng . d), then the product: the bits of the numpy passes; written here
    with the rest, not in a later pass over the rays: 0.5 ms of an OS1-128 frame of 4 sub-rays); the normal
    s * Ng itself where `normal` has rows (eager normals), else later from the kept Ng and s.

    Embree's Ng is computed by the trace anyway: cheaper than gathering from a per-triangle table. A tiny
    bias keeps misses finite (0 * 1e15 = 0) and copysign orients the normal without a branch."""
    g, e = ng.reshape(-1), d.reshape(-1)  # flat views of the C-contiguous (N, 3) arrays: 2.5x faster here
    for i in range(dist.shape[0]):
        distance[i] = dist[i] + tmin if prim[i] >= 0 else np.float32(np.inf)
        x, y, z = g[3 * i], g[3 * i + 1], g[3 * i + 2]
        square = x * x + y * y + z * z
        dot = x * e[3 * i] + y * e[3 * i + 1] + z * e[3 * i + 2]
        facing = -dot
        s = np.copysign(np.float32(1) / np.sqrt(square + np.float32(1e-30)), -dot)
        scale[i] = s
        cosine[i] = facing * s
        if normal.shape[0]:
            normal[i, 0], normal[i, 1], normal[i, 2] = x * s, y * s, z * s


def _wrapped_take(table: np.ndarray, prim: np.ndarray) -> np.ndarray:
    """np.take(table, prim, mode="wrap") of a 1-D table, in one compiled loop (measured: 0.35 against 0.65 ms for
    the 524 288 material ids of an OS1-128 frame's sub-rays; numpy's take copies item by item through its generic
    chunk loop)."""
    if table.ndim != 1 or len(table) == 0:
        return np.take(table, prim, mode="wrap")
    out = np.empty(prim.shape, table.dtype)
    _wrapped_take_kernel(table, prim.reshape(-1), out.reshape(-1))
    return out


@kernel
def _wrapped_take_kernel(table, prim, out):
    """out[i] = table[prim[i] mod len(table)] (Python's mod: -1 is the last row, as numpy's mode="wrap")."""
    n = table.shape[0]
    for i in range(prim.shape[0]):
        p = prim[i]
        if p < 0 or p >= n:
            p = p % n
        out[i] = table[p]


class _IdLookup:
    """Entity, face and material ids of traced rays lo..hi, gathered on first request (Hits resolve);
    also the lazy normals and the cosines of incidence."""

    def __init__(self, result: _Result, layers: list, lo: int = 0, hi: int | None = None):
        hi = len(result.prim) if hi is None else hi
        self.result, self.layers, self.lo, self.hi = result, layers, lo, hi
        self.prim, self.layer_of = result.prim[lo:hi], result.layer[lo:hi]

    def span(self, a: int, b: int) -> "_IdLookup":
        """The lookup of rays a..b of these (Hits.span)."""
        return _IdLookup(self.result, self.layers, self.lo + a, self.lo + b)

    def __call__(self, name: str) -> np.ndarray:
        return self.many([name])[0]

    def normal_rows(self, rows: np.ndarray) -> np.ndarray:
        """Unit normals of these rays' `rows` only (Hits.normals_at)."""
        rows = np.asarray(rows, np.int64)
        if len(rows) and (rows.min() < 0 or rows.max() >= self.hi - self.lo):
            raise IndexError(f"rows must lie in 0..{self.hi - self.lo - 1}")
        return self.result.normal_rows(rows + self.lo)

    def ids_at(self, name: str, rows: np.ndarray) -> np.ndarray:
        """The ids `name` of these rays' `rows` only (Hits.ids_at): the lookup of `many` on those rows."""
        rows = np.asarray(rows, np.int64)
        if len(rows) and (rows.min() < 0 or rows.max() >= self.hi - self.lo):
            raise IndexError(f"rows must lie in 0..{self.hi - self.lo - 1}")
        return _IdLookup(_RowsResult(self.result, rows + self.lo), self.layers).many([name])[0]

    def many(self, names: list[str]) -> list[np.ndarray]:
        """The attributes `names` of these rays; which dynamic layer each hit came from is looked up once."""
        out, moved = [], None
        for name in names:
            if name == "normal":
                out.append(self.result.normal[self.lo:self.hi] if self.result.normal is not None
                           else self.result.lazy_normal(self.lo, self.hi))
                continue
            if name == "cos_incidence":
                out.append(self.result.cosines(self.lo, self.hi))
                continue
            static = self.layers[_STATIC]
            if static.scene is None:
                values = np.full(len(self.prim), -1, np.int32)
            else:  # the tables' last row is the miss row: 'wrap' sends primitive id -1 there (and ids of
                # other layers, which may exceed this table, somewhere harmless: they are overwritten below)
                values = _wrapped_take(getattr(static, f"prim_{name}"), self.prim)
            out.append(values)
            if len(self.layers) == 2 and self.layers[_MERGED] is None:  # a static world: nothing else to look up
                continue
            if moved is None:  # rays whose closest hit is in a dynamic layer, by layer
                hits = np.flatnonzero(self.layer_of)
                codes = self.layer_of[hits]
                moved = [(code, hits[codes == code]) for code in np.unique(codes)]
            for code, rows in moved:
                values[rows] = np.take(getattr(self.layers[code], f"prim_{name}"), self.prim[rows])
        return out


register_backend("embree", EmbreeBackend)
