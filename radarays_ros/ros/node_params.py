"""The sensor nodes' own parameters (tables of ParamInfo) and their `--help`: no ROS here, so `--help`
answers without a ROS 2 install. ros/params.py turns a ParamInfo into a ROS ParameterDescriptor; the
`gazebo.*` parameters are in ros/gazebo_link.py, the sensor models' own (`sensor.*`, `output.*`) come
from their configs (radarays_ros/sensors/params.py)."""
from __future__ import annotations

from ..sensors.params import FRAMES_PARAM, ParamInfo, param_rule
from ..validate import plain
from .gazebo_link import GAZEBO_PARAMS, RIG_GAZEBO_PARAMS

DEFAULT_CONFIG = {"radar": "radarays_default", "lidar": "VLP-16"}  # preset of a sensor without `config`
NODE_PARAMS = {
    "world": ParamInfo("", "SDF world, model directory, URDF or mesh map the sensors see, or a shipped world's "
                       "name (office, street, hall; `radarays world list`) (required)"),
    "materials": ParamInfo("", "material library YAML merged over the shipped one ('' = shipped only)"),
    "ignore": ParamInfo([""], "model/link/visual name globs left out of the world (e.g. the robot itself)", kind=list),
    "backend": ParamInfo("embree", "ray-tracing backend: embree (CPU) or warp (NVIDIA Warp)",
                         choices=("embree", "warp", "optix")),
    "device": ParamInfo("auto", "device of the warp backend (auto = CUDA when present)",
                        choices=("auto", "cpu", "cuda")),
    "threads": ParamInfo(0, "ray-tracing threads (0 = all cores)", 0, 1024, kind=int),
    "world_frame": ParamInfo("map", "fixed frame of the world geometry (tf lookups go world_frame <- sensor frame)"),
    "pose_source": ParamInfo("tf", "sensor pose from tf (moving sensor), the fixed_pose parameter (static sensor) "
                             "or the Gazebo link gazebo_parent x fixed_pose (needs gazebo.enable)",
                             choices=("tf", "fixed", "gazebo")),
    "tf_tolerance": ParamInfo(0.1, "seconds a pose may be taken from the newest/oldest tf sample instead of failing",
                              0.0, 10.0, kind=float),
    "pose_samples_per_second": ParamInfo(200.0, "tf poses sampled per second of a sweep (motion distortion)",
                                         1.0, 10000.0, kind=float),
    "sync_topic": ParamInfo("", "when set, each message on this topic triggers one frame stamped with its stamp "
                            "(instead of the timer); any message type whose first field is a std_msgs/Header"),
    "sync_type": ParamInfo("sensor_msgs/msg/Image", "message type of sync_topic"),
    "reliable": ParamInfo(True, "publish RELIABLE, as velodyne_pointcloud and livox_ros_driver2 do: reaches "
                          "default-QoS subscribers (rclpy, rclcpp, rviz) and BEST_EFFORT ones alike; false = the "
                          "sensor-data BEST_EFFORT QoS. Per topic: qos_overrides.<topic>.publisher.reliability|"
                          "depth|history", kind=bool),
    "qos_depth": ParamInfo(10, "publisher queue depth (KEEP_LAST; 10 as velodyne_pointcloud and rclcpp's default)",
                           1, 1000, kind=int),
    "imu": ParamInfo(True, "lidars whose driver publishes an IMU (Ouster: ouster-ros 100 Hz; Livox Mid-360/HAP: "
                     "livox_ros_driver2 200 Hz, in g) publish <sensor>/imu from their pose source, with datasheet noise",
                     kind=bool),
    "driver_names": ParamInfo(False, "a lidar's topics and frame as its driver names them: velodyne_points in "
                              "velodyne (velodyne_pointcloud); livox/lidar, livox/imu in livox_frame "
                              "(livox_ros_driver2); ouster/points, ouster/imu in os_lidar (ouster-ros); an explicit "
                              "frame_id wins", kind=bool),
    "sensor_tf": ParamInfo(True, "sensors declared in SDF (Gazebo) publish world_frame -> their frame on /tf at "
                           "each frame, so rviz can place them (off when another node publishes those frames)",
                           kind=bool),
    "lazy": ParamInfo(True, "skip the simulation while nobody subscribes to the sensor's topics", kind=bool),
    "diagnostics_period": ParamInfo(1.0, "seconds between /diagnostics messages", 0.05, 3600.0, kind=float),
}
READ_ONLY = {"backend", "threads", "sync_topic", "sync_type", "reliable", "qos_depth", "diagnostics_period", "imu", "driver_names", "sensor_tf",
             *GAZEBO_PARAMS, *RIG_GAZEBO_PARAMS}
