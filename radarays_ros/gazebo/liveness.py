"""When a Gazebo mirror may be trusted: the tree is read and in step, and poses keep coming.

`alive` (the mirror's) is true only while a pose publisher is known, a pose message came within
`stale_after_s` and the tree is in step with Gazebo. A sensor loop checks it before every frame and
publishes nothing while it is false (the scene would show a world that no longer moves). When Gazebo
goes away one warning is logged; when it returns one info line, the tree is re-read, models spawned or
deleted meanwhile are reconciled, and only then does `alive` turn true again. A Gazebo restarted (or a
world reset) within `stale_after_s` is noticed by its Pose_V stamps going back in time, and re-read
the same way.
"""
from __future__ import annotations

import logging
import math
import time

log = logging.getLogger("radarays_ros.gazebo.mirror")

TIME_BACK_TOLERANCE_NS = 1_000_000  # Pose_V stamps this much earlier than the last one mean a restart/reset


class Liveness:
    """The mirror's state towards Gazebo: tree read (`ready`), re-read needed (`needs_resync`), the
    last pose message (monotonic time and header stamp), and the logged up/down transitions."""

    def __init__(self, stale_after_s: float):
        self.stale_after_s = stale_after_s
        self.ready = False  # tree known
        self.needs_resync = False
        self.last_pose_time = -math.inf  # monotonic time of the last pose message
        self.last_stamp_ns: int | None = None  # last Pose_V header stamp (restart/reset detection)
        self.was_alive = False
        self.quiet = False  # a 'waiting' line was logged for the current wait

    @property
    def synced(self) -> bool:
        return self.ready and not self.needs_resync

    def fresh(self) -> bool:
        return time.monotonic() - self.last_pose_time <= self.stale_after_s

    def pose_arrived(self, stamp_ns: int, world: str) -> None:
        """A pose message with header stamp `stamp_ns` (0: unset, says nothing about the time). A stamp
        earlier than the last one: Gazebo restarted (faster than `stale_after_s`) or its world was reset;
        entity ids and spawned models may differ, so the tree must be re-read."""
        self.last_pose_time = time.monotonic()
        if not stamp_ns:
            return
        last = self.last_stamp_ns
        if last is not None and stamp_ns + TIME_BACK_TOLERANCE_NS < last and self.synced:
            log.info("Gazebo mirror: world '%s' sim time went back from %.3f s to %.3f s (restarted or reset); "
                     "re-reading its models", world, last / 1e9, stamp_ns / 1e9)
            self.needs_resync = True
        self.last_stamp_ns = stamp_ns

    def synced_now(self) -> None:
        self.ready, self.needs_resync = True, False

    def watch(self, alive: bool, world: str) -> None:
        """Log the transitions of `alive` (once each); a world that stopped must be re-read when it returns."""
        if alive and not self.was_alive:
            log.info("Gazebo mirror: world '%s' is publishing poses", world)
        elif self.was_alive and not alive and not self.needs_resync:  # (a restart already said so)
            log.warning("Gazebo mirror: world '%s' stopped publishing poses; scans pause until it returns", world)
            self.needs_resync = True  # ids and models may differ when it comes back
            self.quiet = True  # that line says it all: no 'waiting' line for the same outage
        self.was_alive = alive

    def say_once(self, level: int, message: str, *args) -> None:
        """One line per wait (the next one after the wait ended)."""
        if not self.quiet:
            log.log(level, message, *args)
            self.quiet = True
