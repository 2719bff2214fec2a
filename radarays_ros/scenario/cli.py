"""`radarays run SCENARIO --out run.mcap [--pictures DIR]`: a scenario into a rosbag2 and pictures.

SCENARIO is a scenario YAML or a shipped scenario's name (`radarays run --list`: office_demo, ...)."""
from __future__ import annotations

import sys

from ..tracing.cli import add_backend_arguments, backend_options


def add_parser(sub) -> None:
    p = sub.add_parser("run", help="simulate a scenario (world, sensor rig, trajectory) into an MCAP rosbag2",
                       description=__doc__)
    p.add_argument("scenario", nargs="?", help="scenario YAML or shipped scenario name (office_demo; --list)")
    p.add_argument("--out", help="output bag: run.mcap (one file) or a rosbag2 directory (required)")
    p.add_argument("--list", action="store_true", help="print the shipped scenario names and exit")
    p.add_argument("--pictures", metavar="DIR", help="also write a PNG per frame: radar Cartesian views, lidar top views")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_backend_arguments(p, default=None)
    p.set_defaults(func=run)


def run(args) -> int:
    from ..errors import ConfigError
    from .runner import run_scenario

    if args.list:
        from ..resources import shipped_names

        names = shipped_names("scenario")
        if not names:
            raise ConfigError("no shipped scenarios found (a broken install?)")
        print("\n".join(names))
        return 0
    for value, what in ((args.scenario, "SCENARIO (a YAML file or a shipped name: radarays run --list)"),
                        (args.out, "--out OUT (.mcap or a rosbag2 directory)")):
        if not value:
            raise ConfigError(f"{what} is required")

    summary = run_scenario(args.scenario, args.out, args.pictures, quiet=args.quiet, backend=args.backend,
                           backend_options=backend_options(args))
    frames = ", ".join(f"{name}: {n}" for name, n in summary.frames.items())
    print(f"wrote {summary.bag} ({frames} frames; {sum(summary.topics.values())} messages on "
          f"{len(summary.topics)} topics) in {summary.seconds:.1f} s", file=sys.stderr)
    if summary.pictures:
        print(f"pictures: {len(summary.pictures)} PNG in {summary.pictures[0].parent}", file=sys.stderr)
    return 0
