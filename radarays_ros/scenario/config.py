"""Scenario files: a world, a sensor rig on a moving base, trajectories; validated on load.

    world: ../worlds/office.sdf          # relative paths are relative to the scenario file
    materials: my_materials.yaml         # optional, merged over the shipped library
    ignore: [robot]                      # optional model/link/visual globs left out of the world
    world_frame: map                     # /tf parent of the base
    base_frame: base_link
    start: 0.0                           # s, first sweep (default: the trajectory's start)
    duration: 2.5                        # s (default: to the trajectory's end)
    tf_rate_hz: 50                       # /tf and /clock messages per second
    bag_time: auto                       # the bag's clock at `start` (see bag_start_ns): auto | now | trajectory
                                         #   | seconds since 1970 (never 0: tf2 reads stamp 0 as "latest")
    sensors:
      radar:                             # the topic namespace: /radar/image (see sensor_topic)
        type: radar                      # radar | lidar
        config: navtech_cir204           # preset name or config file
        set: {azimuth.count: 100}        # dotted-key overrides
        mount: [0.0, 0.0, 1.2, 0, 0, 0]  # x y z roll pitch yaw (m, rad) on base_frame
        frame_id: radar                  # default: the name
        output: {image_layout: range_rows}
        max_frames: 10                   # optional cap
        frames: host                     # host (default) | device: the whole frame in Warp kernels (backend: warp)
        realistic: false                 # lidar: the effects profile of `radarays lidar --realistic` (under set)
    trajectory:                          # exactly one of csv / waypoints / bag
      csv: path.csv                      #   t,x,y,z,roll,pitch,yaw (s, m, rad)
      waypoints: [[0, 0], [8, 0], [8, 1]]#   x y [z]; heading follows the path
      speed: 1.0                         #   m/s along the waypoints
      z: 0.0                             #   height of 2-D waypoints
      bag: recorded.mcap                 #   poses from a bag: nav_msgs/Odometry or /tf
      topic: /odom
      frame: base_link                   #   /tf: the child frame to follow (parent: world_frame)
    odometry:                            # optional; REP-105 map -> odom -> base_link, nav_msgs/Odometry
      frame: odom                        #   the odometry frame (default odom)
      topic: /odom
      drift: {translation_std: 0.0, yaw_std_deg: 0.0}   # per sqrt(m) driven; 0 = exact (default)
      seed: 0                            #   drift draws (see odometry.py)
    entities:                            # optional moving entities of the world
      - name: "car_0*"                   # glob on entity names; all matches move rigidly together
        trajectory: {waypoints: [[-20, 2], [20, 2]], speed: 5}   # the model starts where it is
"""
from __future__ import annotations

import fnmatch
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from ..config_file import read_yaml
from .. import limits
from ..validate import check_path, plain
from ..errors import ConfigError
from ..resources import file_or_shipped, find_shipped
from ..world.trajectory import Trajectory
from ..world.transforms import MAX_COORDINATE_M, pose_to_matrix, quaternion_to_matrix
from .odometry import OdometrySpec, odometry_spec

TOP_KEYS = ("world", "materials", "ignore", "world_frame", "base_frame", "start", "duration", "tf_rate_hz",
            "sensors", "trajectory", "entities", "description", "backend", "odometry", "bag_time")
# bag_time auto: a trajectory whose times are already absolute (after 2001-09-09, as one from a recorded bag)
# keeps them; any other starts the bag at this fixed instant (2024-01-01T00:00:00Z), so a run is reproducible
ABSOLUTE_AFTER_NS = 1_000_000_000 * 1_000_000_000
DEFAULT_BAG_START_NS = 1_704_067_200 * 1_000_000_000
BAG_TIME_WORDS = ("auto", "now", "trajectory")
SENSOR_KEYS = ("type", "config", "set", "mount", "frame_id", "output", "max_frames", "frames", "realistic")
TRAJECTORY_KEYS = ("csv", "waypoints", "speed", "z", "bag", "topic", "frame")
# a sensor name is a ROS name (its topics' namespace): tokens of letters, digits and '_', joined by '/'
SENSOR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(/[A-Za-z_][A-Za-z0-9_]*)*")


@dataclass(frozen=True)
class SensorSpec:
    name: str
    kind: str
    config: str
    overrides: dict
    mount: np.ndarray  # 4x4 base <- sensor
    frame_id: str
    output: dict
    max_frames: int | None
    frames: str = "host"  # host | device (the whole frame in Warp kernels; needs backend warp)
    realistic: bool = False  # lidar: the realistic effects profile under `set` (`radarays lidar --realistic`)


