"""`radarays fit radar|lidar`: fit a simulated sensor to the user's own recording (issue 24).

Each sensor's fitting lives with its model (lidar: lidar_ros/fit/, radar: radarays_ros/radar/fit/); this
module only gathers them under one `fit` command. A group whose module is not installed is left out."""
from __future__ import annotations

import importlib

FIT_MODULES = {"radar": ("radarays_ros.radar.fit.cli", "fit a radar preset to real polar frames (receiver chain from "
                                                       "statistics; RadaRays materials by MIS with a world and poses)"),
               "lidar": ("lidar_ros.fit.cli", "fit a lidar's sensor stage to real frames (signal, ambient, "
                                              "noise, dropouts) and write a sensor YAML")}


def add_parser(sub) -> None:
    p = sub.add_parser("fit", help="fit a simulated sensor to a recording and write a preset/sensor YAML")
    fits = p.add_subparsers(dest="fit_command", required=True, metavar="SENSOR")
    for name, (module, text) in FIT_MODULES.items():
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError:
            continue
        mod.add_arguments(fits.add_parser(name, help=text, description=mod.__doc__.split("\n\n")[0]))
