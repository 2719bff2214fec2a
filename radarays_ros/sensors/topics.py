"""The one naming rule of sensor topics, and one frame's messages on those topics."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable

if TYPE_CHECKING:
    from .units import SensorUnit


# Topic and frame names of the drivers a lidar layout imitates (their defaults, from their sources):
# velodyne_pointcloud publishes `velodyne_points` in frame `velodyne`; livox_ros_driver2 `livox/lidar` and
# `livox/imu` in `livox_frame`; ouster-ros `/ouster/points`, `/ouster/points2`, `/ouster/imu`, `/ouster/metadata`
# in `os_lidar`.
# Relative names stay relative (under the node's namespace), as the drivers' own.
DRIVER_NAMES = {
    "velodyne": ({"points": "velodyne_points"}, "velodyne"),
    "livox": ({"points": "livox/lidar", "imu": "livox/imu"}, "livox_frame"),
    "livox_xyzrtl": ({"points": "livox/lidar"}, "livox_frame"),
    "ouster": ({"points": "ouster/points", "points2": "ouster/points2", "imu": "ouster/imu",
                "metadata": "ouster/metadata"}, "os_lidar"),
    "ouster_native": ({"points": "ouster/points", "points2": "ouster/points2", "imu": "ouster/imu",
                       "metadata": "ouster/metadata"}, "os_lidar"),
}


def driver_names(layout: str) -> tuple[dict[str, str], str] | None:
    """({relative output: the driver's topic}, the driver's frame) of a cloud layout, or None."""
    return DRIVER_NAMES.get(layout)


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
