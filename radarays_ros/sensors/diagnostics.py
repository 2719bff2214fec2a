"""What a running sensor reports about itself: counters, timings and one status (ok / warn / error).

Pure data, no ROS: the node turns a `SensorStatus` into a diagnostic_msgs/DiagnosticStatus.
"""
from __future__ import annotations

from dataclasses import dataclass, field

OK, WARN, ERROR = "ok", "warn", "error"


@dataclass
class Stats:
    frames: int = 0
    dropped: int = 0  # timer ticks or sync messages that found the previous frame still running
    skipped: int = 0  # frames not simulated because nobody subscribed
    failed: int = 0  # frames abandoned: no pose, no world, a simulation error
    paused: int = 0  # frames not simulated or not published because Gazebo was away
    frame_times: list = field(default_factory=list)  # seconds, last 20
    publish_times: list = field(default_factory=list)  # seconds (message building + publishing), last 20
    rays: int = 0
    last_error: str = ""

    def add_time(self, seconds: float, publish_seconds: float, rays: int) -> None:
        self.frame_times = (self.frame_times + [seconds])[-20:]
        self.publish_times = (self.publish_times + [publish_seconds])[-20:]
        self.rays = rays
        self.frames += 1


@dataclass(frozen=True)
class SensorStatus:
    level: str  # OK, WARN or ERROR
    message: str
    values: dict  # key -> text, in a stable order


def sensor_status(stats: Stats, *, started: bool, rate_hz: float | None, world_error: str = "",
                  gazebo: str | None = None, gazebo_alive: bool = True) -> SensorStatus:
    """The status of one sensor. `world_error`: why there is no world (the sensor publishes nothing);
    `gazebo`: the followed Gazebo world's name, None when not following Gazebo."""
    mean = sum(stats.frame_times) / len(stats.frame_times) if stats.frame_times else 0.0
    publish = sum(stats.publish_times) / len(stats.publish_times) if stats.publish_times else 0.0
    values = {
        "frame_time_ms": f"{mean * 1e3:.2f}",
        "publish_time_ms": f"{publish * 1e3:.2f}",
        "rays_per_second": f"{(stats.rays / mean) if mean else 0.0:.0f}",
        "frames": str(stats.frames),
        "dropped_frames": str(stats.dropped),
        "skipped_no_subscribers": str(stats.skipped),
        "failed_frames": str(stats.failed),
        "last_error": stats.last_error,
    }
    if rate_hz is not None:
        values["rate_hz"] = f"{rate_hz:.3f}"
    if gazebo is not None:
        values["gazebo_alive"] = "true" if gazebo_alive else "false"
        values["paused_ticks"] = str(stats.paused)  # timer ticks and frames skipped while Gazebo was away
    if not started or world_error:
        return SensorStatus(ERROR, world_error or stats.last_error or "not started", values)
    if gazebo is not None and not gazebo_alive:
        return SensorStatus(WARN, f"Gazebo world '{gazebo}' is not publishing poses: scans paused", values)
    if stats.last_error or stats.dropped:
        dropped = f"{stats.dropped} frames dropped (simulation slower than the rate)"
        return SensorStatus(WARN, stats.last_error or dropped, values)
    return SensorStatus(OK, "ok", values)

