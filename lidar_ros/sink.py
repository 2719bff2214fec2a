"""Where a LidarSimulator writes a frame: the sink contract (defined here, implemented in radarays_ros.io).

The lidar model knows pixels; a driver layout knows bytes. A sink joins them without the model importing
io: `LidarSimulator(..., sink=factory)` calls `factory(config, piece_starts)` once, and the factory
returns a `FrameSink` (or None where the config's cloud cannot be written in pixel order). Per frame the
simulator asks the sink for a buffer (`new`), writes xyz and intensity fields straight into its views,
lets it fill the fields that follow from the ranges (`fill`) and says when the frame is complete
(`done`). radarays_ros.io.lidar_clouds.FrameCloud is the driver-layout sink.

Ownership is explicit: a frame's buffer belongs to the scan that carries it. A consumer that has
finished with a scan (published, serialised, copied) gives it back with `LidarScan.release()`; only a
buffer given back is handed out again. Without a release every frame gets a buffer of its own, so a
buffer a consumer still holds is never overwritten.

The driver layouts are listed here once (io implements them; configs and command lines offer them).
"""
from __future__ import annotations

from typing import Callable, Protocol, Sequence

import numpy as np

# PointCloud2 layouts of real drivers (radarays_ros.io.lidar_clouds documents each one's bytes)
LAYOUTS = ("velodyne", "ouster", "ouster_native", "ouster_xyz", "ouster_xyzi", "ouster_xyzir", "gazebo", "gazebo_cpu",
           "livox", "livox_xyzrtl", "xyzi")
# ring numbering of each layout: True = ring 0 is the top beam, False = the lowest, None = scan rows as they are
TOP_RING_FIRST = {"velodyne": False, "ouster": True, "ouster_native": True, "ouster_xyz": True, "ouster_xyzi": True,
                  "ouster_xyzir": True, "gazebo": False, "gazebo_cpu": False,
                  "livox": None, "livox_xyzrtl": None, "xyzi": None}
RANGE_MM = "range_mm"  # the name of a sink's view of its points' range in millimetres (FrameSink.views)


def range_millimetres(range_m):
    """A pixel's range (float32 metres; NaN: no return) as the drivers' uint32 millimetres (ouster-ros `range`):
    the float32 product range_m * 1000 rounded half to even, 0 for no return or a range <= 0. Scalar, for the
    compiled loops that write it (the simulator's into a sink's RANGE_MM view)."""
    mm = range_m * np.float32(1000.0)
    return np.uint32(np.rint(mm)) if mm > 0 else np.uint32(0)


class FrameSink(Protocol):
    """A frame buffer writer for one sensor config (rows x cols pixels)."""

    def new(self) -> tuple[np.ndarray, bool]:
        """(buffer, fresh) for one frame; fresh False: a released buffer whose constant fields are in place."""

    def views(self, buffer: np.ndarray) -> dict[str, np.ndarray]:
        """(rows, cols[, 3]) views into `buffer`: 'xyz', 'intensity' and physics field names it stores; RANGE_MM
        (uint32) where its points carry their range in millimetres: the simulator writes range_millimetres of every
        pixel's range there in the pass that writes xyz (a later pass over the whole buffer would read it again
        from memory: 0.5 ms of an OS1-128 frame)."""

    def fill(self, buffer: np.ndarray, r0: int, r1: int, range_m: np.ndarray, fresh: bool = True,
             intensity: np.ndarray | None = None) -> None:
        """Fields of rows r0..r1 that follow from their ranges and intensities (and, when fresh, the
        firing table), where `views` gave no view of them."""

    def stamp(self, buffer: np.ndarray, time: np.ndarray) -> None:
        """A frame with its own pixel times (rows, cols) s (column-time jitter): its per-point time field."""

    def done(self, buffer: np.ndarray) -> None:
        """Every field of `buffer` is written: it may be released for reuse."""

    def release(self, buffer: np.ndarray) -> None:
        """The consumer no longer reads `buffer`: a later frame may write into it."""


SinkFactory = Callable[[object, Sequence[int]], "FrameSink | None"]
