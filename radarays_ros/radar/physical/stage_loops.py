"""Compiled loops of the sensor stage (stage.py, receiver_chain.py, speckle.py): the same float operations, in the same
order, as the numpy code they replace, so the frame's bytes do not change (compiled.py: no fastmath, no
fused multiply-adds). No formula of their own: each docstring names the function whose arithmetic it repeats.
Except the returns' skirts (skirt_power, cell_sums): their sums run in another order than the einsum, sparse
product and reduceat they replaced (float64, then rounded to float32: the skirt's noise scale may move by an
ULP; measured on the generated city: the same bytes).

Why: the stage's per-return and per-cell passes were a few dozen numpy calls per row block, each a pass
over memory with its own temporaries (measured on a Navtech frame of a 1 M-triangle world, one core:
clutter difference arrays 25-29 ms, the returns' skirts 20 ms a frame); a loop makes one pass.
"""
from __future__ import annotations

import numpy as np

from ...compiled import inlined, kernel


def power_steps(azimuth, start_bin, end_bin, power, shape) -> np.ndarray:
    """stage.power_steps: (A, J + 1) float64 difference array of the powers spread uniformly over
    [start_bin, end_bin) (fractional bins), J the columns up to the last that holds any power."""
    azimuth = np.ascontiguousarray(azimuth, np.int64)
    start_bin = np.ascontiguousarray(start_bin, np.float64)
    end_bin = np.ascontiguousarray(end_bin, np.float64)
    power = np.ascontiguousarray(power, np.float64)
    m = power.shape[0]
    at = np.empty((m, 3), np.int64)  # (row, i0, i1) of each return that holds power, in their order
    parts = np.empty((m, 3))  # (first, inner, last) of each
    return _scattered(shape, at, parts, *_step_parts(azimuth, start_bin, end_bin, power, shape[1], at, parts))


def block_power_steps(sel, k0: int, clutter, signs, fm, offset: float, bin_m: float, shape,
                      per_azimuth=None) -> np.ndarray:
    """power_steps(azimuth - k0, start_bin, end_bin, power, shape) of the clutter returns sel (int64 indices), their
    bins formed by stage.clutter_bins_of's arithmetic in its order (shift = sign v f_c T / B when fm.doppler, then
    (near + shift - offset) / bin_m), gathered, binned and spread in one pass. The returns' arrays: int64 azimuth,
    float64 the others, signs float64 (stage._chain_stage casts them once).
    per_azimuth: None, or more returns, one per azimuth (its azimuth = its index: the leakage plateau): those of rows
    k0 .. k0 + shape[0] - 1 follow the returns sel, as they would in a set that joined both (the same sums)."""
    rows = 0 if per_azimuth is None else shape[0]
    m = len(sel) + rows
    at = np.empty((m, 3), np.int64)
    parts = np.empty((m, 3))
    settings = (signs, bool(fm.doppler), float(fm.carrier_hz), float(fm.chirp_time_s), float(fm.bandwidth_hz),
                float(offset), float(bin_m), shape[1], at, parts)
    kept, last = _block_step_parts(np.ascontiguousarray(sel, np.int64), int(k0), clutter.azimuth, clutter.near_m,
                                   clutter.far_m, clutter.power_w, clutter.velocity, *settings, 0, -1)
    if rows:
        p = per_azimuth
        kept, last = _block_step_parts(np.arange(k0, k0 + rows), int(k0), p.azimuth, p.near_m, p.far_m, p.power_w,
                                       p.velocity, *settings, kept, last)
    return _scattered(shape, at, parts, kept, last)


