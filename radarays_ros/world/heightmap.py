"""SDF `<heightmap>` from a grayscale image -> a terrain triangle mesh.

As Gazebo: the image spans `size` x by y metres centred on `pos`; a pixel's brightness (0..1 of the
image's full scale) times `size` z is its height above `pos` z. Image column increases with +x and
image row 0 is the +y edge (the picture seen from above with north up). Every pixel is a grid vertex,
each grid cell two triangles; face id = 2·(row·(W−1) + column) + {0, 1}.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import WorldError
from .mesh import TriMesh


MAX_HEIGHTMAP_PIXELS = 4096 * 4096  # 33 M triangles; Gazebo's own heightmaps are at most 4097 x 4097

def heightmap_mesh(image_path: str | Path, size=(1.0, 1.0, 1.0), pos=(0.0, 0.0, 0.0), what: str = "heightmap") -> TriMesh:
    """Terrain mesh of a grayscale image (PNG/JPEG/...; 8- or 16-bit)."""
    from PIL import Image, UnidentifiedImageError

    path = Path(image_path)
    size = np.asarray(size, float).reshape(-1)
    pos = np.asarray(pos, float).reshape(-1)
    if size.shape != (3,) or pos.shape != (3,) or not (np.all(np.isfinite(size)) and np.all(np.isfinite(pos))):
        raise WorldError(f"{what}: size and pos need three finite numbers each")
    if np.any(size[:2] <= 0) or size[2] < 0:
        raise WorldError(f"{what}: size {size.tolist()} must be positive in x and y, non-negative in z")
    try:
        with Image.open(path) as img:
            if img.width * img.height > MAX_HEIGHTMAP_PIXELS:
                raise WorldError(f"{what}: heightmap image {path} has {img.width}x{img.height} pixels; at most "
                                 f"{MAX_HEIGHTMAP_PIXELS} are allowed (each becomes two triangles)")
            mode = img.mode
            arr = np.asarray(img.convert("I") if mode in ("I;16", "I;16B", "I") else img.convert("L"), dtype=np.float64)
    except FileNotFoundError:
        raise WorldError(f"{what}: heightmap image {path} not found") from None
    except (UnidentifiedImageError, OSError, Image.DecompressionBombError) as exc:
        raise WorldError(f"{what}: heightmap image {path} is not a readable image ({exc}); DEM files are not supported") from None
    full_scale = 65535.0 if mode.startswith("I") and arr.max() > 255 else 255.0
    rows, cols = arr.shape
    if rows < 2 or cols < 2:
        raise WorldError(f"{what}: heightmap image {path} must be at least 2x2 pixels, got {cols}x{rows}")
    x = pos[0] + (np.arange(cols) / (cols - 1) - 0.5) * size[0]
    y = pos[1] + (0.5 - np.arange(rows) / (rows - 1)) * size[1]
    gx, gy = np.meshgrid(x, y)
    gz = pos[2] + arr / full_scale * size[2]
    vertices = np.column_stack([gx.ravel(), gy.ravel(), gz.ravel()])
    r, c = np.meshgrid(np.arange(rows - 1), np.arange(cols - 1), indexing="ij")
    a = (r * cols + c).ravel()
    b, d, e = a + 1, a + cols, a + cols + 1
    # counter-clockwise seen from above (+z): row index grows towards -y
    faces = np.empty((2 * len(a), 3), np.int64)
    faces[0::2] = np.column_stack([a, d, b])
    faces[1::2] = np.column_stack([b, d, e])
    return TriMesh(vertices, faces, source=str(path))
