"""Reading small CSV tables of numbers (trajectories, ray lists) with errors that name file and line."""
from __future__ import annotations

import csv
import stat
from pathlib import Path

import numpy as np

from ..errors import ConfigError


MAX_TABLE_BYTES = 256 * 2**20  # a table of numbers larger than this is not a trajectory or a ray list

def read_number_table(path: str | Path, widths: tuple[int, ...], columns: str, what: str) -> np.ndarray:
    """(N, W) float64 rows of a CSV file; W is one of `widths` and the same on every line.

    `columns` describes the columns for messages (e.g. "t,x,y,z,roll,pitch,yaw"), `what` the file's
    role ("trajectory file"). One header line before the first row of numbers and '#' comment lines
    are skipped; NaN/inf, ragged rows, a missing file or no rows at all are a ConfigError."""
    path = Path(path)
    rows: list[list[float]] = []
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):  # /dev/zero, a FIFO: no size to check, and no end
            raise ConfigError(f"{what} {path}: not a regular file")
        if info.st_size > MAX_TABLE_BYTES:
            raise ConfigError(f"{what} {path}: larger than {MAX_TABLE_BYTES} bytes")
        with path.open(encoding="utf-8") as fh:
            for line_no, row in enumerate(csv.reader(fh), 1):
                if not row or row[0].strip().startswith("#"):
                    continue
                try:
                    values = [float(v) for v in row]
                except ValueError:
                    if not rows and line_no == 1:
                        continue  # header line
                    raise ConfigError(f"{what} {path}:{line_no}: expected numbers {columns}") from None
                if len(values) not in widths or (rows and len(values) != len(rows[0])):
                    expected = " or ".join(map(str, widths))
                    raise ConfigError(f"{what} {path}:{line_no}: expected {expected} columns {columns} "
                                      f"(the same on every line), got {len(values)}")
                rows.append(values)
    except FileNotFoundError:
        raise ConfigError(f"{what} {path} not found") from None
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise ConfigError(f"{what} {path}: cannot be read as text ({type(exc).__name__})") from None
    if not rows:
        raise ConfigError(f"{what} {path}: no rows of numbers {columns}")
    table = np.array(rows)
    if not np.all(np.isfinite(table)):
        raise ConfigError(f"{what} {path}: contains NaN or inf values")
    return table
