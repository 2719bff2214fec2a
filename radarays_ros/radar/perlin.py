"""Ken Perlin's improved noise (SIGGRAPH 2002), evaluated in the plane z = 0 (the ambient noise of Mock et al., RadaRays, RA-L 2025).

RadaRays' ambient noise uses P(x, y, 0) with the reference 256-entry permutation table (repeated to
512), the fade curve 6t^5 - 15t^4 + 10t^3 and the 12 edge gradients (16 hash cases). The value is in
about [-1, 1] and is not remapped. Vectorised over arrays of x and y.
"""
from __future__ import annotations

import numpy as np

from ..compiled import kernel
from ..threads import run_all, thread_count

# Ken Perlin's reference permutation of 0..255 (published with "Improving Noise", 2002).
_PERMUTATION = np.array([
    151, 160, 137, 91, 90, 15, 131, 13, 201, 95, 96, 53, 194, 233, 7, 225, 140, 36, 103, 30, 69, 142, 8, 99, 37, 240,
    21, 10, 23, 190, 6, 148, 247, 120, 234, 75, 0, 26, 197, 62, 94, 252, 219, 203, 117, 35, 11, 32, 57, 177, 33, 88,
    237, 149, 56, 87, 174, 20, 125, 136, 171, 168, 68, 175, 74, 165, 71, 134, 139, 48, 27, 166, 77, 146, 158, 231, 83,
    111, 229, 122, 60, 211, 133, 230, 220, 105, 92, 41, 55, 46, 245, 40, 244, 102, 143, 54, 65, 25, 63, 161, 1, 216,
    80, 73, 209, 76, 132, 187, 208, 89, 18, 169, 200, 196, 135, 130, 116, 188, 159, 86, 164, 100, 109, 198, 173, 186,
    3, 64, 52, 217, 226, 250, 124, 123, 5, 202, 38, 147, 118, 126, 255, 82, 85, 212, 207, 206, 59, 227, 47, 16, 58,
    17, 182, 189, 28, 42, 223, 183, 170, 213, 119, 248, 152, 2, 44, 154, 163, 70, 221, 153, 101, 155, 167, 43, 172, 9,
    129, 22, 39, 253, 19, 98, 108, 110, 79, 113, 224, 232, 178, 185, 112, 104, 218, 246, 97, 228, 251, 34, 242, 193,
    238, 210, 144, 12, 191, 179, 162, 241, 81, 51, 145, 235, 249, 14, 239, 107, 49, 192, 214, 31, 181, 199, 106, 157,
    184, 84, 204, 176, 115, 121, 50, 45, 127, 4, 150, 254, 138, 236, 205, 93, 222, 114, 67, 29, 24, 72, 243, 141, 128,
    195, 78, 66, 215, 61, 156, 180,
], dtype=np.int64)
_P = np.concatenate([_PERMUTATION, _PERMUTATION])

# gradient (gx, gy) of the 16 hash cases at z = 0 (the z component multiplies z = 0)
_GRAD = np.array([
    (1, 1), (-1, 1), (1, -1), (-1, -1), (1, 0), (-1, 0), (1, 0), (-1, 0),
    (0, 1), (0, -1), (0, 1), (0, -1), (1, 1), (0, -1), (-1, 1), (0, -1),
], dtype=np.float64)


def _lattice_gradients() -> np.ndarray:
    """(256, 256, 2) gradient of lattice point (X, Y) at z = 0: _GRAD[p[p[p[X] + Y]] & 15] (period 256)."""
    x = np.arange(256)[:, None]
    y = np.arange(256)[None, :]
    return _GRAD[_P[_P[_P[x] + y]] & 15]


_LATTICE_GRAD = _lattice_gradients()
_LATTICE_GRAD_FLAT = np.ascontiguousarray(_LATTICE_GRAD.reshape(-1, 2))  # row X * 256 + Y, for np.take


def _fade(t):
    return t * t * t * (t * (t * 6.0 - 15.0) + 10.0)


def _grad(h, x, y):
    g = _GRAD[h & 15]
    return g[..., 0] * x + g[..., 1] * y


def perlin2(x, y) -> np.ndarray:
    """Improved Perlin noise P(x, y, 0), same shape as the broadcast of x and y."""
    x, y = np.broadcast_arrays(np.asarray(x, np.float64), np.asarray(y, np.float64))
    xf, yf = np.floor(x), np.floor(y)
    xi = xf.astype(np.int64) & 255
    yi = yf.astype(np.int64) & 255
    x, y = x - xf, y - yf
    u, v = _fade(x), _fade(y)
    a = _P[xi] + yi
    b = _P[xi + 1] + yi
    aa, ab = _P[_P[a]], _P[_P[a + 1]]  # z = 0: the z-hash adds Z = 0
    ba, bb = _P[_P[b]], _P[_P[b + 1]]
    x1 = _grad(aa, x, y) + u * (_grad(ba, x - 1.0, y) - _grad(aa, x, y))
    x2 = _grad(ab, x, y - 1.0) + u * (_grad(bb, x - 1.0, y - 1.0) - _grad(ab, x, y - 1.0))
    return x1 + v * (x2 - x1)


