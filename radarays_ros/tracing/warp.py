"""Warp backend: the mirrored scene as NVIDIA Warp meshes, traced by one kernel on "cpu" or "cuda".

Same contract and answers as the Embree backend (embree.py), with Warp's instancing instead of its layers:

* the static world: every entity that is static when the backend is created, posed into world
  coordinates, in one `wp.Mesh` whose BVH is built once. A static entity that is later moved or removed
  is *masked*: its vertices in that mesh are collapsed onto one of them, so its triangles have no area
  and are never hit; the BVH stays valid (only looser there) and is neither rebuilt nor refit. A moved
  one becomes an instance. (Unlike stepping past a masked hit, as the Embree backend does, this never
  skips a visible face lying in the masked one's plane, such as a floor under a moved crate.)
* instances: every other entity (moving ones, and any entity added later, small or large) is a
  `wp.Mesh` in its own frame, built once when it appears, with a pose. Moving it changes a rotation,
  a position and a world box (O(1), uploaded at the next trace); no mesh BVH is ever rebuilt or refit.
  Rays reach instances through a `wp.Bvh` over their world boxes (the top level, rebuilt from the boxes
  at the next trace after a move: tens of microseconds for hundreds of boxes), or, on Warp before
  1.3.2 whose BVH ray query misses boxes, a slab test per box (warp_kernels.py).
* rays with times (a sweep): an instance whose twist moves it is met where its screw motion takes it by each
  ray's time (in the kernel), found through the boxes it stays in over that trace's times
  (twist_pose.swept_boxes, as the Embree backend's); the other instances, and rays without times, as above.

The kernel (warp_kernels.py) writes distance, normal facing the ray, cosine of incidence, entity, face
(the mesh file's own order) and material for every ray on the device; only the attributes the caller
reads are copied to the host. On the CPU device the arrays are shared with numpy (no copy).
The same kernel runs on both devices, so CI checks the GPU code path on Warp's CPU device.
"""
from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import threading

import numpy as np

from ..errors import ConfigError, TracingError, one_line
from ..world.scene import Entity, Scene
from ..world.twist_pose import swept_boxes
from .backend import ALL, Backend, Hits, Rays, check_span, wanted

def load_warp():
    """The `warp` module, initialised quietly (the CLIs print to stdout); TracingError if missing."""
    try:
        import warp as wp
    except ImportError as exc:
        raise TracingError(f"backend 'warp' needs NVIDIA Warp (pip install 'radarays_ros[gpu]' or warp-lang): {exc}") from None
    # no banner or per-module compile lines on stdout (the CLIs write results there); the kernel
    # cache stays on. Warp 1.0 reads `quiet`, later releases `log_level`.
    wp.config.quiet = True
    if hasattr(wp.config, "log_level") and hasattr(wp, "LOG_WARNING"):
        wp.config.log_level = max(wp.config.log_level, wp.LOG_WARNING)
    global INIT_NOTE
    with _native_stderr() as note:  # Warp's native library prints "Warp CUDA warning: Could not find or load
        wp.init()                   # the NVIDIA CUDA driver" on fd 2 whatever `quiet` says (measured, 1.19)
    INIT_NOTE = INIT_NOTE or note.text
    return wp


INIT_NOTE = ""  # what Warp's native library said while it initialised (kept for our own one-line errors)


class _Note:
    text = ""


@contextlib.contextmanager
def _native_stderr():
    """File descriptor 2 into a temporary file for the duration (native code writes there, not to sys.stderr);
    the text it caught, as one line, in the yielded note. Without a usable fd 2 nothing is caught."""
    note = _Note()
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError, AttributeError):
        yield note
        return
    try:
        with tempfile.TemporaryFile() as caught:
            os.dup2(caught.fileno(), 2)
            try:
                yield note
            finally:
                os.dup2(saved, 2)
                caught.seek(0)
                note.text = one_line(caught.read(4000).decode("utf8", "replace").strip(), 300)
    finally:
        os.close(saved)


def cuda_devices() -> int:
    """Number of CUDA devices Warp can use here (0 without a driver, or without Warp)."""
    try:
        wp = load_warp()
        return int(wp.get_cuda_device_count())
    except TracingError:
        return 0