def stable_by_block(azimuth, rows_per_block: int, n_blocks: int) -> tuple[np.ndarray, np.ndarray]:
    """(order, bounds) of stage._rows_of: order = np.argsort(azimuth // rows_per_block, kind="stable") (int64),
    bounds (n_blocks + 1,) where each block starts in it (np.searchsorted of the sorted blocks), by a counting
    sort: the same permutation. Why: the radix argsort and its searchsorted took 3 ms of a ras6 frame (315 k
    returns), serial before the row blocks start. Azimuths outside the blocks raise (the argsort's slices
    dropped them unnoticed)."""
    azimuth = np.ascontiguousarray(azimuth, np.int64)
    order = np.empty(azimuth.shape[0], np.int64)
    bounds = np.zeros(n_blocks + 1, np.int64)
    if not _stable_by_block(azimuth, int(rows_per_block), bounds, order):
        raise ValueError(f"clutter azimuth outside 0 .. {n_blocks * rows_per_block - 1}")
    return order, bounds


@kernel
def _stable_by_block(azimuth, rows_per_block, bounds, order):
    n_blocks = bounds.shape[0] - 1
    for i in range(azimuth.shape[0]):  # each block's count, one place on
        block = azimuth[i] // rows_per_block
        if azimuth[i] < 0 or block >= n_blocks:
            return False
        bounds[block + 1] += 1
    for k in range(n_blocks):  # running sum: where each block starts
        bounds[k + 1] += bounds[k]
    at = bounds[:-1].copy()
    for i in range(azimuth.shape[0]):  # in their order within each block: stable
        block = azimuth[i] // rows_per_block
        order[at[block]] = i
        at[block] += 1
    return True


def _scattered(shape, at, parts, kept: int, last_column: int) -> np.ndarray:
    a = shape[0]
    width = last_column + 1
    if width == 0:  # nothing holds power
        return np.zeros((a, 1))
    steps = np.zeros(a * (width + 1))
    _steps(at, parts, kept, width, steps)
    return steps.reshape(a, width + 1)


@kernel
def _clip(x, b):
    """np.clip(x, 0, b) of a float64 (NaN stays NaN)."""
    if x < 0.0:
        return 0.0
    if x > b:
        return float(b)
    return x


@inlined
def _step_part(k, row, start, end, power, b, at, parts):
    """Return k's bins and values of stage.power_steps into at[k] (row, i0, i1) and parts[k] (first, inner, last);
    its last bin i1, or -1 where it holds no power (nothing written). Bin i0 = floor(start) holds density x
    (i0 + 1 - start), bin i1 = floor(end) density x (end - i1), the bins between the density (one bin:
    density x (end - start)); both ends clipped to [0, B]."""
    lo, hi = _clip(start, b), _clip(end, b)
    if not (hi > lo and power != 0):
        return -1
    density = power / max(end - start, 1e-9)
    i0 = min(int(lo), b - 1)
    i1 = min(int(hi), b - 1)
    same = i0 == i1
    at[k, 0], at[k, 1], at[k, 2] = row, i0, i1
    parts[k, 0] = density * (hi - lo) if same else density * ((i0 + 1) - lo)
    parts[k, 1] = 0.0 if same else density
    parts[k, 2] = 0.0 if same else density * (hi - i1)
    return i1


@kernel
def _step_parts(azimuth, start_bin, end_bin, power, b, at, parts):
    """_step_part of every return, the ones that hold power packed in their order: (how many, the largest i1 or -1)."""
    kept = 0
    last = -1
    for k in range(power.shape[0]):
        i1 = _step_part(kept, azimuth[k], start_bin[k], end_bin[k], power[k], b, at, parts)
        if i1 >= 0:
            last = max(last, i1)
            kept += 1
    return kept, last


@kernel
def _block_step_parts(sel, k0, azimuth, near_m, far_m, power_w, velocity, signs, doppler, carrier, chirp_time, bandwidth,
                      offset, bin_m, b, at, parts, kept, last):
    """_step_parts of the returns sel, rows azimuth - k0, their bins as stage.clutter_bins_of forms them, packed
    from at[kept] on (kept, last: the counts of returns before, as _step_parts returns them)."""
    for j in range(sel.shape[0]):
        i = sel[j]
        near, far = near_m[i], far_m[i]
        if doppler:  # doppler.range_shift: sign * velocity * carrier * chirp_time / bandwidth, left to right
            shift = signs[azimuth[i]] * velocity[i] * carrier * chirp_time / bandwidth
            near, far = near + shift, far + shift
        i1 = _step_part(kept, azimuth[i] - k0, (near - offset) / bin_m, (far - offset) / bin_m, power_w[i], b, at, parts)
        if i1 >= 0:
            last = max(last, i1)
            kept += 1
    return kept, last