@dataclass(frozen=True)
class EntityMotion:
    pattern: str
    trajectory: Trajectory


@dataclass(frozen=True)
class Scenario:
    path: Path
    world: Path
    materials: object  # a YAML path, a MaterialLibrary (batch variations) or None
    ignore: tuple
    world_frame: str
    base_frame: str
    start_ns: int
    end_ns: int
    tf_rate_hz: float
    sensors: tuple
    trajectory: Trajectory
    entities: tuple = field(default=())
    backend: str = "embree"
    odometry: OdometrySpec = field(default_factory=OdometrySpec)
    bag_time: object = "auto"  # a BAG_TIME_WORDS word, or seconds since 1970 (float)

    def stamp_offset_ns(self, now_ns: int | None = None) -> int:
        """What the bag adds to simulated times (the trajectory's): its stamps start at bag_start_ns."""
        return bag_start_ns(self.bag_time, self.start_ns, now_ns) - self.start_ns


def bag_start_ns(bag_time, start_ns: int, now_ns: int | None = None) -> int:
    """The bag time of the run's first instant. Stamp 0 is avoided: tf2 reads it as "the latest transform"
    and a simulated /clock at 0 means "not started" to nodes under use_sim_time.

    auto: `start_ns` itself when the trajectory's times are absolute (>= ABSOLUTE_AFTER_NS), else the fixed
    DEFAULT_BAG_START_NS (reproducible bags); now: `now_ns` (the wall clock when the run starts);
    trajectory: the trajectory's own times, whatever they are; a number: that many seconds since 1970."""
    if bag_time == "trajectory" or (bag_time == "auto" and start_ns >= ABSOLUTE_AFTER_NS):
        return start_ns
    if bag_time == "auto":
        return DEFAULT_BAG_START_NS
    if bag_time == "now":
        import time

        return time.time_ns() if now_ns is None else int(now_ns)
    from decimal import Decimal

    return int(Decimal(repr(float(bag_time))) * 1_000_000_000)  # 1.7e9 + 0.25 s to the ns (float * 1e9 is not)


MAX_TF_STAMPS = 4_000_000  # 512 MB of ground-truth poses: a 22-hour run at 50 Hz
MAX_NUMBER = 1e6  # seconds (11 days), m/s, Hz, m: beyond, a run never ends or its stamps overflow int64 ns