def resolve_device(wp, device: str | None) -> str:
    """'cpu', 'cuda' or 'cuda:N', checked against what this machine has; None = cuda if any, else cpu."""
    count = int(wp.get_cuda_device_count())
    if device is None or device == "auto":
        return "cuda:0" if count else "cpu"
    name = str(device).strip().lower()
    if name == "cpu":
        return "cpu"
    if name == "cuda" or (name.startswith("cuda:") and name[5:].isdigit()):
        index = int(name[5:]) if ":" in name else 0
        if index >= count:
            seen = f"{count} CUDA device(s)" if count else \
                f"no CUDA device ({INIT_NOTE or 'no NVIDIA driver or GPU visible'})"
            raise TracingError(f"backend 'warp' device '{device}': Warp {wp.config.version} sees {seen}; use device 'cpu'")
        return f"cuda:{index}"
    raise TracingError(f"backend 'warp' device '{device}': allowed 'cpu', 'cuda', 'cuda:N' or 'auto'")


TOP_LEVELS = ("bvh", "loop")
BVH_RAY_QUERY_FIXED = (1, 3, 2)  # NVIDIA/warp GH-288: bvh_query_ray used the direction for its reciprocal


def default_top_level(wp) -> str:
    """'bvh' where Warp's BVH ray query finds every box it should (1.3.2 on), else 'loop'."""
    try:
        version = tuple(int(part) for part in str(wp.config.version).split(".")[:3])
    except ValueError:  # a development build: assume a current one
        return "bvh"
    return "bvh" if version >= BVH_RAY_QUERY_FIXED else "loop"


class _MeshTables:
    """A triangle mesh on the device with per-triangle face and material ids (host copies kept)."""

    def __init__(self, wp, device, vertices: np.ndarray, faces: np.ndarray, face_ids, materials, entities=None,
                 radius: float = 0.0):
        self.n_faces = len(faces)
        self.host_points = np.ascontiguousarray(vertices, np.float32)
        self.points = wp.array(self.host_points, dtype=wp.vec3, device=device)
        self.indices = wp.array(np.ascontiguousarray(faces, np.int32).reshape(-1), dtype=wp.int32, device=device)
        self.mesh = wp.Mesh(points=self.points, indices=self.indices)
        self.face = np.ascontiguousarray(face_ids, np.int32)
        self.material = np.ascontiguousarray(materials, np.int32)
        self.entity = None if entities is None else np.ascontiguousarray(entities, np.int32)
        self.bounds = np.stack([vertices.min(axis=0), vertices.max(axis=0)]).astype(np.float64)
        self.radius = radius  # an instance's TriMesh.radius (its swept boxes); none for the static world


def _static_tables(wp, device, entities: list[Entity]) -> _MeshTables | None:
    verts, faces, ids, mats, ents = [], [], [], [], []
    spans = {}
    offset = 0
    for e in entities:
        if not e.mesh.n_faces:
            continue
        spans[e.id] = (offset, offset + len(e.mesh.vertices))
        verts.append(e.mesh.vertices @ e.pose[:3, :3].T + e.pose[:3, 3])
        faces.append(e.mesh.faces + offset)
        offset += len(e.mesh.vertices)
        ids.append(e.mesh.face_ids)
        mats.append(e.face_materials)
        ents.append(np.full(e.mesh.n_faces, e.id, np.int32))
    if not faces:
        return None
    tables = _MeshTables(wp, device, np.concatenate(verts), np.concatenate(faces), np.concatenate(ids),
                         np.concatenate(mats), np.concatenate(ents))
    tables.vertex_spans = spans  # entity id -> its vertex rows in the static mesh
    return tables


def require_device_backend(backend, where: str):
    """The one check that device frames (radar/warp_frame.py, lidar_ros/warp_frame.py) have the warp
    backend: `backend` (a backend, or a backend name as a command line holds it before making one)
    itself, or ConfigError naming `where` and the backend given."""
    if isinstance(backend, WarpBackend) or backend == "warp":
        return backend
    got = backend if isinstance(backend, str) else getattr(backend, "name", None) or type(backend).__name__
    raise ConfigError(f"{where}: frames 'device' needs the warp backend (backend: warp), got backend '{got}'")