@kernel
def _steps(at, parts, kept, width, steps):
    """The four np.bincount passes of stage.power_steps, in its order: first values at i0 of every return,
    then inner - first at i0 + 1, last - inner at i1, -last at i1 + 1 (float64 sums in that order).
    Why the values are formed apart (_step_parts): each pass formed them anew, a division and two clips per
    return four times over (measured on a navtech_ras6 frame, 315 k returns: 11.3 ms, now 5.6 ms, one core)."""
    stride = width + 1
    for k in range(kept):
        steps[at[k, 0] * stride + at[k, 1]] += parts[k, 0]
    for k in range(kept):
        steps[at[k, 0] * stride + at[k, 1] + 1] += parts[k, 1] - parts[k, 0]
    for k in range(kept):
        steps[at[k, 0] * stride + at[k, 2]] += parts[k, 2] - parts[k, 1]
    for k in range(kept):
        steps[at[k, 0] * stride + at[k, 2] + 1] += -parts[k, 2]



def finish_rows(re, im, post, rows, cols, values_re, values_im, out, first: int = 0) -> None:
    """The end of a row block of stage._speckled_frame into out: the planes scaled by the chain's post factor
    (re *= post, im *= post; post None: not scaled; (1, B) or (rows, B)), the points added (np.add.at, in
    their order, in their values' precision), then out = re^2 + im^2, each step rounded as numpy rounds it
    (float32 planes; a float64 point value is added in float64 and rounded to float32, as np.add.at does).
    The planes are scratch: their points' cells are left scaled and summed, the others as they came.
    re, im: (rows, >= first + B) float32 planes whose columns first..first + B - 1 are the block's (B = out's),
    e.g. the range transform's whole rows: read in their C layout, not as a strided view of those columns (which
    the compiler cannot vectorise: measured 0.21 -> 0.10 ms a ras6 block)."""
    scaled = post is not None
    if not scaled:
        post = np.ones((1, 1), np.float32)
    _finish_rows(np.ascontiguousarray(re), np.ascontiguousarray(im), int(first), post, scaled, rows, cols, values_re,
                 values_im, out)


@kernel
def _finish_rows(re, im, first, post, scaled, rows, cols, values_re, values_im, out):
    # one pass forms out = (re post)^2 + (im post)^2 of every cell, the planes only read; then each point's cell is
    # scaled in the planes (once: at its first point), its points added, and its out formed again from the final
    # values: the same floats as the three passes over the planes in turn (measured on a ras6 frame, one core:
    # 5.6 -> 3.5 ms: the planes are not written back, and read once)
    n_rows, n_cols = out.shape
    for r in range(n_rows):
        pr = r if post.shape[0] > 1 else 0
        for c in range(n_cols):
            x, y = re[r, first + c], im[r, first + c]
            if scaled:
                x, y = x * post[pr, c], y * post[pr, c]
            out[r, c] = x * x + y * y
    if rows.shape[0] == 0:
        return
    done = np.zeros((n_rows, n_cols), np.bool_)  # cells scaled in the planes
    for k in range(rows.shape[0]):
        r, c = rows[k], cols[k]
        if scaled and not done[r, c]:
            pr = r if post.shape[0] > 1 else 0
            re[r, first + c] *= post[pr, c]
            im[r, first + c] *= post[pr, c]
            done[r, c] = True
        re[r, first + c] += values_re[k]
        im[r, first + c] += values_im[k]
    for k in range(rows.shape[0]):
        x, y = re[rows[k], first + cols[k]], im[rows[k], first + cols[k]]
        out[rows[k], cols[k]] = x * x + y * y


