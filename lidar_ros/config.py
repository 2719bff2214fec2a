"""Lidar sensor configuration: presets by name, sensor files by path, validated into a frozen LidarConfig.

A sensor file is YAML with a `type` and the keys of that type (see lidar_ros/patterns/*), plus the
keys every sensor has:

    type: spherical | velodyne | ouster | rays | planar | risley | sweep | mirror | cone | depth_camera
    rate_hz: 10                  # scans per second
    range: {min: 0.1, max: 100}  # metres; hits nearer than min are not seen (rays start there, as in
                                 # Gazebo's gpu_lidar), farther than max are misses
    layout: gazebo               # PointCloud2 layout: lidar_ros.sink.LAYOUTS
    organized: true              # organized cloud (NaN points for misses) or only the returns
    time_reference: last         # velodyne `time` field relative to the last (or first) firing
    intensity: reflectivity      # which physics field is the scan's `intensity`
    frame_id: lidar              # default: the driver's (Ouster: os_lidar, or os_sensor with point_frame: sensor)
    seed: 0                      # per-laser biases and per-scan noise
    max_bounces: 4               # mirror reflections followed per ray
    surface: {...}               # detection limit + intensity scales (lidar_ros.physics.SurfaceConfig)
    noise: {...}                 # range noise (lidar_ros.physics.NoiseConfig)
    beam, detection, signal, weather, tof: {...}  # effects, all off by default (physics/effects_config.py)

`load_sensor(name_or_path, overrides)` also accepts an Ouster metadata JSON or a ros-drivers/velodyne
calibration YAML as the sensor itself. Overrides are dotted keys ("range.max", "noise.sigma") applied
to the sensor file before validation, so an override is checked exactly like the file.
"""
from __future__ import annotations

import copy
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from radarays_ros import limits
from radarays_ros.errors import ConfigError
from radarays_ros.resources import find_shipped, shipped_example, shipped_names

from .patterns import (Pattern, angles_of, cone, depth_camera, grid, mirror, ouster, planar, rays, risley, sweep,
                       velodyne)
from .physics import NoiseConfig, SurfaceConfig
from .physics.effects_config import EffectsConfig
from .physics._validate import fail
from .physics.ambient import SKY_OF_LEVEL
from .physics.column_timing import SHARED_FRAME_MEDIANS_US
from .physics.photon_calibration import BACKGROUND_PHOTONS
from .sink import LAYOUTS
from .spec import SpecReader, read_yaml, set_dotted


BUILDERS: dict[str, Callable[[SpecReader, Path, float], Pattern]] = {
    "spherical": grid.build,
    "velodyne": velodyne.build,
    "ouster": ouster.build,
    "rays": rays.build,
    "planar": planar.build,
    "risley": risley.build,
    "sweep": sweep.build,
    "mirror": mirror.build,
    "cone": cone.build,
    "depth_camera": depth_camera.build,
}
DEFAULT_LAYOUT = {"velodyne": "velodyne", "ouster": "ouster", "spherical": "gazebo", "planar": "xyzi", "risley": "livox",
                  "sweep": "livox"}
INTENSITY_FIELDS = ("reflectivity", "velodyne_intensity", "ouster_signal", "ouster_reflectivity")
DEFAULT_INTENSITY = {"velodyne": "velodyne_intensity", "ouster": "ouster_signal"}
TIME_REFERENCES = ("last", "first")
MIN_RATE_HZ = 1e-6  # one scan in 11.6 days; a denormal rate would make an infinite period
COMMON_KEYS = ("type", "name", "description", "source", "model", "rate_hz", "range", "layout", "organized",
               "time_reference", "intensity", "frame_id", "seed", "max_bounces", "surface", "noise",
               *EffectsConfig.SECTIONS)


