"""A whole lidar frame on the Warp device: the simulator of simulator.py with its per-ray work in one kernel.

    sim = WarpLidarSimulator(config, scene, make_backend("warp", scene, device="cuda"), sink=FrameCloud.of)
    scan = sim.simulate(pose_or_trajectory, t0_ns)     # a LidarScan, as LidarSimulator.simulate

On the device, one thread per beam (warp_frame_kernels.py): the world ray (the frame pose, or each
measurement column's pose for motion distortion), angular jitter, the material classes (transparent,
absorbent, mirror, returning), ρ(θ), the detection limit, dropouts, range noise (dust, per-laser bias,
per-ray and relative Gaussian, quantisation), the intensity fields (reflectivity, calibrated
reflectivity, Ouster signal and flat ambient) and the range window. What stays on the host: the
per-laser biases (drawn once per run with numpy, as the host path), the points xyz = origin + range ·
direction and the driver cloud (simulator._write_returns, the host path's own code). The outputs the
driver cloud reads come back in one copy a frame; the ground truth only when a scan reads it (_outputs
says why a reused device buffer never changes a scan).

Random numbers: the host path's counter-based draws (radarays_ros/counter_random.py, keyed by frame, beam and
term), so a beam draws the same numbers on both paths; the same seed gives the same bytes on CPU and CUDA alike
(CUDA's fused multiply-adds may move a Gaussian draw by a few float32 ULPs).

What the kernel implements is declared per config field (`DEVICE_SUPPORT` below, read by
radarays_ros/device_support.py): the effects of the lidar toolbox II that act on several rays or
sub-rays at once, or on the whole frame (ToF multipath), or need draws Warp has no kernel function for,
are not on the device, and a config setting any of them is refused with one ConfigError naming the keys
(frames: host runs them). A field the declaration does not name is refused once set (fail closed).
"""
from __future__ import annotations

import threading
import weakref

import numpy as np

from radarays_ros.counter_random import frame_key64
from radarays_ros.device_support import DEVICE, HOST, Support, refuse, refusals
from radarays_ros.errors import ConfigError
from radarays_ros.tracing.warp import WarpBackend, require_device_backend
from radarays_ros.world.trajectory import Trajectory
from radarays_ros.world.transforms import check_transform

from .physics.interaction import MAX_TRANSPARENT, SKIP_ABS, SKIP_REL
from .physics.materials import CONSTANT, LAMBERTIAN, TABLE
from .simulator import LidarSimulator


def _footprint(c) -> bool:  # sub-rays are traced (simulator.py: k > 1)
    return c.effects.beam.sub_rays > 1 and c.effects.beam.divergence_mrad > 0


def _echoes(c) -> bool:  # a beam's echoes are formed from several returns (simulator.py: _echoes)
    return _footprint(c) or c.effects.beam.dual or c.effects.glass.specular


def _weather(c) -> bool:
    return c.effects.weather.enabled


# Which sensor config fields device frames implement (radarays_ros/device_support.py): every field of
# LidarConfig, its surface and noise and its effect sections. HOST fields refuse device frames once set
# to anything but their default ("off"); a field read by neither path under the config's other settings
# (`unless_read`) is not checked. A field missing here is refused once set (fail closed).
_SHARED = ("the ray table, timing, range window and cloud layout: host code both paths share "
           "(LidarSimulator.__init__, _write_returns)")
