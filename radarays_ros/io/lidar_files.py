"""Point-cloud files from structured point arrays: PCD (binary, PCL's format) and PLY (binary little endian).

Both take the arrays of `lidar_clouds.pointcloud_array`. Padding bytes of driver layouts are dropped
(the files are packed field by field); an organized array keeps its width x height in the PCD header.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import ConfigError

_PCD_TYPES = {"f": "F", "u": "U", "i": "I"}
_PLY_TYPES = {"<f4": "float", "<f8": "double", "|u1": "uchar", "|i1": "char", "<u2": "ushort", "<i2": "short",
              "<u4": "uint", "<i4": "int"}


def _packed(points: np.ndarray) -> tuple[np.ndarray, int, int]:
    """Little-endian packed copy (no padding), and the width/height of the array."""
    if points.dtype.names is None:
        raise ConfigError("point file: expected a numpy structured array of points")
    height, width = (points.shape if points.ndim == 2 else (1, points.size))
    dtype = np.dtype([(n, points.dtype.fields[n][0].newbyteorder("<")) for n in points.dtype.names])
    packed = np.empty(points.size, dtype)
    flat = points.reshape(-1)
    for name in points.dtype.names:
        packed[name] = flat[name]
    return packed, width, height


def write_pcd(path: str | Path, points: np.ndarray) -> Path:
    """Binary PCD v0.7 (FIELDS/SIZE/TYPE/COUNT from the dtype; NaN points kept, organized when 2-D)."""
    packed, width, height = _packed(points)
    fields = packed.dtype.names
    types = [packed.dtype.fields[n][0] for n in fields]
    for n, t in zip(fields, types):
        if t.kind not in _PCD_TYPES:
            raise ConfigError(f"PCD: field '{n}' has dtype {t}, which PCD cannot store")
    header = "\n".join([
        "# .PCD v0.7 - Point Cloud Data file format (written by radarays_ros)",
        "VERSION 0.7",
        "FIELDS " + " ".join(fields),
        "SIZE " + " ".join(str(t.itemsize) for t in types),
        "TYPE " + " ".join(_PCD_TYPES[t.kind] for t in types),
        "COUNT " + " ".join("1" for _ in fields),
        f"WIDTH {width}",
        f"HEIGHT {height}",
        "VIEWPOINT 0 0 0 1 0 0 0",
        f"POINTS {width * height}",
        "DATA binary",
    ]) + "\n"
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as fh:
        fh.write(header.encode("ascii"))
        fh.write(packed.tobytes())
    return path


def write_ply(path: str | Path, points: np.ndarray, drop_nan: bool = True) -> Path:
    """Binary little-endian PLY with one `vertex` element; NaN points (misses) dropped unless asked."""
    packed, _, _ = _packed(points)
    if drop_nan and "x" in packed.dtype.names:
        packed = packed[np.isfinite(packed["x"])]
    lines = ["ply", "format binary_little_endian 1.0", "comment written by radarays_ros", f"element vertex {len(packed)}"]
    for name in packed.dtype.names:
        t = packed.dtype.fields[name][0].str
        if t not in _PLY_TYPES:
            raise ConfigError(f"PLY: field '{name}' has dtype {t}, which PLY cannot store")
        lines.append(f"property {_PLY_TYPES[t]} {name}")
    lines.append("end_header")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as fh:
        fh.write(("\n".join(lines) + "\n").encode("ascii"))
        fh.write(packed.tobytes())
    return path
