"""The `radarays` command: world, cast, radar, lidar, run and batch subcommands.

Each subcommand lives next to the code it drives and exposes `add_parser(subparsers)`, which sets
`func(args) -> int`. Errors of this package become one line on stderr and exit status 2.
"""
from __future__ import annotations

import argparse
import importlib
import sys

from .errors import RadaraysError

# module paths of the subcommand groups, in the order `radarays --help` lists them
SUBCOMMAND_MODULES = (
    "radarays_ros.world.cli",
    "radarays_ros.tracing.cli",
    "radarays_ros.radar.cli",
    "lidar_ros.cli",
    "radarays_ros.scenario.cli",
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
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except RadaraysError as exc:
        print(f"radarays: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