DEVICE_SUPPORT = {
    **{key: Support(why=_SHARED) for key in (
        "name", "kind", "origin", "spec", "base_dir", "rows", "cols", "directions", "origins", "azimuth", "elevation",
        "time", "column_times", "pixel_column", "ring", "laser_index", "range_offset", "pixel_shift", "rate_hz",
        "period", "range_min", "range_max", "layout", "organized", "planar", "planar_info", "time_reference",
        "intensity_field", "frame_id", "seed", "max_bounces", "point_transform", "ray_frame_id", "retime",
        "point_directions", "point_origins", "driver", "driver_metadata", "imu_transform", "imu_frame_id",
        "derived")},
    # the kernel's surface model (warp_frame_kernels.py: detection_limit32, the intensity fields)
    **{f"surface.{key}": DEVICE for key in (
        "model", "limits", "signal_scale", "retro_full_scale", "ambient_level", "ambient_sky",
        "limits_probability", "overlap_range_m")},  # limits_probability: folded into the limit pairs on load
    "surface.texture_sigma": HOST,
    "surface.texture_length_m": HOST.unless_read(lambda c: c.surface.texture_sigma > 0,
                                                 "read with surface.texture_sigma > 0 only"),
    # range noise in the kernel; the per-laser biases drawn on the host, as the host path
    **{f"noise.{key}": DEVICE for key in (
        "bias_distribution", "bias_sigma", "sigma", "relative_sigma", "relative_exponent", "dust_probability",
        "dust_min_range", "resolution", "angular_sigma")},
    "effects.beam.divergence_mrad": HOST.unless_read(_footprint, "sub-rays: read with beam.sub_rays > 1 only"),
    "effects.beam.sub_rays": HOST.unless_read(_footprint, "sub-rays: read with beam.divergence_mrad > 0 only"),
    "effects.beam.profile": HOST.unless_read(_footprint, "read with sub-rays only"),
    "effects.beam.return_mode": HOST.unless_read(_echoes, "read where a beam has several returns (sub-rays, "
                                                 "dual, glass.specular) only"),
    "effects.beam.echo_separation_m": HOST.unless_read(lambda c: _echoes(c) or _weather(c),
                                                       "read with echoes or weather only"),
    "effects.detection.model": HOST.unless_read(lambda c: c.surface.model != "none",
                                                "read with a detection limit (surface.model) only"),
    "effects.detection.snr_at_limit": HOST.unless_read(
        lambda c: c.effects.detection.model == "snr" and c.surface.model != "none", "read with detection.model snr"),
    "effects.detection.dropout_probability": DEVICE,
    "effects.detection.edge_dropout": HOST.unless_read(_footprint, "read with sub-rays only"),
    # the SNR-dependent range sigma: without background photons (noise_floor, itself host only) every
    # return's SNR is unbounded and the sigma is noise.sigma's floor, as the kernel draws it
    "noise.snr_sigma": HOST.unless_read(lambda c: c.effects.signal.noise_floor > 0,
                                        "read with signal.noise_floor > 0 only"),
    "noise.snr_floor": HOST.unless_read(lambda c: c.effects.signal.noise_floor > 0 and bool(c.noise.snr_sigma),
                                        "read with noise.snr_sigma and signal.noise_floor > 0 only"),
    "effects.signal.poisson": HOST,
    "effects.signal.noise_floor": HOST,
    "effects.signal.saturation": HOST,
    "effects.signal.ambient_model": HOST,
    **{f"effects.signal.{key}": HOST.unless_read(lambda c: c.effects.signal.ambient_model == "sun",
                                                 "read with signal.ambient_model sun only")
       for key in ("sun_elevation_deg", "sun_azimuth_deg", "row_gain_sigma")},
    "effects.signal.bloom_threshold": HOST,
    **{f"effects.signal.{key}": HOST.unless_read(lambda c: c.effects.signal.bloom_threshold > 0,
                                                 "read with signal.bloom_threshold > 0 only")
       for key in ("bloom_width_px", "bloom_leak")},
    **{f"effects.weather.{key}": HOST for key in (
        "fog_visibility_km", "rain_rate_mm_h", "snow_rate_mm_h", "snow_visibility_km")},
    "effects.weather.snow_type": HOST.unless_read(lambda c: c.effects.weather.snow_rate_mm_h > 0,
                                                  "read with weather.snow_rate_mm_h > 0 only"),
    "effects.weather.backscatter": HOST.unless_read(_weather, "read with weather only"),
    "effects.weather.wavelength_nm": HOST.unless_read(_weather, "read with weather only"),
    "effects.tof.unambiguous_range_m": HOST,
    "effects.tof.mode": HOST,
    **{f"effects.tof.{key}": HOST.unless_read(lambda c: c.effects.tof.mode == "cw", "read with tof.mode cw only")
       for key in ("frequencies_mhz", "periods", "bias")},
    "effects.tof.multipath": HOST,
    "effects.tof.multipath_patches": HOST.unless_read(lambda c: c.effects.tof.multipath,
                                                      "read with tof.multipath only"),
    "effects.glass.specular": HOST,
    **{f"effects.glass.{key}": HOST.unless_read(lambda c: c.effects.glass.specular, "read with glass.specular only")
       for key in ("refractive_index", "lobe_deg", "ghosts")},
    # column time-stamp jitter/wander (column_timing.py): drawn per frame on the host, the scan's own times
    "effects.timing.column_jitter_us": HOST,
    "effects.timing.column_wander_us": HOST,
    # moving entities met at each beam's firing time: first_hit_at in the frame kernel (warp_frame_kernels.py)
    "effects.timing.moving_entities": DEVICE,
    # crowns as leaf volumes (physics/foliage.py): extra rounds through each crown, host only
    "effects.foliage.volume": HOST,
}


