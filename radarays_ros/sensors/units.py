"""One sensor of a rig: its config, its simulator and the messages one frame becomes.

The ROS nodes and the scenario runner both drive sensors through these units, so a node publishes
the same messages a scenario writes into its bag. No ROS here: messages are rosbags objects built by
radarays_ros.io; the node converts them for rclpy.

    unit = make_unit("radar", "front_radar", scene, backend, config="navtech_cir204", frame_id="radar")
    result = unit.simulate(pose_or_trajectory, t0_ns)
    msgs = unit.messages(result, t0_ns)          # {"radar/image": Image, "radar/points": ..., ...}
    topic_messages(unit, result, t0_ns, "front") # the same on the bag's topics: {"/front/radar/image": ...}
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np

from .. import limits
from ..errors import ConfigError
from ..resources import find_shipped, shipped_names
from ..validate import Rule


@dataclass(frozen=True)
class ParamInfo:
    """One tunable value: its current value and what it may be (for ROS parameter descriptors)."""

    value: Any
    description: str = ""
    lo: float | None = None
    hi: float | None = None
    choices: tuple = ()
    kind: type | None = None  # bool, int, float, str, list; None = take the value's type
    nullable: bool = False


# -- output options (not part of the sensor model: how a frame becomes messages) -----------------
def radar_output_params() -> dict[str, ParamInfo]:
    from ..io.radar_image import ENCODINGS, LAYOUTS

    return {
        "image_layout": ParamInfo("range_rows", "radar/image rows: range bins (range_rows: RadaRays, MulRan "
                                  "/Navtech/Polar) or azimuths (azimuth_rows: Navtech ROS 2 driver, Oxford, Boreas)",
                                  choices=tuple(LAYOUTS)),
        "image_encoding": ParamInfo("mono8", "radar/image pixel type: mono8 (8 bit like the real sensor) or 32FC1",
                                    choices=tuple(ENCODINGS)),
        "points_k": ParamInfo(5, "radar/points: strongest range peaks kept per azimuth", 1, 1000, kind=int),
        "points_threshold": ParamInfo(3.0, "radar/points: CA-CFAR factor over the local noise mean", 0.0, 1e6, kind=float),
        "points_min_value": ParamInfo(1.0, "radar/points: smallest image value that can be a point", 0.0, 1e9, kind=float),
        "cartesian_pixels": ParamInfo(800, "radar/image_cartesian: width = height in pixels (about)", 16, 8192, kind=int),
        "cartesian_max_range": ParamInfo(0.0, "radar/image_cartesian: metres shown (0 = the whole range)",
                                         0.0, 1e5, kind=float),
    }


def lidar_output_params() -> dict[str, ParamInfo]:
    from ..io.lidar_clouds import GROUND_TRUTH_FIELDS

    return {
        "ground_truth": ParamInfo([""], "ground-truth fields appended to points (opt-in)",
                                  choices=tuple(GROUND_TRUTH_FIELDS), kind=list),
    }


# -- radar ----------------------------------------------------------------------------------------
# -- where a frame runs (a node parameter `<sensor>.frames`, a scenario sensor key `frames`) --------
FRAMES_PARAM = ParamInfo("host", "where a frame's sensor model runs: host (numpy over any backend) or device "
                         "(the whole frame in Warp kernels; needs backend warp; radar/warp_frame.py, "
                         "lidar_ros/warp_frame.py)", choices=("host", "device"))


def checked_frames(name: str, frames: str, backend) -> str:
    """`frames` checked against FRAMES_PARAM and the backend (device frames need the warp backend)."""
    frames = check_param(f"{name}: frames", frames, FRAMES_PARAM)
    if frames == "device" and getattr(backend, "name", None) != "warp":
        raise ConfigError(f"{name}: frames 'device' needs the warp backend (backend: warp), "
                          f"got backend '{getattr(backend, 'name', type(backend).__name__)}'")
    return frames


def resolve_radar_config(source: str | Path, overrides: Mapping[str, Any] | None = None):
    """RadarConfig from a preset name (package data radar/NAME.yaml) or a YAML path, plus dotted overrides."""
    from ..radar import RadarConfig

    text = str(source or "radarays_default")
    path = Path(text)
    if not path.suffix and not path.is_file():
        path = find_shipped("radar", text)
        if path is None:
            presets = shipped_names("radar")
            raise ConfigError(f"unknown radar config '{text}': not a file and not a preset; presets: {', '.join(presets)}")
    return RadarConfig.from_yaml(path, dict(overrides or {}))


def radar_params(config) -> dict[str, ParamInfo]:
    """Every dotted key of a RadarConfig with its documentation and allowed range."""
    from ..radar.config import SECTIONS

    out = {}
    for section, cls in SECTIONS.items():
        for f in dataclasses.fields(cls):
            rule = f.metadata
            out[f"{section}.{f.name}"] = ParamInfo(
                getattr(getattr(config, section), f.name), rule.get("doc", ""), rule.get("lo"), rule.get("hi"),
                tuple(rule.get("choices") or ()), rule.get("kind"), bool(rule.get("nullable")))
    out["seed"] = ParamInfo(config.seed, "random seed of the beam samples and noise", 0, 2**63 - 1, kind=int)
    return out


def flatten(mapping: Mapping, prefix: str = "") -> dict[str, Any]:
    """{'range': {'max': 100}} -> {'range.max': 100}: the values a ROS parameter can hold.

    Lists become parameters when they are all booleans, all strings or all numbers (numbers with a
    float among them become floats: ROS arrays have one type); lists of lists or mappings stay out.
    """
    out = {}
    for key, value in mapping.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten(value, name + "."))
        elif isinstance(value, (list, tuple)) and value:
            if all(isinstance(v, bool) for v in value) or all(isinstance(v, str) for v in value):
                out[name] = list(value)
            elif all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
                out[name] = [float(v) for v in value] if any(isinstance(v, float) for v in value) else list(value)
        elif value is None or isinstance(value, (bool, int, float, str)):
            out[name] = value
    return out


class SensorUnit:
    """Base: a named sensor on a shared scene and backend."""

    kind = "sensor"
    topics: dict[str, str] = {}  # relative topic -> message type

    def __init__(self, name: str, frame_id: str, output: Mapping[str, Any] | None = None):
        self.name = name
        self.frame_id = frame_id
        self.output = {k: check_param(f"{name}: output.{k}", p.value, p) for k, p in self.output_params().items()}
        self.set_output(output or {})

    # subclasses: config handling
    def params(self) -> dict[str, ParamInfo]:
        raise NotImplementedError

    def with_overrides(self, overrides: Mapping[str, Any]):
        raise NotImplementedError

    def reconfigure(self, config) -> None:
        raise NotImplementedError

    @staticmethod
    def output_params() -> dict[str, ParamInfo]:
        return {}

    def set_output(self, values: Mapping[str, Any]) -> None:
        """Check and apply output options (ConfigError names the key and the allowed values)."""
        specs = self.output_params()
        checked = dict(self.output)
        for key, value in values.items():
            if key not in specs:
                raise ConfigError(f"{self.name}: output.{key}: unknown output option; allowed: {', '.join(specs)}")
            checked[key] = check_param(f"{self.name}: output.{key}", value, specs[key])
        self.output = checked

    # subclasses: simulation
    @property
    def period_ns(self) -> int:
        raise NotImplementedError

    @property
    def rays_per_frame(self) -> int:
        raise NotImplementedError

    def simulate(self, pose, t0_ns: int):
        raise NotImplementedError

    def messages(self, result, stamp_ns: int, wanted: Iterable[str] | None = None) -> dict:
        raise NotImplementedError


def check_param(where: str, value: Any, info: ParamInfo) -> Any:
    """Validate one output option against its ParamInfo (the one rule vocabulary, radarays_ros.validate)."""
    kind = info.kind or type(info.value)
    if kind is list and value is None:
        value = []
    return param_rule(info).check(value, where)


def param_rule(info: ParamInfo) -> Rule:
    """The validation rule of a ParamInfo."""
    return Rule(kind=info.kind or type(info.value), lo=info.lo, hi=info.hi, choices=tuple(info.choices),
                nullable=info.nullable, doc=info.description)


class RadarUnit(SensorUnit):
    kind = "radar"
    topics = {
        "radar/image": "sensor_msgs/msg/Image",
        "radar/points": "sensor_msgs/msg/PointCloud2",
        "radar/image_cartesian": "sensor_msgs/msg/Image",
    }
    on_demand = ("radar/image_cartesian",)  # built only when someone asks (a subscriber, --pictures)

    def __init__(self, name: str, scene, backend, config="radarays_default", frame_id: str = "radar",
                 overrides: Mapping[str, Any] | None = None, output: Mapping[str, Any] | None = None,
                 frames: str = "host"):
        """frames: "device" runs whole frames on the Warp device (radar/warp_frame.py; needs the warp backend)."""
        from ..radar import RadarConfig, RadarSimulator

        self.frames = checked_frames(name, frames, backend)
        cfg = config if isinstance(config, RadarConfig) else resolve_radar_config(config, overrides)
        if isinstance(config, RadarConfig) and overrides:
            cfg = cfg.with_overrides(overrides)
        self.config = cfg
        if self.frames == "device":
            from ..radar.warp_frame import WarpRadarSimulator

            self.simulator = WarpRadarSimulator(cfg, scene, backend)
        else:
            self.simulator = RadarSimulator(cfg, scene, backend)
        super().__init__(name, frame_id, output)

    @staticmethod
    def output_params() -> dict[str, ParamInfo]:
        return radar_output_params()

    def params(self) -> dict[str, ParamInfo]:
        return radar_params(self.config)

    def with_overrides(self, overrides):
        return self.config.with_overrides(overrides)

    def reconfigure(self, config) -> None:
        self.simulator.reconfigure(config)
        self.config = config

    @property
    def period_ns(self) -> int:
        return limits.period_ns(self.config.azimuth.rate_hz, "azimuth.rate_hz")

    @property
    def rays_per_frame(self) -> int:
        return int(self.config.azimuth.count * self.config.beam.samples * self.config.tracing.passes)

    def simulate(self, pose, t0_ns: int):
        return self.simulator.simulate(pose, int(t0_ns))

    def messages(self, result, stamp_ns: int, wanted: Iterable[str] | None = None) -> dict:
        from ..io import messages
        from ..io import radar_image as rio

        wanted = set(self.topics) - set(self.on_demand) if wanted is None else set(wanted)
        out = {}
        if "radar/image" in wanted:
            out["radar/image"] = rio.radar_image_msg(result, stamp_ns, self.frame_id, self.output["image_layout"],
                                                     self.output["image_encoding"])
        if "radar/points" in wanted:
            out["radar/points"] = rio.radar_points_msg(
                result, stamp_ns, self.frame_id, k=self.output["points_k"],
                threshold=self.output["points_threshold"], min_value=self.output["points_min_value"])
        if "radar/image_cartesian" in wanted:
            out["radar/image_cartesian"] = messages.rgb_image(self.cartesian(result), stamp_ns, self.frame_id)
        return out

    def cartesian(self, result) -> np.ndarray:
        """Bird's-eye RGB picture of a frame (sensor at the centre, forward up)."""
        from ..io.radar_image import cartesian_image

        return cartesian_image(result, max_range=self.output["cartesian_max_range"] or None,
                               size_px=self.output["cartesian_pixels"])


