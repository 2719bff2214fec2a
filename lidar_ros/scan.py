"""LidarScan: one simulated frame as [rows, cols] arrays (rows = beams in the driver's ring order)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping

import numpy as np

from .config import LidarConfig

# ground-truth arrays a scan may carry (BlenSor Sec. 3.6), with their per-pixel trailing shape
GROUND_TRUTH = ("clean_range", "entity", "material", "normal", "incidence_rad")


@dataclass
class LidarScan:
    """A frame. Misses: range NaN, hit False, xyz NaN, intensity 0, entity/material -1.

    range (R, C) float32        metres along the nominal ray (noisy), NaN = no return
    hit (R, C) bool
    xyz (R, C, 3) float32       sensor frame, each point at its own firing pose (motion distortion kept)
    intensity (R, C) float32    the config's intensity field (reflectivity, Velodyne or Ouster scale)
    elevation_rad, azimuth_rad (R, C) float32: each pixel's nominal ray
    time (R, C) float64         firing time, seconds from the scan start (t0_ns)
    ring (R,) uint16            ring number of each row as the driver numbers it
    fields: every intensity field of the physics model (reflectivity, velodyne_intensity,
            ouster_reflectivity, ouster_signal, ouster_ambient), (R, C) each
    ground truth: clean_range (noise-free), entity, material (ids, -1 none), normal (R, C, 3, sensor
            frame), incidence_rad (angle between ray and surface normal)
    """

    config: LidarConfig
    t0_ns: int
    range: np.ndarray
    hit: np.ndarray
    xyz: np.ndarray
    intensity: np.ndarray
    elevation_rad: np.ndarray
    azimuth_rad: np.ndarray
    time: np.ndarray
    ring: np.ndarray
    fields: Mapping = field(default_factory=dict)  # may compute each field on first access
    pose_rotation: np.ndarray | None = field(default=None, repr=False)  # (3, 3) or (R*C, 3, 3) world <- sensor
    # ground truth on demand: name -> array for clean_range, entity, material, normal_world (R, C, 3,
    # world frame), cos_incidence (0 = none); computed on first access so a frame pays only for what
    # its outputs read
    ground_truth_source: Callable[[str], np.ndarray] | None = field(default=None, repr=False)
    # the config's organized driver-layout cloud (rows, cols), written while the frame was simulated
    # (a lidar_ros.sink.FrameSink buffer; xyz and intensity are views into it), or None
    cloud: np.ndarray | None = field(default=None, repr=False)
    cloud_writer: object = field(default=None, repr=False)
    # dual-return sensors (beam.return_mode: dual): the second echo of every beam as a scan of its own
    second: "LidarScan | None" = field(default=None, repr=False)
    _cache: dict = field(default_factory=dict, repr=False)

    def _truth(self, name: str) -> np.ndarray | None:
        if name not in self._cache:
            self._cache[name] = None if self.ground_truth_source is None else self.ground_truth_source(name)
        return self._cache[name]

    clean_range = property(lambda self: self._truth("clean_range"), doc="(R, C) noise-free range, NaN = none")
    entity = property(lambda self: self._truth("entity"), doc="(R, C) int32 entity id, -1 = none")
    material = property(lambda self: self._truth("material"), doc="(R, C) int32 material id, -1 = none")
    normal_world = property(lambda self: self._truth("normal_world"), doc="(R, C, 3) world-frame normals")
    cos_incidence = property(lambda self: self._truth("cos_incidence"), doc="(R, C) cosine of incidence, 0 = none")

    @property
    def normal(self) -> np.ndarray | None:
        """(R, C, 3) float32 surface normals in the sensor frame of each pixel's firing pose (0 = none)."""
        if self.normal_world is None:
            return None
        if "normal" not in self._cache:
            n = self.normal_world.reshape(-1, 3)
            r = self.pose_rotation
            sensor = np.einsum("nji,nj->ni", r, n) if r.ndim == 3 else n @ r.astype(np.float32)
            self._cache["normal"] = sensor.astype(np.float32).reshape(self.normal_world.shape)
        return self._cache["normal"]

    @property
    def incidence_rad(self) -> np.ndarray | None:
        """(R, C) float32 angle between the ray and the surface normal, NaN = no return."""
        if self.cos_incidence is None:
            return None
        if "incidence" not in self._cache:
            angle = np.arccos(np.clip(self.cos_incidence, 0.0, 1.0)).astype(np.float32)
            self._cache["incidence"] = np.where(self.hit, angle, np.float32(np.nan))
        return self._cache["incidence"]

    def release(self) -> None:
        """Give this frame's cloud buffer back to its simulator's sink for reuse (lidar_ros.sink): call it
        when nothing reads the scan's cloud, xyz or intensity any more (they are views into it). After
        it the scan has no cloud; without it the buffer is never reused."""
        cloud, self.cloud = self.cloud, None
        if cloud is not None and self.cloud_writer is not None:
            self.cloud_writer.release(cloud)

    @property
    def shape(self) -> tuple[int, int]:
        return self.range.shape

    @property
    def last_firing_s(self) -> float:
        """Time of the scan's last firing, seconds from the scan start (the Velodyne header stamp)."""
        return float(self.time.max())

    def stamp_ns(self, reference: str | None = None) -> int:
        """Header stamp: the last firing (Velodyne default; the last packet in driver-exact mode) or the
        first ('first'), in ns."""
        reference = reference or self.config.time_reference
        driver = self.config.driver  # driver-exact velodyne: the last packet's stamp (its first firing)
        offset = (self.last_firing_s if driver is None else driver.stamp_s) if reference == "last" else float(self.time.min())
        return int(self.t0_ns + round(offset * 1e9))

    def arrays(self) -> dict[str, np.ndarray]:
        """The per-pixel arrays of the `.npz` output (names as in the issue), with the driver's channels:
        Ouster layouts add reflectivity (uint8, calibrated 0-255), signal and near_ir (uint16 photons);
        Velodyne layouts add velodyne_intensity (float32 0-255 as velodyne_pointcloud scales it). A
        dual-return frame adds range2, hit2, xyz2, intensity2 (and reflectivity2, signal2 for Ouster)."""
        out = {
            "range": self.range,
            "hit": self.hit,
            "xyz": self.xyz,
            "intensity": self.intensity,
            "elevation_rad": self.elevation_rad,
            "azimuth_rad": self.azimuth_rad,
            "time": self.time,
            "ring": self.ring,
        }
        layout = self.config.layout
        out.update(_driver_channels(self, layout, ""))
        if self.second is not None:
            two = self.second
            out.update({"range2": two.range, "hit2": two.hit, "xyz2": two.xyz, "intensity2": two.intensity})
            out.update({k: v for k, v in _driver_channels(two, layout, "2").items() if k != "near_ir2"})
        return out


def _driver_channels(scan: "LidarScan", layout: str, suffix: str) -> dict[str, np.ndarray]:
    if layout.startswith("ouster"):
        return {f"reflectivity{suffix}": np.minimum(scan.fields["ouster_reflectivity"], 255).astype(np.uint8),
                f"signal{suffix}": np.asarray(scan.fields["ouster_signal"], np.uint16),
                f"near_ir{suffix}": np.asarray(scan.fields["ouster_ambient"], np.uint16)}
    if layout == "velodyne":
        return {f"velodyne_intensity{suffix}": np.asarray(scan.fields["velodyne_intensity"], np.float32)}
    return {}
