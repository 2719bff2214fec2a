"""What the sensor nodes need to follow a running Gazebo (no rclpy here; the node wires it in).

* `GAZEBO_PARAMS` / `RIG_GAZEBO_PARAMS`: the `gazebo.*` node parameters (see node.py's docstring).
* `start_mirror(...)`: a started GazeboMirror whose Scene becomes the node's world.
* `sdf_sensor_plan(spec)`: how a sensor declared in SDF / URDF (`find_sensors`) becomes one of the
  node's sensors: config source, overrides (the SDF parameters, `<update_rate>`), topics, frame.
* `SensorDiscovery`: sensors declared in the world Gazebo runs (its generate_world_sdf answer),
  re-read when the world changes, for worlds not given as a file.
* `LogRelay`: the mirror's Python log lines go to the node's ROS logger.
"""
from __future__ import annotations

import logging
import os
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..errors import ConfigError
from ..sensors.units import ParamInfo, flatten

GAZEBO_PARAMS = {
    "gazebo.enable": ParamInfo(False, "follow a running Gazebo world: the scene mirrors it (poses, spawned and "
                               "deleted models) and no scans are published while it is away", kind=bool),
    "gazebo.world": ParamInfo("", "Gazebo world name ('' = the only world found on gz-transport)"),
    "gazebo.sdf": ParamInfo("", "world file for the geometry ('' = the world parameter, else Gazebo's "
                            "generate_world_sdf service)"),
    "gazebo.pose_topic": ParamInfo("pose/info", "Gazebo pose topic under /world/<w>/",
                                   choices=("pose/info", "dynamic_pose/info")),
    "gazebo.partition": ParamInfo("", "gz-transport partition ('' = GZ_PARTITION / IGN_PARTITION)"),
    "gazebo.clock": ParamInfo("ros", "time of frames and stamps: the node clock (ros; Gazebo's time with "
                              "use_sim_time and /clock bridged) or the mirror's Gazebo sim time (gazebo)",
                              choices=("ros", "gazebo")),
    "gazebo.stale_after_s": ParamInfo(1.0, "seconds without pose messages after which Gazebo counts as gone",
                                      0.05, 60.0, kind=float),
    "gazebo.max_rate_hz": ParamInfo(200.0, "most scene pose updates per second (each frame also applies the newest "
                                           "poses first); lower it to save CPU on fast pose streams, keep it above "
                                           "the sweep rate for motion-distorted sweeps", 1.0, 10000.0, kind=float),
}
RIG_GAZEBO_PARAMS = {
    "gazebo.sdf_sensors": ParamInfo(True, "also run the radarays / gpu_lidar sensors declared in the world's SDF "
                                    "(the file, else Gazebo's generate_world_sdf) and in gazebo.sensor_files",
                                    kind=bool),
    "gazebo.sensor_files": ParamInfo([""], "more SDF / URDF files whose sensor blocks the rig runs", kind=list),
    "gazebo.urdf_model": ParamInfo("", "Gazebo model name of the robot of URDF sensor_files (link L -> MODEL::L)"),
}
OUTPUT_TOPICS = {"radar": ("radar/image", "radar/points", "radar/image_cartesian"), "lidar": ("points", "scan")}
RATE_KEY = {"radar": "azimuth.rate_hz", "lidar": "rate_hz"}
DEFAULT_CONFIG = {"radar": "radarays_default", "lidar": "VLP-16"}


@dataclass
class SdfSensorPlan:
    """A sensor declared in SDF, as the node runs it."""

    name: str  # node-level sensor name (parameter prefix NAME.)
    kind: str
    config: str  # preset or file
    overrides: dict[str, Any]
    parent: str  # scoped Gazebo link
    mount: np.ndarray = field(repr=False)
    topic: str  # the SDF <topic>
    frame: str
    source: str  # "file:line <sensor name='...'>"
    key: str  # parent::name, unique in a world


def sdf_sensor_plan(spec, taken: set[str], urdf_model: str = "") -> SdfSensorPlan:
    """A SensorSpec as a node sensor: `preset` is the config, `overrides` and every other parameter
    (nested elements flattened to dotted keys) override it, `<update_rate>` sets the rate."""
    params = dict(spec.params)
    config = str(params.pop("preset", "") or DEFAULT_CONFIG[spec.kind])
    explicit = params.pop("overrides", {}) or {}
    params.pop("gpu_lidar", None)  # the Gazebo description the preset was chosen from
    if not isinstance(explicit, dict):
        raise ConfigError(f"{spec.source}: <overrides> must hold elements like <range.max>80</range.max>")
    overrides = {**flatten(params), **flatten(explicit)}
    if spec.update_rate > 0:
        overrides[RATE_KEY[spec.kind]] = float(spec.update_rate)
    parent = spec.parent
    if "::" not in parent and urdf_model:
        parent = f"{urdf_model}::{parent}"
    return SdfSensorPlan(name=unique_name(spec.name, parent, taken), kind=spec.kind, config=config,
                         overrides=overrides, parent=parent, mount=np.asarray(spec.pose, dtype=float),
                         topic=spec.topic, frame=spec.frame, source=spec.source, key=f"{spec.parent}::{spec.name}")


