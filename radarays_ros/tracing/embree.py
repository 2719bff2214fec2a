"""Embree (CPU) backend through embreex.

embreex has no instancing, so moving entities is done in two layers:

* the static layer: every entity that is static when the backend is created, in world coordinates,
  in one BVH that is never rebuilt. A static entity that is later moved or removed is *masked*: rays
  that hit it are continued past the hit (rare, cheap), and a moved one joins the dynamic layer.
* the dynamic layer: the non-static (and later added) entities, posed into world coordinates in a
  small second BVH that is rebuilt lazily, only when something in it changed, at the next trace.

So a pose update costs O(1) (a flag), and the work it causes is proportional to the triangles of the
dynamic entities, never to the static world. Normals come from per-triangle world-frame tables, so
they are right for every pose (rmagine's Embree path uses object-space normals for instances).

embreex releases the GIL inside `run`, so rays are traced in chunks on a thread pool.
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..errors import TracingError
from ..world.scene import Entity, Scene
from .backend import Backend, Hits, check_rays, register_backend

try:  # optional heavy dependency, imported once with a clear message if missing
    from embreex import mesh_construction as _mesh_construction
    from embreex import rtcore as _rtcore
    from embreex import rtcore_scene as _rtcore_scene
except ImportError as exc:  # pragma: no cover - embreex is a hard dependency of the package
    _IMPORT_ERROR: Exception | None = exc
else:
    _IMPORT_ERROR = None

_MIN_CHUNK = 8192  # below this, thread hand-off costs more than it saves
_MAX_RETRACE = 32  # passes through masked static entities before giving up (counts as a miss)
_SKIP = 1e-4  # metres to step past a masked hit before continuing


class _Layer:
    """One BVH over world-frame triangles of some entities, with per-triangle lookup tables.

    The tables carry one extra last row describing a miss, so that indexing them with Embree's
    primitive id -1 yields the miss values directly (no masking on the hot path).
    """

    def __init__(self, device, entities: list[Entity]):
        verts, faces, info = [], [], []
        offset = 0
        for e in entities:
            if not e.mesh.n_faces:
                continue
            v = e.mesh.vertices @ e.pose[:3, :3].T + e.pose[:3, 3]
            verts.append(v)
            faces.append(e.mesh.faces + offset)
            offset += len(v)
            info.append(np.column_stack([np.full(e.mesh.n_faces, e.id), e.mesh.face_ids, e.face_materials]))
        self.n_triangles = int(sum(len(f) for f in faces))
        self.scene = None
        if not self.n_triangles:
            return
        vertices = np.concatenate(verts).astype(np.float32)
        indices = np.concatenate(faces).astype(np.int32)
        # entity, face and material per triangle, each with the miss row -1 appended
        info = np.concatenate(info + [[[-1, -1, -1]]]).astype(np.int32)
        self.prim_entity, self.prim_face, self.prim_material = (np.ascontiguousarray(info[:, k]) for k in range(3))
        tri = vertices[indices]
        n = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
        length = np.linalg.norm(n, axis=1, keepdims=True)
        unit = np.divide(n, length, out=np.zeros_like(n), where=length > 0)
        self.prim_normal = np.concatenate([unit, np.zeros((1, 3))]).astype(np.float32)
        self.bounds = np.stack([vertices.min(axis=0), vertices.max(axis=0)]).astype(np.float32)
        self.scene = _rtcore_scene.EmbreeScene(device)
        _mesh_construction.TriangleMesh(self.scene, vertices, indices)

    def run(self, origins, directions, tfar) -> tuple[np.ndarray, np.ndarray]:
        """(distance, primitive) per ray; primitive -1 and distance tfar where nothing is hit."""
        if self.scene is None:
            return tfar.copy(), np.full(len(origins), -1, np.int32)
        out = self.scene.run(origins, directions, dists=tfar, output=1)
        return out["tfar"], out["primID"]

    def may_hit(self, origins, directions, tfar) -> np.ndarray:
        """Rays whose segment meets this layer's bounding box (slab test): the others cannot hit it."""
        with np.errstate(divide="ignore", invalid="ignore"):
            inv = np.float32(1.0) / directions
            t0 = (self.bounds[0] - origins) * inv
            t1 = (self.bounds[1] - origins) * inv
        near = np.nanmax(np.minimum(t0, t1), axis=1)
        far = np.nanmin(np.maximum(t0, t1), axis=1)
        return (near <= far) & (far >= 0) & (near <= tfar)