@dataclass(frozen=True, eq=False)
class LidarConfig:
    """A validated sensor: per-pixel ray table [rows, cols] plus timing, range limits, layout and physics.

    Arrays are read-only. Rows are beams in the driver's ring order (`ring[r]` is row r's ring).
    `directions`/`origins` are in the sensor frame; `azimuth`/`elevation` are the nominal ray angles
    (azimuth counter-clockwise from +x, elevation up from the xy plane); `time` is each pixel's firing
    time in seconds from the scan start.
    """

    name: str
    kind: str
    origin: str  # the file it came from (for messages)
    spec: Mapping[str, Any]  # the validated source mapping (overrides apply to it)
    base_dir: str
    rows: int
    cols: int
    directions: np.ndarray  # (R, C, 3) float32
    origins: np.ndarray  # (R, C, 3) float32
    azimuth: np.ndarray  # (R, C) float32 rad
    elevation: np.ndarray  # (R, C) float32 rad
    time: np.ndarray  # (R, C) float64 s from scan start
    column_times: np.ndarray  # (M,) float64 measurement-column firing times
    pixel_column: np.ndarray  # (R, C) int measurement column of each pixel
    ring: np.ndarray  # (R,) uint16
    laser_index: np.ndarray  # (R,) physical laser of each row
    range_offset: np.ndarray  # (R,) float32 added to the traced distance
    pixel_shift: np.ndarray  # (R,) Ouster destagger shifts
    rate_hz: float
    period: float
    range_min: float
    range_max: float
    layout: str
    organized: bool
    planar: bool
    planar_info: Mapping[str, float]
    time_reference: str
    intensity_field: str
    frame_id: str
    seed: int
    max_bounces: int
    surface: SurfaceConfig
    noise: NoiseConfig
    effects: EffectsConfig = EffectsConfig()  # beam footprint, echoes, detection curve, signal, weather, ToF
    # points are reported in frame_id = point_transform (4x4) applied to the ray frame (the frame the pose
    # places); ray_frame_id names that frame when they differ (Ouster: os_sensor -> os_lidar)
    point_transform: np.ndarray = field(default_factory=lambda: np.eye(4))
    ray_frame_id: str | None = None
    retime: Callable[[float], np.ndarray] | None = field(default=None, repr=False)
    # driver-exact reporting (patterns/velodyne.py): points along point_directions from point_origins instead
    # of the traced rays, and the driver's stamp, times and rows (DriverTable); None: the physical rays
    point_directions: np.ndarray | None = field(default=None, repr=False)
    point_origins: np.ndarray | None = field(default=None, repr=False)
    driver: object | None = field(default=None, repr=False)
    driver_metadata: str | None = field(default=None, repr=False)  # ouster-ros /ouster/metadata JSON (Ouster)
    # the IMU's mount: ray frame <- IMU (4x4) and its frame id (Ouster: os_imu); None: in the points' frame
    imu_transform: np.ndarray | None = field(default=None, repr=False)
    imu_frame_id: str | None = None
    derived: dict = field(default_factory=dict, repr=False)  # outputs' per-pixel tables computed from `time` once

    @property
    def n_lasers(self) -> int:
        return int(self.laser_index.max()) + 1

    @property
    def shape(self) -> tuple[int, int]:
        return self.rows, self.cols

    def with_overrides(self, overrides: Mapping[str, Any] | None) -> "LidarConfig":
        """A new config with dotted keys replaced ('columns', 'range.max', 'noise.sigma'), re-validated."""
        if not overrides:
            return self
        spec = dict(self.spec)
        for key, value in overrides.items():
            spec = set_dotted(spec, str(key), value)
        return build_config(spec, _overridden(self.origin), Path(self.base_dir))

    def to_dict(self) -> dict[str, Any]:
        """The source mapping (writable back as a sensor YAML)."""
        return copy.deepcopy(dict(self.spec))


