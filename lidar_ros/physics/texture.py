"""Surface texture: a seeded, spatially correlated variation of the albedo over every surface.

Real surfaces are not one paint: asphalt, concrete, brick and foliage vary in near-infrared albedo from
point to point, and a real frame's calibrated reflectivity shows it (hundreds of distinct values, a
neighbour-to-neighbour spread; issue 23 and the shared real frames). Each returning point p (world
coordinates, so the texture stays on the surface from frame to frame and from sensor to sensor) gets

    ρ'(p) = ρ(θ)·exp(σ·n(p/ℓ) − σ²/2)

with n a unit-variance value-noise field (Perlin's lattice noise without gradients: independent values
at the corners of a cubic lattice of cell ℓ, blended by the smoothstep s(u) = 3u² − 2u³), so points
nearer than ℓ share their texture and points more than 2ℓ apart along an axis share no lattice corner:
independent. σ is the spread of ln albedo; the −σ²/2 keeps the mean albedo (exactly for a Gaussian n).

Lattice values: uniform on [−√3, √3] (unit variance) from a SplitMix64 hash of the corner and the seed.
Averaged over a cell, the blended field's variance is ((1 − 2·E[s(1−s)])³ = (26/35)³ of the corners'
(E[s(1−s)] = 9/70 for uniform u), so the field is divided by (26/35)^(3/2) to have unit variance.
"""
from __future__ import annotations

import numpy as np

from radarays_ros.compiled import inlined, kernel

FIELD_SCALE = (35.0 / 26.0) ** 1.5  # 1 / the blended field's standard deviation


def albedo_factor(points: np.ndarray, sigma: float, length: float, seed: int) -> np.ndarray:
    """(N,) float32 exp(σ·n(p/ℓ) − σ²/2) of world points (N, 3); NaN/inf points (misses) give 1."""
    p = np.ascontiguousarray(points, np.float64)
    out = np.empty(len(p), np.float32)
    _texture_kernel(p, float(sigma), 1.0 / float(length), np.uint64(int(seed) % 2**64), out)
    return out


def textured_reflectivity(origins: np.ndarray, directions: np.ndarray, ranges: np.ndarray, rho: np.ndarray,
                          sigma: float, length: float, seed: int, rays: np.ndarray | None = None) -> np.ndarray:
    """(N,) float32 ρ·albedo_factor(p) at the returning points p = origin + direction·range (float32, as the
    frame computes them) of rays `rays` (indices into origins/directions; None: all, N = len(origins)).
    One compiled pass, the same bits as `textured_reflectivity_numpy` (measured: 65536 beams 2.6 ms through
    the points array and its float64 copy, less here)."""
    rays = _ALL if rays is None else np.asarray(rays, np.int64)
    out = np.empty(len(ranges), np.float32)
    _textured_kernel(np.asarray(origins, np.float32), np.asarray(directions, np.float32),
                     np.asarray(ranges, np.float32), np.asarray(rho, np.float32), rays, float(sigma),
                     1.0 / float(length), np.uint64(int(seed) % 2**64), out)
    return out


def textured_reflectivity_numpy(origins, directions, ranges, rho, sigma, length, seed, rays=None) -> np.ndarray:
    """textured_reflectivity through numpy passes and albedo_factor: the reference of the compiled loop."""
    at = slice(None) if rays is None else rays
    with np.errstate(invalid="ignore"):  # misses: inf·0 is NaN, and NaN points keep their albedo
        points = origins[at] + directions[at] * np.asarray(ranges, np.float32)[:, None]
    return np.asarray(rho, np.float32) * albedo_factor(points, sigma, length, seed)


_ALL = np.empty(0, np.int64)


def field(points: np.ndarray, length: float, seed: int) -> np.ndarray:
    """(N,) float64 n(p/ℓ), the unit-variance noise itself (for tests and pictures)."""
    p = np.ascontiguousarray(points, np.float64)
    out = np.empty(len(p), np.float64)
    _field_kernel(p, 1.0 / float(length), np.uint64(int(seed) % 2**64), out)
    return out


# SplitMix64 multipliers of the corner's three axes (the per-axis products are xor-ed into the seed)
_AXIS_I, _AXIS_J, _AXIS_K = np.uint64(0x9E3779B97F4A7C15), np.uint64(0xC2B2AE3D27D4EB4F), np.uint64(0x165667B19E3779F9)


@inlined
def _axis_hash(i, multiplier):
    """One axis's term of a corner's hash: its 21 low bits times the axis's multiplier."""
    return np.uint64(i & 0x1FFFFF) * multiplier


