"""ROS 2 messages built from arrays, as rosbags (Jazzy) message objects.

This is the one place that knows message layouts. The bag writer serialises these objects with
rosbags; the nodes publish the same objects' CDR bytes, serialised by rosbags (`ros/convert.to_cdr`,
rclpy's raw publish), so what a node publishes is byte for byte what a bag contains.
"""
from __future__ import annotations

import numpy as np
from rosbags.typesys import Stores, get_typestore

from ..errors import ConfigError

TYPESTORE = get_typestore(Stores.ROS2_JAZZY)
_T = TYPESTORE.types

Time = _T["builtin_interfaces/msg/Time"]
Header = _T["std_msgs/msg/Header"]
Image = _T["sensor_msgs/msg/Image"]
PointField = _T["sensor_msgs/msg/PointField"]
PointCloud2 = _T["sensor_msgs/msg/PointCloud2"]
LaserScan = _T["sensor_msgs/msg/LaserScan"]
Clock = _T["rosgraph_msgs/msg/Clock"]
TFMessage = _T["tf2_msgs/msg/TFMessage"]
TransformStamped = _T["geometry_msgs/msg/TransformStamped"]
Transform = _T["geometry_msgs/msg/Transform"]
Vector3 = _T["geometry_msgs/msg/Vector3"]
Quaternion = _T["geometry_msgs/msg/Quaternion"]

# sensor_msgs/PointField datatype constants, keyed by numpy dtype (little endian)
POINTFIELD_TYPES = {
    np.dtype("int8"): 1,
    np.dtype("uint8"): 2,
    np.dtype("int16"): 3,
    np.dtype("uint16"): 4,
    np.dtype("int32"): 5,
    np.dtype("uint32"): 6,
    np.dtype("float32"): 7,
    np.dtype("float64"): 8,
}