def skirt_scales(post, gain, floor, distortion, inv_reference, root_gain, root_g):
    """The chain's (s_sig, s_post) of a row block with returns' skirts (stage._chain_stage.scales), post
    (rows, B) float32 the skirt power per bin, in place: post = sqrt((((post x gain) + floor) + distortion_row)
    x inv_reference), s_sig = (root_gain x root_g_row) / post, every step in float32 as numpy's passes."""
    sig = np.empty_like(post)
    _skirt_scales(post, gain, floor, distortion, inv_reference, root_gain, root_g, sig)
    return sig, post


@kernel
def _skirt_scales(post, gain, floor, distortion, inv_reference, root_gain, root_g, sig):
    for r in range(post.shape[0]):
        for c in range(post.shape[1]):
            x = post[r, c] * gain[c]
            x = x + floor[c]
            x = x + distortion[r]
            x = x * inv_reference
            x = np.sqrt(x)
            post[r, c] = x
            sig[r, c] = (root_gain[c] * root_g[r]) / x


def skirt_power(power_cells, kernel, lo, hi, weight) -> np.ndarray:
    """receiver_chain.Skirts.of_sources: (rows, B) float32 of S = power_cells K (rows, C), summed over the source
    cells in order (cells without power skipped: a street's returns fill the first 100 m), then each bin
    (1 - weight) S[lo] + weight S[hi]."""
    out = np.empty((power_cells.shape[0], lo.shape[0]), np.float32)
    _skirt_power(np.ascontiguousarray(power_cells, np.float64), np.ascontiguousarray(kernel, np.float64),
                 np.ascontiguousarray(lo, np.int64), np.ascontiguousarray(hi, np.int64),
                 np.ascontiguousarray(weight, np.float64), out)
    return out


@kernel
def _skirt_power(power_cells, kernel, lo, hi, weight, out):
    rows, cells = power_cells.shape
    width = kernel.shape[1]
    sums = np.zeros((rows, width))
    sources = np.empty(cells, np.int64)
    for r in range(rows):
        s = sums[r]
        m = 0
        for i in range(cells):
            if power_cells[r, i] != 0.0:
                sources[m] = i
                m += 1
        # four source cells a sweep over the bins: each s[j] still adds them one by one in cell order, the same
        # floats, with one load and store of s[j] per four (measured on a ras6 frame: 4.8 -> 3.7 ms, one core)
        q = 0
        while q + 4 <= m:
            i0, i1, i2, i3 = sources[q], sources[q + 1], sources[q + 2], sources[q + 3]
            p0, p1, p2, p3 = power_cells[r, i0], power_cells[r, i1], power_cells[r, i2], power_cells[r, i3]
            for j in range(width):
                x = s[j] + p0 * kernel[i0, j]
                x = x + p1 * kernel[i1, j]
                x = x + p2 * kernel[i2, j]
                s[j] = x + p3 * kernel[i3, j]
            q += 4
        for k in range(q, m):
            i = sources[k]
            p = power_cells[r, i]
            for j in range(width):
                s[j] += p * kernel[i, j]
    # then the bins, four rows at a time: each bin's cells and weight read once for the four (the reads of the sums at
    # scattered cells were half the pass: measured on a ras6 frame, one core, 3.1 -> 2.2 ms, the pass 5.8 -> 4.3 ms)
    r = 0
    while r + 4 <= rows:
        for b in range(lo.shape[0]):
            low, high, w = lo[b], hi[b], weight[b]
            rest = 1.0 - w
            out[r, b] = rest * sums[r, low] + w * sums[r, high]
            out[r + 1, b] = rest * sums[r + 1, low] + w * sums[r + 1, high]
            out[r + 2, b] = rest * sums[r + 2, low] + w * sums[r + 2, high]
            out[r + 3, b] = rest * sums[r + 3, low] + w * sums[r + 3, high]
        r += 4
    for q in range(r, rows):
        for b in range(lo.shape[0]):
            out[q, b] = (1.0 - weight[b]) * sums[q, lo[b]] + weight[b] * sums[q, hi[b]]