class WarpBackend(Backend):
    name = "warp"
    SWEEPS_ENTITIES = True

    def __init__(self, scene: Scene, device: str | None = None, threads: int | None = None,
                 top_level: str | None = None):
        """device: 'cpu', 'cuda', 'cuda:N' or None/'auto' (CUDA when present). threads: accepted for
        the common backend options and ignored (Warp's CPU device runs a kernel on one thread).
        top_level: how rays find the moving entities, 'bvh' or 'loop' (None: bvh where this Warp's
        BVH ray query works, default_top_level)."""
        wp = load_warp()
        super().__init__(scene)
        self.wp = wp
        self.device = resolve_device(wp, device)
        if top_level is not None and top_level not in TOP_LEVELS:
            raise TracingError(f"backend 'warp' top_level '{top_level}': allowed {', '.join(TOP_LEVELS)} or None")
        self.top_level = top_level or default_top_level(wp)
        self._bvh = None  # the top level over the instances' world boxes (top_level 'bvh')
        from . import warp_kernels

        self._kernels = warp_kernels
        self._lock = threading.Lock()  # listener state (flags, pending sets)
        self._trace_lock = threading.Lock()  # device arrays of one trace
        self.static_rebuilds = 0  # the contract's counter: the static mesh is built here only, never again
        self.instance_builds = 0  # wp.Mesh builds of instances: one per entity that becomes one
        with scene.lock:
            static = [e for e in scene.entities if e.static]
            self._static = _static_tables(wp, self.device, static)
            self._static_ids = {e.id for e in static}
            self._masked: set[int] = set()
            self._collapsed: set[int] = set()
            self._instances: dict[int, _MeshTables | None] = {}  # None until built at the next sync
            self._layout_dirty = True  # instance set changed: ids and tables to re-upload
            self._poses_dirty = True
            self._masked_dirty = True
            for e in scene.entities:
                if not e.static:
                    self._add_instance(e)
            scene.subscribe(self)
        dev = self.device
        if self._static is not None:
            s = self._static
            self._static_dev = tuple(wp.array(a, dtype=wp.int32, device=dev) for a in (s.entity, s.face, s.material))
        else:
            self._static_dev = tuple(wp.zeros(1, dtype=wp.int32, device=dev) for _ in range(3))
        self._order: list[int] = []
        self._no_times = wp.zeros(1, dtype=float, device=dev)  # the kernel's times for rays without

    # -- scene listener -----------------------------------------------------------------------
    def on_entity_added(self, entity: Entity) -> None:
        with self._lock:
            self._add_instance(entity)

    def on_entity_removed(self, entity: Entity) -> None:
        with self._lock:
            if entity.id in self._static_ids:
                self._masked.add(entity.id)
                self._masked_dirty = True
            if self._instances.pop(entity.id, False) is not False:
                self._layout_dirty = True

    def _moved(self, entity: Entity) -> None:
        if entity.id in self._instances:
            self._poses_dirty = True  # O(1): the new pose is read at the next trace
        elif entity.id in self._static_ids and entity.id not in self._masked:
            self._masked.add(entity.id)  # collapse the baked copy, trace the moved one
            self._masked_dirty = True
            self._add_instance(entity)

    def _add_instance(self, entity: Entity) -> None:
        if entity.mesh.n_faces:
            self._instances[entity.id] = None
            self._layout_dirty = True

    # -- device state -------------------------------------------------------------------------
    def _sync(self, timed: bool = False) -> list | None:
        """Brings the device arrays up to date with the scene (called with _trace_lock held). timed: also the
        twist of each instance, in instance order, read with the poses (None for one its twist does not move),
        or None when no instance's twist moves it."""
        wp, dev = self.wp, self.device
        twists = None
        with self.scene.lock, self._lock:
            for entity_id, inst in list(self._instances.items()):
                if inst is None:
                    e = self.scene.entity(entity_id)
                    self._instances[entity_id] = _MeshTables(wp, dev, e.mesh.vertices, e.mesh.faces,
                                                             e.mesh.face_ids, e.face_materials, radius=e.mesh.radius())
                    self.instance_builds += 1
            layout, poses_changed, masked_changed = self._layout_dirty, self._poses_dirty, self._masked_dirty
            if layout:
                self._order = sorted(self._instances)
            poses = None
            if layout or poses_changed:
                poses = np.array([self.scene.entity(i).pose for i in self._order]).reshape(-1, 4, 4)
            masked = sorted(self._masked - self._collapsed) if masked_changed else None
            self._layout_dirty = self._poses_dirty = self._masked_dirty = False
            sweeping = self.scene.sweeping_ids() if timed else ()
            if any(i in sweeping for i in self._order):
                twists = [self.scene.entity(i).twist if i in sweeping else None for i in self._order]
        if layout:
            self._upload_layout()
        if poses is not None:
            self._upload_poses(poses)
        for entity_id in masked or ():
            self._collapse(entity_id)
        return twists

    def _collapse(self, entity_id: int) -> None:
        """Masks a static entity: its vertices in the static mesh all moved onto its first one."""
        span = self._static.vertex_spans.get(entity_id) if self._static is not None else None
        if span is None or entity_id in self._collapsed:
            return
        start, stop = span
        points = np.repeat(self._static.host_points[start:start + 1], stop - start, axis=0)
        self.wp.copy(self._static.points, self.wp.array(points, dtype=self.wp.vec3, device=self.device),
                     dest_offset=start, src_offset=0, count=stop - start)
        self._collapsed.add(entity_id)

    def _upload_layout(self) -> None:
        wp, dev = self.wp, self.device
        tables = [self._instances[i] for i in self._order]
        sizes = np.array([t.n_faces for t in tables], np.int32)
        offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int32) if len(tables) else np.zeros(1, np.int32)
        face = np.concatenate([t.face for t in tables]) if tables else np.zeros(1, np.int32)
        material = np.concatenate([t.material for t in tables]) if tables else np.zeros(1, np.int32)
        ids = np.array([t.mesh.id for t in tables] or [0], np.uint64)
        self._inst_dev = {
            "mesh": wp.array(ids, dtype=wp.uint64, device=dev),
            "entity": wp.array(np.array(self._order or [0], np.int32), dtype=wp.int32, device=dev),
            "offset": wp.array(offsets, dtype=wp.int32, device=dev),
            "face": wp.array(face, dtype=wp.int32, device=dev),
            "material": wp.array(material, dtype=wp.int32, device=dev),
        }
        self._local_bounds = np.array([t.bounds for t in tables]).reshape(-1, 2, 3)
        self._radius = np.array([t.radius for t in tables], np.float64)
        still = np.zeros((max(len(tables), 1), 3), np.float32)  # no instance sweeps until a trace of timed rays says so
        self._inst_dev["sweeps"] = wp.zeros(max(len(tables), 1), dtype=wp.int32, device=dev)
        self._inst_dev["velocity"] = self._inst_dev["angular"] = wp.array(still, dtype=wp.vec3, device=dev)

    def _upload_poses(self, poses: np.ndarray) -> None:
        wp, dev = self.wp, self.device
        n = len(poses)
        rot = poses[:, :3, :3]
        pos = poses[:, :3, 3]
        lo, hi = self._local_bounds[:, 0], self._local_bounds[:, 1]
        # world box of a posed local box: centre rotated, half-extent through |R| (exact for a box)
        centre, half = (lo + hi) / 2, (hi - lo) / 2
        wc = np.einsum("nij,nj->ni", rot, centre) + pos
        wh = np.einsum("nij,nj->ni", np.abs(rot), half) + 1e-4  # a margin for float32 round-off
        lower, upper = (wc - wh).astype(np.float32), (wc + wh).astype(np.float32)
        if n == 0:
            rot, pos = np.eye(3)[None], np.zeros((1, 3))
            lower = upper = np.zeros((1, 3), np.float32)
        inst = self._inst_dev
        inst["rot"] = wp.array(np.ascontiguousarray(rot, np.float32), dtype=wp.mat33, device=dev)
        inst["pos"] = wp.array(np.ascontiguousarray(pos, np.float32), dtype=wp.vec3, device=dev)
        inst["lower"] = wp.array(lower, dtype=wp.vec3, device=dev)
        inst["upper"] = wp.array(upper, dtype=wp.vec3, device=dev)
        self._poses_host = poses  # (n, 4, 4) float64: where swept instances start (_swept_arrays)
        self._boxes_host = (lower, upper)
        # a new BVH over the new boxes (not a refit in place): a device pipeline still running on the
        # previous SceneArrays keeps a consistent snapshot
        self._bvh = wp.Bvh(inst["lower"], inst["upper"]) if self.top_level == "bvh" and n else None
        self._n_inst = n

    # -- tracing --------------------------------------------------------------------------------
    def trace_rays(self, rays: Rays, tmin: float = 0.0, tmax: float = np.inf, *, want=ALL) -> Hits:
        """The kernel computes every attribute on the device (the cost is the trace itself); `want`
        says which are copied to the host at once (one transfer on CUDA), the others on first access."""
        tmin, tmax = check_span(tmin, tmax)
        names = wanted(want)
        with self._trace_lock:
            twists = self._sync(timed=rays.times is not None)
            if len(rays) == 0:
                return Hits.misses(0)
            swept = self._swept_arrays(twists, rays.times) if twists is not None else None
            out = self._launch(rays.origins, rays.directions, tmin, min(tmax - tmin, 1e30), swept)
        host = _DeviceAttributes(out)
        for name in names:
            for field in _FIELDS_OF[name]:
                host(field)
        return Hits(host("distance"), resolve=host)

    def _launch(self, o: np.ndarray, d: np.ndarray, tmin: float, far: float, swept: dict | None = None) -> dict:
        wp, dev = self.wp, self.device
        copy = dev != "cpu"  # the CPU device reads the numpy buffers in place
        rays_o = wp.array(o, dtype=wp.vec3, device=dev, copy=copy)
        rays_d = wp.array(d, dtype=wp.vec3, device=dev, copy=copy)
        return self._first_hits(rays_o, rays_d, tmin, far, swept)

    def _swept_arrays(self, twists: list, times: np.ndarray) -> dict:
        """The instance arrays of one trace of rays with `times`: each instance whose twist moves it flagged,
        with its twist, and in the world box it stays in over those times (twist_pose.swept_boxes); the top
        level rebuilt over those boxes; the rays' times."""
        wp, dev = self.wp, self.device
        n = len(twists)
        sweeps = np.array([t is not None for t in twists])
        velocity, angular = np.zeros((n, 3)), np.zeros((n, 3))
        for k in np.flatnonzero(sweeps).tolist():
            velocity[k], angular[k] = twists[k]
        lower, upper = (b.copy() for b in self._boxes_host)
        poses = self._poses_host[sweeps]
        boxes = swept_boxes(poses[:, :3, :3], poses[:, :3, 3], velocity[sweeps], angular[sweeps], self._radius[sweeps],
                            float(times.min()), float(times.max()))
        lower[sweeps], upper[sweeps] = boxes[:, 0], boxes[:, 1]
        out = {"sweeps": wp.array(sweeps.astype(np.int32), dtype=wp.int32, device=dev),
               "velocity": wp.array(velocity.astype(np.float32), dtype=wp.vec3, device=dev),
               "angular": wp.array(angular.astype(np.float32), dtype=wp.vec3, device=dev),
               "lower": wp.array(lower, dtype=wp.vec3, device=dev), "upper": wp.array(upper, dtype=wp.vec3, device=dev),
               "times": wp.array(np.ascontiguousarray(times, np.float32), dtype=float, device=dev)}
        out["bvh"] = wp.Bvh(out["lower"], out["upper"]) if self.top_level == "bvh" else None
        return out

    def trace_on_device(self, origins, directions, tmin: float = 0.0, tmax: float = np.inf) -> dict:
        """First hits of rays already on this backend's device, left there: a dict of Warp arrays
        distance (inf = miss), normal, cos_incidence, entity, face, material. For device pipelines
        (and the benchmark's kernel-only figure). origins, directions: wp.array(dtype=wp.vec3) of equal
        length on self.device, unit directions, finite values (not checked here: they never left the
        device)."""
        wp = self.wp
        for name, a in (("origins", origins), ("directions", directions)):
            if not isinstance(a, wp.array) or a.dtype != wp.vec3 or str(a.device) != self.device:
                raise TracingError(f"trace_on_device: {name} must be a wp.array of wp.vec3 on {self.device}")
        if len(origins) != len(directions):
            raise TracingError(f"trace_on_device: {len(origins)} origins but {len(directions)} directions")
        tmin, tmax = check_span(tmin, tmax)
        with self._trace_lock:
            self._sync()
            return self._first_hits(origins, directions, tmin, min(tmax - tmin, 1e30))

    def scene_arrays(self, swept: dict | None = None):
        """The device state as the kernels' SceneArrays struct (call under _trace_lock after _sync, or
        through `synced_scene_arrays`); swept: a trace's _swept_arrays in place of the instances' own."""
        s, kernels = self._static, self._kernels
        inst = self._inst_dev if swept is None else {**self._inst_dev, **swept}
        arrays = kernels.SceneArrays()
        arrays.static_mesh = self.wp.uint64(s.mesh.id if s is not None else 0)
        arrays.has_static = int(s is not None)
        arrays.static_entity, arrays.static_face, arrays.static_material = self._static_dev
        arrays.inst_mesh, arrays.inst_rot, arrays.inst_pos = inst["mesh"], inst["rot"], inst["pos"]
        arrays.inst_lower, arrays.inst_upper = inst["lower"], inst["upper"]
        arrays.inst_entity, arrays.inst_offset, arrays.n_inst = inst["entity"], inst["offset"], self._n_inst
        arrays.dyn_face, arrays.dyn_material = inst["face"], inst["material"]
        bvh = self._bvh if swept is None else swept["bvh"]
        arrays.inst_bvh = self.wp.uint64(bvh.id if bvh is not None else 0)
        arrays.use_bvh = int(bvh is not None)
        arrays.inst_sweeps, arrays.inst_velocity, arrays.inst_angular = inst["sweeps"], inst["velocity"], inst["angular"]
        return arrays

    def synced_scene_arrays(self, span: tuple[float, float] | None = None):
        """The scene brought up to date and its SceneArrays, for device pipelines that trace inside
        their own kernels (warp_kernels.first_hit, or first_hit_at for rays with times). span: (first, last)
        seconds after the scene's poses of the rays such a kernel fires at their own times: the instances whose
        twist moves them are then found in the boxes they stay in over that span (None: at their poses)."""
        with self._trace_lock:
            twists = self._sync(timed=span is not None)
            swept = None if twists is None else self._swept_arrays(twists, np.asarray(span, np.float64))
            self._swept_kept = swept  # its BVH (the struct holds only its id) kept until the next call, as _bvh
            return self.scene_arrays(swept)

    def _first_hits(self, rays_o, rays_d, tmin: float, far: float, swept: dict | None = None) -> dict:
        wp, dev = self.wp, self.device
        n = len(rays_o)
        out = {
            "distance": wp.empty(n, dtype=float, device=dev),
            "normal": wp.empty(n, dtype=wp.vec3, device=dev),
            "cos_incidence": wp.empty(n, dtype=float, device=dev),
            "entity": wp.empty(n, dtype=wp.int32, device=dev),
            "face": wp.empty(n, dtype=wp.int32, device=dev),
            "material": wp.empty(n, dtype=wp.int32, device=dev),
        }
        if n == 0:
            return out
        wp.launch(self._kernels.first_hits, dim=n, device=dev,
                  inputs=[self.scene_arrays(swept), rays_o, rays_d, tmin, far, out["distance"], out["normal"],
                          out["cos_incidence"], out["entity"], out["face"], out["material"],
                          swept["times"] if swept is not None else self._no_times, int(swept is not None)])
        return out


_FIELDS_OF = {"distance": ("distance",), "normal": ("normal",), "ids": ("entity", "face", "material"),
              "incidence": ("cos_incidence",)}


class _DeviceAttributes:
    """Hits attributes copied from the device once, on first access (numpy views on the CPU device)."""

    def __init__(self, out: dict, lo: int = 0, hi: int | None = None, host: dict | None = None):
        self.out, self.lo, self.hi = out, lo, hi
        self.host = {} if host is None else host  # shared by the spans of one trace

    def span(self, a: int, b: int) -> "_DeviceAttributes":
        return _DeviceAttributes(self.out, self.lo + a, self.lo + b, self.host)

    def __call__(self, name: str) -> np.ndarray:
        if name not in self.host:
            self.host[name] = self.out[name].numpy()
        return self.host[name][self.lo:self.hi]
