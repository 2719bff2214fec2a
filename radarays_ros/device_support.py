"""Which configuration fields device frames implement: declared per field, failing closed.

A model's device path (radar/warp_frame.py, lidar_ros/warp_frame.py) declares, for every field of its
config dataclasses (nested sections included, walked by `config_fields`), one `Support`:

    DEVICE                       the device path implements every value of the field
    values("none", "uniform")    only these values; any other refuses device frames
    HOST                         not on the device: any value but the field's default refuses device frames
    ... .unless_read(when, note) the field is read by neither path unless `when(config)`: no refusal then
    ... .because(why)            the reason, shown with a refusal

`refusals(config, declared)` lists the fields whose value device frames do not implement, each as
`key = value (device frames: what they support)`; a field the declaration does not name is refused
whenever it is set (fail closed: a new config field runs on the device only once someone declares it).
`refuse(...)` raises them as one ConfigError line. Tests walk every field of every config against the
declarations (test/test_device_support.py).
"""
from __future__ import annotations

import dataclasses
import functools
import typing
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping

import numpy as np

from .errors import ConfigError
from .validate import plain

_NO_DEFAULT = object()


@dataclass(frozen=True)
class Support:
    """How device frames treat one config field (see the module docstring)."""

    allowed: tuple | None = None  # None: every value (or, with host, none but the default)
    host: bool = False  # True: the device has no implementation (the default value means "off")
    read_when: Callable[[Any], bool] | None = None  # None: always read
    why: str = ""  # shown when refused
    read_note: str = ""  # when the field is read (documentation of read_when)

    def because(self, why: str) -> "Support":
        """The same support with its reason (shown when refused)."""
        return dataclasses.replace(self, why=why)

    def unless_read(self, when: Callable[[Any], bool], note: str = "") -> "Support":
        """The same support, but the field is read (and so checked) only where `when(config)` holds."""
        return dataclasses.replace(self, read_when=when, read_note=note)

    @property
    def on_device(self) -> bool:
        """True when the device implements at least one value besides a default (a parity test exercises it)."""
        return not self.host

    def implements(self, value: Any, default: Any) -> bool:
        if self.host:
            return default is not _NO_DEFAULT and same_value(value, default)
        return self.allowed is None or any(same_value(value, a) for a in self.allowed)

    def describe(self) -> str:
        if self.host:
            return "host frames only"
        if self.allowed is None:
            return "every value"
        return "only " + ", ".join(str(plain(a)) for a in self.allowed)


DEVICE = Support()
HOST = Support(host=True)


def values(*allowed) -> Support:
    """Device frames implement only these values of the field."""
    return Support(allowed=tuple(allowed))


def same_value(a: Any, b: Any) -> bool:
    """Field values equal, arrays by their elements (a config's arrays are numpy)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.shape == b.shape and bool(np.array_equal(a, b))
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return a is b


def _default_of(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
        return f.default_factory()  # type: ignore[misc]
    return _NO_DEFAULT


@functools.lru_cache(maxsize=None)
def _sections(cls) -> frozenset:
    """Names of the fields of a config class that are config sections (their type a dataclass)."""
    hints = typing.get_type_hints(cls)
    out = set()
    for f in dataclasses.fields(cls):
        default = _default_of(f)
        kind = type(default) if dataclasses.is_dataclass(default) else hints.get(f.name)
        if isinstance(kind, type) and dataclasses.is_dataclass(kind):
            out.add(f.name)
    return frozenset(out)


def config_fields(config, prefix: str = "") -> Iterator[tuple[str, Any, Any]]:
    """(dotted key, value, default) of every field of a config dataclass, its sections (fields whose
    type is a dataclass) walked into as `section.key`; a field without a default yields a private marker."""
    sections = _sections(type(config))
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        if f.name in sections:
            yield from config_fields(value, prefix + f.name + ".")
        else:
            yield prefix + f.name, value, _default_of(f)


def field_keys(cls, prefix: str = "") -> list[str]:
    """Every dotted key `config_fields` walks for a config class."""
    keys = []
    sections = _sections(cls)
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        if f.name in sections:
            default = _default_of(f)
            keys += field_keys(type(default) if dataclasses.is_dataclass(default) else hints[f.name],
                               prefix + f.name + ".")
        else:
            keys.append(prefix + f.name)
    return keys


def refusals(config, declared: Mapping[str, Support], shown: Callable[[str], str] = str) -> list[str]:
    """The fields of `config` whose values device frames do not implement (empty: the whole frame runs
    on the device), each `key = value (device frames: ...)`, the key as `shown(key)` (its name in a file)."""
    out = []
    for walked, value, default in config_fields(config):
        support = declared.get(walked)
        key = shown(walked)
        if support is None:  # fail closed: undeclared fields are refused once set
            if default is not _NO_DEFAULT and same_value(value, default):
                continue
            out.append(f"{key} = {_short(value)} (not declared for device frames)")
            continue
        if support.read_when is not None and not support.read_when(config):
            continue
        if not support.implements(value, default):
            why = f"; {support.why}" if support.why else ""
            out.append(f"{key} = {_short(value)} (device frames: {support.describe()}{why})")
    return out


def refuse(config, declared: Mapping[str, Support], where: str, shown: Callable[[str], str] = str) -> None:
    """ConfigError (one line) naming every field of `config` device frames do not implement."""
    found = refusals(config, declared, shown)
    if found:
        raise ConfigError(f"{where}: not available in device frames: {'; '.join(found)}; "
                          "use host frames for these (frames: host; --frames host)")


def _short(value: Any) -> str:
    text = str(plain(value)) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