class EmbreeBackend(Backend):
    name = "embree"

    def __init__(self, scene: Scene, threads: int | None = None):
        if _IMPORT_ERROR is not None:
            raise TracingError(f"the embree backend needs embreex (pip install embreex): {_IMPORT_ERROR}")
        super().__init__(scene)
        self.threads = max(1, int(threads or os.cpu_count() or 1))
        self._pool = ThreadPoolExecutor(self.threads) if self.threads > 1 else None
        self._device = _rtcore.EmbreeDevice()
        self._lock = threading.Lock()
        with scene.lock:
            static = [e for e in scene.entities if e.static]
            self._static = _Layer(self._device, static)
            self._static_ids = {e.id for e in static}
            self._dynamic_ids = {e.id for e in scene.entities if not e.static}
            self._masked = np.zeros(0, bool)  # indexed by entity id: static entities to look through
            self._dynamic: _Layer | None = None
            self._dirty = True
            scene.subscribe(self)
        self.static_rebuilds = 0  # stays 0: the static layer is built once (tests check this)
        self.dynamic_rebuilds = 0

    # -- scene listener -----------------------------------------------------------------------
    def on_entity_added(self, entity: Entity) -> None:
        with self._lock:
            self._dynamic_ids.add(entity.id)
            self._dirty = True

    def on_entity_removed(self, entity: Entity) -> None:
        with self._lock:
            if entity.id in self._static_ids:
                self._mask(entity.id)
            self._dynamic_ids.discard(entity.id)
            self._dirty = True

    def on_entity_moved(self, entity: Entity) -> None:
        with self._lock:
            if entity.id in self._static_ids:  # look through the baked copy, trace the moved one
                self._mask(entity.id)
                self._dynamic_ids.add(entity.id)
            self._dirty = entity.id in self._dynamic_ids or self._dirty

    def _mask(self, entity_id: int) -> None:
        if len(self._masked) <= entity_id:
            self._masked = np.concatenate([self._masked, np.zeros(entity_id + 1 - len(self._masked), bool)])
        self._masked[entity_id] = True

    def _sync(self) -> tuple[_Layer | None, np.ndarray]:
        with self.scene.lock, self._lock:
            if self._dirty:
                entities = [self.scene.entity(i) for i in sorted(self._dynamic_ids)]
                self._dynamic = _Layer(self._device, entities) if entities else None
                self._dirty = False
                self.dynamic_rebuilds += 1
            return self._dynamic, self._masked.copy()

    # -- tracing --------------------------------------------------------------------------------
    def trace(self, origins, directions, tmin: float = 0.0, tmax: float = np.inf) -> Hits:
        o, d = check_rays(origins, directions)
        if not (0.0 <= tmin < tmax):
            raise TracingError(f"need 0 <= tmin < tmax, got tmin={tmin}, tmax={tmax}")
        dynamic, masked = self._sync()
        n = len(o)
        out = Hits.empty(n)
        if n == 0:
            return out
        if tmin > 0:
            o = o + d * np.float32(tmin)
        far = np.float32(min(float(tmax) - tmin, 1e30))
        job = (o, d, far, np.float32(tmin), dynamic, masked if masked.any() else None, out)
        if self._pool is None or n < 2 * _MIN_CHUNK:
            self._trace_span(job, 0, n)
        else:  # each worker traces AND post-processes its span: numpy releases the GIL too
            bounds = np.linspace(0, n, min(self.threads * 4, n // _MIN_CHUNK) + 1).astype(int)
            list(self._pool.map(lambda ab: self._trace_span(job, *ab), zip(bounds[:-1], bounds[1:])))
        return out

    def _trace_span(self, job, a: int, b: int) -> None:
        o_all, d_all, far, tmin, dynamic, masked, out = job
        o, d = o_all[a:b], d_all[a:b]
        tfar = np.full(b - a, far, np.float32)
        dist, prim = self._static.run(o, d, tfar)
        if masked is not None and self._static.scene is not None:
            dist, prim = self._look_through(o, d, dist, prim, masked, far)
        self._write(out, slice(a, b), dist, prim, d, tmin, self._static)
        if dynamic is not None and dynamic.scene is not None:
            cand = np.flatnonzero(dynamic.may_hit(o, d, dist))
            if len(cand):
                ddist, dprim = dynamic.run(o[cand], d[cand], dist[cand])
                closer = dprim >= 0  # tfar was the static distance: any dynamic hit is closer
                if closer.any():
                    rays = cand[closer]
                    self._write(out, a + rays, ddist[closer], dprim[closer], d[rays], tmin, dynamic)

    @staticmethod
    def _write(out: Hits, where, dist, prim, d, tmin, layer: _Layer) -> None:
        """Fill hits at `where` (a slice or indices) from one layer's primitive ids.

        The tables' last row describes a miss, so primitive id -1 gathers miss values. np.take with
        out= gathers straight into the result (several times faster than fancy indexing)."""
        if layer.scene is None:  # nothing to hit: explicit misses (Hits.empty() is uninitialised)
            out.distance[where], out.normal[where], out.entity[where], out.face[where], out.material[where] = np.inf, 0, -1, -1, -1
            return
        if isinstance(where, slice):
            normal = out.normal[where]
            np.take(layer.prim_normal, prim, axis=0, out=normal)
            for column, field in ((layer.prim_entity, out.entity), (layer.prim_face, out.face), (layer.prim_material, out.material)):
                np.take(column, prim, out=field[where])
        else:
            normal = np.take(layer.prim_normal, prim, axis=0)
            for column, field in ((layer.prim_entity, out.entity), (layer.prim_face, out.face), (layer.prim_material, out.material)):
                field[where] = np.take(column, prim)
        # normals face the ray: multiply by -sign(n.d); column-wise dot and multiply are the fast numpy forms
        facing = normal[:, 0] * d[:, 0] + normal[:, 1] * d[:, 1] + normal[:, 2] * d[:, 2]
        np.multiply(normal, np.where(facing > 0, np.float32(-1), np.float32(1))[:, None], out=normal)
        if not isinstance(where, slice):
            out.normal[where] = normal
        out.distance[where] = np.where(prim >= 0, dist + tmin if tmin else dist, np.float32(np.inf))

    def _look_through(self, o, d, dist, prim, masked, far):
        """Continue rays whose static hit belongs to a masked (moved/removed) static entity."""
        dist, prim = dist.copy(), prim.copy()
        for _ in range(_MAX_RETRACE):
            ent = self._static.prim_entity[prim]
            again = np.flatnonzero((ent >= 0) & (ent < len(masked)) & masked[np.maximum(ent, 0)])
            if not len(again):
                return dist, prim
            start = dist[again] + np.float32(_SKIP)
            o2 = o[again] + d[again] * start[:, None]
            rd, rp = self._static.run(o2, d[again], np.maximum(far - start, np.float32(0)))
            dist[again] = np.where(rp >= 0, rd + start, far)
            prim[again] = rp
        prim[again] = -1  # pathological stack of masked surfaces: report a miss, never a fake hit
        dist[again] = far
        return dist, prim

    def close(self) -> None:
        super().close()
        if self._pool is not None:
            self._pool.shutdown(wait=False)


register_backend("embree", EmbreeBackend)
