"""One sensor of a rig: its config, its simulator and the messages one frame becomes.

The ROS nodes and the scenario runner both drive sensors through these units, so a node publishes
the same messages a scenario writes into its bag. No ROS here: messages are rosbags objects built by
radarays_ros.io; the node converts them for rclpy.

    unit = make_unit("radar", "front_radar", scene, backend, config="navtech_cir204", frame_id="radar")
    result = unit.simulate(pose_or_trajectory, t0_ns)
    msgs = unit.messages(result, t0_ns)          # {"radar/image": Image, "radar/points": ..., ...}
    topic_messages(unit, result, t0_ns, "front") # the same on the bag's topics: {"/front/radar/image": ...}

Beside it: a unit's tunable values (`params`: ParamInfo and its check), the topic naming rule (`topics`),
where a sensor is during a sweep (`poses`); radar presets are found by radar.config.resolve_radar_config.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping

import numpy as np

from .. import limits
from ..errors import ConfigError
from .params import FRAMES_PARAM, ParamInfo, check_param, flatten, lidar_output_params, radar_output_params, radar_params


# -- where a frame runs (a node parameter `<sensor>.frames`, a scenario sensor key `frames`) --------
def checked_frames(name: str, frames: str, backend) -> str:
    """`frames` checked against FRAMES_PARAM and the backend (device frames need the warp backend)."""
    frames = check_param(f"{name}: frames", frames, FRAMES_PARAM)
    if frames == "device":
        from ..tracing.warp import require_device_backend

        require_device_backend(backend, name)
    return frames


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
        from ..radar.config import resolve_radar_config

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
                threshold=self.output["points_threshold"], min_value=self.output["points_min_value"],
                pfa=self.output["points_pfa"])
        if "radar/image_cartesian" in wanted:
            out["radar/image_cartesian"] = messages.rgb_image(self.cartesian(result), stamp_ns, self.frame_id)
        if "radar/scan" in wanted and self.output.get("radar_scan"):
            from ..io.radar_scan import radar_scan_msg

            out["radar/scan"] = radar_scan_msg(
                result, stamp_ns, self.frame_id, k=self.output["points_k"],
                threshold=self.output["points_threshold"], min_value=self.output["points_min_value"])
        return out

    def set_output(self, values: Mapping[str, Any]) -> None:
        """As SensorUnit's; output.radar_scan adds radar/scan (radar_msgs/RadarScan) to this unit's topics."""
        super().set_output(values)
        self.topics = {**RadarUnit.topics, **({"radar/scan": "radar_msgs/msg/RadarScan"}
                                             if self.output.get("radar_scan") else {})}

    def cartesian(self, result) -> np.ndarray:
        """Bird's-eye RGB picture of a frame (sensor at the centre, forward up)."""
        from ..io.radar_image import cartesian_image

        return cartesian_image(result, max_range=self.output["cartesian_max_range"] or None,
                               size_px=self.output["cartesian_pixels"])


class LidarUnit(SensorUnit):
    kind = "lidar"

    def __init__(self, name: str, scene, backend, config="VLP-16", frame_id: str | None = None,
                 overrides: Mapping[str, Any] | None = None, output: Mapping[str, Any] | None = None,
                 frames: str = "host", seed: int | None = None, realistic: bool = False):
        """seed: of the noise, instead of the config's (`radarays lidar --seed`); realistic: the effects profile
        of `radarays lidar --realistic` under the overrides (a config given by name or file)."""
        from lidar_ros import load_sensor
        from lidar_ros.config import LidarConfig

        self.frames = checked_frames(name, frames, backend)
        cfg = config if isinstance(config, LidarConfig) else load_sensor(str(config), dict(overrides or {}),
                                                                         realistic=realistic)
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
        """The host-path simulator, or the device-frame one (which refuses the settings it does not
        implement: lidar_ros.warp_frame.DEVICE_SUPPORT)."""
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
        # stamp_ns is the sweep start on the caller's clock, which may run shifted from the simulation's (a
        # scenario's bag_time): each message gets its layout's own stamp (velodyne: the last firing) on that clock
        shift = int(stamp_ns) - int(result.t0_ns)
        stamp = None if shift == 0 else int(stamp_ns)
        ground_truth = tuple(self.output["ground_truth"] or ())
        out = {}
        if "points" in wanted:
            out["points"] = lio.pointcloud_msg(result, None, self.frame_id, self.config.layout,
                                              ground_truth=ground_truth, clock_shift_ns=shift)
        if "scan" in wanted and self.config.planar:
            out["scan"] = lio.laserscan_msg(result, stamp, self.frame_id)
        if "range" in wanted and self.config.kind == "cone":
            out["range"] = lio.range_msg(result, stamp, self.frame_id)
        if wanted & {"depth/image", "depth/camera_info"} and self.config.kind == "depth_camera":
            out["depth/image"], out["depth/camera_info"] = lio.depth_msgs(result, stamp, self.frame_id)
        if "points2" in wanted and result.second is not None:  # ouster-ros: the second return, stamped as points
            out["points2"] = lio.pointcloud_msg(result.second, result.t0_ns, self.frame_id, self.config.layout,
                                               ground_truth=ground_truth, clock_shift_ns=shift)
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


def make_unit(kind: str, name: str, scene, backend, **kwargs) -> SensorUnit:
    """A RadarUnit or LidarUnit by kind name."""
    if kind not in SENSOR_KINDS:
        raise ConfigError(f"sensor '{name}': unknown type '{kind}'; allowed: {', '.join(SENSOR_KINDS)}")
    return SENSOR_KINDS[kind](name, scene, backend, **kwargs)


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


# names that lived in this module before it was split by idea: where they live now (PEP 562, so code
# written against the old layout keeps working; the package itself imports them from their homes)
_MOVED = {"param_rule": "radarays_ros.sensors.params", "sensor_topic": "radarays_ros.sensors.topics",
          "topic_messages": "radarays_ros.sensors.topics", "poses_over": "radarays_ros.sensors.poses",
          "header_stamp": "radarays_ros.io.messages", "resolve_radar_config": "radarays_ros.radar.config"}


def __getattr__(name: str):
    if name in _MOVED:
        import importlib
        import warnings

        warnings.warn(f"radarays_ros.sensors.units.{name} moved to {_MOVED[name]}.{name}", DeprecationWarning,
                      stacklevel=2)
        return getattr(importlib.import_module(_MOVED[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