def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario YAML, or a shipped scenario by name (errors name the file and the key)."""
    path = file_or_shipped("scenario", path)
    return scenario_from_data(read_yaml(path, "scenario"), path)


def scenario_from_data(data: Any, path: Path) -> Scenario:
    """A Scenario from parsed YAML (`path`: the file it came from; relative paths are relative to it)."""
    if not isinstance(data, Mapping):
        raise ConfigError(f"scenario {path}: expected a mapping with keys {', '.join(TOP_KEYS)}")
    where = f"scenario {path}"
    _check_keys(data, TOP_KEYS, where)
    base = path.parent
    world = check_path(_required(data, "world", where), f"{where}: world")
    world_path = (base / str(world)).resolve()
    if not world_path.exists() and find_shipped("world", str(world)) is not None:
        world_path = find_shipped("world", str(world))  # `world: office`: a shipped world by name
    if not world_path.exists():
        raise ConfigError(f"{where}: world = {world!r}: {world_path} not found (paths are relative to the scenario file)")
    materials = data.get("materials")
    if materials:
        check_path(materials, f"{where}: materials")
    if materials and not (base / str(materials)).is_file():
        raise ConfigError(f"{where}: materials = {materials!r}: {(base / str(materials)).resolve()} not found "
                          "(paths are relative to the scenario file)")
    ignore = data.get("ignore") or []
    if not isinstance(ignore, list) or not all(isinstance(i, str) for i in ignore):
        raise ConfigError(f"{where}: ignore must be a list of name globs")
    trajectory = trajectory_from(_required(data, "trajectory", where), base, f"{where}: trajectory",
                                 world_frame=str(data.get("world_frame", "map")))
    start = _number(data, "start", where, None, hi=1e9)
    start_ns = trajectory.start_ns if start is None else int(round(start * 1e9))
    duration = _number(data, "duration", where, None, lo=0.0)
    end_ns = trajectory.end_ns if duration is None else start_ns + int(round(duration * 1e9))
    if end_ns <= start_ns:
        raise ConfigError(f"{where}: nothing to simulate: the run ends at {end_ns / 1e9:g} s, not after its start "
                          f"{start_ns / 1e9:g} s (set duration, or give a longer trajectory)")
    sensors = data.get("sensors")
    if not isinstance(sensors, Mapping) or not sensors:
        raise ConfigError(f"{where}: sensors must map sensor names to their settings (type, config, mount)")
    for name in sensors:
        if not isinstance(name, str) or not SENSOR_NAME.fullmatch(name):
            raise ConfigError(f"{where}: sensors: name {str(name)[:60]!r} is not a ROS name (letters, digits and '_', "
                              "'/' between parts, not starting with a digit): it names the sensor's topics and files")
    specs = tuple(_sensor(str(name), spec, f"{where}: sensors.{name}", base) for name, spec in sensors.items())
    entities = data.get("entities") or []
    if not isinstance(entities, list):
        raise ConfigError(f"{where}: entities must be a list of {{name, trajectory}}")
    motions = []
    for i, item in enumerate(entities):
        w = f"{where}: entities[{i}]"
        if not isinstance(item, Mapping):
            raise ConfigError(f"{w}: expected a mapping with name and trajectory")
        _check_keys(item, ("name", "trajectory"), w)
        motions.append(EntityMotion(str(_required(item, "name", w)),
                                    trajectory_from(_required(item, "trajectory", w), base, f"{w}.trajectory")))
    tf_rate = _number(data, "tf_rate_hz", where, 50.0, lo=0.1)
    # the ground truth is sampled at every /tf stamp up front (a 4 x 4 pose each): bounded before allocation
    limits.check_product(where, {"run seconds": (end_ns - start_ns) / 1e9, "tf_rate_hz": tf_rate},
                         MAX_TF_STAMPS, "/tf stamps")
    odometry = odometry_spec(data.get("odometry"), f"{where}: odometry")
    bag_time = data.get("bag_time", "auto")
    if not (isinstance(bag_time, str) and bag_time in BAG_TIME_WORDS):
        if isinstance(bag_time, str):
            raise ConfigError(f"{where}: bag_time = {plain(bag_time)}: expected {', '.join(BAG_TIME_WORDS)} or "
                              "seconds since 1970 (> 0)")
        bag_time = _number(data, "bag_time", where, None, lo=0.0, lo_open=True, hi=4e9)
    return Scenario(path, world_path, (base / str(materials)).resolve() if materials else None, tuple(ignore),
                    str(data.get("world_frame", "map")), str(data.get("base_frame", "base_link")), start_ns, end_ns,
                    tf_rate, specs, trajectory, tuple(motions), str(data.get("backend", "embree")), odometry, bag_time)


def _sensor(name: str, spec: Any, where: str, base: Path) -> SensorSpec:
    if not isinstance(spec, Mapping):
        raise ConfigError(f"{where}: expected a mapping with type, config, mount")
    _check_keys(spec, SENSOR_KEYS, where)
    kind = _required(spec, "type", where)
    if kind not in ("radar", "lidar"):
        raise ConfigError(f"{where}.type = {kind!r}: must be radar or lidar")
    config = check_path(spec.get("config") or ("radarays_default" if kind == "radar" else "VLP-16"), f"{where}.config")
    if config.endswith((".yaml", ".yml", ".json")) and not Path(config).is_absolute():
        config = str((base / config).resolve())
    overrides = spec.get("set") or {}
    if not isinstance(overrides, Mapping):
        raise ConfigError(f"{where}.set: expected a mapping of dotted keys to values")
    mount = spec.get("mount", [0, 0, 0, 0, 0, 0])
    if not isinstance(mount, list) or len(mount) != 6:
        raise ConfigError(f"{where}.mount: expected [x, y, z, roll, pitch, yaw] (m, rad)")
    try:
        mount_m = pose_to_matrix(*[float(v) for v in mount])
    except (TypeError, ValueError):
        raise ConfigError(f"{where}.mount = {mount}: expected six finite numbers") from None
    output = spec.get("output") or {}
    if not isinstance(output, Mapping):
        raise ConfigError(f"{where}.output: expected a mapping of output options")
    max_frames = spec.get("max_frames")
    if max_frames is not None and (not isinstance(max_frames, int) or isinstance(max_frames, bool) or max_frames < 1):
        raise ConfigError(f"{where}.max_frames = {max_frames!r}: expected a positive integer")
    frames = spec.get("frames", "host")
    if frames not in ("host", "device"):
        raise ConfigError(f"{where}.frames = {str(frames)[:40]!r}: allowed host (numpy over any backend) or device "
                          "(the whole frame in Warp kernels; needs backend: warp)")
    realistic = spec.get("realistic", False)
    if not isinstance(realistic, bool) or (realistic and kind != "lidar"):
        raise ConfigError(f"{where}.realistic = {str(realistic)[:40]!r}: allowed true or false, and true only for "
                          "type lidar (the effects profile of `radarays lidar --realistic`)")
    return SensorSpec(name, kind, config, dict(overrides), mount_m, str(spec.get("frame_id") or name), dict(output),
                      max_frames, frames, realistic)


def trajectory_from(spec: Any, base: Path, where: str, world_frame: str = "map") -> Trajectory:
    """A Trajectory from a csv / waypoints / bag mapping."""
    if not isinstance(spec, Mapping):
        raise ConfigError(f"{where}: expected a mapping with one of csv, waypoints, bag")
    _check_keys(spec, TRAJECTORY_KEYS, where)
    sources = [k for k in ("csv", "waypoints", "bag") if k in spec]
    if len(sources) != 1:
        raise ConfigError(f"{where}: give exactly one of csv, waypoints, bag (got {sources or 'none'})")
    if "csv" in spec:
        try:
            return Trajectory.from_csv(base / check_path(spec["csv"], f"{where}.csv"))
        except ConfigError as exc:
            raise ConfigError(f"{where}.csv: {exc}") from None
    if "waypoints" in spec:
        speed = _number(spec, "speed", where, 1.0, lo=0.0, lo_open=True)
        z = _number(spec, "z", where, 0.0)
        return waypoint_trajectory(spec["waypoints"], speed, z, where)
    topic = spec.get("topic")
    if not topic:
        raise ConfigError(f"{where}: bag needs topic (nav_msgs/Odometry, or /tf with frame)")
    return bag_trajectory(base / check_path(spec["bag"], f"{where}.bag"), str(topic), spec.get("frame"), world_frame, where)


def waypoint_trajectory(points: Any, speed: float, z: float, where: str) -> Trajectory:
    """Poses along waypoints at constant speed; the heading looks along each segment."""
    try:
        p = np.array([[float(v) for v in row] for row in points])
    except (TypeError, ValueError, OverflowError):
        raise ConfigError(f"{where}.waypoints: expected a list of [x, y] or [x, y, z] numbers") from None
    if p.ndim != 2 or p.shape[0] < 2 or p.shape[1] not in (2, 3) or not np.all(np.isfinite(p)) \
            or np.abs(p).max() > MAX_COORDINATE_M:
        raise ConfigError(f"{where}.waypoints: expected at least two finite [x, y] or [x, y, z] points "
                          f"within ±{MAX_COORDINATE_M:g} m")
    if p.shape[1] == 2:
        p = np.column_stack([p, np.full(len(p), z)])
    step = np.linalg.norm(np.diff(p, axis=0), axis=1)
    if np.any(step <= 0):
        raise ConfigError(f"{where}.waypoints: consecutive waypoints must differ")
    with np.errstate(over="ignore"):  # a tiny speed: infinite times, refused just below
        t = np.concatenate([[0.0], np.cumsum(step)]) / speed
    if t[-1] > MAX_NUMBER:
        raise ConfigError(f"{where}: the waypoints take {t[-1]:.3g} s at speed {speed:g}; at most {MAX_NUMBER:g} s")
    d = np.diff(p, axis=0)
    yaw = np.arctan2(d[:, 1], d[:, 0])
    yaw = np.concatenate([yaw, yaw[-1:]])
    poses = [pose_to_matrix(*p[i], 0.0, 0.0, yaw[i]) for i in range(len(p))]
    return Trajectory(np.round(t * 1e9).astype(np.int64), poses)


def bag_trajectory(path: Path, topic: str, frame: str | None, world_frame: str, where: str) -> Trajectory:
    """Poses from a recorded bag: nav_msgs/Odometry on `topic`, or world_frame <- frame from /tf."""
    from rosbags.highlevel import AnyReader

    from ..io.messages import TYPESTORE, header_stamp
    from ..sensors.tf_buffer import TransformBuffer, TransformLookupError

    if not path.exists():
        raise ConfigError(f"{where}.bag: {path} not found")
    times, poses = [], []
    tf = TransformBuffer(cache_s=1e9, tolerance_ns=0)
    try:
        with AnyReader([path], default_typestore=TYPESTORE) as reader:
            wanted = [c for c in reader.connections if c.topic in (topic, "/tf_static")]
            if not any(c.topic == topic for c in wanted):
                raise ConfigError(f"{where}: topic {topic} not in {path}; topics: "
                                  f"{', '.join(sorted({c.topic for c in reader.connections}))}")
            for conn, _, raw in reader.messages(connections=wanted):
                msg = reader.deserialize(raw, conn.msgtype)
                if conn.msgtype == "nav_msgs/msg/Odometry":
                    s, q = msg.pose.pose.position, msg.pose.pose.orientation
                    m = np.eye(4)
                    m[:3, :3] = quaternion_to_matrix(q.x, q.y, q.z, q.w)
                    m[:3, 3] = (s.x, s.y, s.z)
                    times.append(header_stamp(msg))
                    poses.append(m)
                elif conn.msgtype == "tf2_msgs/msg/TFMessage":
                    for t in msg.transforms:
                        stamp = header_stamp(t)
                        tr, q = t.transform.translation, t.transform.rotation
                        try:
                            tf.set_transform(t.header.frame_id, t.child_frame_id, stamp, (tr.x, tr.y, tr.z),
                                             (q.x, q.y, q.z, q.w), static=conn.topic == "/tf_static")
                        except TransformLookupError:
                            continue
                        if conn.topic == topic and t.child_frame_id.lstrip("/") == str(frame or "").lstrip("/"):
                            times.append(stamp)
                else:
                    raise ConfigError(f"{where}: topic {topic} carries {conn.msgtype}; expected "
                                      "nav_msgs/msg/Odometry or tf2_msgs/msg/TFMessage")
    except ConfigError:
        raise
    except Exception as exc:  # rosbags' own errors: not a bag, unknown storage...
        raise ConfigError(f"{where}.bag: cannot read {path}: {exc}") from None
    if not poses and times:  # /tf: the chain world_frame <- frame at each of the frame's stamps
        if not frame:
            raise ConfigError(f"{where}: a /tf trajectory needs frame (the child frame to follow)")
        times = sorted(set(times))
        try:
            poses = list(tf.lookup(world_frame, str(frame), np.array(times)))
        except TransformLookupError as exc:
            raise ConfigError(f"{where}: {exc}") from None
    if not times:
        raise ConfigError(f"{where}: no poses of {frame or topic} in {path}")
    order = np.argsort(times, kind="stable")
    t = np.asarray(times, np.int64)[order]
    keep = np.concatenate([[True], np.diff(t) > 0])
    return Trajectory(t[keep], np.asarray(poses)[order][keep])


def matching_entities(scene, pattern: str) -> list[int]:
    """Entity ids whose scoped name (or model name) matches a glob."""
    return [e.id for e in scene.entities if fnmatch.fnmatchcase(e.name, pattern) or fnmatchcase_model(e.name, pattern)]


def fnmatchcase_model(name: str, pattern: str) -> bool:
    return fnmatch.fnmatchcase(name.split("::", 1)[0], pattern)


def _check_keys(data: Mapping, allowed, where: str) -> None:
    unknown = sorted(set(map(str, data)) - set(allowed))
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {unknown}; allowed: {', '.join(allowed)}")


def _required(data: Mapping, key: str, where: str):
    if data.get(key) is None:
        raise ConfigError(f"{where}: '{key}' is required")
    return data[key]


def _number(data: Mapping, key: str, where: str, default, lo: float | None = None, lo_open: bool = False,
            hi: float = MAX_NUMBER):
    value = data.get(key, default)
    if value is None:
        if default is None:
            return None  # optional and absent
        raise ConfigError(f"{where}: {key} = null: a number is required (default {default})")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or abs(value) > hi \
            or not math.isfinite(value):  # (abs first: isfinite of a 400-digit integer overflows)
        raise ConfigError(f"{where}: {key} = {plain(value)}: expected a finite number of at most {hi:g}")
    if lo is not None and (value <= lo if lo_open else value < lo):
        raise ConfigError(f"{where}: {key} = {plain(value)}: must be {'>' if lo_open else '>='} {lo}")
    return float(value)
