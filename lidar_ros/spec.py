"""Reading sensor YAML: typed values with errors that name the file, the key and what is allowed.

A `SpecReader` wraps one mapping of a sensor file. Every getter records the key it read; `finish()`
rejects the keys nobody asked for, so a typo is an error instead of a silently ignored setting.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Iterable, Mapping

from radarays_ros import config_file
from radarays_ros.config_file import parse_scalar
from radarays_ros.errors import ConfigError

_REQUIRED = object()


def read_yaml(path: str | Path, what: str = "sensor file") -> Any:
    """Parse a YAML file; missing file or bad syntax -> ConfigError naming the file (one line)."""
    return config_file.read_yaml(path, what)


class SpecReader:
    """Typed, checked access to one mapping of a sensor spec (`where` = 'file: key.path')."""

    def __init__(self, data: Any, origin: str, prefix: str = ""):
        if data is None:
            data = {}
        if not isinstance(data, Mapping):
            raise ConfigError(f"{origin}: {prefix.rstrip('.') or 'top level'} must be a mapping, got {type(data).__name__}")
        self.data = dict(data)
        self.origin = origin
        self.prefix = prefix
        self._used: set[str] = set()

    def where(self, key: str) -> str:
        return f"{self.origin}: {self.prefix}{key}"

    def has(self, key: str) -> bool:
        return key in self.data and self.data[key] is not None

    def raw(self, key: str, default: Any = _REQUIRED) -> Any:
        self._used.add(key)
        if key not in self.data or self.data[key] is None:
            if default is _REQUIRED:
                raise ConfigError(f"{self.where(key)} is required")
            return default
        return self.data[key]

    def number(self, key: str, default: Any = _REQUIRED, lo: float | None = None, hi: float | None = None,
               integer: bool = False, lo_open: bool = False) -> Any:
        """A finite number in [lo, hi] ((lo, hi] with lo_open); integer=True demands a whole number."""
        value = self.raw(key, default)
        if value is default and default is not _REQUIRED:
            return value
        return check_number(value, self.where(key), lo, hi, integer, lo_open)

    def choice(self, key: str, options: Iterable[str], default: Any = _REQUIRED) -> Any:
        options = list(options)
        value = self.raw(key, default)
        if value is default and default is not _REQUIRED:
            return value
        if value not in options:
            raise ConfigError(f"{self.where(key)} = {value!r}; allowed: {', '.join(map(str, options))}")
        return value

    def boolean(self, key: str, default: Any = _REQUIRED) -> bool:
        value = self.raw(key, default)
        if not isinstance(value, bool):
            raise ConfigError(f"{self.where(key)} = {value!r}; allowed: true, false")
        return value

    def text(self, key: str, default: Any = _REQUIRED) -> str:
        value = self.raw(key, default)
        if not isinstance(value, str):
            raise ConfigError(f"{self.where(key)} = {value!r}; expected a string")
        return value

    def numbers(self, key: str, default: Any = _REQUIRED, length: int | None = None, lo: float | None = None,
                hi: float | None = None) -> Any:
        value = self.raw(key, default)
        if value is default and default is not _REQUIRED:
            return value
        if not isinstance(value, (list, tuple)) or not value:
            raise ConfigError(f"{self.where(key)}: expected a non-empty list of numbers")
        if length is not None and len(value) != length:
            raise ConfigError(f"{self.where(key)}: expected {length} numbers, got {len(value)}")
        return [check_number(v, f"{self.where(key)}[{i}]", lo, hi) for i, v in enumerate(value)]

    def sub(self, key: str, required: bool = False) -> "SpecReader":
        value = self.raw(key, _REQUIRED if required else {})
        return SpecReader(value, self.origin, f"{self.prefix}{key}.")

    def finish(self, also_allowed: Iterable[str] = ()) -> None:
        """Reject keys that were never read (typos, settings of another sensor type)."""
        allowed = self._used | set(also_allowed)
        unknown = sorted(set(self.data) - allowed)
        if unknown:
            raise ConfigError(f"{self.where(unknown[0])}: unknown key; allowed here: {', '.join(sorted(allowed))}")


def check_number(value: Any, where: str, lo: float | None = None, hi: float | None = None,
                 integer: bool = False, lo_open: bool = False) -> Any:
    """Validate one number; the error names `where` and the allowed range."""
    allowed = _range_text(lo, hi, integer, lo_open)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{where} = {value!r}; expected {allowed}")
    if not math.isfinite(float(value)):
        raise ConfigError(f"{where} = {value!r}; expected a finite number ({allowed})")
    if integer:
        if float(value) != int(value):
            raise ConfigError(f"{where} = {value!r}; expected {allowed}")
        value = int(value)
    if (lo is not None and (value <= lo if lo_open else value < lo)) or (hi is not None and value > hi):
        raise ConfigError(f"{where} = {value!r} is out of range; allowed: {allowed}")
    return value


def _range_text(lo, hi, integer, lo_open) -> str:
    kind = "an integer" if integer else "a number"
    if lo is not None and hi is not None:
        return f"{kind} in {'(' if lo_open else '['}{lo}, {hi}]"
    if lo is not None:
        return f"{kind} {'>' if lo_open else '>='} {lo}"
    if hi is not None:
        return f"{kind} <= {hi}"
    return kind


def set_dotted(spec: dict, dotted: str, value: Any) -> dict:
    """A deep copy of `spec` with `a.b.c` set to value (intermediate mappings created)."""
    import copy

    out = copy.deepcopy(spec)
    node = out
    parts = dotted.split(".")
    if not all(parts):
        raise ConfigError(f"override key '{dotted}' is not a dotted key like 'range.max'")
    for part in parts[:-1]:
        nxt = node.get(part)
        if nxt is None:
            nxt = node[part] = {}
        if not isinstance(nxt, dict):
            raise ConfigError(f"override key '{dotted}': '{part}' is a value, not a section")
        node = nxt
    node[parts[-1]] = value
    return out


def parse_value(text: str) -> Any:
    """A command-line `--set key=value` value as YAML (numbers, booleans, lists) or a string (1e-7 a number)."""
    return parse_scalar(text)
