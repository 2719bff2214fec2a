"""`radarays run SCENARIO.yaml --out run.mcap [--pictures DIR]`: a scenario into a rosbag2 and pictures."""
from __future__ import annotations

import sys

from ..tracing.cli import add_backend_arguments, backend_options


def add_parser(sub) -> None:
    p = sub.add_parser("run", help="simulate a scenario (world, sensor rig, trajectory) into an MCAP rosbag2",
                       description=__doc__)
    p.add_argument("scenario", help="scenario YAML (see scenarios/office_demo.yaml)")
    p.add_argument("--out", required=True, help="output bag: run.mcap (one file) or a rosbag2 directory")
    p.add_argument("--pictures", metavar="DIR", help="also write a PNG per frame: radar Cartesian views, lidar top views")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_backend_arguments(p, default=None)
    p.set_defaults(func=run)


def run(args) -> int:
    from .runner import run_scenario

    summary = run_scenario(args.scenario, args.out, args.pictures, quiet=args.quiet, backend=args.backend,
                           backend_options=backend_options(args))
    frames = ", ".join(f"{name}: {n}" for name, n in summary.frames.items())
    print(f"wrote {summary.bag} ({frames} frames; {sum(summary.topics.values())} messages on "
          f"{len(summary.topics)} topics) in {summary.seconds:.1f} s", file=sys.stderr)
    if summary.pictures:
        print(f"pictures: {len(summary.pictures)} PNG in {summary.pictures[0].parent}", file=sys.stderr)
    return 0
