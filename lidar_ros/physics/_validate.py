"""The lidar physics configs' checks in the package's one rule vocabulary (radarays_ros.validate.Rule):
every error reads `where.key = value: problem, allowed ...`.

`CheckedConfig` is the base of the frozen config dataclasses (surface, noise, the effect sections): a
class lists a `Rule` per field in `RULES`, `from_dict` rejects keys that are not fields and checks the
rest, and `_more` adds the checks that span fields or need a structure (lists, pairs)."""
from __future__ import annotations

import dataclasses
from typing import Any, Iterable, Mapping

from radarays_ros.errors import ConfigError
from radarays_ros.validate import Rule, plain


def check_keys(data: Any, allowed: Iterable[str], where: str) -> Mapping[str, Any]:
    """`data` as a mapping whose keys are all in `allowed` (None counts as empty)."""
    keys = Rule(str, choices=tuple(allowed))
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        keys.fail(where, data, "not a mapping of these keys")
    for key in sorted(map(str, data)):
        if key not in keys.choices:
            keys.fail(f"{where}.{key}", data[key], "unknown key")
    return data


def fail(where: str, value: Any, problem: str, allowed: str):
    """A structured value's error in the rule vocabulary's one format (Rule.fail for values no Rule describes)."""
    raise ConfigError(f"{where} = {plain(value)}: {problem}, allowed {allowed}")


def number(low: float | None = None, high: float | None = None, low_open: bool = False) -> Rule:
    """A finite float in [low, high] ((low, high] with low_open; None: unbounded). Whole bounds read as
    integers in messages ('allowed [0, 10]')."""
    return Rule(float, _whole(low), _whole(high), lo_open=low_open)


def _whole(bound: float | None) -> float | int | None:
    return int(bound) if bound is not None and float(bound).is_integer() else bound


def integer(low: int, high: int) -> Rule:
    return Rule(int, low, high)


def choice(*options: str) -> Rule:
    return Rule(str, choices=tuple(options))


FLAG = Rule(bool)


class CheckedConfig:
    """from_dict / to_dict / validation shared by the frozen lidar config dataclasses."""

    RULES: dict = {}  # field -> Rule (a class attribute of each subclass, not a dataclass field)

    def __post_init__(self):
        for key, value in self._checked(dataclasses.asdict(self), type(self).__name__).items():
            object.__setattr__(self, key, value)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None, where: str):
        """Validated config from a mapping; errors name `where`, the key, the value and the allowed values."""
        data = check_keys(data, [f.name for f in dataclasses.fields(cls)], where)
        return cls(**cls._checked({**dataclasses.asdict(cls()), **data}, where))

    @classmethod
    def _checked(cls, values: Mapping[str, Any], where: str) -> dict[str, Any]:
        checked = {key: rule.check(values[key], f"{where}.{key}") for key, rule in cls.RULES.items()}
        return cls._more({**values, **checked}, where)

    @classmethod
    def _more(cls, values: dict[str, Any], where: str) -> dict[str, Any]:
        """Checks beyond one field's rule (structured values, fields that exclude each other)."""
        return values

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)