def build_config(spec: Mapping[str, Any], origin: str, base_dir: Path) -> LidarConfig:
    """Validate a sensor mapping and precompute its ray table."""
    reader = SpecReader(spec, origin)
    kind = reader.choice("type", sorted(BUILDERS))
    for key in ("name", "description", "source", "model"):
        reader.raw(key, None)
    rate_hz = reader.number("rate_hz", 10.0, MIN_RATE_HZ, 1000.0)  # periods in int64 ns stay exact
    rng = reader.sub("range")
    range_min = rng.number("min", 0.0, 0.0, 1e5)
    range_max = rng.number("max", 100.0, 0.0, 1e6, lo_open=True)
    rng.finish()
    if range_max <= range_min:
        fail(f"{origin}: range.max", range_max, f"not above range.min = {range_min:g}", f"({range_min:g}, 1000000]")
    layout = reader.choice("layout", LAYOUTS, DEFAULT_LAYOUT.get(kind, "xyzi"))
    organized = reader.boolean("organized", True)
    time_reference = reader.choice("time_reference", TIME_REFERENCES, "last")
    intensity_field = reader.choice("intensity", INTENSITY_FIELDS, DEFAULT_INTENSITY.get(kind, "reflectivity"))
    frame_id = reader.text("frame_id", "") or None  # default: the pattern's point frame, else 'lidar'
    seed = reader.number("seed", 0, 0, 2**63 - 1, integer=True)
    max_bounces = reader.number("max_bounces", 4, 0, 64, integer=True)
    surface = SurfaceConfig.from_dict(reader.raw("surface", None), where=f"{origin}: surface")
    noise = NoiseConfig.from_dict(reader.raw("noise", None), where=f"{origin}: noise")
    effects = EffectsConfig.from_spec({name: reader.raw(name, None) for name in EffectsConfig.SECTIONS}, origin)

    pattern = BUILDERS[kind](reader, base_dir, rate_hz)
    reader.finish(COMMON_KEYS)
    rows, cols = pattern.shape  # each setting in range, their product too (before the per-ray arrays of a scan)
    limits.check_product(origin, {"rows": rows, "columns": cols, "beam.sub_rays": effects.beam.sub_rays,
                                  "echoes": 2 if effects.beam.dual else 1}, limits.MAX_LIDAR_RAYS, "rays per scan")
    if effects.tof.multipath and kind != "depth_camera":
        fail(f"{origin}: tof.multipath", True, f"needs a flood-lit camera, this sensor is type {kind}",
             "true for type depth_camera only")
    if pattern.driver is not None and effects.beam.dual:
        fail(f"{origin}: beam.return_mode", "dual", "driver.exact models single-return packets only",
             "strongest, last, first or mixed with driver.exact true")
    frame_id = frame_id or pattern.point_frame_id or "lidar"
    return _from_pattern(pattern, dict(
        name=str(spec.get("name") or Path(origin).stem), kind=kind, origin=origin, spec=copy.deepcopy(dict(spec)),
        base_dir=str(base_dir), rate_hz=float(rate_hz), range_min=float(range_min), range_max=float(range_max),
        layout=layout, organized=organized, planar=kind == "planar", planar_info=dict(pattern.planar),
        time_reference=time_reference, intensity_field=intensity_field, frame_id=frame_id, seed=int(seed),
        max_bounces=int(max_bounces), surface=surface, noise=noise, effects=effects,
    ))


def _readonly(a: np.ndarray, dtype=None) -> np.ndarray:
    out = np.ascontiguousarray(a, dtype=dtype)
    if out is a:
        out = out.copy()
    out.setflags(write=False)
    return out


def _from_pattern(p: Pattern, fields: dict) -> LidarConfig:
    rows, cols = p.shape
    norm = np.linalg.norm(p.directions, axis=-1, keepdims=True)
    directions = p.directions / norm
    az, el = angles_of(directions)
    return LidarConfig(
        rows=rows,
        cols=cols,
        directions=_readonly(directions, np.float32),
        origins=_readonly(p.origins, np.float32),
        azimuth=_readonly(az, np.float32),
        elevation=_readonly(el, np.float32),
        time=_readonly(p.pixel_times(), np.float64),
        column_times=_readonly(p.column_times, np.float64),
        pixel_column=_readonly(p.pixel_column, np.int64),
        ring=_readonly(p.ring, np.uint16),
        laser_index=_readonly(p.laser_index, np.int64),
        range_offset=_readonly(p.range_offset, np.float32),
        pixel_shift=_readonly(p.pixel_shift, np.int64),
        point_transform=_readonly(np.eye(4) if p.point_transform is None else p.point_transform, np.float64),
        ray_frame_id=p.ray_frame_id,
        period=float(p.period),
        retime=p.retime,
        point_directions=None if p.point_directions is None else _readonly(p.point_directions, np.float32),
        point_origins=None if p.point_origins is None else _readonly(p.point_origins, np.float32),
        driver=p.driver,
        driver_metadata=p.driver_metadata,
        imu_transform=None if p.imu_transform is None else _readonly(p.imu_transform, np.float64),
        imu_frame_id=p.imu_frame_id,
        **fields,
    )


