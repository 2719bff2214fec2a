"""The `radarays` command: world, cast, radar, lidar, run and batch subcommands.

Each subcommand lives next to the code it drives and exposes `add_parser(subparsers)`, which sets
`func(args) -> int`. Errors of this package become one line on stderr and exit status 2.
"""
from __future__ import annotations

import argparse
import importlib
import math
import os
import sys

from .errors import RadaraysError

# module paths of the subcommand groups, in the order `radarays --help` lists them
SUBCOMMAND_MODULES = (
    "radarays_ros.world.cli",
    "radarays_ros.tracing.cli",
    "radarays_ros.radar.cli",
    "radarays_ros.radar.compare.cli",
    "lidar_ros.cli",
    "radarays_ros.scenario.cli",
    "radarays_ros.fit_cli",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="radarays", description=__doc__.splitlines()[0])
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
        print(f"radarays: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `radarays ... | head`: the reader left; end quietly (Python's documented recipe)
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
