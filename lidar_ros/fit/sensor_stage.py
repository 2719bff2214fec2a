"""The sensor-stage fit of a spinning lidar from one or more frames (no mesh world): held-fixed scenes
(scene.py), shaded by the simulator's physics (shade.py), compared on the statistics of objective.py, over
the parameters of params.SENSOR_STAGE, one group at a time (optimise.fit_blocks).

With several frames the residuals of every frame are stacked (each frame is its own scene). The start is
the sensor file's values (keys it leaves out: the physics defaults, moved inside the search window).
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..compare.frame import LidarFrame
from . import objective
from .optimise import FitResult, fit_blocks
from .params import SENSOR_STAGE, Param, apply_values, initial_values
from .scene import HeldScene, scene_from_frame
from .shade import shade


def fit_sensor_stage(frames: Sequence[LidarFrame], spec: Mapping[str, Any], params: Sequence[Param] = SENSOR_STAGE,
                     seed: int = 0, max_evaluations: int = 60,
                     progress: Callable[[int, float], None] | None = None) -> tuple[FitResult, dict, list[HeldScene]]:
    """(result, fitted sensor mapping, scenes). `spec`: the sensor mapping the fit starts from."""
    retro = float((spec.get("surface") or {}).get("retro_full_scale", 100.0))
    scenes = [scene_from_frame(f, retro) for f in frames]
    targets = [objective.ingredients(f) for f in frames]
    keys = sorted({k for t in targets for k in objective.usable(t)}, key=objective.INGREDIENTS.index)
    start = initial_values(spec, params)

    def residual_of(values):
        trial = apply_values(spec, params, values)
        return np.concatenate([objective.residuals(objective.ingredients(shade(s, trial, seed)), t, keys)
                               for s, t in zip(scenes, targets)])

    result = fit_blocks(residual_of, params, start, max_evaluations=max_evaluations, progress=progress)
    fitted = apply_values(spec, [p for p, ok in zip(params, result.identifiable) if ok],
                          [v for v, ok in zip(result.values, result.identifiable) if ok])
    return result, fitted, scenes
