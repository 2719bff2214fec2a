"""Reading sensor YAML: typed values with errors that name the file, the key and what is allowed.

A `SpecReader` wraps one mapping of a sensor file. Every getter records the key it read; `finish()`
rejects the keys nobody asked for, so a typo is an error instead of a silently ignored setting.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Mapping

from radarays_ros import config_file
from radarays_ros.config_file import parse_scalar
from radarays_ros.errors import ConfigError
from radarays_ros.validate import Rule

from .physics._validate import fail

_REQUIRED = object()


def read_yaml(path: str | Path, what: str = "sensor file") -> Any:
    """Parse a YAML file; missing file or bad syntax -> ConfigError naming the file (one line)."""
    return config_file.read_yaml(path, what)


class SpecReader:
    """Typed, checked access to one mapping of a sensor spec (`where` = 'file: key.path').

    Every error is in the package's one rule vocabulary (radarays_ros.validate.Rule):
    `file: key = value: problem, allowed ...`."""

    def __init__(self, data: Any, origin: str, prefix: str = ""):
        if data is None:
            data = {}
        if not isinstance(data, Mapping):
            fail(f"{origin}: {prefix.rstrip('.') or 'top level'}", type(data).__name__, "not a mapping",
                 "a mapping of keys")
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
                fail(self.where(key), None, "a value is required", "a value for this key")
            return default
        return self.data[key]

    def checked(self, key: str, rule: Rule, default: Any = _REQUIRED) -> Any:
        """The value of `key` checked by `rule` (a missing key gives `default` unchecked)."""
        value = self.raw(key, default)
        if value is default and default is not _REQUIRED:
            return value
        return rule.check(value, self.where(key))

    def number(self, key: str, default: Any = _REQUIRED, lo: float | None = None, hi: float | None = None,
               integer: bool = False, lo_open: bool = False) -> Any:
        """A finite number in [lo, hi] ((lo, hi] with lo_open); integer=True demands a whole number."""
        return self.checked(key, Rule(int if integer else float, lo, hi, lo_open=lo_open), default)

    def choice(self, key: str, options: Iterable[str], default: Any = _REQUIRED) -> Any:
        return self.checked(key, Rule(str, choices=tuple(options)), default)

    def boolean(self, key: str, default: Any = _REQUIRED) -> bool:
        return self.checked(key, Rule(bool), default)

    def text(self, key: str, default: Any = _REQUIRED) -> str:
        return self.checked(key, Rule(str), default)

    def numbers(self, key: str, default: Any = _REQUIRED, length: int | None = None, lo: float | None = None,
                hi: float | None = None) -> Any:
        value = self.raw(key, default)
        if value is default and default is not _REQUIRED:
            return value
        rule = Rule(float, lo, hi)
        count = "a list of numbers" if length is None else f"a list of {length} numbers"
        if not isinstance(value, (list, tuple)) or not value:
            fail(self.where(key), value, "not a non-empty list", f"{count} in {rule.allowed()}")
        if length is not None and len(value) != length:
            fail(self.where(key), value, f"{len(value)} numbers", f"{count} in {rule.allowed()}")
        return [rule.check(v, f"{self.where(key)}[{i}]") for i, v in enumerate(value)]

    def sub(self, key: str, required: bool = False) -> "SpecReader":
        value = self.raw(key, _REQUIRED if required else {})
        return SpecReader(value, self.origin, f"{self.prefix}{key}.")

    def finish(self, also_allowed: Iterable[str] = ()) -> None:
        """Reject keys that were never read (typos, settings of another sensor type)."""
        allowed = self._used | set(also_allowed)
        unknown = sorted(set(self.data) - allowed)
        if unknown:
            Rule(str, choices=tuple(sorted(allowed))).fail(self.where(unknown[0]), self.data[unknown[0]], "unknown key")


def check_number(value: Any, where: str, lo: float | None = None, hi: float | None = None,
                 integer: bool = False, lo_open: bool = False) -> Any:
    """Validate one number; the error names `where`, the value and the allowed range."""
    return Rule(int if integer else float, lo, hi, lo_open=lo_open).check(value, where)


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