SENSOR_PARAMS = {
    "frame_id": ParamInfo("", "frame of the sensor's messages and of its tf lookup ('' = the sensor's default)"),
    "fixed_pose": ParamInfo([0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
                            "pose_source=fixed: x y z roll pitch yaw (m, rad) of the sensor in world_frame; "
                            "pose_source=gazebo: its mount on gazebo_parent", kind=list),
    "gazebo_parent": ParamInfo("", "pose_source=gazebo: scoped Gazebo link carrying the sensor (model::link)"),
    "frames": FRAMES_PARAM,  # read when the sensor is built (read-only)
}
RIG_PARAMS = {
    "sensors": ParamInfo([""], "names of the rig's sensors; each has NAME.type and NAME.config", kind=list),
}
RIG_SENSOR_PARAMS = {
    "type": ParamInfo("lidar", "radar or lidar", choices=("radar", "lidar")),
    "config": ParamInfo("", "preset name or config file"),
}


def config_param(kind: str) -> dict[str, ParamInfo]:
    """The `config` parameter of the single-sensor node of `kind` (radar_node, lidar_node)."""
    return {"config": ParamInfo(DEFAULT_CONFIG[kind], f"{kind} preset name or config file")}


def help_text(node_name: str, kind: str) -> str:
    """Usage and the node-level parameters with their defaults and descriptions."""
    prefix = "NAME." if kind == "rig" else ""
    groups = [("node", NODE_PARAMS), ("per sensor" if kind == "rig" else "sensor", SENSOR_PARAMS),
              ("Gazebo", {**GAZEBO_PARAMS, **(RIG_GAZEBO_PARAMS if kind == "rig" else {})})]
    lines = [f"usage: ros2 run radarays_ros {node_name} [--lifecycle] --ros-args [--params-file FILE.yaml] [-p NAME:=VALUE ...]",
             f"       python -m radarays_ros.ros.{node_name} --ros-args ...", ""]
    if kind == "rig":
        lines += ["sensor_rig runs the sensors listed in `sensors` (e.g. [front_radar, top_lidar]); each NAME has",
                  "NAME.type (radar | lidar), NAME.config (a preset or a config file; default radarays_default /",
                  "VLP-16) and the per-sensor parameters below under NAME.", ""]
    else:
        default = DEFAULT_CONFIG[kind]
        lines += [f"config (default {default!r}): {kind} preset name or config file "
                  f"(`radarays {kind} --help`; lidar presets: `radarays lidar --list-presets`)", ""]
    for title, params in groups:
        lines.append(f"{title} parameters:")
        for name, info in params.items():
            shown = prefix + name if params is SENSOR_PARAMS else name
            lines.append(f"  {shown} (default {plain(info.value)}): {info.description}{allowed_suffix(info)}")
        lines.append("")
    lines.append(f"The sensor model's own parameters ({prefix}sensor.*, {prefix}output.*) depend on its config: "
                 f"`ros2 param list /{node_name}` and `ros2 param describe` show them with their ranges. "
                 "Example params files: config/ros/.")
    return "\n".join(lines)


def allowed_suffix(info: ParamInfo) -> str:
    """' (allowed ...)' for a parameter with a range or choices: the words of its errors and descriptor."""
    if info.choices or info.lo is not None or info.hi is not None:
        return f" (allowed {param_rule(info).allowed()})"
    return ""
