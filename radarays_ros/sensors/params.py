"""A sensor's tunable values as data: ParamInfo (value, doc, allowed range) and its check.

ROS parameter descriptors (ros/params.py, ros/node_params.py) and the sensor units' output options are
built from these, and checked with the one rule vocabulary (radarays_ros.validate), so a node parameter,
a scenario key and a `--set` override are refused with the same message.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Mapping

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
        "points_pfa": ParamInfo(1e-5, "radar/points of physical images: CA-CFAR false-alarm rate per bin (the image's "
                                "correlated bins counted as effective cells; replaces points_threshold)", 1e-12, 0.5, kind=float),
        "radar_scan": ParamInfo(False, "also radar/scan: radar/points' detections as radar_msgs/RadarScan (a node "
                                "needs ros-jazzy-radar-msgs; bags carry its definition)", kind=bool),
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


# -- where a frame runs (a node parameter `<sensor>.frames`, a scenario sensor key `frames`) --------
FRAMES_PARAM = ParamInfo("host", "where a frame's sensor model runs: host (numpy over any backend) or device "
                         "(the whole frame in Warp kernels; needs backend warp; radar/warp_frame.py, "
                         "lidar_ros/warp_frame.py)", choices=("host", "device"))
