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
    """One BVH over world-frame triangles of some entities, with per-triangle id tables.

    The tables carry one extra last row describing a miss, so that indexing them with Embree's
    primitive id -1 yields -1 directly (no masking on the hot path).
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
        info = np.concatenate(info + [[[-1, -1, -1]]]).astype(np.int32)
        self.prim_entity, self.prim_face, self.prim_material = (np.ascontiguousarray(info[:, k]) for k in range(3))
        self.bounds = np.stack([vertices.min(axis=0), vertices.max(axis=0)]).astype(np.float32)
        self.scene = _rtcore_scene.EmbreeScene(device)
        _mesh_construction.TriangleMesh(self.scene, vertices, indices)

    def run(self, origins, directions, tfar):
        """(distance, primitive, Embree's unnormalised world-frame normal Ng) per ray.

        Where nothing is hit: primitive -1, distance = tfar, Ng = 0."""
        if self.scene is None:
            return tfar.copy(), np.full(len(origins), -1, np.int32), np.zeros((len(origins), 3), np.float32)
        out = self.scene.run(origins, directions, dists=tfar, output=1)
        return out["tfar"], out["primID"], out["Ng"]

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
        if n == 0:
            return Hits.misses(0)
        if tmin > 0:
            o = o + d * np.float32(tmin)
        far = np.float32(min(float(tmax) - tmin, 1e30))
        result = _Result(n)
        job = (o, d, far, np.float32(tmin), dynamic, masked if masked.any() else None, result)
        if self._pool is None or n < 2 * _MIN_CHUNK:
            self._trace_span(job, 0, n)
        else:  # each worker traces AND post-processes its span: numpy releases the GIL too
            bounds = np.linspace(0, n, min(self.threads * 4, n // _MIN_CHUNK) + 1).astype(int)
            list(self._pool.map(lambda ab: self._trace_span(job, *ab), zip(bounds[:-1], bounds[1:])))
        lookup = _IdLookup(result.prim, result.in_dynamic, self._static, dynamic)
        return Hits(result.distance, result.normal, resolve=lookup)

    def _trace_span(self, job, a: int, b: int) -> None:
        o_all, d_all, far, tmin, dynamic, masked, result = job
        o, d = o_all[a:b], d_all[a:b]
        dist, prim, ng = self._static.run(o, d, np.full(b - a, far, np.float32))
        if masked is not None and self._static.scene is not None:
            dist, prim, ng = self._look_through(o, d, dist, prim, ng, masked, far)
        if dynamic is not None and dynamic.scene is not None:
            cand = np.flatnonzero(dynamic.may_hit(o, d, dist))
            if len(cand):
                ddist, dprim, dng = dynamic.run(o[cand], d[cand], dist[cand])
                closer = dprim >= 0  # tfar was the static distance: any dynamic hit is closer
                rays = cand[closer]
                dist[rays], prim[rays], ng[rays] = ddist[closer], dprim[closer], dng[closer]
                result.in_dynamic[a + rays] = True
        result.prim[a:b] = prim
        result.distance[a:b] = np.where(prim >= 0, dist + tmin if tmin else dist, np.float32(np.inf))
        _unit_normals_facing(ng, d, out=result.normal[a:b])

    def _look_through(self, o, d, dist, prim, ng, masked, far):
        """Continue rays whose static hit belongs to a masked (moved/removed) static entity."""
        dist, prim, ng = dist.copy(), prim.copy(), ng.copy()
        for _ in range(_MAX_RETRACE):
            ent = self._static.prim_entity[prim]
            again = np.flatnonzero((ent >= 0) & (ent < len(masked)) & masked[np.maximum(ent, 0)])
            if not len(again):
                return dist, prim, ng
            start = dist[again] + np.float32(_SKIP)
            o2 = o[again] + d[again] * start[:, None]
            rd, rp, rn = self._static.run(o2, d[again], np.maximum(far - start, np.float32(0)))
            dist[again] = np.where(rp >= 0, rd + start, far)
            prim[again] = rp
            ng[again] = rn
        prim[again] = -1  # pathological stack of masked surfaces: report a miss, never a fake hit
        dist[again] = far
        ng[again] = 0
        return dist, prim, ng

    def close(self) -> None:
        super().close()
        if self._pool is not None:
            self._pool.shutdown(wait=False)


class _Result:
    """Preallocated per-trace outputs that the worker threads fill span by span."""

    def __init__(self, n: int):
        self.distance = np.empty(n, np.float32)
        self.normal = np.empty((n, 3), np.float32)
        self.prim = np.empty(n, np.int32)
        self.in_dynamic = np.zeros(n, bool)


def _unit_normals_facing(ng: np.ndarray, d: np.ndarray, out: np.ndarray) -> None:
    """out = Ng / |Ng|, turned to face the ray; 0 for misses (Ng = 0).

    Embree's Ng is world-frame here (no instancing), computed by the trace anyway and still in
    cache: cheaper than gathering from a per-triangle table. Column-wise products are the fast
    numpy forms for (N, 3) float32."""
    length2 = ng[:, 0] * ng[:, 0] + ng[:, 1] * ng[:, 1] + ng[:, 2] * ng[:, 2]
    facing = ng[:, 0] * d[:, 0] + ng[:, 1] * d[:, 1] + ng[:, 2] * d[:, 2]
    with np.errstate(divide="ignore"):
        scale = np.where(length2 > 0, np.float32(1) / np.sqrt(length2), np.float32(0))
    scale[facing > 0] *= np.float32(-1)
    np.multiply(ng, scale[:, None], out=out)


class _IdLookup:
    """Entity, face and material ids of traced rays, gathered on first request (Hits resolve)."""

    def __init__(self, prim, in_dynamic, static: _Layer, dynamic: _Layer | None):
        self.prim, self.in_dynamic, self.static, self.dynamic = prim, in_dynamic, static, dynamic

    def __call__(self, name: str) -> np.ndarray:
        if self.static.scene is None:
            values = np.full(len(self.prim), -1, np.int32)
        else:  # the tables' last row is the miss row: 'wrap' sends primitive id -1 there (and dynamic
            # layer ids, which may exceed this table, somewhere harmless: they are overwritten below)
            values = np.take(getattr(self.static, f"prim_{name}"), self.prim, mode="wrap")
        if self.dynamic is not None and self.in_dynamic.any():
            rows = np.flatnonzero(self.in_dynamic)
            values[rows] = np.take(getattr(self.dynamic, f"prim_{name}"), self.prim[rows])
        return values


register_backend("embree", EmbreeBackend)