def cell_sums(bin_power, cell_of_bin, n_cells: int) -> np.ndarray:
    """receiver_chain.Skirts.cells: (rows, C) float64 sums of (rows, J) powers per bin over each bin's cell."""
    out = np.zeros((bin_power.shape[0], n_cells))
    _cell_sums(np.ascontiguousarray(bin_power, np.float64), np.ascontiguousarray(cell_of_bin, np.int64), out)
    return out


@kernel
def _cell_sums(bin_power, cell_of_bin, out):
    for r in range(bin_power.shape[0]):
        for c in range(bin_power.shape[1]):
            out[r, cell_of_bin[c]] += bin_power[r, c]


def running_sum(steps, signed: bool) -> None:
    """stage.running_power, in place on (rows, J + 1) float64: np.cumsum along each row, then (unless signed)
    np.maximum(., 0.0) (NaN kept; -0.0 becomes 0.0, as numpy's SIMD maximum gives)."""
    _running_sum(steps, signed)


@kernel
def _running_sum(steps, signed):
    for r in range(steps.shape[0]):
        acc = 0.0
        for c in range(steps.shape[1]):
            acc = acc + steps[r, c] if c else steps[r, c]
            steps[r, c] = acc if (signed or acc > 0.0 or acc != acc) else 0.0


def running_sum_cells(steps, cell_of_bin, n_cells: int) -> np.ndarray:
    """running_sum(steps, False) in place on (rows, J + 1) float64, and cell_sums of its first J columns
    (the rows' powers per bin, receiver_chain.Skirts.cells) in the same pass: (rows, C) float64, each cell's
    bins added in column order from 0.0, as cell_sums adds them.
    Why one pass: cell_sums read a copy of the rows (a (rows, J) view of the difference array is not
    contiguous) after the running sum had written them (measured on a navtech_ras6 frame: 9.4 ms for the two,
    6.1 ms in one pass, one core)."""
    out = np.zeros((steps.shape[0], n_cells))
    _running_sum_cells(steps, np.ascontiguousarray(cell_of_bin, np.int64), out)
    return out


@kernel
def _running_sum_cells(steps, cell_of_bin, out):
    # four rows at a time: four running sums, each row's own additions in its own order, that the processor
    # overlaps (one row's sum waits on each addition before); each row's current cell sum held in a register while
    # the bins stay in one cell (a cell's run of bins), not added to memory bin by bin (measured on a ras6 frame,
    # one core: 2.9 -> 1.0 ms)
    rows = steps.shape[0]
    r = 0
    while r + 4 <= rows:
        _running_sum_cells_4(steps, cell_of_bin, out, r)
        r += 4
    for q in range(r, rows):
        _running_sum_cells_1(steps, cell_of_bin, out, q)


@inlined
def _clamped(acc):
    """stage.running_power's np.maximum(acc, 0.0): NaN kept, -0.0 read as 0.0."""
    return acc if (acc > 0.0 or acc != acc) else 0.0


@kernel
def _running_sum_cells_1(steps, cell_of_bin, out, r):
    last = steps.shape[1] - 1
    acc = 0.0
    cell = cell_of_bin[0] if last > 0 else 0
    total = out[r, cell] if last > 0 else 0.0
    for c in range(steps.shape[1]):
        acc = acc + steps[r, c] if c else steps[r, c]
        value = _clamped(acc)
        steps[r, c] = value
        if c < last:
            if cell_of_bin[c] != cell:
                out[r, cell] = total
                cell = cell_of_bin[c]
                total = out[r, cell]
            total += value
    if last > 0:
        out[r, cell] = total


