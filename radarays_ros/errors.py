"""Exception types, one per layer. Messages name the file, element or key and what was expected."""
import re


_NUMPY_SCALAR = re.compile(r"np\.(?:float|int|uint|bool_?)\d*\(([^()]*)\)")


class RadaraysError(Exception):
    """Base class of every error this package raises on purpose.

    Messages show numbers as people write them: numpy 2 reprs a scalar as `np.float64(0.5)`, and a
    value formatted with !r anywhere in a message would show that; such reprs are printed plain."""

    def __init__(self, *args):
        super().__init__(*(_NUMPY_SCALAR.sub(r"\1", a) if isinstance(a, str) else a for a in args))


class ConfigError(RadaraysError, ValueError):
    """A configuration value or file is invalid (names the key and the allowed values)."""


class WorldError(RadaraysError):
    """A world, model or mesh file cannot be loaded (names the file and the element)."""


class TracingError(RadaraysError):
    """A ray-tracing backend cannot be created or was called with bad arrays."""


def yaml_problem(exc) -> str:
    """A PyYAML error on one line: the problem and where (PyYAML's own text spans several lines)."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    return " ".join(f"{problem}{where}".split())
