"""Reading configuration files (YAML) with one-line errors that name the file and what it is."""
from __future__ import annotations

import copy
import os
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

import yaml

from .errors import ConfigError, yaml_problem


def read_yaml(path: str | Path, what: str) -> Any:
    """The parsed contents of a YAML file; `what` names its role in errors ("radar config", "scenario").

    A missing or unreadable file and bad syntax are a ConfigError on one line (where the parser
    stopped and why); an empty file reads as None."""
    path = Path(path)
    cached = _from_cache(path)
    if cached is not None:
        return cached[1]
    try:
        with path.open() as fh:
            stat = os.fstat(fh.fileno())
            data = yaml.safe_load(fh)
    except FileNotFoundError:
        raise ConfigError(f"{what} {path}: file not found") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{what} {path}: not valid YAML ({yaml_problem(exc)})") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{what} {path}: cannot be read ({exc})") from None
    except ValueError as exc:  # an integer of more digits than Python converts; a NUL byte in the path
        raise ConfigError(f"{what} {path}: a value cannot be read ({str(exc)[:80]})") from None
    except RecursionError:
        raise ConfigError(f"{what} {path}: nested too deeply to be a configuration") from None
    check_size(data, f"{what} {path}")
    _to_cache(path, stat, data)
    return data


# Parsed files by path, checked against the file's size and modification time: a batch plan reads the
# same scenario, material library and sensor files once per varied run (PyYAML in pure Python: ~70 ms
# a read measured under load, most of the ~175 ms a run took to plan). Callers get a deep copy.
_CACHE: "OrderedDict[str, tuple]" = OrderedDict()
_CACHE_FILES = 64
_CACHE_MAX_BYTES = 1 << 20


def _stat_key(stat) -> tuple:
    return (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)


def _from_cache(path: Path):
    """(True, a copy of the data) when the file is cached and unchanged, else None."""
    entry = _CACHE.get(str(path))
    if entry is None:
        return None
    try:
        key = _stat_key(path.stat())
    except (OSError, ValueError):
        return None
    if key != entry[0]:
        return None
    _CACHE.move_to_end(str(path))
    return True, copy.deepcopy(entry[1])


def _to_cache(path: Path, stat, data) -> None:
    if stat.st_size > _CACHE_MAX_BYTES or stat.st_mtime_ns >= time.time_ns() - 2_000_000_000:
        return  # large files, and files written in the last 2 s (a change within the clock's step would hide)
    _CACHE[str(path)] = (_stat_key(stat), copy.deepcopy(data))
    while len(_CACHE) > _CACHE_FILES:
        _CACHE.popitem(last=False)


MAX_VALUES = 200_000  # values in a configuration, counted with YAML aliases expanded


def check_size(data: Any, where: str, limit: int = MAX_VALUES) -> None:
    """ConfigError when `data`, with aliases expanded, holds more than `limit` values: a 400-byte
    alias bomb stands for billions (every later walk or message over it would expand them)."""
    count, stack = 0, [data]
    while stack:
        item = stack.pop()
        count += 1
        if count > limit:
            raise ConfigError(f"{where}: more than {limit} values (YAML aliases expanded); not a configuration")
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)


def parse_scalar(text: str) -> Any:
    """A value typed on a command line (`--set key=value`) or in a parameter string: YAML's reading
    (numbers, booleans, lists, null), except that what Python reads as a number is a number
    (YAML 1.1 leaves `1e-7` and `1E5` as text); anything else stays the text itself."""
    if not isinstance(text, str) or not text.strip():
        return text
    try:
        value = yaml.safe_load(text)
    except (yaml.YAMLError, ValueError, RecursionError):  # ValueError: an integer of over 4300 digits
        return text
    if isinstance(value, str):
        try:
            return float(value) if value.strip().lower() not in ("nan", "inf", "-inf", "+inf", "infinity") else value
        except ValueError:
            return value
    return value
