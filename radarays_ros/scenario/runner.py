"""Run a scenario: every sweep of every sensor along the trajectory, into an MCAP rosbag2 and pictures.

The bag holds what a robot with these sensors would have recorded: each sensor's messages (the same
ones the nodes publish, on the topics of `sensor_topic`), /tf (REP-105: world_frame -> odom ->
base_frame), nav_msgs/Odometry on /odom (drifting as the scenario's `odometry.drift` says, exact by
default), /tf_static (base_frame -> each sensor) and /clock, all at their simulated times, so
`ros2 bag play` drives nodes running with use_sim_time. Sweeps are stamped with their start; they
are logged when they end (when a driver would publish). The bag's clock is the scenario's times shifted
to start at its `bag_time` (config.bag_start_ns: never 0 by default); the simulation itself (poses,
moving entities, noise) runs on the scenario's own times, so only stamps differ between bag times.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import limits
from ..errors import ConfigError
from ..io import messages
from ..io.bag import BagWriter, check_output_path
from .config import Scenario, load_scenario, matching_entities
from ..sensors.poses import poses_over
from ..sensors.topics import sensor_topic, topic_messages
from ..sensors.units import SensorUnit, make_unit
from .odometry import odometry_msg, odometry_poses, travelled
from .pictures import RunPictures, safe_file_name


@dataclass
class RunSummary:
    bag: Path
    frames: dict  # sensor name -> frames written
    pictures: list
    seconds: float
    topics: dict  # topic -> message count


MAX_FRAMES = 10_000_000  # frame start times listed up front (a 1e6 s run of a 10 Hz sensor)


def sweep_starts(scenario: Scenario, unit: SensorUnit, max_frames: int | None) -> list[int]:
    """Start times of the whole sweeps that fit in [start, end]."""
    period = unit.period_ns
    count = (scenario.end_ns - scenario.start_ns) // period
    if max_frames is not None:
        count = min(count, max_frames)
    limits.check_product(f"scenario {scenario.path}", {"frames of a sensor": count}, MAX_FRAMES, "frames")
    return [scenario.start_ns + k * period for k in range(int(count))]


def run_scenario(path_or_scenario, out: str | Path, pictures: str | Path | None = None, quiet: bool = False,
                 stream=None, overwrite: bool = False, backend: str | None = None,
                 backend_options: dict | None = None) -> RunSummary:
    """Simulate a scenario into `out` (.mcap file or rosbag2 directory); pictures into a folder if given.

    `out` must not exist unless `overwrite` (and then only a bag is replaced: io/bag.py); the bag
    appears under its name only when complete. `quiet=False` shows a tqdm bar over frames on `stream`.
    `backend` (and its options, e.g. embree's `threads`, the warp device) overrides the scenario's `backend`.
    """
    from ..radar.physical.motion import trajectory_twists
    from ..tracing import make_backend
    from ..world.loader import load_world

    scenario = path_or_scenario if isinstance(path_or_scenario, Scenario) else load_scenario(path_or_scenario)
    check_output_path(out, overwrite)  # before minutes of work, not after
    started = time.perf_counter()
    scene = load_world(scenario.world, materials=scenario.materials, ignore=scenario.ignore)
    backend = make_backend(backend or scenario.backend, scene, **(backend_options or {}))
    units = {}
    for spec in scenario.sensors:
        try:
            extra = {"realistic": True} if spec.realistic else {}  # lidar only (scenario/config.py checks)
            units[spec.name] = make_unit(spec.kind, spec.name, scene, backend, config=spec.config,
                                         frame_id=spec.frame_id, overrides=spec.overrides, output=spec.output,
                                         frames=spec.frames, **extra)
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
    picture_names = {spec.name: safe_file_name(spec.name) for spec in scenario.sensors}
    topics = {spec.name: spec.name.strip("/") for spec in scenario.sensors}
    progress = None if quiet else _progress_bar(len(events), stream)
    tf_times = np.array(list(_tf_times(scenario)), np.int64)
    truth = scenario.trajectory.at(tf_times)
    odom = odometry_poses(truth, scenario.odometry)
    driven = travelled(truth)

    shift = scenario.stamp_offset_ns()  # simulated time -> bag time (stamps and log times)

    with BagWriter(out, overwrite=overwrite) as bag, RunPictures() as pictures_writer:
        def write(topic, msg, t_ns):
            bag.write(topic, msg, t_ns)
            counts[topic] = counts.get(topic, 0) + 1

        statics = [messages.transform_stamped(spec.mount, scenario.start_ns + shift, scenario.base_frame,
                                              spec.frame_id) for spec in scenario.sensors]
        statics += _imu_frames(scenario, units, scenario.start_ns + shift)
        write("/tf_static", messages.tf_message(statics), scenario.start_ns + shift)
        for spec in scenario.sensors:  # the IMU of an Ouster or Livox lidar, as its driver publishes it
            _write_imu(write, scenario, spec, units[spec.name], topics[spec.name], shift)
            metadata = getattr(units[spec.name].config, "driver_metadata", None)
            if spec.kind == "lidar" and metadata:  # ouster-ros: /ouster/metadata, the sensor's JSON (latched)
                write("/" + sensor_topic(topics[spec.name].strip("/"), "metadata"), messages.string(metadata),
                      scenario.start_ns + shift)
        next_tf = 0
        for log_ns, t0, name, k in events:
            while next_tf < len(tf_times) and tf_times[next_tf] <= log_ns:
                _write_pose(write, scenario, tf_times + shift, truth, odom, driven, next_tf)
                next_tf += 1
            for trajectory, ids, offsets in movers:  # with their velocities there (Doppler from the first frame on)
                pose = trajectory.at([t0])[0]
                scene.set_poses([(i, pose @ off) for i, off in zip(ids, offsets)],
                                trajectory_twists(trajectory, offsets, t0))
            unit = units[name]
            mount = mounts[name]
            sensor_poses = poses_over(lambda times: scenario.trajectory.at(times) @ mount, t0, unit.period_ns)
            result = unit.simulate(sensor_poses, t0)
            for topic, msg in topic_messages(unit, result, t0 + shift, topics[name]).items():
                write(topic, msg, log_ns + shift)
            frames[name] += 1
            if picture_dir is not None:
                written_pictures.append(pictures_writer.write(name, unit, result, picture_dir / f"{picture_names[name]}_{k:04d}.png"))
            if progress:
                progress.set_postfix_str(name, refresh=False)
                progress.update()
    if progress:
        progress.close()
    backend.close()
    return RunSummary(Path(out), frames, written_pictures, time.perf_counter() - started, counts)


def _write_pose(write, scenario: Scenario, times, truth, odom, driven, i: int) -> None:
    """/clock, /tf (world -> odom -> base) and /odom at the i-th pose time."""
    t = int(times[i])
    frame = scenario.odometry.frame
    map_odom = truth[i] @ np.linalg.inv(odom[i])  # keeps world -> base exact whatever the drift
    write("/clock", messages.clock(t), t)
    write("/tf", messages.tf_message([
        messages.transform_stamped(map_odom, t, scenario.world_frame, frame),
        messages.transform_stamped(odom[i], t, frame, scenario.base_frame)]), t)
    dt = (t - int(times[i - 1])) * 1e-9 if i else 0.0
    write(scenario.odometry.topic, odometry_msg(odom[i], odom[i - 1] if i else odom[i], dt, float(driven[i]), t,
                                                scenario.odometry, scenario.base_frame), t)


def _imu_frames(scenario: Scenario, units: dict, t_ns: int) -> list:
    """Sensor frame -> IMU frame for each lidar whose IMU has a frame of its own (Ouster: os_imu), for /tf_static."""
    from ..sensors.imu import imu_for_layout, imu_mount

    out = []
    for spec in scenario.sensors:
        config = units[spec.name].config
        if spec.kind == "lidar" and imu_for_layout(getattr(config, "layout", "")) is not None:
            mount, frame = imu_mount(config)
            if frame is not None and frame != spec.frame_id:
                out.append(messages.transform_stamped(mount, t_ns, spec.frame_id, frame))
    return out


def _write_imu(write, scenario: Scenario, spec, unit: SensorUnit, namespace: str, shift: int) -> None:
    """`/<name>/imu` (sensor_msgs/Imu) over the whole run for a lidar whose driver publishes an IMU (ouster-ros,
    livox_ros_driver2; sensors/imu.py), at the IMU's pose in its frame (imu_mount), seeded by the sensor's seed
    (its own stream)."""
    from ..sensors.imu import G0, imu_for_layout, imu_mount, imu_samples

    imu = imu_for_layout(getattr(unit.config, "layout", "")) if spec.kind == "lidar" else None
    if imu is None:
        return
    times = np.arange(scenario.start_ns, scenario.end_ns + 1, imu.period_ns, dtype=np.int64)
    rng = np.random.default_rng([int(unit.config.seed), 0x1A0])  # apart from the lidar's own draws
    at_imu, frame = imu_mount(unit.config)
    gyro, accel = imu_samples(lambda t: scenario.trajectory.at(t) @ spec.mount @ at_imu, times, imu, rng,
                              span_ns=(scenario.trajectory.start_ns, scenario.trajectory.end_ns))
    g2, a2 = ((density ** 2) * imu.rate_hz for density in (imu.gyro_noise_density, imu.accel_noise_density))
    if imu.accel_in_g:
        a2 /= G0 ** 2
    topic = "/" + sensor_topic(namespace.strip("/"), "imu")
    for t, w, f in zip(times, gyro, accel):
        write(topic, messages.imu(w, f, int(t) + shift, frame or spec.frame_id, g2, a2), int(t) + shift)


def _progress_bar(total: int, stream):
    from tqdm import tqdm

    return tqdm(total=total, unit="frame", file=stream, dynamic_ncols=True, mininterval=0.5)


def _tf_times(scenario: Scenario):
    step = int(round(1e9 / scenario.tf_rate_hz))
    t = scenario.start_ns
    while t <= scenario.end_ns:
        yield t
        t += step


