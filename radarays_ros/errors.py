"""Exception types, one per layer. Messages name the file, element or key and what was expected."""


class RadaraysError(Exception):
    """Base class of every error this package raises on purpose."""


class ConfigError(RadaraysError, ValueError):
    """A configuration value or file is invalid (names the key and the allowed values)."""


class WorldError(RadaraysError):
    """A world, model or mesh file cannot be loaded (names the file and the element)."""


class MessageError(RadaraysError):
    """A message from outside (Gazebo's transport) cannot be decoded (names its type)."""


class TracingError(RadaraysError):
    """A ray-tracing backend cannot be created or was called with bad arrays."""


def yaml_problem(exc) -> str:
    """A PyYAML error on one line: the problem and where (PyYAML's own text spans several lines)."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    return " ".join(f"{problem}{where}".split())
