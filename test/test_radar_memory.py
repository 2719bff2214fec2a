"""Memory of the scatterer build (issue #22): the build's per-triangle steps run in chunks of BUILD_CHUNK and
drop their temporaries early; the chunking must not change a byte of the scatterers, and the build's peak
traced allocation must stay proportional to the triangle count (a bound the unchunked build broke by ~2x)."""
from __future__ import annotations

import tracemalloc
from dataclasses import fields

import numpy as np
import pytest
import trimesh

from radarays_ros.radar.physical import scatterers


def heightfield(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Rolling terrain on an n x n grid (2 (n-1)^2 triangles, a curved surface of nearly one plate each)."""
    rng = np.random.default_rng(seed)
    x, y = np.meshgrid(np.linspace(0, 60, n), np.linspace(0, 60, n), indexing="ij")
    z = 2.0 * np.sin(x / 7.0) * np.cos(y / 9.0) + rng.normal(0.0, 0.05, x.shape)
    z[: n // 3, : n // 3] = 0.0  # a flat patch: plates of many triangles
    vertices = np.stack([x, y, z], axis=-1).reshape(-1, 3)
    i = np.arange(n * n).reshape(n, n)
    a, b, c, d = i[:-1, :-1].ravel(), i[1:, :-1].ravel(), i[1:, 1:].ravel(), i[:-1, 1:].ravel()
    return vertices, np.concatenate([np.stack([a, b, c], 1), np.stack([a, c, d], 1)])


def mixed_mesh() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Terrain, a subdivided box standing on its flat patch (flat plates, wall-ground dihedrals), a room seen
    from inside (trihedral corners), a sphere
    (curved), written with a vertex per face (merged by the build) and one degenerate triangle."""
    parts, offset = [], 0
    v, f = heightfield(41)
    parts.append((v, f, np.zeros(len(f), np.int64)))
    box = trimesh.creation.box([6.0, 4.0, 5.0]).subdivide()
    parts.append((box.vertices + [8.0, 8.0, 2.5], box.faces, np.full(len(box.faces), 1)))
    room = trimesh.creation.box([6.0, 4.0, 5.0])
    room.invert()
    parts.append((room.vertices + [40.0, 40.0, 20.0], room.faces, np.full(len(room.faces), 1)))
    sphere = trimesh.creation.icosphere(subdivisions=2, radius=1.5)
    parts.append((sphere.vertices + [40.0, 10.0, 4.0], sphere.faces, np.full(len(sphere.faces), 2)))
    vertices, faces, materials = [], [], []
    for v, f, m in parts:
        vertices.append(v)
        faces.append(f + offset)
        materials.append(m)
        offset += len(v)
    vertices, faces, materials = np.concatenate(vertices), np.concatenate(faces), np.concatenate(materials)
    vertices = vertices[faces.reshape(-1)]  # a vertex per face corner
    faces = np.arange(len(vertices)).reshape(-1, 3)
    faces = np.concatenate([faces, [[0, 0, 1]]])  # zero area: dropped
    return vertices, faces, np.concatenate([materials, [0]])


def build(monkeypatch, chunk: int) -> scatterers.Scatterers:
    monkeypatch.setattr(scatterers, "BUILD_CHUNK", chunk)
    return scatterers.from_mesh(*mixed_mesh(), entity=3)


def test_mixed_mesh_has_every_kind_of_scatterer(monkeypatch):
    sc = build(monkeypatch, 1 << 40)
    assert sc.plate_curved.any() and (~sc.plate_curved).any()
    assert len(sc.tri) and len(sc.edge_from) and len(sc.dih_length) and len(sc.tri_apex)


@pytest.mark.parametrize("chunk", [1, 7, 1000])
def test_chunked_build_is_the_same_bytes_as_one_chunk(monkeypatch, chunk):
    """Every field, dtype, shape and byte equal whatever the chunk (one chunk = the whole-array build)."""
    whole, chunked = build(monkeypatch, 1 << 40), build(monkeypatch, chunk)
    for f in fields(scatterers.Scatterers):
        a, b = getattr(whole, f.name), getattr(chunked, f.name)
        assert a.dtype == b.dtype and a.shape == b.shape, f.name
        assert np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes(), f.name


def test_face_pairs_are_the_faces_sharing_an_edge():
    _, faces = heightfield(6)
    a, b = scatterers._face_pairs(faces)
    edges = lambda f: {frozenset(e) for e in ((f[0], f[1]), (f[1], f[2]), (f[2], f[0]))}  # noqa: E731
    expected = {frozenset((i, j)) for i in range(len(faces)) for j in range(i + 1, len(faces))
                if edges(faces[i]) & edges(faces[j])}
    assert len(a) == len(expected) and {frozenset((int(i), int(j))) for i, j in zip(a, b)} == expected


BYTES_PER_TRIANGLE = 400  # chunked build: ~330; the whole-array build it replaced: ~760


@pytest.mark.parametrize("n", [71, 141])
def test_build_peak_allocation_is_bounded_per_triangle(monkeypatch, n):
    """tracemalloc's peak during from_mesh of rolling terrain (chunks of 1/16 of it, as 65536 of the 1M-triangle
    city) stays under BYTES_PER_TRIANGLE per triangle: the outputs (~170 B) plus a few per-triangle arrays."""
    vertices, faces = heightfield(n)
    materials = np.zeros(len(faces), np.int64)
    monkeypatch.setattr(scatterers, "BUILD_CHUNK", len(faces) // 16)
    monkeypatch.setattr(scatterers, "SOLVE_CHUNK", len(faces) // 16)
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        sc = scatterers.from_mesh(vertices, faces, materials, 0)
        peak = tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()
    assert sc.plate_curved.mean() > 0.5  # the terrain is read as a curved surface (the heavy path)
    assert peak <= BYTES_PER_TRIANGLE * len(faces), peak / len(faces)


def test_concatenate_joins_field_by_field_and_leaves_its_parts_intact(monkeypatch):
    """A list's parts stay as they were (concatenate lets go of its own references only); a generator gives
    the same bytes; plate indices of the second part are shifted by the first's plate count."""
    first, second = build(monkeypatch, 1 << 40), scatterers.from_mesh(*mixed_mesh(), entity=4)
    before = {f.name: getattr(first, f.name).copy() for f in fields(scatterers.Scatterers)}
    listed = scatterers.concatenate([first, None, second])
    generated = scatterers.concatenate(p for p in (first, second))
    for f in fields(scatterers.Scatterers):
        assert np.array_equal(getattr(first, f.name), before[f.name]), f.name
        assert getattr(listed, f.name).tobytes() == getattr(generated, f.name).tobytes(), f.name
    assert np.array_equal(listed.tri_plate, np.concatenate([first.tri_plate, second.tri_plate + len(first.plate_area)]))
    assert np.array_equal(listed.plate_entity[len(first.plate_area):], np.full(len(second.plate_area), 4))
