"""ROS parameter plumbing: ParamInfo -> ParameterDescriptor, and ROS values -> config values.

Kept apart from the node so the node reads as "declare, react to changes, simulate, publish".
"""
from __future__ import annotations

import math
from typing import Any

from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor, ParameterType

from ..sensors.units import ParamInfo

_TYPES = {bool: ParameterType.PARAMETER_BOOL, int: ParameterType.PARAMETER_INTEGER,
          float: ParameterType.PARAMETER_DOUBLE, str: ParameterType.PARAMETER_STRING}


def descriptor(name: str, info: ParamInfo, *, read_only: bool = False, dynamic: bool = False) -> ParameterDescriptor:
    """A descriptor with the description, allowed values and range of `info`.

    `dynamic` (sensor model keys): any type is accepted by ROS and the config validates it, so a YAML
    `rate_hz: 4` (an integer) still sets a floating-point key and a nullable key can be set later.
    """
    text = info.description or name
    kind = info.kind or type(info.value)
    if info.choices:
        text += f" (one of: {', '.join(map(str, info.choices))})"
    elif kind in (int, float) and (info.lo is not None or info.hi is not None):
        text += f" (allowed: {info.lo if info.lo is not None else '-inf'} .. {info.hi if info.hi is not None else 'inf'})"
    if info.nullable:
        text += " (may be unset)"
    d = ParameterDescriptor(name=name, description=text, read_only=read_only, dynamic_typing=dynamic)
    if info.choices:
        d.additional_constraints = "one of: " + ", ".join(map(str, info.choices))
    if not dynamic:
        d.type = _TYPES.get(kind, ParameterType.PARAMETER_NOT_SET)
    if kind is float and info.lo is not None and info.hi is not None and math.isfinite(info.lo) and math.isfinite(info.hi):
        d.floating_point_range = [FloatingPointRange(from_value=float(info.lo), to_value=float(info.hi), step=0.0)]
    elif kind is int and info.lo is not None and info.hi is not None:
        d.integer_range = [IntegerRange(from_value=int(info.lo), to_value=int(min(info.hi, 2**63 - 1)), step=1)]
    return d


def ros_value(value: Any) -> Any:
    """A config value in a form rclpy accepts as a parameter value (tuples -> lists)."""
    if isinstance(value, tuple):
        return list(value)
    return value


def from_ros(value: Any) -> Any:
    """A parameter value as plain Python (rclpy arrays -> lists)."""
    if value is None:
        return None
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, (list, tuple)):
        return list(value)
    return value