def perlin_hilo(x_offset, i, col, scale_low: float, scale_high: float, p_low: float) -> np.ndarray:
    """RadaRays' two-octave mix p_low P(o + i s_lo, col s_lo) + (1 - p_low) P(o + i s_hi, col s_hi)."""
    return (p_low * perlin2(x_offset + i * scale_low, col * scale_low)
            + (1.0 - p_low) * perlin2(x_offset + i * scale_high, col * scale_high))


def perlin_rows(x0: np.ndarray, step: float, n: int, y: np.ndarray) -> np.ndarray:
    """P(x0[r] + i * step, y[r], 0) for i < n, as an (R, n) float32 array: perlin2, faster.

    Along a row y is fixed, so everything but the x-fade is constant within a lattice cell: per cell
    the noise is lerp(u, a0 xf + b0, a1 (xf - 1) + b1), and only those four numbers are looked up per
    sample. x is handled relative to the row's first lattice cell (float32 keeps ~1e-4 precision).
    """
    x0 = np.asarray(x0, np.float64).reshape(-1)
    y = np.broadcast_to(np.asarray(y, np.float64).reshape(-1), x0.shape)
    rows = len(x0)
    span = n * abs(step)
    n_cells = int(np.ceil(span)) + 3
    first = np.floor(x0 - (span + 1.0 if step < 0 else 0.0))  # lowest lattice x of each row
    lattice = first.astype(np.int64)[:, None] + np.arange(n_cells)[None, :]
    xi = lattice & 255
    yf_floor = np.floor(y)
    yi = (yf_floor.astype(np.int64) & 255)[:, None]
    yf = (y - yf_floor)[:, None]
    v = _fade(yf)
    xi1, yi1 = (xi + 1) & 255, (yi + 1) & 255
    xi, xi1 = xi * 256, xi1 * 256  # flat rows of the lattice table: np.take beats 2-D fancy indexing
    # gradients at the cell corners g_aa (X, Y), g_ab (X, Y+1), g_ba (X+1, Y), g_bb (X+1, Y+1)
    g_aa, g_ab = np.take(_LATTICE_GRAD_FLAT, xi + yi, axis=0), np.take(_LATTICE_GRAD_FLAT, xi + yi1, axis=0)
    g_ba, g_bb = np.take(_LATTICE_GRAD_FLAT, xi1 + yi, axis=0), np.take(_LATTICE_GRAD_FLAT, xi1 + yi1, axis=0)
    table = np.empty((rows, n_cells, 4), np.float32)
    table[..., 0] = (1 - v) * g_aa[..., 0] + v * g_ab[..., 0]
    table[..., 1] = (1 - v) * g_aa[..., 1] * yf + v * g_ab[..., 1] * (yf - 1.0)
    table[..., 2] = (1 - v) * g_ba[..., 0] + v * g_bb[..., 0]
    table[..., 3] = (1 - v) * g_ba[..., 1] * yf + v * g_bb[..., 1] * (yf - 1.0)
    out = np.empty((rows, n), np.float32)
    _along_rows((x0 - first).astype(np.float32), np.float32(step), table, out)
    return out


@kernel
def _along_rows(start, step, table, out):
    """out[r, i] at the row-relative x = start[r] + i·step (float32): its cell's four numbers from `table`,
    the x-fade u(xf) = xf³(xf(6xf − 15) + 10) and lerp(u, a0·xf + b0, a1·(xf − 1) + b1), one sample at a
    time (the float32 operations of the array version, in its order)."""
    for r in range(out.shape[0]):
        for i in range(out.shape[1]):
            local = start[r] + np.float32(i) * step
            cell = np.floor(local)
            xf = local - cell
            c = table[r, int(cell)]
            u = xf * xf * xf * (xf * (xf * np.float32(6) - np.float32(15)) + np.float32(10))
            l0 = c[0] * xf + c[1]
            l1 = c[2] * (xf - np.float32(1)) + c[3]
            out[r, i] = (l1 - l0) * u + l0


def perlin_hilo_rows(x_offsets: np.ndarray, n: int, cols: np.ndarray, scale_low: float, scale_high: float,
                     p_low: float, block_rows: int = 32) -> np.ndarray:
    """perlin_hilo over an (A, n) grid: row r at x = offset[r] + i * scale, y = cols[r] * scale.

    Computed in blocks of rows so that the temporaries stay in cache (about 1.6x faster than whole),
    the blocks spread over a few threads (each block writes only its own rows: the result does not
    depend on the threads).
    """
    x_offsets = np.broadcast_to(np.asarray(x_offsets, np.float64).reshape(-1), (len(cols),))
    cols = np.asarray(cols, np.float64)
    out = np.empty((len(cols), n), np.float32)

    def fill(a: int) -> None:
        rows = slice(a, a + block_rows)
        block = out[rows]
        block[:] = perlin_rows(x_offsets[rows], scale_low, n, cols[rows] * scale_low)
        block *= np.float32(p_low)
        block += np.float32(1.0 - p_low) * perlin_rows(x_offsets[rows], scale_high, n, cols[rows] * scale_high)

    starts = range(0, len(cols), block_rows)
    # on the kept "frame" pool of up to 4 threads (numpy releases the GIL inside each block's operations)
    run_all("frame", fill, starts, 1 if len(cols) * n < 100_000 else thread_count(cap=PERLIN_THREADS))
    return out


PERLIN_THREADS = 4  # at most: the row blocks of one image