@kernel
def _running_sum_cells_4(steps, cell_of_bin, out, r):
    last = steps.shape[1] - 1
    a0 = a1 = a2 = a3 = 0.0
    cell = cell_of_bin[0] if last > 0 else 0
    t0, t1, t2, t3 = (out[r, cell], out[r + 1, cell], out[r + 2, cell], out[r + 3, cell]) if last > 0 else (0.0, 0.0, 0.0, 0.0)
    for c in range(steps.shape[1]):
        if c:
            a0, a1, a2, a3 = a0 + steps[r, c], a1 + steps[r + 1, c], a2 + steps[r + 2, c], a3 + steps[r + 3, c]
        else:
            a0, a1, a2, a3 = steps[r, c], steps[r + 1, c], steps[r + 2, c], steps[r + 3, c]
        v0, v1, v2, v3 = _clamped(a0), _clamped(a1), _clamped(a2), _clamped(a3)
        steps[r, c], steps[r + 1, c], steps[r + 2, c], steps[r + 3, c] = v0, v1, v2, v3
        if c < last:
            if cell_of_bin[c] != cell:
                out[r, cell], out[r + 1, cell], out[r + 2, cell], out[r + 3, cell] = t0, t1, t2, t3
                cell = cell_of_bin[c]
                t0, t1, t2, t3 = out[r, cell], out[r + 1, cell], out[r + 2, cell], out[r + 3, cell]
            t0, t1, t2, t3 = t0 + v0, t1 + v1, t2 + v2, t3 + v3
    if last > 0:
        out[r, cell], out[r + 1, cell], out[r + 2, cell], out[r + 3, cell] = t0, t1, t2, t3


def clutter_amplitude(clutter, scale, floor: float) -> np.ndarray:
    """stage._speckled_frame's clutter amplitude: v = clutter x float32(scale^2) (scale (rows or 1, >= J) float32,
    None: 1), then sqrt(float32(v)) on the columns up to the last where any row's v > floor: (rows, width) float32,
    as np.sqrt(v[:, :width], dtype=np.float32)."""
    scale = _unit_scale(clutter, scale)
    flat, stride = _row_major(clutter)
    out = np.empty((clutter.shape[0], _clutter_width(flat, stride, clutter.shape[0], clutter.shape[1], scale,
                                                     float(floor))), np.float32)
    _clutter_amplitude(flat, stride, scale, out)
    return out


def _unit_scale(clutter, scale):
    return np.ones((1, clutter.shape[1]), np.float32) if scale is None else scale


def _row_major(rows_view: np.ndarray) -> tuple[np.ndarray, int]:
    """(flat, stride): a 2-D array as one C-contiguous 1-D buffer of its elements from [0, 0] to its last,
    a[r, c] = flat[r * stride + c], without a copy where its columns are adjacent (the stage's clutter rows are
    a view of their difference array's first J columns: a loop over such a 2-D view is not vectorised, measured
    0.20 -> 0.15 ms a ras6 block for amplified_rows and clutter_width), else a C-contiguous copy's."""
    a = rows_view
    if a.ndim != 2 or a.size == 0 or a.strides[1] != a.itemsize or a.strides[0] % a.itemsize or a.strides[0] < 0:
        a = np.ascontiguousarray(a)
        return a.reshape(-1), max(a.shape[1], 1)
    stride = a.strides[0] // a.itemsize
    return np.lib.stride_tricks.as_strided(a, ((a.shape[0] - 1) * stride + a.shape[1],), (a.itemsize,)), stride


def clutter_width(clutter, scale, floor: float) -> int:
    """The width of clutter_amplitude(clutter, scale, floor): the columns up to the last where any row's
    clutter x scale^2 > floor."""
    flat, stride = _row_major(clutter)
    return _clutter_width(flat, stride, clutter.shape[0], clutter.shape[1], _unit_scale(clutter, scale), float(floor))


