"""A triangle mesh into an embreex scene with one memory copy per buffer, through Embree's C API.

embreex's `TriangleMesh` fills Embree's vertex and index buffers element by element through untyped
numpy indexing: about 1.5 us per triangle (measured: 9.3 ms for a 6000-triangle, 4000-vertex mesh,
1.6 s for 600 k triangles), more than Embree's own BVH build of the same mesh. Here the same two
buffers, with the same formats and strides (FLOAT3 vertices on a 16-byte stride, UINT3 indices), are
filled by numpy in one copy each, so Embree receives the very bytes `TriangleMesh` would give it
and builds the same BVH (same hits: test_tracing_upload.py compares them).

embreex does not expose the scene handle an `EmbreeScene` wraps. Its Cython object stores it first,
as `scene_i`, followed by `is_committed` (int) and `device` (the EmbreeDevice object); the layout is
checked once against the two fields Python can see (`is_committed` written through its property and
read back from memory, `device` compared with `id()`), and the library is the one embreex itself
loaded (found in /proc/self/maps). If anything differs — another embreex build, another platform —
`upload` falls back to `TriangleMesh` (slower, same result) and `FAST` is False.

Embree API: rtcNewGeometry, rtcSetNewGeometryBuffer, rtcCommitGeometry, rtcAttachGeometry,
rtcReleaseGeometry, rtcGetSceneDevice (Embree 4 API reference, "rtcore_geometry.h", "rtcore_scene.h").
"""
from __future__ import annotations

import ctypes
import sys

import numpy as np

try:
    from embreex import mesh_construction as _mesh_construction
    from embreex import rtcore as _rtcore
    from embreex import rtcore_scene as _rtcore_scene
except ImportError:  # pragma: no cover - embree.py reports the missing dependency
    _mesh_construction = _rtcore = _rtcore_scene = None

# Embree 4 enum values (rtcore_common.h, rtcore_buffer.h, rtcore_geometry.h)
_GEOMETRY_TYPE_TRIANGLE = 0
_BUFFER_TYPE_INDEX, _BUFFER_TYPE_VERTEX = 0, 1
_FORMAT_UINT3, _FORMAT_FLOAT3 = 0x5003, 0x9003
_VERTEX_STRIDE = 16  # bytes: x, y, z and one unused float, as embreex's TriangleMesh sets them

# the fields of embreex's EmbreeScene after the object header (ob_refcnt, ob_type)
_HEADER = 2 * ctypes.sizeof(ctypes.c_void_p)
_SCENE_AT, _COMMITTED_AT = _HEADER, _HEADER + ctypes.sizeof(ctypes.c_void_p)
_DEVICE_AT = _COMMITTED_AT + ctypes.sizeof(ctypes.c_void_p)  # an int, padded to a pointer's alignment


def _embree_library():
    """The libembree4 that embreex's extension loaded, or None (not Linux, not found)."""
    if _rtcore_scene is None or not sys.platform.startswith("linux"):
        return None
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "libembree4" in line and "/" in line}
    except OSError:
        return None
    if len(paths) != 1:
        return None
    try:
        lib = ctypes.CDLL(paths.pop())  # already loaded: dlopen returns the same handle
    except OSError:
        return None
    p, u, s = ctypes.c_void_p, ctypes.c_uint, ctypes.c_size_t
    for name, restype, argtypes in (
        ("rtcGetSceneDevice", p, [p]),
        ("rtcReleaseDevice", None, [p]),
        ("rtcNewGeometry", p, [p, ctypes.c_int]),
        ("rtcSetNewGeometryBuffer", p, [p, ctypes.c_int, u, ctypes.c_int, s, s]),
        ("rtcCommitGeometry", None, [p]),
        ("rtcAttachGeometry", u, [p, p]),
        ("rtcReleaseGeometry", None, [p]),
    ):
        fn = getattr(lib, name, None)
        if fn is None:
            return None
        fn.restype, fn.argtypes = restype, argtypes
    return lib


def _read(obj, offset: int, ctype):
    return ctype.from_address(id(obj) + offset).value


