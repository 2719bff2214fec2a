"""Writing output files so that no reader ever sees half of one and nothing is replaced unasked.

Every file a command writes (.npz, .png, .pcd, .ply, .npy, .json, sidecars) goes through `replacing`:
the writer is handed a temporary name in the same folder (`.NAME.XXXXXX.partial.SUFFIX`: the real
suffix last, as numpy and Pillow choose the format by it), the file is flushed to disk (fsync) and
renamed over the final name in one atomic step. A write that fails (full disk, kill, error) removes
the temporary file and leaves an existing file as it was. Bags follow the same way (io/bag.py).

An existing output is replaced only with `overwrite=True` (the commands' `--overwrite`); without,
`check_new` refuses before any work is done, in one line.
"""
from __future__ import annotations

import contextlib
import errno
import os
import secrets
from pathlib import Path
from typing import Iterable, Iterator

from .errors import ConfigError

PARTIAL = ".partial"


def check_new(paths: Iterable[str | Path], overwrite: bool, what: str = "output") -> list[Path]:
    """The paths, or ConfigError when one exists (and `overwrite` is false) or is a folder."""
    out = []
    for path in map(Path, paths):
        if path.is_dir() and not path.is_symlink():
            raise ConfigError(f"{what} {path}: is a folder; give a file name")
        if (path.exists() or path.is_symlink()) and not overwrite:
            raise ConfigError(f"{what} {path}: exists; give another name, or --overwrite to replace it")
        out.append(path)
    return out


def temporary_name(path: Path) -> Path:
    """A fresh name beside `path` ending in `path`'s suffix; the file is created, empty, with the mode a
    new file gets (0666 less the umask: tempfile's 0600 would make every output private)."""
    for _ in range(100):
        tmp = path.with_name(f".{path.stem[:100]}.{secrets.token_hex(4)}{PARTIAL}{path.suffix}")
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        except FileExistsError:
            continue
        return tmp
    raise FileExistsError(errno.EEXIST, "no free temporary name", str(path))


@contextlib.contextmanager
def replacing(path: str | Path, overwrite: bool = True) -> Iterator[Path]:
    """`with replacing(out) as tmp: write(tmp)`: on success `tmp` (fsynced) becomes `out` atomically;
    on any failure `tmp` is removed and `out` is untouched. The parent folder is created."""
    path = Path(path)
    check_new([path], overwrite)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temporary_name(path)
    try:
        yield tmp
        with open(tmp, "rb+") as fh:  # the data on disk before the name points at it (a crash leaves old or new)
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    with contextlib.suppress(OSError):  # the rename itself on disk (where the folder can be opened)
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@contextlib.contextmanager
def replacing_all(paths: Iterable[str | Path], overwrite: bool = True) -> Iterator[list[Path]]:
    """`replacing` for several files written together (a picture and its sidecar): every existing one
    is checked first; all are renamed at the end, none when a write fails."""
    paths = check_new(paths, overwrite)
    with contextlib.ExitStack() as stack:
        yield [stack.enter_context(replacing(p, overwrite)) for p in paths]


def add_overwrite_argument(parser) -> None:
    """The commands' `--overwrite` (one wording everywhere)."""
    parser.add_argument("--overwrite", action="store_true",
                        help="replace existing output files (default: refuse; a file is replaced in one atomic step)")
