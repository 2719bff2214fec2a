"""`radarays fit lidar`: fit a lidar's sensor parameters to real frames (held-fixed scenes, scipy least
squares over a parameter registry), and Heiden et al.'s 2-D CW scanner in a known room (cw_room.py).

The names below load their modules (scipy, the tracing layer) on first use: `radarays --help` reads only cli.py."""
from __future__ import annotations

_LAZY = {"FitResult": "optimise", "fit": "optimise", "objective_text": "optimise", "verdicts": "optimise",
         "AWAITING": "params", "CW_STAGE": "params", "SENSOR_STAGE": "params", "Param": "params", "NOT_FROM_FRAMES": "params",
         "HeldScene": "scene", "scene_from_frame": "scene", "fit_sensor_stage": "sensor_stage"}
# shade(): from lidar_ros.fit.shade import shade (once its module is imported, the package's `shade` is the module)
__all__ = sorted(_LAZY)


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
