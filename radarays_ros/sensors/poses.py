"""Where a sensor is during a sweep: the pose sources a node (or a runner) chooses between.

* fixed: one pose for every sweep (`fixed_pose`: x y z roll pitch yaw, checked by validate.check_pose6);
* tf: the sensor frame in the world frame, looked up across the sweep in a TransformBuffer, so motion
  distorts the sweep as on a real rotating sensor;
* a recorded link (Gazebo): the link's sampled poses times the sensor's mount, the same way.

Pure functions of their inputs; the node only picks one and hands over its buffers and parameters.
"""
from __future__ import annotations

import math

import numpy as np

from ..validate import check_pose6
from ..world.trajectory import Trajectory
from ..world.transforms import pose_to_matrix
from .tf_buffer import TransformBuffer


def poses_over(pose_source, t0_ns: int, period_ns: int, samples_per_s: float = 200.0):
    """A Trajectory sampling `pose_source(times) -> (N,4,4)` over one sweep [t0, t0 + period]."""
    n = max(2, int(math.ceil(period_ns * 1e-9 * samples_per_s)) + 1)
    times = t0_ns + np.linspace(0, period_ns, n).round().astype(np.int64)
    times = np.unique(times)
    return Trajectory(times, pose_source(times))


def fixed_pose(values, where: str = "fixed_pose") -> np.ndarray:
    """4x4 pose of six numbers x y z roll pitch yaw (m, rad); ConfigError naming the bad one."""
    return pose_to_matrix(*check_pose6(list(values or []), where))


def tf_sweep(buffer: TransformBuffer, world_frame: str, frame: str, t0_ns: int, period_ns: int, tolerance_ns: int,
             samples_per_s: float):
    """Trajectory of `frame` in `world_frame` over the sweep [t0, t0 + period] (TransformLookupError if tf
    does not cover it within the tolerance)."""
    return poses_over(lambda times: buffer.lookup(world_frame, frame, times, tolerance_ns), t0_ns, period_ns,
                      samples_per_s)


def mounted_sweep(buffer: TransformBuffer, root: str, link: str, mount: np.ndarray, t0_ns: int, period_ns: int,
                  tolerance_ns: int, samples_per_s: float):
    """Trajectory of a sensor mounted on `link` (pose `mount` in the link) over the sweep, from the link's
    recorded poses under `root`."""
    return poses_over(lambda times: buffer.lookup(root, link, times, tolerance_ns) @ mount, t0_ns, period_ns,
                      samples_per_s)
