"""Run a scenario: every sweep of every sensor along the trajectory, into an MCAP rosbag2 and pictures.

The bag holds what a robot with these sensors would have recorded: each sensor's messages (the same
ones the nodes publish), /tf (world_frame -> base_frame), /tf_static (base_frame -> each sensor),
and /clock, all at their simulated times, so `ros2 bag play` drives nodes running with use_sim_time.
Sweeps are stamped with their start; they are logged when they end (when a driver would publish).
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import ConfigError
from ..io import messages
from ..io.bag import BagWriter
from .config import Scenario, load_scenario, matching_entities
from ..sensors.units import SensorUnit, make_unit, poses_over


@dataclass
class RunSummary:
    bag: Path
    frames: dict  # sensor name -> frames written
    pictures: list
    seconds: float
    topics: dict  # topic -> message count


class Progress:
    """A plain progress bar on stderr ('\\r' updates on a terminal, a line per 10 % otherwise)."""

    def __init__(self, total: int, stream=None, width: int = 30):
        self.total, self.width = max(total, 1), width
        self.stream = stream or sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.start = time.perf_counter()
        self._last_decile = -1

    def update(self, done: int, label: str = "") -> None:
        fraction = min(done / self.total, 1.0)
        elapsed = time.perf_counter() - self.start
        filled = int(round(fraction * self.width))
        text = f"[{'#' * filled}{'.' * (self.width - filled)}] {done}/{self.total} frames {elapsed:5.1f} s {label}"
        if self.tty:
            self.stream.write("\r" + text.ljust(80))
            if done >= self.total:
                self.stream.write("\n")
        elif int(fraction * 10) != self._last_decile or done >= self.total:
            self._last_decile = int(fraction * 10)
            self.stream.write(text + "\n")
        self.stream.flush()


def sweep_starts(scenario: Scenario, unit: SensorUnit, max_frames: int | None) -> list[int]:
    """Start times of the whole sweeps that fit in [start, end]."""
    period = unit.period_ns
    count = (scenario.end_ns - scenario.start_ns) // period
    if max_frames is not None:
        count = min(count, max_frames)
    return [scenario.start_ns + k * period for k in range(int(count))]


def run_scenario(path_or_scenario, out: str | Path, pictures: str | Path | None = None, quiet: bool = False,
                 stream=None, backend: str | None = None, backend_options: dict | None = None) -> RunSummary:
    """Simulate a scenario into `out` (.mcap file or rosbag2 directory); pictures into a folder if given.
    backend (and its options, e.g. the warp device) overrides the scenario's `backend`."""
    from ..tracing import make_backend
    from ..world.loader import load_world

    scenario = path_or_scenario if isinstance(path_or_scenario, Scenario) else load_scenario(path_or_scenario)
    started = time.perf_counter()
    scene = load_world(scenario.world, materials=scenario.materials, ignore=scenario.ignore)
    backend = make_backend(backend or scenario.backend, scene, **(backend_options or {}))
    units = {}
    for spec in scenario.sensors:
        try:
            units[spec.name] = make_unit(spec.kind, spec.name, scene, backend, config=spec.config,
                                         frame_id=spec.frame_id, overrides=spec.overrides, output=spec.output)
        except ConfigError as exc:
            reason = str(exc).removeprefix(f"{spec.name}: ")  # the unit names itself; the scenario key says it
            raise ConfigError(f"scenario {scenario.path}: sensors.{spec.name}: {reason}") from None
    movers = []
    for motion in scenario.entities:
        ids = matching_entities(scene, motion.pattern)
        if not ids:
            models = sorted({e.name.split("::", 1)[0] for e in scene.entities})
            shown = ", ".join(models[:20]) + (f", ... ({len(models)} in all)" if len(models) > 20 else "")
            raise ConfigError(f"scenario {scenario.path}: entities: no entity matches '{motion.pattern}' "
                              f"(a model name or a glob over model::link::visual names); models: {shown}")
        start_pose = motion.trajectory.at([scenario.start_ns])[0]
        offsets = [np.linalg.inv(start_pose) @ scene.entity(i).pose for i in ids]
        movers.append((motion.trajectory, ids, offsets))

    # every sweep of every sensor, processed in the order a recorder would log them (sweep end)
    events = []
    for spec in scenario.sensors:
        unit = units[spec.name]
        for k, t0 in enumerate(sweep_starts(scenario, unit, spec.max_frames)):
            events.append((t0 + unit.period_ns, t0, spec.name, k))
    if not events:
        raise ConfigError(f"scenario {scenario.path}: no sensor completes a sweep in "
                          f"{(scenario.end_ns - scenario.start_ns) / 1e9:g} s; lengthen duration or the trajectory")
    events.sort()
    mounts = {spec.name: spec.mount for spec in scenario.sensors}
    picture_dir = Path(pictures) if pictures else None
    written_pictures: list[Path] = []
    counts: dict[str, int] = {}
    frames = {spec.name: 0 for spec in scenario.sensors}
    progress = None if quiet else Progress(len(events), stream)

    with BagWriter(out) as bag:
        def write(topic, msg, t_ns):
            bag.write(topic, msg, t_ns)
            counts[topic] = counts.get(topic, 0) + 1

        statics = [messages.transform_stamped(spec.mount, scenario.start_ns, scenario.base_frame, spec.frame_id)
                   for spec in scenario.sensors]
        write("/tf_static", messages.tf_message(statics), scenario.start_ns)
        tf_times = iter(_tf_times(scenario))
        next_tf = next(tf_times, None)
        for done, (log_ns, t0, name, k) in enumerate(events, 1):
            while next_tf is not None and next_tf <= log_ns:
                pose = scenario.trajectory.at([next_tf])[0]
                write("/clock", messages.clock(next_tf), next_tf)
                write("/tf", messages.tf_message([messages.transform_stamped(
                    pose, next_tf, scenario.world_frame, scenario.base_frame)]), next_tf)
                next_tf = next(tf_times, None)
            for trajectory, ids, offsets in movers:
                pose = trajectory.at([t0])[0]
                scene.set_poses([(i, pose @ off) for i, off in zip(ids, offsets)])
            unit = units[name]
            mount = mounts[name]
            sensor_poses = poses_over(lambda times: scenario.trajectory.at(times) @ mount, t0, unit.period_ns)
            result = unit.simulate(sensor_poses, t0)
            for relative, msg in unit.messages(result, t0).items():
                write(f"/{name}/{relative}", msg, log_ns)
            frames[name] += 1
            if picture_dir is not None:
                written_pictures.append(_picture(unit, result, picture_dir / f"{name}_{k:04d}.png"))
            if progress:
                progress.update(done, name)
    backend.close()
    return RunSummary(Path(out), frames, written_pictures, time.perf_counter() - started, counts)


def _tf_times(scenario: Scenario):
    step = int(round(1e9 / scenario.tf_rate_hz))
    t = scenario.start_ns
    while t <= scenario.end_ns:
        yield t
        t += step


def _picture(unit: SensorUnit, result, path: Path) -> Path:
    from ..io.radar_image import save_png
    from .pictures import lidar_birds_eye

    if unit.kind == "radar":
        return save_png(path, unit.cartesian(result))
    return save_png(path, lidar_birds_eye(result))
