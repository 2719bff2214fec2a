"""Exception types, one per layer. Messages name the file, element or key and what was expected.

Every message is one line without raw control characters (`one_line`): text from files (keys, values,
parser messages) may hold newlines, `\r`, escape sequences or bidi overrides, and would otherwise reach
a terminal or a log as they are."""
import re


_NUMPY_SCALAR = re.compile(r"np\.(?:float|int|uint|bool_?)\d*\(([^()]*)\)")
_LINE_BREAKS = re.compile(r"[ \t]*[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]+[ \t]*")
_UNPRINTABLE = re.compile(r"[\x00-\x08\x0e-\x1b\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff\t]")
MAX_MESSAGE = 1000  # characters of one error line; longer ones keep their start and end


def one_line(text: str, limit: int = MAX_MESSAGE) -> str:
    """`text` as one printable line: line breaks become a space, other control and bidi characters
    their escape (repr-style: `\\x1b`, `\\u202e`), and a text over `limit` characters is shortened in
    the middle (a 5000-character name still shows how it starts and ends)."""
    text = _LINE_BREAKS.sub(" ", str(text))
    text = _UNPRINTABLE.sub(lambda m: " " if m.group() == "\t" else repr(m.group())[1:-1], text)
    if len(text) > limit:
        keep = limit - 5
        text = text[:keep * 3 // 4] + " ... " + text[len(text) - (keep - keep * 3 // 4):]
    return text


class RadaraysError(Exception):
    """Base class of every error this package raises on purpose.

    Messages show numbers as people write them: numpy 2 reprs a scalar as `np.float64(0.5)`, and a
    value formatted with !r anywhere in a message would show that; such reprs are printed plain."""

    def __init__(self, *args):
        super().__init__(*(one_line(_NUMPY_SCALAR.sub(r"\1", a)) if isinstance(a, str) else a for a in args))


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


def os_problem(exc: OSError) -> str:
    """An OSError on one line, naming the file(s) and the system's reason: `cannot write /ro/a.npz:
    Permission denied` (a full disk, a read-only folder, a parent that is a file, a name too long)."""
    names = [n for n in (getattr(exc, "filename", None), getattr(exc, "filename2", None)) if n is not None]
    names = [n.decode("utf8", "backslashreplace") if isinstance(n, bytes) else str(n) for n in names]
    reason = exc.strerror or str(exc) or type(exc).__name__
    if isinstance(exc, FileExistsError) and names and not _is_dir(names[0]):  # mkdir(parents=True) under a file
        reason = "is a file, not a folder"
    where = " -> ".join(repr(n) if any(c in n for c in "\n\r\x00") else n for n in names)
    return one_line(f"{where}: {reason}" if where else reason)


def _is_dir(name: str) -> bool:
    import os

    try:
        return os.path.isdir(name)
    except (OSError, ValueError):
        return False
