"""The `radarays` command: world, cast, radar, lidar, run and batch subcommands.

Each subcommand group is a module of this package (world, tracing, radar, lidar, scenario; the compare
and fit groups beside the code they drive) and exposes `add_parser(subparsers)`, which sets
`func(args) -> int`. Errors of this package become one line on stderr and exit status 2.
"""
from __future__ import annotations

import argparse
import importlib
import math
import os
import sys

from ..errors import RadaraysError, one_line, os_problem

# module paths of the subcommand groups, in the order `radarays --help` lists them
SUBCOMMAND_MODULES = (
    "radarays_ros.cli.world",
    "radarays_ros.cli.tracing",
    "radarays_ros.cli.radar",
    "radarays_ros.radar.compare.cli",
    "radarays_ros.cli.lidar",
    "radarays_ros.cli.scenario",
    "radarays_ros.fit_cli",
)


class _Parser(argparse.ArgumentParser):
    """argparse with its usage errors on one line, as every other error (`--help` shows the usage)."""

    def error(self, message: str):
        print(f"radarays: error: {self.prog}: {one_line(message)} (see {self.prog} --help)", file=sys.stderr)
        raise SystemExit(2)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="radarays", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in SUBCOMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name and (name == exc.name or name.startswith(exc.name + ".")):
                continue  # an optional subcommand group that is not installed

            raise
        module.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    hint = unquoted_pose_hint(argv)
    if hint:
        print(f"radarays: error: {hint}", file=sys.stderr)
        return 2
    if argv[:2] == ["lidar", "compare"]:  # `radarays lidar WORLD ...` takes a world as its first word
        from lidar_ros.compare.cli import parser as lidar_compare_parser

        args = lidar_compare_parser().parse_args(argv[2:])
    else:
        args = build_parser().parse_args(argv)
    try:
        warn_about_pose_angles(args)
        return int(args.func(args) or 0)
    except RadaraysError as exc:
        print(f"radarays: error: {one_line(str(exc))}", file=sys.stderr)
        return 2
    except OSError as exc:  # a read-only or full folder, a parent that is a file: every command, one line
        if isinstance(exc, BrokenPipeError):
            return _reader_left()
        print(f"radarays: error: {os_problem(exc)}", file=sys.stderr)
        return 2
    except ValueError as exc:  # a path with a NUL byte reaching a system call (paths from files are checked first)
        if "null byte" not in str(exc) and "null character" not in str(exc):
            raise
        print(f"radarays: error: a path holds a NUL byte ({one_line(str(exc), 200)})", file=sys.stderr)
        return 2
    except MemoryError as exc:  # a backstop: sizes are bounded before allocation (limits.py); name it
        print(f"radarays: error: out of memory ({one_line(str(exc) or 'MemoryError', 200)}); "
              "lower the sizes of the configuration", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


def _reader_left() -> int:
    """`radarays ... | head`: the reader left; end quietly (Python's documented recipe)."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit's flush
    return 1


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def unquoted_pose_hint(argv: list[str]) -> str | None:
    """`--pose 0 0 1 0 0 0` (six words) instead of `--pose "0 0 1 0 0 0"` (one): say how to quote it."""
    for i, word in enumerate(argv[:-2]):
        if word == "--pose" and _is_number(argv[i + 1]) and _is_number(argv[i + 2]):
            numbers = [w for w in argv[i + 1:i + 7] if _is_number(w)]
            return (f"--pose takes the six numbers as one argument: quote them, e.g. --pose \"{' '.join(numbers)}\" "
                    "(x y z roll pitch yaw; metres and radians, or degrees with --degrees)")
    return None


def warn_about_pose_angles(args) -> None:
    """A --pose angle beyond 2 pi without --degrees is most likely meant in degrees: warn (and go on)."""
    text, degrees = getattr(args, "pose", None), getattr(args, "degrees", True)
    if not isinstance(text, str) or degrees:
        return
    words = text.replace(",", " ").split()
    angles = [float(w) for w in words[3:6] if _is_number(w)]
    big = [a for a in angles if abs(a) > 2 * math.pi]
    if big:
        print(f"radarays: warning: --pose angle(s) {', '.join(f'{a:g}' for a in big)} exceed 2 pi radians; "
              "add --degrees if they are degrees", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