def unique_name(name: str, parent: str, taken: set[str]) -> str:
    """A parameter-safe sensor name not in `taken` (the model name is prefixed on a clash)."""
    base = re.sub(r"\W", "_", name) or "sensor"
    if base[0].isdigit():
        base = "s_" + base
    candidate = base
    if candidate in taken:
        candidate = re.sub(r"\W", "_", parent.split("::", 1)[0]) + "_" + base
    n = 2
    while candidate in taken:
        candidate, n = f"{base}_{n}", n + 1
    taken.add(candidate)
    return candidate


def sdf_topic(sdf: str, kind: str, relative: str) -> str:
    """Topic of one output of an SDF sensor. When the SDF <topic> ends with the name of one of the
    sensor's outputs, that output goes there and the others beside it ('front/points' or
    'front/scan' -> front/points, front/scan); otherwise they go below it ('front' -> front/points)."""
    for name in sorted(OUTPUT_TOPICS[kind], key=len, reverse=True):
        if sdf == name or sdf.endswith("/" + name):
            return sdf[: -len(name)] + relative
    return sdf.rstrip("/") + "/" + relative


def start_mirror(world: str, sdf: str | None, pose_topic: str, partition: str, stale_after_s: float,
                 max_rate_hz: float, materials: str | None, ignore: tuple[str, ...]):
    """A started GazeboMirror (its SDF file, if any, is loaded before this returns; errors raise)."""
    from ..gazebo.client import make_client
    from ..gazebo.mirror import GazeboMirror, MirrorConfig

    config = MirrorConfig(world=world, sdf=sdf or None, pose_topic=pose_topic, stale_after_s=stale_after_s,
                          max_rate_hz=max_rate_hz, materials=materials or None, ignore=tuple(ignore))
    if partition:  # read by both clients (the official one takes it from the environment only)
        os.environ["GZ_PARTITION"] = partition
        os.environ["IGN_PARTITION"] = partition
    client = make_client()
    try:
        return GazeboMirror(config, client=client).start()
    except BaseException:
        client.close()
        raise


def close_mirror(mirror) -> None:
    client = mirror.client
    mirror.close()
    if client is not None:
        client.close()


class SensorDiscovery:
    """Reads the sensors of the world Gazebo runs (generate_world_sdf) on a thread of its own,
    whenever the mirror is alive and the set of models changed (or every `every_s`); new ones (by
    parent::name) are handed to `found(specs)`."""

    def __init__(self, mirror, found: Callable[[list], None], log: Callable[[str], None], every_s: float = 30.0):
        self.mirror, self.found, self.log, self.every_s = mirror, found, log, every_s
        self._seen: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="gazebo-sensors", daemon=True)

    def start(self) -> "SensorDiscovery":
        self._thread.start()
        return self

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        from ..errors import RadaraysError
        from ..gazebo import protos
        from ..gazebo.sensors import find_sensors

        models, last, last_error = None, -float("inf"), ""
        while not self._stop.wait(0.5):
            mirror = self.mirror
            if not mirror.alive:
                continue
            now_models = {name.split("::", 1)[0] for name in mirror.scene.entity_names()}
            if now_models == models and time.monotonic() - last < self.every_s:
                continue
            try:
                payload, type_name = mirror.client.request(f"/world/{mirror.world}/generate_world_sdf", b"",
                                                           timeout=mirror.config.service_timeout_s)
                text = protos.decode(type_name or "StringMsg", payload).data
                specs = find_sensors(text)
            except (TimeoutError, RuntimeError):
                continue
            except (RadaraysError, ValueError) as exc:
                if str(exc) != last_error:
                    self.log(f"sensors of Gazebo world '{mirror.world}' not read: {exc}")
                    last_error = str(exc)
                specs = []
            models, last = now_models, time.monotonic()
            new = [s for s in specs if f"{s.parent}::{s.name}" not in self._seen]
            self._seen.update(f"{s.parent}::{s.name}" for s in new)
            if new:
                self.found(new)


class LogRelay(logging.Handler):
    """Python log records of the Gazebo layer -> the node's ROS logger, at their level."""

    def __init__(self, ros_logger):
        super().__init__(logging.INFO)
        self.ros_logger = ros_logger

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = record.getMessage()
            if record.levelno >= logging.ERROR:
                self.ros_logger.error(text)
            elif record.levelno >= logging.WARNING:
                self.ros_logger.warning(text)
            else:
                self.ros_logger.info(text)
        except Exception:  # a logger that is gone (node destroyed) must not break the mirror thread
            pass

    def attach(self) -> "LogRelay":
        logger = logging.getLogger("radarays_ros.gazebo")
        logger.setLevel(logging.INFO)
        logger.addHandler(self)
        return self

    def detach(self) -> None:
        logging.getLogger("radarays_ros.gazebo").removeHandler(self)