def stamp(t_ns: int) -> Time:
    """builtin_interfaces/Time from integer nanoseconds."""
    t_ns = int(t_ns)
    return Time(sec=t_ns // 1_000_000_000, nanosec=t_ns % 1_000_000_000)


def header_stamp(msg) -> int:
    """Integer nanoseconds of a message's header stamp (the inverse of `stamp`)."""
    return int(msg.header.stamp.sec) * 1_000_000_000 + int(msg.header.stamp.nanosec)


def header(t_ns: int, frame_id: str) -> Header:
    return Header(stamp=stamp(t_ns), frame_id=str(frame_id))


def image(array: np.ndarray, t_ns: int, frame_id: str) -> Image:
    """mono8 from uint8, 32FC1 from float32, 16UC1 from uint16 (rows x columns as given)."""
    encodings = {np.dtype("uint8"): "mono8", np.dtype("float32"): "32FC1", np.dtype("uint16"): "mono16"}
    a = np.ascontiguousarray(array)
    if a.ndim != 2 or a.dtype not in encodings:
        raise ConfigError(f"image: expected a 2-D uint8, uint16 or float32 array, got {a.dtype} {a.shape}")
    a = a.astype(a.dtype.newbyteorder("<"), copy=False)
    return Image(
        header=header(t_ns, frame_id),
        height=a.shape[0],
        width=a.shape[1],
        encoding=encodings[a.dtype],
        is_bigendian=0,
        step=a.shape[1] * a.itemsize,
        data=a.reshape(-1).view(np.uint8),  # a view of the contiguous pixels, no copy
    )


def point_fields(dtype: np.dtype) -> list:
    """PointField list for a numpy structured dtype (offsets and padding kept as in the dtype)."""
    fields = []
    for name in dtype.names:
        sub, offset = dtype.fields[name][:2]
        base, count = (sub.base, int(np.prod(sub.shape))) if sub.shape else (sub, 1)
        key = base.newbyteorder("=") if base.byteorder in "<>" else base
        if key not in POINTFIELD_TYPES:
            raise ConfigError(f"point field '{name}': dtype {base} has no PointField datatype")
        fields.append(PointField(name=name, offset=offset, datatype=POINTFIELD_TYPES[key], count=count))
    return fields


def pointcloud2(points: np.ndarray, t_ns: int, frame_id: str, height: int = 1, is_dense: bool | None = None) -> PointCloud2:
    """PointCloud2 from a structured array; organized when height > 1 (len = height * width)."""
    pts = np.ascontiguousarray(points).reshape(-1)
    if pts.dtype.names is None:
        raise ConfigError("pointcloud2: expected a numpy structured array")
    if height < 1 or len(pts) % height:
        raise ConfigError(f"pointcloud2: {len(pts)} points do not split into {height} rows")
    width = len(pts) // height
    if is_dense is None:
        is_dense = not any(np.isnan(pts[c]).any() for c in ("x", "y", "z") if c in pts.dtype.names)
    return PointCloud2(
        header=header(t_ns, frame_id),
        height=height,
        width=width,
        fields=point_fields(pts.dtype),
        is_bigendian=False,
        point_step=pts.dtype.itemsize,
        row_step=pts.dtype.itemsize * width,
        data=pts.view(np.uint8),  # a view of the contiguous points, no copy
        is_dense=bool(is_dense),
    )


def laserscan(ranges, t_ns: int, frame_id: str, *, angle_min: float, angle_increment: float,
              range_min: float, range_max: float, intensities=None, time_increment: float = 0.0,
              scan_time: float = 0.0) -> LaserScan:
    r = np.asarray(ranges, np.float32)
    inten = np.asarray(intensities if intensities is not None else [], np.float32)
    return LaserScan(
        header=header(t_ns, frame_id),
        angle_min=float(angle_min),
        angle_max=float(angle_min + angle_increment * max(len(r) - 1, 0)),
        angle_increment=float(angle_increment),
        time_increment=float(time_increment),
        scan_time=float(scan_time),
        range_min=float(range_min),
        range_max=float(range_max),
        ranges=r,
        intensities=inten,
    )


def clock(t_ns: int) -> Clock:
    return Clock(clock=stamp(t_ns))


def transform_stamped(matrix: np.ndarray, t_ns: int, parent: str, child: str) -> TransformStamped:
    from ..world.transforms import matrix_to_quaternion

    x, y, z, w = matrix_to_quaternion(matrix[:3, :3])
    tx, ty, tz = (float(v) for v in matrix[:3, 3])
    return TransformStamped(
        header=header(t_ns, parent),
        child_frame_id=child,
        transform=Transform(translation=Vector3(x=tx, y=ty, z=tz), rotation=Quaternion(x=x, y=y, z=z, w=w)),
    )


def tf_message(transforms: list) -> TFMessage:
    return TFMessage(transforms=list(transforms))


def msgtype_of(msg) -> str:
    """'sensor_msgs/msg/Image' for a rosbags message object."""
    return msg.__msgtype__


def rgb_image(array: np.ndarray, t_ns: int, frame_id: str) -> Image:
    """rgb8 Image from an (H, W, 3) uint8 picture (e.g. a radar Cartesian view for rviz)."""
    a = np.ascontiguousarray(array)
    if a.ndim != 3 or a.shape[2] != 3 or a.dtype != np.uint8:
        raise ConfigError(f"rgb_image: expected an (H, W, 3) uint8 array, got {a.dtype} {a.shape}")
    return Image(header=header(t_ns, frame_id), height=a.shape[0], width=a.shape[1], encoding="rgb8",
                 is_bigendian=0, step=3 * a.shape[1], data=np.frombuffer(a.tobytes(), np.uint8))


Imu = _T["sensor_msgs/msg/Imu"]


def imu(gyro, accel, t_ns: int, frame_id: str, gyro_variance: float = 0.0, accel_variance: float = 0.0) -> Imu:
    """sensor_msgs/Imu without an orientation estimate (orientation_covariance[0] = -1, REP-145), as the
    lidar drivers publish their IMU; the variances on the diagonals of the rate and acceleration covariances."""
    def diagonal(v: float) -> np.ndarray:
        return np.diag([float(v)] * 3).ravel()

    no_orientation = np.zeros(9)
    no_orientation[0] = -1.0
    gx, gy, gz = (float(v) for v in gyro)
    ax, ay, az = (float(v) for v in accel)
    return Imu(header=header(t_ns, frame_id), orientation=Quaternion(x=0.0, y=0.0, z=0.0, w=1.0),
               orientation_covariance=no_orientation, angular_velocity=Vector3(x=gx, y=gy, z=gz),
               angular_velocity_covariance=diagonal(gyro_variance),
               linear_acceleration=Vector3(x=ax, y=ay, z=az), linear_acceleration_covariance=diagonal(accel_variance))


String = _T["std_msgs/msg/String"]


def string(text: str) -> String:
    """std_msgs/String (e.g. ouster-ros /ouster/metadata: the sensor's metadata JSON)."""
    return String(data=str(text))