class LidarUnit(SensorUnit):
    kind = "lidar"

    def __init__(self, name: str, scene, backend, config="VLP-16", frame_id: str | None = None,
                 overrides: Mapping[str, Any] | None = None, output: Mapping[str, Any] | None = None,
                 frames: str = "host", seed: int | None = None):
        """seed: of the noise, instead of the config's (`radarays lidar --seed`)."""
        from lidar_ros import load_sensor
        from lidar_ros.config import LidarConfig

        self.frames = checked_frames(name, frames, backend)
        cfg = config if isinstance(config, LidarConfig) else load_sensor(str(config), dict(overrides or {}))
        if isinstance(config, LidarConfig) and overrides:
            cfg = cfg.with_overrides(overrides)
        self.config = cfg
        self.seed = seed
        self.simulator = self._simulator(cfg, scene, backend)
        super().__init__(name, frame_id or cfg.frame_id, output)

    @property
    def topics(self) -> dict[str, str]:  # type: ignore[override]
        topics = {"points": "sensor_msgs/msg/PointCloud2"}
        if self.config.planar:
            topics["scan"] = "sensor_msgs/msg/LaserScan"
        topics.update(_LIDAR_EXTRA_TOPICS.get(self.config.kind, {}))
        if self.config.effects.beam.dual and self.config.layout != "velodyne":  # ouster-ros: second-return cloud
            topics["points2"] = "sensor_msgs/msg/PointCloud2"
        return topics

    on_demand: tuple = ()

    @staticmethod
    def output_params() -> dict[str, ParamInfo]:
        return lidar_output_params()

    def params(self) -> dict[str, ParamInfo]:
        return {key: ParamInfo(value, f"lidar sensor key '{key}' (see {self.config.origin})")
                for key, value in flatten(self.config.to_dict()).items()}

    def with_overrides(self, overrides):
        return self.config.with_overrides(overrides)

    def reconfigure(self, config) -> None:
        self.simulator = self._simulator(config, self.simulator.scene, self.simulator.backend)
        self.config = config

    def _simulator(self, config, scene, backend):
        """The host-path simulator, or the device-frame one (toolbox II effects then run on the host:
        lidar_ros.warp_frame.host_only_effects)."""
        if self.frames == "device":
            from lidar_ros.warp_frame import WarpLidarSimulator

            return WarpLidarSimulator(config, scene, backend, seed=self.seed, sink=_lidar_sink())
        from lidar_ros import LidarSimulator

        return LidarSimulator(config, scene, backend, seed=self.seed, sink=_lidar_sink())

    @property
    def period_ns(self) -> int:
        return limits.period_ns(self.config.rate_hz, "rate_hz")

    @property
    def rays_per_frame(self) -> int:
        return int(self.config.rows * self.config.cols)

    def simulate(self, pose, t0_ns: int):
        # the pose (a mount, a tf lookup) is that of frame_id, the frame the points are reported in; where the
        # rays are cast from another frame (Ouster: os_sensor rays, os_lidar points) the rays' pose follows
        return self.simulator.simulate(_ray_pose(pose, self.config.point_transform), int(t0_ns))

    def messages(self, result, stamp_ns: int, wanted: Iterable[str] | None = None) -> dict:
        from ..io import lidar_clouds as lio

        wanted = set(self.topics) if wanted is None else set(wanted)
        # a sweep stamped at its start gets its layout's own stamp (velodyne: the last firing)
        stamp = None if stamp_ns == result.t0_ns else stamp_ns
        out = {}
        if "points" in wanted:
            out["points"] = lio.pointcloud_msg(result, stamp, self.frame_id, self.config.layout,
                                              ground_truth=tuple(self.output["ground_truth"] or ()))
        if "scan" in wanted and self.config.planar:
            out["scan"] = lio.laserscan_msg(result, stamp, self.frame_id)
        if "range" in wanted and self.config.kind == "cone":
            out["range"] = lio.range_msg(result, stamp, self.frame_id)
        if wanted & {"depth/image", "depth/camera_info"} and self.config.kind == "depth_camera":
            out["depth/image"], out["depth/camera_info"] = lio.depth_msgs(result, stamp, self.frame_id)
        if "points2" in wanted and result.second is not None:  # ouster-ros: the second return, stamped as points
            out["points2"] = lio.pointcloud_msg(result.second, stamp if stamp is not None else result.t0_ns,
                                               self.frame_id, self.config.layout,
                                               ground_truth=tuple(self.output["ground_truth"] or ()))
        return out

    def livox_custom(self, result, package: str = "livox_ros_driver"):
        """The Livox CustomMsg of a frame (per-point offset time, as FAST-LIO reads it), stamped at its
        timebase. Not one of `topics`: a ROS node would need the driver's message package to publish it."""
        from ..io.lidar_clouds import livox_custom_msg

        return livox_custom_msg(result, self.frame_id, package=package)


