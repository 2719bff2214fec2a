""".npz files read from outside (frames handed to `compare` and `fit`): every array's size is taken from its
.npy header and bounded before any data is read, pickled objects are refused, and every way a broken
archive fails (not a zip, a cut-off member, a bad header, a bad deflate stream) is one ConfigError line.

numpy allocates what a header claims before it reads the data: an .npz of a few bytes whose header says
2^22 x 2^22 float64 asks for 128 TiB (measured: `np.load` raises MemoryError, or under an address-space
limit dies in the allocation). The bound is limits.MAX_ARRAY_VALUES per array and twice that in all.
"""
from __future__ import annotations

import zipfile
import zlib
from pathlib import Path

import numpy as np

from .. import limits
from ..errors import ConfigError, one_line

_BROKEN = (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError, zlib.error, KeyError,
           NotImplementedError, TypeError, SyntaxError)


def array_headers(path: str | Path, what: str) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """{name: (shape, dtype)} of every array of an .npz, read from the headers only; ConfigError when broken,
    pickled, or over the bounds (limits.MAX_ARRAY_VALUES per array, twice that in all)."""
    file = Path(path)
    out: dict[str, tuple[tuple[int, ...], np.dtype]] = {}
    try:
        with zipfile.ZipFile(file) as archive:
            for info in archive.infolist():
                if not info.filename.endswith(".npy"):
                    continue
                with archive.open(info) as member:
                    version = np.lib.format.read_magic(member)
                    read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
                    shape, _, dtype = read(member)
                out[info.filename[:-4]] = (tuple(int(s) for s in shape), np.dtype(dtype))
    except _BROKEN as exc:
        raise ConfigError(f"{what} {path}: not a readable .npz ({type(exc).__name__}: {one_line(str(exc), 120)})") from None
    total = 0
    for name, (shape, dtype) in out.items():
        if dtype.hasobject:
            raise ConfigError(f"{what} {path}: array {name!r} holds Python objects (a pickle); allowed: numbers and text")
        total += limits.check_product(f"{what} {path}: array {name!r}", {f"axis {i}": s for i, s in enumerate(shape)}
                                      or {"values": 1}, limits.MAX_ARRAY_VALUES)
    if total > 2 * limits.MAX_ARRAY_VALUES:
        raise ConfigError(f"{what} {path}: {total} values in all its arrays exceed {2 * limits.MAX_ARRAY_VALUES} "
                          "(memory)")
    return out


def read_npz(path: str | Path, what: str) -> dict[str, np.ndarray]:
    """Every array of the .npz at `path` (checked by `array_headers` first); ConfigError naming `what` and the
    file when it cannot be read."""
    array_headers(path, what)
    try:
        with np.load(Path(path), allow_pickle=False) as npz:
            return {k: npz[k] for k in npz.files}
    except _BROKEN as exc:
        raise ConfigError(f"{what} {path}: not a readable .npz ({type(exc).__name__}: {one_line(str(exc), 120)})") from None