# -- finding sensors ------------------------------------------------------------------------------
def list_presets() -> list[str]:
    """Names of the shipped sensor presets (package data lidar/presets/*.yaml)."""
    return shipped_names("lidar")


def _preset_path(name: str) -> Path | None:
    return find_shipped("lidar", name)


def _spec_from_file(path: Path) -> dict:
    """A sensor mapping from a sensor YAML, an Ouster metadata JSON or a velodyne calibration YAML."""
    if path.suffix.lower() == ".json":
        meta = ouster.read_metadata(path)  # fails early with the file named
        spec = {**_product_line_defaults(meta["prod_line"], len(meta["altitude_deg"]), meta["altitude_deg"]),
                "type": "ouster", "name": path.stem, "metadata": path.name}
        if meta["lidar_mode"] is not None:  # the mode the sensor ran in when the file was written
            spec["columns"], spec["rate_hz"] = meta["lidar_mode"][0], meta["lidar_mode"][1]
        if meta["udp_profile_lidar"].upper().endswith("_DUAL"):  # a dual-return profile: RANGE2 is the second strongest
            spec = set_dotted(spec, "beam.return_mode", "dual_strongest")
        if meta["udp_profile_lidar"].upper().startswith("RNG15"):  # low data rate: RANGE in 8 mm units (Ouster
            spec = set_dotted(spec, "noise.resolution", 0.008)     # firmware manual; the shared OS-0-128 LB frame)
        return spec
    data = read_yaml(path)
    if isinstance(data, dict) and "lasers" in data and "type" not in data:
        velodyne.read_calibration(path)
        # the product line where the laser count names one (16: VLP-16, 128: VLS-128; 32 and 64 are ambiguous)
        line = VELODYNE_BY_LASERS.get(len(data["lasers"]))
        defaults = {}
        if line is not None and _preset_path(line) is not None:
            preset = read_yaml(_preset_path(line))
            defaults = {k: v for k, v in preset.items() if k not in PRESET_ONLY_KEYS or k == "rate_hz"}
        return {**defaults, "type": "velodyne", "name": path.stem, "calibration": path.name}
    if not isinstance(data, dict):
        raise ConfigError(f"sensor file {path}: expected a mapping with a 'type' key")
    return data


VELODYNE_BY_LASERS = {16: "VLP-16", 128: "VLS-128"}
PRESET_ONLY_KEYS = ("type", "name", "description", "source", "model", "metadata", "columns", "rate_hz",
                    "beam_stride", "calibration")


def _line_of_field(altitude_deg) -> str | None:
    """The Ouster product line a beam table's vertical field of view belongs to (datasheets: OS0 90°, OS1 45°
    (Gen 1: 33.2°), OS2 22.5°), for metadata without `prod_line` (reduced legacy files)."""
    if altitude_deg is None or len(altitude_deg) < 2:
        return None
    span = float(np.max(altitude_deg) - np.min(altitude_deg))
    return "OS0" if span > 60.0 else "OS1" if span > 28.0 else "OS2"


def _product_line_defaults(prod_line: str, beams: int, altitude_deg=None) -> dict:
    """The settings of the preset of an Ouster product line ('OS-1-32-G' with 32 beams -> OS1-32.yaml:
    range, noise, detection limit, effects), so that a metadata file given as the sensor is the same
    sensor as the preset built on it; without a `prod_line`, the line its vertical field of view names.
    Empty when no preset matches."""
    parts = prod_line.upper().replace("OS-", "OS").split("-")
    family = parts[0] if parts and parts[0] in ("OS0", "OS1", "OS2") else None
    if family is None and not prod_line.strip():
        family = _line_of_field(altitude_deg)
    if family is None:
        return {}
    preset = _preset_path(f"{family}-{beams}")
    if preset is None:
        return {}
    data = read_yaml(preset)
    return {k: v for k, v in data.items() if k not in PRESET_ONLY_KEYS} if isinstance(data, dict) else {}