# topics of the lidar toolbox's other sensor kinds (lidar_ros/patterns/cone.py, depth_camera.py)
_LIDAR_EXTRA_TOPICS = {"cone": {"range": "sensor_msgs/msg/Range"},
                       "depth_camera": {"depth/image": "sensor_msgs/msg/Image",
                                        "depth/camera_info": "sensor_msgs/msg/CameraInfo"}}


SENSOR_KINDS = {"radar": RadarUnit, "lidar": LidarUnit}


def sensor_topic(namespace: str, relative: str) -> str:
    """The one naming rule of sensor topics (bags of `radarays run`, the rig node, the single nodes).

    A sensor's outputs live under its name: `namespace/relative`. An output whose first part repeats
    the namespace's last part is not doubled, so the radar named `radar` publishes /radar/image (as
    radar_node does) and a radar named `front` publishes /front/radar/image; a lidar named `velodyne`
    publishes /velodyne/points. An empty namespace leaves the relative name (the node's namespace).
    """
    namespace = namespace.rstrip("/")
    if not namespace:
        return relative
    last = namespace.rsplit("/", 1)[-1]
    head, _, rest = relative.partition("/")
    if rest and head == last:
        relative = rest
    return f"{namespace}/{relative}"


def topic_messages(unit: SensorUnit, result, stamp_ns: int, namespace: str = "",
                   wanted: Iterable[str] | None = None) -> dict[str, Any]:
    """{absolute topic: message} of one frame: `unit.messages` on the topics of `sensor_topic`, as a bag
    (`radarays run`, `radarays radar|lidar --out X.mcap`) holds them; a node publishes the same messages
    on the same names relative to its namespace."""
    return {"/" + sensor_topic(namespace.strip("/"), relative): msg
            for relative, msg in unit.messages(result, stamp_ns, wanted).items()}


