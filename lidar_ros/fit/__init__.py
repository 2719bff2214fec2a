"""`radarays fit lidar`: fit a lidar's sensor parameters to real frames (held-fixed scenes, scipy least
squares over a parameter registry), and Heiden et al.'s 2-D CW scanner in a known room (cw_room.py)."""
from .optimise import FitResult, fit, objective_text, verdicts
from .params import AWAITING, CW_STAGE, NOT_FROM_FRAMES, SENSOR_STAGE, Param
from .scene import HeldScene, scene_from_frame
from .sensor_stage import fit_sensor_stage
from .shade import shade

__all__ = ["AWAITING", "CW_STAGE", "NOT_FROM_FRAMES", "FitResult", "HeldScene", "Param", "SENSOR_STAGE", "fit", "fit_sensor_stage",
           "objective_text", "scene_from_frame", "shade", "verdicts"]
