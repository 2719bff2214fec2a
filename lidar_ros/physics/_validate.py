"""Small checks shared by the lidar physics configs: each error names where the value came from,
the key, and what is allowed."""
from __future__ import annotations

import math
from typing import Any, Iterable, Mapping

from radarays_ros.errors import ConfigError


def check_keys(data: Any, allowed: Iterable[str], where: str) -> Mapping[str, Any]:
    """`data` as a mapping whose keys are all in `allowed` (None counts as empty)."""
    allowed = list(allowed)
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where}: expected a mapping with keys {', '.join(allowed)}; got {type(data).__name__}")
    unknown = sorted(str(k) for k in data if k not in allowed)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(allowed)}")
    return data


def number(value: Any, key: str, where: str, low: float = -math.inf, high: float = math.inf,
           low_open: bool = False, high_open: bool = False) -> float:
    """A finite float in the interval [low, high] (ends open where asked)."""
    lo = "(" if low_open else "["
    hi = ")" if high_open else "]"
    allowed = f"a number in {lo}{low:g}, {high:g}{hi}"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{where}.{key}: {value!r} is not a number; allowed: {allowed}")
    x = float(value)
    ok = math.isfinite(x) and (x > low if low_open else x >= low) and (x < high if high_open else x <= high)
    if not ok:
        raise ConfigError(f"{where}.{key}: {value!r} is out of range; allowed: {allowed}")
    return x


def integer(value: Any, key: str, where: str, low: int = 0, high: int = 2**31 - 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not (low <= value <= high):
        raise ConfigError(f"{where}.{key}: {value!r} is not allowed; allowed: an integer in [{low}, {high}]")
    return int(value)


def choice(value: Any, key: str, where: str, allowed: Iterable[str]) -> str:
    allowed = list(allowed)
    if value not in allowed:
        raise ConfigError(f"{where}.{key}: {value!r} is not allowed; allowed: {', '.join(allowed)}")
    return str(value)