def _file_key(key: str) -> str:
    """A walked key as a sensor file names it (the effect sections are top-level sections there)."""
    return key.removeprefix("effects.")


def device_refusals(config) -> list[str]:
    """The settings of `config` device frames do not implement (empty: the whole frame runs on the device)."""
    return refusals(config, DEVICE_SUPPORT, _file_key)


class WarpLidarSimulator(LidarSimulator):
    """LidarSimulator whose frames run in a Warp kernel on the backend's device (a config with a setting
    DEVICE_SUPPORT does not implement is refused: ConfigError naming the keys)."""

    def __init__(self, config, scene, backend: WarpBackend, seed: int | None = None, sink=None):
        require_device_backend(backend, "WarpLidarSimulator")
        refuse(config, DEVICE_SUPPORT, config.origin, _file_key)
        super().__init__(config, scene, backend, seed=seed, sink=sink)
        from . import warp_frame_kernels

        self._kernels = warp_frame_kernels
        self._materials_dev = None  # (LidarMaterials it was made from, device struct)
        self._settings_made = {}  # per_column -> SurfaceSettings
        # CUDA: the frame's outputs in device buffers kept from frame to frame, copied to host memory the
        # scan owns (see _outputs). Warp's CPU device: fresh buffers every frame, which the scan views
        # without a copy (a copy would cost more than the allocation there).
        self.reuse_device_buffers = str(backend.device).startswith("cuda")
        self._truth_lock = threading.Lock()
        self._upload_tables()

    def _upload_tables(self) -> None:
        """The run's per-beam constants on the device: local rays, measurement columns, offsets, biases."""
        wp, dev, cfg = self.backend.wp, self.backend.device, self.config
        n = cfg.rows * cfg.cols

        def floats(values, size=n):
            return wp.array(np.ascontiguousarray(values, np.float32).reshape(size), dtype=float, device=dev)

        dirs = np.asarray(self._dirs, np.float64)
        norm = np.linalg.norm(dirs, axis=1)
        if not (np.isfinite(self._origins).all() and np.isfinite(norm).all() and norm.min(initial=1.0) > 0):
            raise ConfigError(f"{cfg.origin}: the ray table has non-finite origins or directions, or zero-length directions")
        # unit directions, as the backend makes them on the host path (the kernel traces them as they are)
        unit = np.ascontiguousarray(dirs / norm[:, None], np.float32)
        self._local_origins = wp.array(np.ascontiguousarray(self._origins, np.float32), dtype=wp.vec3, device=dev)
        self._local_dirs = wp.array(unit, dtype=wp.vec3, device=dev)
        self._pixel_column = wp.array(np.ascontiguousarray(self._column, np.int32), dtype=wp.int32, device=dev)
        self._range_offset = floats(self._offset if self._has_offset else np.zeros(n))
        self._bias = floats(self._ray_bias) if self._ray_bias is not None else floats(np.zeros(1), 1)
        # each beam's firing time after the frame's start (timing.moving_entities sweep), and the span the scene's
        # swept boxes must hold
        self._times = floats(self._ray_times) if self._ray_times is not None else floats(np.zeros(1), 1)
        self._span = None if self._ray_times is None else (float(self._ray_times.min()), float(self._ray_times.max()))
        # the frame's poses (one, or one per measurement column), overwritten every frame (_device_poses)
        # (on CUDA from pinned host arrays: the copy then needs no staging, and the host arrays are written
        # again only after the frame's returns were copied back, which waits for the copy of the poses)
        poses = max(cfg.cols, 1)
        pinned = str(dev).startswith("cuda")
        self._rotations = wp.empty(poses, dtype=wp.mat33, device=dev)
        self._shifts = wp.empty(poses, dtype=wp.vec3, device=dev)
        self._rotations_host = wp.empty(poses, dtype=wp.mat33, device="cpu", pinned=pinned)
        self._shifts_host = wp.empty(poses, dtype=wp.vec3, device="cpu", pinned=pinned)
        self._rotations_staged = self._rotations_host.numpy()  # (poses, 3, 3) views of the host arrays
        self._shifts_staged = self._shifts_host.numpy()
        self._poses_in_flight = False
        self._beam_out = None  # reused buffers (reuse_device_buffers): the beam rows, two ground-truth slots
        self._truth_slots = []
        self._next_slot = 0

    # -- device tables ----------------------------------------------------------------------------
    def _device_materials(self):
        table = self.materials
        if self._materials_dev is not None and self._materials_dev[0] is table:
            return self._materials_dev[1]
        wp, dev = self.backend.wp, self.backend.device
        rho0 = np.append(table.reflectivity, 0).astype(np.float32)  # one spare row: never an empty array
        model = np.append(table.model, -1)

        def column(values, dtype=float):
            kind = np.int32 if dtype is wp.int32 else np.float32
            return wp.array(np.ascontiguousarray(values, kind), dtype=dtype, device=dev)

        m = self._kernels.LidarMaterialTable()
        m.klass = column(np.append(table.material_class, 2), wp.int32)  # the spare row absorbs
        m.lambertian = column(np.where(model == LAMBERTIAN, rho0, 0))
        m.constant = column(np.where(model == CONSTANT, rho0, 0))
        m.tabled = column(model == TABLE, wp.int32)
        m.table = column(np.vstack([table.table.reshape(-1, 10), np.zeros((1, 10))]).reshape(-1))
        m.pass_factor = column(np.append(table.pass_factor, 1))
        self._materials_dev = (table, m)
        return m

    def _settings(self, per_column: bool, frame_key: int):
        """The kernel's settings: made once per pose mode, only the frame's key set every frame (a launch
        copies the struct's values, so setting the next key cannot change a frame already launched)."""
        s = self._settings_made.get(per_column)
        if s is None:
            s = self._settings_made[per_column] = self._new_settings(per_column)
        s.key = frame_key
        return s

    def _new_settings(self, per_column: bool):
        cfg, model = self.config, self.model
        s = self._kernels.SurfaceSettings()
        s.tmin, s.tmax = self._tmin, min(self._tmax, 1e30)
        s.range_min, s.range_max = cfg.range_min, cfg.range_max
        s.max_bounces, s.max_crossings = cfg.max_bounces, MAX_TRANSPARENT
        s.skip_abs, s.skip_rel = SKIP_ABS, SKIP_REL
        limit = model.limit
        # the curve DetectionLimit fitted (physics/detection.py: its form code, root and coefficients)
        code, a, b, _, d1, rho1, slope = limit.curve
        s.limit_model, s.limit_root = code, limit.root
        s.limit_a, s.limit_b, s.limit_rho1, s.limit_d1, s.limit_slope = a, b, rho1, d1, slope
        noise = model.noise
        s.dropout = cfg.effects.detection.dropout_probability
        s.angular_sigma, s.sigma = noise.angular_sigma, noise.sigma
        s.relative_sigma, s.relative_exponent = noise.relative_sigma, noise.relative_exponent
        s.dust_probability, s.dust_min_range, s.resolution = noise.dust_probability, noise.dust_min_range, noise.resolution
        s.use_bias = int(self._ray_bias is not None)
        surface = model.surface
        s.ln_retro_full_scale = float(np.log(surface.retro_full_scale))
        s.signal_scale = surface.signal_scale
        s.overlap_range = surface.overlap_range_m
        s.ambient_level, s.ambient_sky = surface.ambient_level, surface.ambient_sky
        s.per_column = int(per_column)
        s.sweep = int(self._ray_times is not None)
        s.missing = float("nan")
        return s

    # -- one frame ----------------------------------------------------------------------------------
    def _simulate(self, pose, t0_ns: int):
        cfg = self.config
        wp, dev, k = self.backend.wp, self.backend.device, self._kernels
        frame = self._new_frame()
        local_dirs = self._local_dirs
        if cfg.retime is None:
            frame.beam_dirs_t = self._beam_dirs_t
        else:  # Risley patterns: this frame's own rays
            dirs = cfg.retime(t0_ns * 1e-9).reshape(-1, 3)
            frame.beam_dirs = (dirs / np.linalg.norm(dirs, axis=1, keepdims=True)).astype(np.float32)
            if not np.isfinite(frame.beam_dirs.sum()):
                raise ConfigError(f"{cfg.origin}: the scan pattern gave non-finite directions at t = {t0_ns * 1e-9:g} s")
            frame.beam_dirs_t = np.ascontiguousarray(frame.beam_dirs.T)
            local_dirs = wp.array(frame.beam_dirs, dtype=wp.vec3, device=dev)
        rotations, shifts, per_column = self._poses(frame, pose, t0_ns)
        n = cfg.rows * cfg.cols
        frame_key = int(frame_key64(self.frame_key(frame.index, t0_ns)))  # the host path's key (simulator.py)
        out, truth_slot = self._outputs(n)
        wp.launch(k.lidar_frame, dim=n, device=dev,
                  inputs=[self.backend.synced_scene_arrays(self._span), self._device_materials(),
                          self._settings(per_column, frame_key), self._local_origins, local_dirs, self._pixel_column,
                          *self._device_poses(rotations, shifts), self._range_offset, self._bias, self._times, out])
        part = self._write_returns(frame, self._fetch_returns(out, truth_slot), 0, n)
        if frame.cloud is not None:
            self._cloud.done(frame.cloud)
        return self._scan(frame, t0_ns, [part])

    def _poses(self, frame, pose, t0_ns: int):
        """(rotations (M, 3, 3), shifts (M, 3), per_column) of the frame: one pose, or one per measurement column."""
        if isinstance(pose, Trajectory) and len(pose.t_ns) > 1:
            times = t0_ns + np.round(self.config.column_times * 1e9).astype(np.int64)
            poses = pose.at(times)
            if not np.isfinite(poses.sum()):
                raise ConfigError("lidar trajectory: non-finite poses over the frame")
            frame.rotation = poses[self._column, :3, :3]
            return (np.ascontiguousarray(poses[:, :3, :3], np.float32),
                    np.ascontiguousarray(poses[:, :3, 3], np.float32), True)
        if isinstance(pose, Trajectory):
            pose = pose.poses[0]
        m = check_transform(pose, what="lidar sensor pose")
        frame.rotation = m[:3, :3]
        return m[None, :3, :3].astype(np.float32), m[None, :3, 3].astype(np.float32), False

    def _device_poses(self, rotations: np.ndarray, shifts: np.ndarray):
        """The frame's poses copied into the simulator's device arrays. Safe to overwrite: copies and
        launches run in order on the device's stream, so the previous frame's kernel has read them."""
        wp = self.backend.wp
        if self._poses_in_flight:  # the last frame stopped before its returns were copied back
            wp.synchronize_device(self.backend.device)
        m = len(rotations)
        self._rotations_staged[:m] = rotations
        self._shifts_staged[:m] = shifts
        wp.copy(self._rotations, self._rotations_host, count=m)
        wp.copy(self._shifts, self._shifts_host, count=m)
        self._poses_in_flight = True
        return self._rotations, self._shifts

    def _outputs(self, n: int):
        """(FrameOut, its ground-truth slot) of one frame: three device arrays (kernels.FrameOut).

        Reused buffers (reuse_device_buffers): the beam rows are the same buffer every frame, safe since
        every frame copies them to the host before it returns (_fetch_returns waits for the copy). The
        ground truth, copied only when a scan reads it, alternates between two slots, so the previous
        frame's stays on the device while this one runs; a slot's earlier frame, if its scan is still
        alive and has not read it, copies it to the host before the slot is written again."""
        wp, dev, k = self.backend.wp, self.backend.device, self._kernels
        if not self.reuse_device_buffers:
            return self._new_out(n, wp.empty((5, n), dtype=float, device=dev)), None
        if self._beam_out is None:
            self._beam_out = wp.empty((5, n), dtype=float, device=dev)
            self._truth_slots = [_TruthSlot(self._new_out(n, self._beam_out)) for _ in range(2)]
        slot = self._truth_slots[self._next_slot]
        self._next_slot = 1 - self._next_slot
        with self._truth_lock:
            earlier = slot.reader()
            if earlier is not None:
                earlier._copy_truth_locked()
        return slot.out, slot

    def _new_out(self, n: int, beam):
        wp, dev = self.backend.wp, self.backend.device
        out = self._kernels.FrameOut()
        out.beam = beam
        out.truth = wp.empty((5, n), dtype=float, device=dev)
        out.truth_ids = wp.empty((4, n), dtype=wp.int32, device=dev)
        return out

    def _fetch_returns(self, out, truth_slot) -> "DeviceReturns":
        """The frame's returns on the host: the beam rows in one copy (a view on the CPU device when the
        buffers are the frame's own), the ground truth later, on first read."""
        host = _on_host(self.backend.wp, out.beam, self.reuse_device_buffers)
        self._poses_in_flight = False  # the copy above waited for everything launched before it
        returns = DeviceReturns(self.backend.wp, host, out, self.reuse_device_buffers, self._truth_lock)
        if truth_slot is not None:
            with self._truth_lock:
                truth_slot.reader = weakref.ref(returns)
        return returns


