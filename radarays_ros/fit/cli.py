"""`radarays fit radar|lidar`: fit the simulator to the user's own sensor from a recording.

The group only dispatches: `radar` is radarays_ros/radar/fit/cli.py; `lidar` is lidar_ros/fit/cli.py
when that module exists (issue #24's lidar half).
"""
from __future__ import annotations

import importlib


def add_parser(sub) -> None:
    p = sub.add_parser("fit", help="calibrate a preset to real frames: `radarays fit radar ...` / `radarays fit lidar ...`",
                       description=__doc__.split("\n\n")[0])
    group = p.add_subparsers(dest="fit_command", required=True, metavar="SENSOR")
    for name in ("radarays_ros.radar.fit.cli", "lidar_ros.fit.cli"):
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name and (name == exc.name or name.startswith(exc.name + ".")):
                continue  # that half is not installed
            raise
        module.add_parser(group)