# The realistic profile (`radarays lidar --realistic`, `load_sensor(..., realistic=True)`): every effect of
# lidar_ros/physics/effects_config.py on at moderate settings, under the sensor file's own values (a
# preset's datasheet divergence, detection limit) and the caller's overrides.
REALISTIC = {
    "beam.sub_rays": 4, "beam.return_mode": "strongest",
    "detection.model": "snr", "detection.snr_at_limit": 4.0, "detection.edge_dropout": True,
    "signal.poisson": True, "signal.noise_floor": BACKGROUND_PHOTONS, "signal.ambient_model": "sun", "signal.row_gain_sigma": 0.05,
    "surface.ambient_level": 2000.0, "surface.ambient_sky": 2000.0 * SKY_OF_LEVEL,  # physics/ambient.py: 400
    # surface texture (physics/texture.py): ±25 % albedo (ln spread 0.25) on a 10 cm grain, an assumption checked
    # against the shared real frames' neighbour-to-neighbour reflectivity spread (test_lidar_realism2)
    "surface.texture_sigma": 0.25, "surface.texture_length_m": 0.1,
    # tree crowns and hedges (materials with a leaf_area_density) as leaf volumes (physics/foliage.py)
    "foliage.volume": True,
    # moving entities where they are at each column's firing time (tracing.Rays times)
    "timing.moving_entities": "sweep",
}
# Ouster column time stamps (physics/column_timing.py): jitter and wander, the medians of the shared real frames
REALISTIC_OUSTER = {f"timing.{key}": value for key, value in SHARED_FRAME_MEDIANS_US.items()}
DEFAULT_DIVERGENCE_MRAD = 3.0  # where a sensor file states none (typical of spinning lidars: HELIOS++ uses 0.7-3.4 mrad, Chrono 3 mrad)


def _realistic(spec: Mapping[str, Any]) -> dict:
    """The sensor mapping with the realistic profile under it (its own settings win)."""
    out = dict(spec)
    profile = {**REALISTIC, **(REALISTIC_OUSTER if out.get("type") == "ouster" else {})}
    for key, value in profile.items():
        section, _, name = key.partition(".")
        current = out.get(section) or {}
        if name not in current:
            out = set_dotted(out, key, value)
    if not (out.get("beam") or {}).get("divergence_mrad"):
        out = set_dotted(out, "beam.divergence_mrad", DEFAULT_DIVERGENCE_MRAD)
    if (out.get("surface") or {}).get("model", "none") == "none":  # a detection curve needs a limit
        out = set_dotted(out, "surface.model", "root2")
    return out


def load_sensor(name_or_path: str | os.PathLike, overrides: Mapping[str, Any] | None = None,
                realistic: bool = False) -> LidarConfig:
    """A LidarConfig from a preset name ('VLP-16', 'OS1-128', ...) or a sensor file, with dotted-key overrides
    (applied after the realistic profile when `realistic`)."""
    text = str(name_or_path)
    looks_like_file = os.sep in text or text.lower().endswith((".yaml", ".yml", ".json"))
    preset = None if looks_like_file else _preset_path(text)
    if preset is None:
        preset = shipped_example(text)  # `spherical_16x1800`: the shipped example sensor of that name
        looks_like_file = looks_like_file and preset is None
    path = preset or Path(text)
    if looks_like_file and not path.is_file():
        raise ConfigError(f"sensor file {text} not found (a sensor YAML, Ouster metadata JSON or velodyne "
                          "calibration YAML)")
    if not path.is_file():
        raise ConfigError(f"unknown lidar sensor '{text}': not a file and not a preset; presets: {', '.join(list_presets())}")
    spec = _spec_from_file(path)
    if realistic:
        spec = _realistic(spec)
    for key, value in (overrides or {}).items():
        spec = set_dotted(spec, str(key), value)
    return build_config(spec, _overridden(str(path)) if overrides else str(path), path.parent)


def _overridden(origin: str) -> str:
    """Error messages must say when a value came from an override (--set, a ROS parameter), not the file."""
    return origin if origin.endswith(" + overrides") else f"{origin} + overrides"