def header_stamp(msg) -> int:
    """Nanoseconds of a message's header stamp."""
    return int(msg.header.stamp.sec) * 1_000_000_000 + int(msg.header.stamp.nanosec)


def make_unit(kind: str, name: str, scene, backend, **kwargs) -> SensorUnit:
    """A RadarUnit or LidarUnit by kind name."""
    if kind not in SENSOR_KINDS:
        raise ConfigError(f"sensor '{name}': unknown type '{kind}'; allowed: {', '.join(SENSOR_KINDS)}")
    return SENSOR_KINDS[kind](name, scene, backend, **kwargs)


def poses_over(pose_source, t0_ns: int, period_ns: int, samples_per_s: float = 200.0):
    """A Trajectory sampling `pose_source(times) -> (N,4,4)` over one sweep [t0, t0 + period]."""
    from ..world.trajectory import Trajectory

    n = max(2, int(math.ceil(period_ns * 1e-9 * samples_per_s)) + 1)
    times = t0_ns + np.linspace(0, period_ns, n).round().astype(np.int64)
    times = np.unique(times)
    return Trajectory(times, pose_source(times))


def _ray_pose(pose, point_transform):
    """World <- ray frame from world <- point frame: pose · (point <- ray); a Trajectory pose by pose."""
    from ..world.trajectory import Trajectory

    m = np.asarray(point_transform, np.float64)
    if np.array_equal(m, np.eye(4)):
        return pose
    if isinstance(pose, Trajectory):
        return Trajectory(pose.t_ns, pose.poses @ m)
    return np.asarray(pose, np.float64) @ m


def _lidar_sink():
    """The driver-layout frame sink: lidar frames are written straight into their PointCloud2 layout."""
    from ..io.lidar_clouds import FrameCloud

    return FrameCloud.of