def _layout_holds(lib) -> bool:
    """Whether an EmbreeScene keeps scene_i, is_committed, device at the offsets assumed above."""
    if _rtcore_scene.EmbreeScene.__basicsize__ < _DEVICE_AT + ctypes.sizeof(ctypes.c_void_p):
        return False
    device = _rtcore.EmbreeDevice()
    scene = _rtcore_scene.EmbreeScene(device)
    if _read(scene, _DEVICE_AT, ctypes.c_void_p) != id(device):
        return False
    for value in (12345, 0):
        scene.is_committed = value
        if _read(scene, _COMMITTED_AT, ctypes.c_int) != value:
            return False
    handle = _read(scene, _SCENE_AT, ctypes.c_void_p)
    if not handle:
        return False
    owner = lib.rtcGetSceneDevice(handle)  # a valid scene answers with its device (one more reference)
    if not owner:
        return False
    lib.rtcReleaseDevice(owner)
    return True


_LIB = _embree_library()
FAST = bool(_LIB is not None and _layout_holds(_LIB))


def _buffer(geometry, kind: int, fmt: int, stride: int, count: int, dtype, width: int) -> np.ndarray:
    address = _LIB.rtcSetNewGeometryBuffer(geometry, kind, 0, fmt, stride, count)
    if not address:
        raise MemoryError(f"Embree could not allocate a buffer of {count} items")
    size = count * stride
    return np.frombuffer((ctypes.c_char * size).from_address(address), dtype=dtype).reshape(count, width)


class MeshBuffers:
    """The vertex and index buffers of one triangle mesh for an uncommitted embreex `EmbreeScene`, to be
    filled in place: `vertices` (V, 4) float32 (x, y, z and the unused fourth float), `indices` (F, 3)
    int32. On the fast path they are Embree's own buffers (the caller's data lands there in its one
    copy: no concatenated temporary, no cast copy); otherwise numpy arrays handed to `TriangleMesh`.

        with MeshBuffers(scene, n_vertices, n_faces) as mesh:
            mesh.vertices[:, :3] = ...   # indices checked by the caller: 0 <= index < V
            mesh.indices[:] = ...
            mesh.attach()

    The BVH is built at the scene's first `run`. Leaving the block without `attach` drops the mesh."""

    def __init__(self, scene, n_vertices: int, n_faces: int):
        self.scene, self._geometry = scene, None
        if not FAST:
            self.vertices, self.indices = np.empty((n_vertices, 4), np.float32), np.empty((n_faces, 3), np.int32)
            return
        handle = _read(scene, _SCENE_AT, ctypes.c_void_p)
        device = _LIB.rtcGetSceneDevice(handle)
        try:
            geometry = _LIB.rtcNewGeometry(device, _GEOMETRY_TYPE_TRIANGLE)
        finally:
            _LIB.rtcReleaseDevice(device)
        if not geometry:
            raise MemoryError("Embree could not create a triangle geometry")
        self._geometry = geometry
        try:
            self.vertices = _buffer(geometry, _BUFFER_TYPE_VERTEX, _FORMAT_FLOAT3, _VERTEX_STRIDE, n_vertices,
                                    np.float32, 4)
            self.indices = _buffer(geometry, _BUFFER_TYPE_INDEX, _FORMAT_UINT3, 3 * 4, n_faces, np.int32, 3)
        except BaseException:
            self.close()
            raise

    def attach(self) -> None:
        """Hand the filled buffers to the scene (the views are then Embree's: dropped here)."""
        self.vertices[:, 3] = 0.0
        if self._geometry is None:
            _mesh_construction.TriangleMesh(self.scene, np.ascontiguousarray(self.vertices[:, :3]), self.indices)
        else:
            _LIB.rtcCommitGeometry(self._geometry)
            _LIB.rtcAttachGeometry(_read(self.scene, _SCENE_AT, ctypes.c_void_p), self._geometry)
        self.close()

    def close(self) -> None:
        """Drop our reference (an attached geometry lives on in its scene)."""
        self.vertices = self.indices = None
        if self._geometry is not None:
            _LIB.rtcReleaseGeometry(self._geometry)
            self._geometry = None

    def __enter__(self) -> "MeshBuffers":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def upload(scene, vertices: np.ndarray, indices: np.ndarray) -> None:
    """Attach one triangle mesh to an uncommitted embreex `EmbreeScene`: (V, 3) float32 vertices,
    (F, 3) int32 indices into them (checked by the caller: 0 <= index < V). The scene's BVH is built
    at its first `run`, as after `TriangleMesh(scene, vertices, indices)`."""
    if not FAST:
        _mesh_construction.TriangleMesh(scene, vertices, indices)
        return
    with MeshBuffers(scene, len(vertices), len(indices)) as mesh:
        mesh.vertices[:, :3] = vertices
        mesh.indices[:] = indices
        mesh.attach()