@inlined
def _lattice_value(z):
    """Unit-variance uniform value of a corner whose hash input is z = seed ^ the three axis terms (SplitMix64's
    finaliser; xor is order-free, so the axis terms can be computed once per axis value and combined)."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    u = np.float64(np.int64(z >> np.uint64(11))) * (1.0 / 9007199254740992.0)  # [0, 1): 53 bits, exact as int64
    return (u - 0.5) * 3.4641016151377544  # √12


@inlined
def _smooth(u):
    return u * u * (3.0 - 2.0 * u)


@inlined
def _noise(x, y, z, seed):
    """The blended field at (x, y, z) in lattice units: the 8 corners' values weighted by the smoothsteps,
    summed in corner order (di, dj, dk). Each axis's two hash terms are computed once, not once per corner
    (6 products instead of 24; the same bits as hashing each corner whole)."""
    fx, fy, fz = np.floor(x), np.floor(y), np.floor(z)
    i, j, k = np.int64(fx), np.int64(fy), np.int64(fz)
    sx, sy, sz = _smooth(x - fx), _smooth(y - fy), _smooth(z - fz)
    hj0, hj1 = _axis_hash(j, _AXIS_J), _axis_hash(j + 1, _AXIS_J)
    hk0, hk1 = _axis_hash(k, _AXIS_K), _axis_hash(k + 1, _AXIS_K)
    total = 0.0
    for di in range(2):
        wx = sx if di else 1.0 - sx
        hi = seed ^ _axis_hash(i + di, _AXIS_I)
        for dj in range(2):
            wxy = wx * (sy if dj else 1.0 - sy)  # wx·wy·wz·v evaluates left to right: (wx·wy) first
            hij = hi ^ (hj1 if dj else hj0)
            total += wxy * (1.0 - sz) * _lattice_value(hij ^ hk0)
            total += wxy * sz * _lattice_value(hij ^ hk1)
    return total * FIELD_SCALE


# Points are noised in runs of this many: the lattice coordinates of a run's finite points gathered component by
# component into small scratch arrays first (packed: misses are not noised), so the noise loop reads contiguous
# values and compiles to vector instructions (the hashes' 64-bit products 4-8 points at a time: measured 3.4 ->
# 1.2 ms for 131072 points), then the exp and the writes.
RUN = 256


@inlined
def _noise_run(cx, cy, cz, count, seed, noise):
    """noise[:count] = n(cx, cy, cz) of lattice coordinates (contiguous arrays); each value's bits as `_noise`'s."""
    for c in range(count):
        noise[c] = _noise(cx[c], cy[c], cz[c], seed)


@kernel
def _field_kernel(p, inv_length, seed, out):
    cx, cy, cz, noise = np.empty(RUN), np.empty(RUN), np.empty(RUN), np.empty(RUN)
    for start in range(0, p.shape[0], RUN):
        count = min(RUN, p.shape[0] - start)
        for c in range(count):
            n = start + c
            cx[c], cy[c], cz[c] = p[n, 0] * inv_length, p[n, 1] * inv_length, p[n, 2] * inv_length
        _noise_run(cx, cy, cz, count, seed, noise)
        out[start:start + count] = noise[:count]


@kernel
def _textured_kernel(origins, directions, ranges, rho, rays, sigma, inv_length, seed, out):
    shift = 0.5 * sigma * sigma
    cx, cy, cz, noise = np.empty(RUN), np.empty(RUN), np.empty(RUN), np.empty(RUN)
    finite = np.empty(RUN, np.bool_)
    for start in range(0, out.shape[0], RUN):
        count = min(RUN, out.shape[0] - start)
        m = 0  # the run's returning points, packed: misses (sky) are not noised
        for c in range(count):
            n = start + c
            ray = rays[n] if rays.shape[0] else n
            r = ranges[n]
            # the float32 point first (its rounding as in numpy's o + d·r), then float64 as albedo_factor reads it
            x = np.float64(origins[ray, 0] + directions[ray, 0] * r)
            y = np.float64(origins[ray, 1] + directions[ray, 1] * r)
            z = np.float64(origins[ray, 2] + directions[ray, 2] * r)
            ok = np.isfinite(x) & np.isfinite(y) & np.isfinite(z)  # &, not `and`: no branch per point
            finite[c] = ok
            cx[m], cy[m], cz[m] = x * inv_length, y * inv_length, z * inv_length  # kept where ok (m moves on)
            m += ok
        _noise_run(cx, cy, cz, m, seed, noise)
        q = 0
        for c in range(count):
            n = start + c
            if finite[c]:
                out[n] = rho[n] * np.float32(np.exp(sigma * noise[q] - shift))
                q += 1
            else:
                out[n] = rho[n]  # ρ·1 in float32


@kernel
def _texture_kernel(p, sigma, inv_length, seed, out):
    shift = 0.5 * sigma * sigma
    cx, cy, cz, noise = np.empty(RUN), np.empty(RUN), np.empty(RUN), np.empty(RUN)
    finite = np.empty(RUN, np.bool_)
    for start in range(0, p.shape[0], RUN):
        count = min(RUN, p.shape[0] - start)
        m = 0  # the run's finite points, packed
        for c in range(count):
            n = start + c
            x, y, z = p[n, 0], p[n, 1], p[n, 2]
            ok = np.isfinite(x) & np.isfinite(y) & np.isfinite(z)
            finite[c] = ok
            cx[m], cy[m], cz[m] = x * inv_length, y * inv_length, z * inv_length
            m += ok
        _noise_run(cx, cy, cz, m, seed, noise)
        q = 0
        for c in range(count):
            if finite[c]:
                out[start + c] = np.float32(np.exp(sigma * noise[q] - shift))
                q += 1
            else:
                out[start + c] = np.float32(1.0)
