"""`radarays run SCENARIO --out run.mcap [--pictures DIR]`: a scenario into a rosbag2 and pictures.
`radarays batch MANIFEST.yaml --out DIR`: many runs (scenario x seed x variation), locally or on Ray.

SCENARIO is a scenario YAML or a shipped scenario's name (`radarays run --list`: office_demo, ...)."""
from __future__ import annotations

import sys

from .tracing import add_backend_arguments, backend_options


def add_parser(sub) -> None:
    p = sub.add_parser("run", help="simulate a scenario (world, sensor rig, trajectory) into an MCAP rosbag2",
                       description=__doc__)
    p.add_argument("scenario", nargs="?", help="scenario YAML or shipped scenario name (office_demo; --list)")
    p.add_argument("--out", help="output bag: run.mcap (one file) or a rosbag2 directory (required); never a "
                   "ROS 1 name (.bag); must not exist unless --overwrite")
    p.add_argument("--overwrite", action="store_true", help="replace --out if it is a bag (an MCAP file or a rosbag2 "
                   "directory); anything else is never deleted")
    p.add_argument("--list", action="store_true", help="print the shipped scenario names and exit")
    p.add_argument("--pictures", metavar="DIR", help="also write a PNG per frame: radar Cartesian views, lidar top views")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_backend_arguments(p, default=None)
    p.set_defaults(func=run)
    add_batch_parser(sub)


def add_batch_parser(sub) -> None:
    p = sub.add_parser("batch", help="many runs from a manifest (scenarios x seeds x variations), on a local "
                       "process pool or a Ray cluster; deterministic and resumable",
                       description="Run every run of a batch manifest (see radarays_ros/scenario/manifest.py and "
                       "the README's Batches section) into DIR/<run-id>/ (bag.mcap, run.json, run.log, pictures). "
                       "Runs already done with the same content are skipped; a killed run is retried.")
    p.add_argument("manifest", help="batch manifest YAML")
    p.add_argument("--out", metavar="DIR", help="output folder (new, empty, or an earlier batch's folder to resume)")
    p.add_argument("--engine", choices=("local", "ray"), default="local",
                   help="local: a process per run on this machine (default); ray: Ray tasks (pip install .[ray])")
    p.add_argument("--workers", type=int, metavar="N", help="runs at once (default: the CPU count, or the Ray "
                   "cluster's CPUs)")
    p.add_argument("--threads", type=int, metavar="T", help="tracing threads per run (default: the local cores "
                   "shared among the workers; 1 per Ray task)")
    p.add_argument("--address", metavar="ADDR", help="with --engine ray: join this running Ray cluster "
                   "(e.g. ray://head:10001 or auto); none starts a local one")
    p.add_argument("--index", type=int, metavar="K", help="run only run K of the manifest (0-based; a Kubernetes "
                   "Indexed Job's JOB_COMPLETION_INDEX, a Slurm array's SLURM_ARRAY_TASK_ID); no summary.json")
    p.add_argument("--list", action="store_true", help="print the runs (index, id, seed, drawn values) and exit; "
                   "checks each row's first run (a batch checks every run before it starts)")
    p.add_argument("--pictures", action="store_true", help="PNG per frame for every run (a row's pictures: wins)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=batch)


def batch(args) -> int:
    from ..errors import ConfigError
    from ..scenario.batch import check_rows, list_table, run_batch, summary_table

    if args.list:  # each row's first run validated; every run is validated before a batch starts
        print(list_table(check_rows(args.manifest, args.pictures).runs))
        return 0
    if not args.out:
        raise ConfigError("batch: --out DIR is required (or --list to print the runs)")
    result = run_batch(args.manifest, args.out, engine=args.engine, workers=args.workers, address=args.address,
                       index=args.index, pictures=args.pictures, progress=not args.quiet,
                       threads=args.threads)
    print(summary_table(result))
    return 1 if result.count("failed") else 0


def run(args) -> int:
    from ..errors import ConfigError
    from ..scenario.runner import run_scenario

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

    summary = run_scenario(args.scenario, args.out, args.pictures, quiet=args.quiet, overwrite=args.overwrite,
                           backend=args.backend, backend_options=backend_options(args))
    frames = ", ".join(f"{name}: {n}" for name, n in summary.frames.items())
    print(f"wrote {summary.bag} ({frames} frames; {sum(summary.topics.values())} messages on "
          f"{len(summary.topics)} topics) in {summary.seconds:.1f} s", file=sys.stderr)
    if summary.pictures:
        print(f"pictures: {len(summary.pictures)} PNG in {summary.pictures[0].parent}", file=sys.stderr)
    return 0