def _on_host(wp, array, reused: bool) -> np.ndarray:
    """A device array's values in host memory of their own: CUDA, one device-to-host copy into fresh
    host memory, waited for (numpy() into pageable memory returns after the copy; the synchronize makes
    that explicit for every Warp release), so the next frame may overwrite the device buffer; the CPU
    device, a view of the array, copied only if the array is reused."""
    host = array.numpy()
    if array.device.is_cuda:
        wp.synchronize_device(array.device)
        return host
    return host.copy() if reused else host


class _TruthSlot:
    """A reused FrameOut and the returns of the frame that last wrote its ground truth."""

    def __init__(self, out):
        self.out = out
        self.reader = _nobody


def _nobody():
    return None


class DeviceReturns:
    """The kernel's outputs with the attributes of physics Returns: the beam rows on the host already
    (numpy rows of one array), the ground truth copied from the device on first read (two copies,
    or views on the CPU device). Returns outside the range window are already misses."""

    _BEAM = {"range": 0, "reflectivity": 1, "velodyne_intensity": 2, "ouster_signal": 3, "ouster_ambient": 4}
    _TRUTH = {"clean_range": 0, "cos_incidence": 1}
    _IDS = {"dust": 0, "entity": 1, "material": 2, "first_entity": 3}
    _AS = {"dust": bool, "ouster_signal": np.uint16, "ouster_ambient": np.uint16}

    def __init__(self, wp, beam: np.ndarray, out, reused: bool, lock: threading.Lock):
        self._wp, self._beam, self._out, self._copy, self._lock = wp, beam, out, reused, lock
        self._truth = None  # (float rows, int rows) on the host
        self._host = {"range": beam[0]}
        # the kernel writes NaN for every miss and a number for every return (warp_frame_kernels.py):
        # taken before _write_returns may set ranges outside the window to NaN
        self._host["hit"] = beam[0] == beam[0]  # False exactly where NaN: one pass

    def __len__(self) -> int:
        return self._beam.shape[1]

    def _copy_truth_locked(self) -> None:
        """The ground truth on the host (the caller holds the lock); the device slot is then free."""
        if self._truth is None:
            wp = self._wp
            rows, ids = _on_host(wp, self._out.truth, self._copy), _on_host(wp, self._out.truth_ids, self._copy)
            self._truth, self._out = (rows, ids), None

    def _truth_rows(self):
        if self._truth is None:
            with self._lock:
                self._copy_truth_locked()
        return self._truth

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        if name not in self._host:
            if name == "intensity":
                value = self.reflectivity
            elif name == "ouster_reflectivity":  # the same calibrated scale as Velodyne's
                value = self.velodyne_intensity.astype(np.uint16)
            elif name in self._BEAM:
                value = self._beam[self._BEAM[name]]
            elif name in self._TRUTH:
                value = self._truth_rows()[0][self._TRUTH[name]]
            elif name == "normal":  # (N, 3), as physics Returns
                value = np.ascontiguousarray(self._truth_rows()[0][2:5].T)
            elif name in self._IDS:
                value = self._truth_rows()[1][self._IDS[name]]
            else:
                raise AttributeError(name)
            if name in self._AS:
                value = value.astype(self._AS[name])
            self._host[name] = value
        return self._host[name]
