"""One rule vocabulary for every value that comes from outside (YAML, ROS parameters, command lines).

A `Rule` says what a value may be; `Rule.check` returns the value converted to its kind or raises
ConfigError in the one message format of the package:

    {where} = {value}: {problem}, allowed {allowed}
    radar config a.yaml: beam.width_deg = 400.0: out of range, allowed [0.0, 180.0]

Values are printed as plain numbers (`plain`), never as `np.float64(...)` reprs. ROS parameter
descriptors and `--help` texts are derived from the same rules (`Rule.allowed`, `Rule.doc`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .errors import ConfigError

MIN_MAGNITUDE = 1e-100  # nonzero floats smaller than this are refused: denormals, and values whose inverse overflows
_MAX_SHOWN = 60  # characters of a bad value shown in a message (a file may hold a huge value)


def plain(value: Any) -> str:
    """A value as a person reads it: numpy scalars as Python numbers, long values shortened."""
    if hasattr(value, "item") and getattr(value, "ndim", 1) == 0:
        value = value.item()
    if isinstance(value, (list, tuple)):  # element by element, stopping once long enough (alias bombs)
        parts, length = [], 0
        for item in value:
            parts.append(plain(item))
            length += len(parts[-1]) + 2
            if length > _MAX_SHOWN:
                break
        text = "[" + ", ".join(parts) + ("]" if len(parts) == len(value) else ", ...]")
    elif isinstance(value, float):
        text = repr(value)
    elif isinstance(value, str):
        text = repr(value)
    elif isinstance(value, int) and abs(value) > 10**_MAX_SHOWN:  # str() of over 4300 digits raises
        try:
            text = f"an integer of {len(str(abs(value)))} digits"
        except ValueError:
            text = f"an integer of about {int(value.bit_length() * 0.30103) + 1} digits"
    else:
        text = str(value)
    return text if len(text) <= _MAX_SHOWN else text[:_MAX_SHOWN - 3] + "..."


@dataclass(frozen=True)
class Rule:
    """What one value may be: a kind (bool, int, float, str, list) and a range or a set of choices."""

    kind: type = float
    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    hi_open: bool = False
    choices: tuple = ()
    nullable: bool = False
    doc: str = ""

    def allowed(self) -> str:
        """The allowed values in words: '[0, 5]', '(0.0, 1.0]', 'one of a, b', 'true or false'."""
        if self.kind is bool:
            text = "true or false"
        elif self.choices:
            text = ("each " if self.kind is list else "") + "one of " + ", ".join(map(str, self.choices))
        elif self.kind is str:
            text = "any text"
        else:
            left = "(" if self.lo_open or self.lo is None else "["
            right = ")" if self.hi_open or self.hi is None else "]"
            lo = "-inf" if self.lo is None else plain(self.lo)
            hi = "inf" if self.hi is None else plain(self.hi)
            text = f"{left}{lo}, {hi}{right}" + (" (integer)" if self.kind is int else "")
        return text + (" or null" if self.nullable else "")

    def fail(self, where: str, value: Any, problem: str):
        raise ConfigError(f"{where} = {plain(value)}: {problem}, allowed {self.allowed()}")

    def check(self, value: Any, where: str) -> Any:
        """The value converted to this rule's kind; ConfigError naming `where`, the value and what is allowed."""
        if value is None:
            if self.nullable:
                return None
            self.fail(where, value, "a value is required")
        if self.kind is bool:
            if not isinstance(value, bool):
                self.fail(where, value, "not true or false")
            return value
        if self.kind is list:
            values = [v for v in (value if isinstance(value, (list, tuple)) else [value]) if v != ""]
            bad = [v for v in values if self.choices and v not in self.choices]
            if bad:
                self.fail(where, bad, "not a choice")
            return values
        if self.kind is str or self.choices:
            if self.choices and value not in self.choices:
                self.fail(where, value, "not a choice")
            if self.kind is str and not isinstance(value, str):
                self.fail(where, value, "not text")
            return value
        return self._number(value, where)

    def _number(self, value: Any, where: str):
        if hasattr(value, "item") and getattr(value, "ndim", 1) == 0:
            value = value.item()
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.fail(where, value, "not a number")
        try:
            finite = math.isfinite(float(value))
        except OverflowError:  # an integer of hundreds of digits
            self.fail(where, value, "too large")
        if not finite:
            self.fail(where, value, "not a finite number")
        if self.kind is int:
            if not isinstance(value, int) and float(value) != int(value):
                self.fail(where, value, "not an integer")
            value = int(value)
        else:
            value = float(value)
            if value != 0.0 and abs(value) < MIN_MAGNITUDE:  # 5e-324, 2.2e-308: 1 / value overflows
                self.fail(where, value, f"a nonzero value below {MIN_MAGNITUDE:g} in magnitude (no setting is that small)")
        lo, hi = self.lo, self.hi
        if (lo is not None and (value <= lo if self.lo_open else value < lo)) or \
                (hi is not None and (value >= hi if self.hi_open else value > hi)):
            self.fail(where, value, "out of range")
        return value


# -- poses from outside (command lines, parameters, tf, Gazebo) ------------------------------------
MAX_COORDINATE_M = 1e6  # float32 tracing still resolves ~6 cm this far out; beyond, a pose is an error
COORDINATE = Rule(float, -MAX_COORDINATE_M, MAX_COORDINATE_M, doc="metres")
ANGLE = Rule(float, -1e3, 1e3, doc="radians")  # any real turn; 1e39 is a typo or garbage, not an angle
POSE_KEYS = ("x", "y", "z", "roll", "pitch", "yaw")


def check_pose6(values, where: str) -> list[float]:
    """Six finite numbers x y z (|v| <= 1e6 m) roll pitch yaw (|v| <= 1000 rad); ConfigError naming the bad one."""
    values = list(values) if isinstance(values, (list, tuple)) or hasattr(values, "tolist") else [values]
    if len(values) != 6:
        raise ConfigError(f"{where} = {plain(values)}: expected six numbers x y z roll pitch yaw, got {len(values)}")
    return [(COORDINATE if i < 3 else ANGLE).check(v, f"{where}.{POSE_KEYS[i]}") for i, v in enumerate(values)]


# -- paths from files (scenarios, manifests, sensor files) -----------------------------------------
MAX_PATH = 4096  # PATH_MAX on Linux
MAX_NAME = 255  # NAME_MAX: one path component


def check_path(value: Any, where: str) -> str:
    """A path written in a file, as text; ConfigError when no file can have it: not text, a NUL byte
    (the system calls refuse it), longer than PATH_MAX or with a component longer than NAME_MAX."""
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{where} = {plain(value)}: not a path, allowed a file path (text)")
    if "\x00" in value:
        raise ConfigError(f"{where} = {plain(value)}: a NUL byte cannot be in a path")
    if len(value.encode("utf8", "surrogatepass")) > MAX_PATH or \
            any(len(part.encode("utf8", "surrogatepass")) > MAX_NAME for part in value.split("/")):
        raise ConfigError(f"{where} = {plain(value)}: longer than the file system allows "
                          f"({MAX_PATH} bytes a path, {MAX_NAME} a name)")
    return value
