"""Bounds on what settings imply, checked before anything is allocated or turned into an integer.

Each setting may be in its own range while their product is not: `range.max_range = 30` and
`range.resolution = 1e-6` make 30 M range bins, times 400 azimuths 12 G cells (89 GiB as float64).
Every size derived from several settings goes through `check_product` here, so the bound and its
message are the same everywhere:

    radar config a.yaml: azimuths x range bins = 400 x 30000000 = 1.2e+10 exceeds 16000000 cells (memory); lower one of them

Likewise a float that becomes an integer (a period in nanoseconds from a rate, a count from a
length) goes through `to_int`: a denormal rate (`5e-324` Hz) has an infinite period, which numpy
casts to the int64 minimum without a word and Python refuses with an OverflowError.
"""
from __future__ import annotations

import math
from typing import Mapping

from .errors import ConfigError
from .validate import plain

INT64_MAX = 2**63 - 1
# the bounds (values held at once; each is also named where it is checked)
MAX_IMAGE_CELLS = 16_000_000  # radar images: azimuths x range bins (float64 images of 128 MB each)
MAX_FRAME_RAYS = 2_000_000  # radar rays per frame x passes: ~100 B of arrays per ray and bounce
MAX_LIDAR_RAYS = 16_000_000  # lidar rays per scan x sub-rays x echoes: ~60 B of per-ray arrays each
MAX_PICTURE_PIXELS = 64_000_000  # a picture read or written (8-bit RGBA: 256 MB; float64 work arrays 512 MB)
# rays traced by one `radarays lidar` run (scans x rays per scan x sub-rays x echoes): the work, not the memory.
# Measured (2 shared cores, office world): 0.2 M rays/s with 64 sub-rays, so the bound is about half an hour,
# shown by a progress line; 1700 VLP-16 scans of 64 sub-rays (3.1 G rays, ~4 h) are refused
MAX_RUN_RAYS = 400_000_000
MAX_ARRAY_VALUES = 64_000_000  # one array of an .npz read from outside (512 MB as float64; io/npz_files.py)


def check_product(where: str, factors: Mapping[str, float], limit: float, unit: str = "values",
                  why: str = "memory") -> int:
    """The product of `factors` ({name: size}) as an int, or ConfigError naming each factor, `limit` and `why`
    (what the bound protects: memory, or the work of a run that would take hours).

    Sizes may be floats (a count not yet rounded); a non-finite or negative size is refused too."""
    names, sizes = list(factors), [factors[k] for k in factors]
    total = 1.0
    for size in sizes:
        try:
            size = float(size)
        except (TypeError, ValueError, OverflowError):
            size = math.inf
        total = math.inf if not math.isfinite(size) or size < 0 else total * size
    if total > limit or not math.isfinite(total):
        shown = " x ".join(plain(s) for s in sizes)
        raise ConfigError(f"{where}: {' x '.join(names)} = {shown} = {total:.3g} exceeds {int(limit)} {unit} "
                          f"({why}); lower {'one of them' if len(names) > 1 else 'it'}")
    return int(total)


def to_int(value: float, where: str, lo: int = -INT64_MAX - 1, hi: int = INT64_MAX) -> int:
    """round(value) as a Python int in [lo, hi] (default: int64), or ConfigError naming `where`.

    nan, inf and anything rounding outside the bounds (e.g. the period of a denormal rate) is refused."""
    try:
        number = float(value)
        out = int(round(number))
    except (TypeError, ValueError, OverflowError):
        raise ConfigError(f"{where} = {plain(value)}: not a finite number, allowed [{lo}, {hi}]") from None
    if not lo <= out <= hi:
        raise ConfigError(f"{where} = {plain(value)}: out of range, allowed [{lo}, {hi}]")
    return out


def period_ns(rate_hz: float, where: str) -> int:
    """1e9 / rate_hz nanoseconds, at least 1 and within int64; ConfigError naming `where` (the rate)."""
    try:
        period = 1e9 / float(rate_hz)
    except (TypeError, ValueError, ZeroDivisionError, OverflowError):
        period = math.inf
    if not 1 <= period <= INT64_MAX:  # nan fails too
        raise ConfigError(f"{where} = {plain(rate_hz)}: its period 1e9 / rate does not fit int64 nanoseconds, "
                          f"allowed [{1e9 / INT64_MAX:.3g}, 1e9] Hz")
    return int(round(period))
