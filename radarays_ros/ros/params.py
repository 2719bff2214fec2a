"""ROS parameter plumbing: ParamInfo -> ParameterDescriptor, ROS values -> config values, and
`NodeParameters`, which declares a node's parameters from ParamInfo tables and checks what a params
file gave them (a bad value falls back to the default with one error naming the key and the allowed
values; a key nobody declared is reported as a typo).

Kept apart from the node so the node reads as "declare, react to changes, simulate, publish".
"""
from __future__ import annotations

import math
from typing import Any, Callable

from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor, ParameterType
from rclpy.exceptions import ParameterUninitializedException
from rclpy.parameter import Parameter

from ..errors import ConfigError
from ..sensors.params import ParamInfo, check_param, param_rule

_TYPES = {bool: ParameterType.PARAMETER_BOOL, int: ParameterType.PARAMETER_INTEGER,
          float: ParameterType.PARAMETER_DOUBLE, str: ParameterType.PARAMETER_STRING}


def descriptor(name: str, info: ParamInfo, *, read_only: bool = False, dynamic: bool = False) -> ParameterDescriptor:
    """A descriptor with the description, allowed values and range of `info`.

    `dynamic` (sensor model keys): any type is accepted by ROS and the config validates it, so a YAML
    `rate_hz: 4` (an integer) still sets a floating-point key and a nullable key can be set later.
    """
    rule = param_rule(info)  # the one rule vocabulary: the same words as the errors and --help
    text = info.description or name
    kind = rule.kind
    if info.choices or (kind in (int, float) and (info.lo is not None or info.hi is not None)) or info.nullable:
        text += f" (allowed {rule.allowed()})"
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


class NodeParameters:
    """The parameters of `node` (an rclpy Node): declared from ParamInfo tables, read as plain Python.
    `error(text)`: the node's (throttled) error log."""

    def __init__(self, node, error: Callable[[str], None]):
        self.node, self._error = node, error

    def __call__(self, name: str) -> Any:
        """The value of a declared parameter as plain Python (None: an array parameter nobody set)."""
        try:
            return from_ros(self.node.get_parameter(name).value)
        except ParameterUninitializedException:
            return None

    def declare(self, infos: dict[str, ParamInfo], prefix: str = "", read_only=(), dynamic: bool = False) -> dict:
        """Declare `prefix + key` for each info; returns {key: value} with the values from the params file."""
        values = {}
        for key, info in infos.items():
            name = prefix + key
            if not self.node.has_parameter(name):
                self._declare_one(name, info, read_only=key in read_only, dynamic=dynamic)
            values[key] = self(name)
        return values

    def _declare_one(self, name: str, info: ParamInfo, read_only: bool, dynamic: bool) -> None:
        default = ros_value(info.value)
        if info.kind is list and default == [""]:
            default = Parameter.Type.STRING_ARRAY
        desc = descriptor(name, info, read_only=read_only, dynamic=dynamic)
        try:
            param = self.node.declare_parameter(name, default, desc)
        except Exception as exc:  # a params-file value of the wrong type or out of range
            self._error(f"{self._rejected_override(name, info, exc)}; using the default {info.value!r}")
            param = self.node.declare_parameter(name, default, desc, ignore_override=True)
        value = from_ros(param.value)
        if dynamic or info.kind is list or value is None:
            return
        try:
            check_param(name, value, info)
        except ConfigError as exc:  # e.g. pose_source: fixd (ROS checks types and ranges, not choices)
            self._error(f"{exc}; using the default {info.value!r}")
            self.node.set_parameters([Parameter(name, value=ros_value(info.value))])

    def _rejected_override(self, name: str, info: ParamInfo, exc: Exception) -> str:
        """Why rclpy refused a params-file value, in our words: the key, the value and what is allowed."""
        override = self.node._parameter_overrides.get(name)
        if override is None:
            return f"parameter {name}: {exc}"
        try:
            check_param(name, from_ros(override.value), info)
        except ConfigError as reason:  # out of range, not a choice, not finite: names the allowed values
            return str(reason)
        kind = (info.kind or type(info.value)).__name__
        return f"{name} = {from_ros(override.value)!r}: expected a {kind} value"

    def from_file(self, prefix: str) -> dict[str, Any]:
        """Keys under `prefix` given in the params file (`sensor.beam.samples: 20`), before declaration."""
        return {name[len(prefix):]: from_ros(p.value) for name, p in self.node._parameter_overrides.items()
                if name.startswith(prefix)}

    def unknown(self, skip_prefixes: tuple[str, ...] = ()) -> list[str]:
        """Params-file keys nobody declared (rclpy ignores them silently), except those under skip_prefixes."""
        names = set(self.node._parameter_overrides) - set(self.node._parameters)
        return sorted(n for n in names if not (skip_prefixes and n.startswith(skip_prefixes)))