def amplified_rows(re, im, clutter, scale, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(re x a, im x a) (rows, n) float32, a = clutter_amplitude(clutter, scale, .) on the planes' width w (each
    product float32, as numpy's re *= a), zeros from column w on: the range transform's zero-padded input.
    Why one pass: the amplitude was a (rows, w) array of its own, read again for each plane, and rfft(x, n)
    copied each plane into padded rows (measured on a ras6 frame, one core: about 5.4 -> 3.4 ms)."""
    rows, w = re.shape
    out_re, out_im = np.empty((rows, n), np.float32), np.empty((rows, n), np.float32)
    flat, stride = _row_major(clutter)
    _amplified_rows(re, im, flat, stride, _unit_scale(clutter, scale), out_re, out_im)
    return out_re, out_im


@kernel
def _amplified_rows(re, im, clutter, stride, scale, out_re, out_im):
    rows, w = re.shape
    for r in range(rows):
        row, s = clutter[r * stride:r * stride + w], scale[r if scale.shape[0] > 1 else 0]
        for c in range(w):
            a = np.sqrt(np.float32(_scaled(row[c], s[c])))  # _clutter_amplitude's value
            out_re[r, c] = re[r, c] * a
            out_im[r, c] = im[r, c] * a
        for c in range(w, out_re.shape[1]):
            out_re[r, c] = np.float32(0.0)
            out_im[r, c] = np.float32(0.0)


@inlined
def _scaled(clutter, s):
    """A cell's clutter x float64(s^2), s its float32 scale (scalars: array arguments would be counted as references
    at each call, compiled.inlined, which kept the loops over cells from being vectorised)."""
    return clutter * np.float64(s * s)


@kernel
def _clutter_width(clutter, stride, rows, cols, scale, floor):
    width = 0
    for r in range(rows):
        row, s = clutter[r * stride:r * stride + cols], scale[r if scale.shape[0] > 1 else 0]
        for c in range(cols - 1, width - 1, -1):  # from the end: stops at the widest row so far
            if _scaled(row[c], s[c]) > floor:
                width = c + 1
                break
    return width


@kernel
def _clutter_amplitude(clutter, stride, scale, out):
    for r in range(out.shape[0]):
        row, s = clutter[r * stride:r * stride + out.shape[1]], scale[r if scale.shape[0] > 1 else 0]
        for c in range(out.shape[1]):
            out[r, c] = np.sqrt(np.float32(_scaled(row[c], s[c])))


def autoregression(plane, k: int, last2, last1, s, phi1, phi2) -> None:
    """speckle.correlate_rows_beam's rows k.. of one float32 plane, in place: plane[k:] *= s, then row by row
    plane[row] += phi1 z_(row-1), and += phi2 z_(row-2) unless phi2 is 0 (last2, last1: the rows before row k),
    each a float32 product and a float32 sum as numpy's passes. The plane is read as one flat buffer with its row
    stride (_row_major): a block's planes are split at the columns the block before shares (stage), and a loop over
    such a 2-D view is not vectorised (measured 0.077 -> 0.013 ms a 25 x 4000 plane)."""
    flat, stride = _row_major(plane)
    rows, cols = plane.shape
    _autoregression(flat, stride, rows, cols, k, last2, last1, np.float32(s), np.float32(phi1), np.float32(phi2),
                    phi2 != 0)
    if not np.may_share_memory(flat, plane):  # a layout _row_major copies: the rows back in place
        plane[...] = flat.reshape(rows, cols)


@kernel
def _autoregression(plane, stride, rows, cols, k, last2, last1, s, phi1, phi2, second):
    for row in range(k, rows):  # each row and the two before it as 1-D slices: a loop the compiler vectorises
        at = row * stride
        z = plane[at:at + cols]
        z1 = last1 if row == k else plane[at - stride:at - stride + cols]
        if second:
            z2 = last2 if row == k else (last1 if row == k + 1 else plane[at - 2 * stride:at - 2 * stride + cols])
            for c in range(cols):
                x = z[c] * s
                x = x + phi1 * z1[c]
                z[c] = x + phi2 * z2[c]
        else:
            for c in range(cols):
                x = z[c] * s
                z[c] = x + phi1 * z1[c]
