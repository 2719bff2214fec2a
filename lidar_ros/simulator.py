"""LidarSimulator: a sensor config + a scene + a backend -> LidarScan frames.

Every pixel's ray is put into world coordinates (from the sensor pose, or from the pose at each
measurement column's firing time when given a Trajectory: motion distortion), traced through the
lidar material classes (lidar_ros.physics.trace_lidar), then passed through the surface model
(detection limit, noise along the ray, intensity fields). Points are reported in the sensor frame of
their own firing pose, as a real sensor reports them.

A frame's first hits come from one backend call for all its rays (the backend spreads it over its
threads); the material classes (further bounces) and the surface model then run in a few large
pieces (`frame_pieces`) on as many threads as the backend traces with: embreex and numpy release
the GIL, so all cores work. The ray
table is checked once, so the frame's rays skip the backend's per-ray checks; normals are computed only
if read. For driver layouts that allow it the organized point cloud is the frame's storage: given a
sink factory (lidar_ros.sink; the driver layouts are radarays_ros.io.lidar_clouds.FrameCloud.of), the
frame is written into the sink's buffer, with no copy into a message layout afterwards.
"""
from __future__ import annotations

import threading
from collections.abc import Mapping

import numpy as np

from radarays_ros.compiled import inlined, kernel
from radarays_ros.counter_random import RayDraws, frame_key64
from radarays_ros.tracing.backend import ray_start_inlined
from radarays_ros.threads import pool
from radarays_ros.world.trajectory import Trajectory
from radarays_ros.world.transforms import check_transform

from .config import LidarConfig
from .patterns import angles_of
from .physics import LidarMaterials, SurfaceModel, jitter_directions, trace_lidar
from .physics.echoes import DUAL_MODES, Echo, form_echoes
from .physics.edge_dropout import drop_split_echoes
from .physics.footprint import spread_directions, sub_ray_offsets
from .physics.glass import glass_returns
from .physics.texture import textured_reflectivity
from .physics.interaction import first_trace
from .physics.leaf_sharing import LeafDraws
from .physics.multipath import multipath_bias, patch_stride
from .physics.weather import two_way_transmission, weather_extinction_per_m
from .physics.beam_returns import add_backscatter, add_bloom, hits_of_echo
from .physics.column_stamps import stamped_times
from .physics.column_timing import column_time_offsets
from .scan import LidarScan
from .sink import RANGE_MM, FrameSink, SinkFactory, range_millimetres


# A frame is traced in one backend call, then cut into pieces of at most PIECE_RAYS rays, and into
# at least MIN_PIECES from MIN_SPLIT_RAYS on (an even count), for the material classes and the
# surface model on the backend's thread count of workers. Pieces depend on the ray count only, and
# each has its own random stream, so a frame is the same whatever the thread count. Large pieces:
# each costs a few dozen numpy calls, and while two threads run numpy calls every call may wait
# for the GIL: large arrays per call keep that cost small against the work.
# Small pieces (a VLP-16 frame: 2 x 14400 beams) run on two threads too. Running them one after the
# other on the calling thread, each overlapped with the tracing of the next piece (a pipeline), or all
# after the trace on one thread, measured no faster on 2 cores (2026-11-26, the three alternated frame
# by frame in one process, median of each frame's time over the bare trace of its round: VLP-16 with 4
# sub-rays 1.83-1.90x on two threads, 1.89-2.05x pipelined, 1.85-2.03x on one thread after the trace;
# VLP-16 2.01-2.02x, 2.14x, 2.05-2.07x): overlapped numpy and tracing slow each other as much as they gain.
PIECE_RAYS = 65536
MIN_SPLIT_RAYS = 16384
MIN_PIECES = 2  # from MIN_SPLIT_RAYS on: both threads get a piece
# up to this many rays the ray table is rotated on the calling thread in one loop (a VLP-16 frame's 28 800
# rays: ~60 us) rather than piece by piece on the pool, whose hand-over costs as much (every ray is rotated
# alike either way: the same bits)
ROTATE_INLINE_RAYS = 65536
# intensity fields a layout's point cloud reads besides the sensor's intensity field: computed in
# the parallel pieces instead of on first access
LAYOUT_FIELDS = {"ouster": ("ouster_reflectivity", "ouster_ambient")}

def frame_pieces(n: int) -> list[tuple[int, int]]:
    """[a, b) ray ranges of a frame of n rays: ceil(n / PIECE_RAYS) pieces, at least MIN_PIECES from
    MIN_SPLIT_RAYS rays on, rounded up to an even count."""
    k = max(1, -(-n // PIECE_RAYS), MIN_PIECES if n >= MIN_SPLIT_RAYS else 1)
    if k > 1 and k % 2:
        k += 1
    bounds = np.linspace(0, n, k + 1).astype(np.int64)
    return [(int(lo), int(hi)) for lo, hi in zip(bounds[:-1], bounds[1:])]


class LidarSimulator:
    """Simulates frames of one sensor in one scene. Same seed, same frames (bit for bit, same backend)."""

    def __init__(self, config: LidarConfig, scene, backend, seed: int | None = None,
                 sink: SinkFactory | None = None):
        self.config = config
        self.scene = scene
        self.backend = backend
        self.seed = int(config.seed if seed is None else seed)
        self.model = SurfaceModel(config.surface, config.noise, config.n_lasers, self.seed, config.effects)
        self.effects = config.effects
        beam = config.effects.beam
        # rays traced per beam: sub-rays over the footprint (physics/footprint.py), or the central ray
        self._k = beam.sub_rays if beam.footprint and beam.divergence_mrad > 0 else 1
        self._sub_radius, _, self._weights = sub_ray_offsets(beam.divergence_mrad * 1e-3, self._k, beam.profile)
        self._glass = config.effects.glass.specular
        self._foliage = config.effects.foliage.volume  # crowns as leaf volumes (physics/foliage.py)
        self._echoes = self._k > 1 or beam.dual or self._glass
        weather = config.effects.weather
        self._alpha = weather_extinction_per_m(weather)
        # particle echoes need a finite sensitivity to be weighed against (with model 'none' every one would be seen)
        self._backscatter = weather.backscatter and self._alpha > 0 and config.surface.model != "none"
        self.materials = LidarMaterials.from_library(scene.materials)
        self._materials_stamp = self._library_stamp()
        self._scans = 0
        n = config.rows * config.cols
        self._pieces = frame_pieces(n)
        self._threads = max(1, int(getattr(backend, "threads", 1) or 1))
        # per-pixel constants of the run, gathered once (laser bias, range offset, ray tables)
        k = self._k
        beam_dirs = config.directions.reshape(n, 3)
        self._dirs = beam_dirs if k == 1 else self._spread(beam_dirs)  # the traced rays, beam-major
        self._origins = np.repeat(config.origins.reshape(n, 3), k, axis=0) if k > 1 else config.origins.reshape(n, 3)
        self._column = np.repeat(config.pixel_column.reshape(n), k)
        # each ray's firing time after the frame's start: moving entities are met where they are then (Embree and
        # Warp both can; a plug-in backend that cannot refuses such rays while a twist moves one: Backend.check_sweeps)
        self._ray_times = None
        if config.effects.timing.moving_entities == "sweep":
            self._ray_times = np.asarray(config.column_times, np.float64)[self._column]
        self._ray_bias = self.model.ray_bias(np.repeat(config.laser_index, config.cols))
        self._ray_gain = self.model.ray_gain(np.repeat(config.laser_index, config.cols))
        self._has_offset = bool(np.any(config.range_offset))
        self._offset = np.repeat(config.range_offset, config.cols).astype(np.float32) if self._has_offset else None
        self._offset_traced = np.repeat(self._offset, k) if self._has_offset and k > 1 else self._offset
        self._has_origins = bool(np.any(config.origins))
        # a ray table checked once (finite origins, finite unit directions) lets every frame's world
        # rays skip the backend's per-ray checks (rotations of it by a validated pose stay so)
        self._table_ok = _valid_rays(self._origins, self._dirs)
        max_off, min_off = float(config.range_offset.max()), float(config.range_offset.min())
        self._tmin = max(config.range_min - max_off, 0.0)
        self._tmax = config.range_max - min_off
        self._eager = tuple(f for f in LAYOUT_FIELDS.get(config.layout, ()) if f != config.intensity_field)
        self._multipath = config.effects.tof.multipath  # a whole-frame step: ranges change after the pieces
        # the driver cloud written in place, where the sink allows (pieces are then whole rows)
        self._cloud = None if sink is None or self._multipath else sink(config, [a for a, _ in self._pieces])
        # component-major copies of the ray table: rotating them is 9 contiguous multiply-adds
        self._dirs_t = np.ascontiguousarray(self._dirs.T)
        self._origins_t = np.ascontiguousarray(self._origins.T)
        # the beams' nominal rays in the frame points are reported in: points lie on them (a driver-exact
        # pattern reports them along the driver's rays, e.g. velodyne_pointcloud's block azimuth)
        traced_beams = beam_dirs
        if config.point_directions is not None:
            beam_dirs = config.point_directions.reshape(n, 3)
        beam_origins = (config.origins if config.point_origins is None else config.point_origins).reshape(n, 3)
        m = np.asarray(config.point_transform, np.float64)
        if not np.array_equal(m, np.eye(4)):  # e.g. Ouster os_sensor rays, os_lidar points
            beam_dirs = (beam_dirs @ m[:3, :3].T).astype(np.float32)
            beam_origins = (beam_origins @ m[:3, :3].T + m[:3, 3]).astype(np.float32)
        self._point_origins = bool(np.any(beam_origins))  # points = origin + range * direction
        self._beam_dirs_t = self._dirs_t if k == 1 and beam_dirs is traced_beams else np.ascontiguousarray(beam_dirs.T)
        self._beam_origins_t = np.ascontiguousarray(beam_origins.T)
        # world-ray buffers, reused every frame (the tracer copies what it keeps); hence the lock
        self._world_o = np.empty((n * k, 3), np.float32)
        self._world_d = np.empty((n * k, 3), np.float32)
        self._starts = np.empty((n * k, 3), np.float32) if np.float32(self._tmin) else None  # rays start at tmin
        self._lock = threading.Lock()
        self._last_pose: tuple[bytes | None, np.ndarray | None] = (None, None)  # (pose bytes, validated matrix)

    def simulate(self, pose, t0_ns: int = 0) -> LidarScan:
        """One frame starting at t0_ns. pose: 4x4 world <- sensor, or a Trajectory (per-column poses)."""
        with self._lock:
            return self._simulate(pose, int(t0_ns))

    def frame_key(self, index: int, t0_ns: int) -> list[int]:
        """The entropy of a frame's random streams: the run's seed, the frame's count and its start time,
        so two frames at different times differ even as the first of their runs (`--t0`)."""
        return [self.seed, index, int(t0_ns) % 2**64]

    def _new_frame(self) -> "_Frame":
        """The next frame's arrays; the material table refreshed if the scene's library changed."""
        cfg = self.config
        frame = _Frame(self._scans, (cfg.rows, cfg.cols), (cfg.intensity_field, *self._eager), self._cloud)
        self._scans += 1
        stamp = self._library_stamp()
        if stamp != self._materials_stamp:  # materials were added to or replaced in the library
            self.materials = LidarMaterials.from_library(self.scene.materials)
            self._materials_stamp = stamp
        return frame

    def _simulate(self, pose, t0_ns: int) -> LidarScan:
        cfg = self.config
        frame = self._new_frame()
        if cfg.retime is None:
            frame.dirs, frame.dirs_t = self._dirs, self._dirs_t
            frame.beam_dirs_t = self._beam_dirs_t
            frame.checked = self._table_ok
        else:  # Risley patterns: this frame's own rays
            dirs = cfg.retime(t0_ns * 1e-9).reshape(-1, 3)
            frame.beam_dirs = (dirs / np.linalg.norm(dirs, axis=1, keepdims=True)).astype(np.float32)  # unit: traced as is
            frame.beam_dirs_t = np.ascontiguousarray(frame.beam_dirs.T)
            frame.dirs = frame.beam_dirs if self._k == 1 else self._spread(frame.beam_dirs)
            frame.dirs_t = frame.beam_dirs_t if self._k == 1 else np.ascontiguousarray(frame.dirs.T)
            frame.checked = self._table_ok and bool(np.isfinite(frame.dirs.sum()))
        self._place(frame, pose, t0_ns)
        jobs = [(k, a, b) for k, (a, b) in enumerate(self._pieces)]
        # each piece: its own Generator stream (draws only the host makes) and the frame's counter draws from its
        # first beam on (radarays_ros/counter_random.py: the draws the device kernel makes too, by ray index)
        frame.entropy = entropy = self.frame_key(frame.index, t0_ns)
        key = frame_key64(entropy)
        rngs = [RayDraws(np.random.PCG64([*entropy, k]), key, a) for k, a, _ in jobs]
        # The first hits of the whole frame in one backend call (the backend splits it over its threads in
        # chunks, as many as the bare-Embree benchmark uses, taken dynamically, which balances cheap sky
        # rays against ground rays), then the material classes and the surface model piece by piece on
        # every thread (numpy releases the GIL in each call).
        parts = self._traced_at_once(frame, jobs, rngs)
        if self._multipath:
            self._add_multipath(frame, parts)
        if frame.cloud is not None:
            self._cloud.done(frame.cloud)
        return self._scan(frame, t0_ns, parts)

    def _traced_at_once(self, frame: "_Frame", jobs, rngs) -> list:
        """The frame's world rays, its first hits in one backend call, then its pieces' surface models
        on every thread."""
        cfg = self.config
        m = self._k
        # the rays' starts at tmin (tracing.Rays.starts) written in the rotating pass, which has the rays in hand:
        # the backend then reads them instead of reading the rays again (not when jitter turns the rays after)
        starts = self._starts if self._starts is not None and cfg.noise.angular_sigma <= 0 else None
        if frame.world_d is None and len(self._dirs) <= ROTATE_INLINE_RAYS:  # one loop, no handing over
            self._world_rays(frame, 0, len(self._dirs), starts)
            origins, dirs = self._world_o, self._world_d
        elif frame.world_d is None:  # rotated piece by piece on every thread (a compiled loop without the GIL)
            self._each_piece(jobs, lambda k, a, b: self._world_rays(frame, a * m, b * m, starts))
            origins, dirs = self._world_o, self._world_d
        else:  # per-pixel world rays of a trajectory
            origins, dirs, starts = frame.world_o, frame.world_d, None
        if cfg.noise.angular_sigma > 0:  # each piece's own random stream, as it is used below
            for k, a, b in jobs:
                dirs[a * m:b * m] = jitter_directions(dirs[a * m:b * m], cfg.noise.angular_sigma, rngs[k].at(a * m))
        first = first_trace(self.backend, origins, dirs, self._tmin, self._tmax, frame.checked, self._ray_times,
                            None if starts is None else (self._tmin, starts))
        return self._each_piece(jobs, lambda k, a, b: self._surface_piece(
            frame, rngs[k], (origins[a * m:b * m], dirs[a * m:b * m], first.span(a * m, b * m)), a, b))

    def _add_multipath(self, frame: "_Frame", parts: list) -> None:
        """Depth cameras: every return's range biased by one diffuse bounce off the rest of the frame
        (physics/multipath.py), computed in the camera frame from the frame's hits, normals and albedos."""
        cfg = self.config
        n = cfg.rows * cfg.cols
        hit = np.flatnonzero(frame.hit)
        if len(hit) < 2:
            return
        truth = _GroundTruth(parts, (n,))
        rotation = np.asarray(frame.rotation)
        rotation = rotation[0] if rotation.ndim == 3 else rotation  # a camera exposes every pixel at once
        normals = truth("normal_world").reshape(n, 3)[hit].astype(np.float64) @ rotation  # world -> camera
        cos_direct = truth("cos_incidence").reshape(n)[hit].astype(np.float64)
        albedo = _LazyFields(parts, {}, (n,))["reflectivity"][hit] / np.maximum(cos_direct, 1e-3)
        beams = cfg.directions.reshape(n, 3).astype(np.float64)
        ranges = frame.range[hit].astype(np.float64)
        points = beams[hit] * ranges[:, None] + cfg.origins.reshape(n, 3)[hit]
        # emitting patches: a grid of the camera's pixels, each standing for stride² pixels of solid angle
        # d_forward³ / (fx·fy) (a pinhole pixel's solid angle)
        stride = patch_stride((cfg.rows, cfg.cols), self.effects.tof.multipath_patches)
        grid = np.zeros((cfg.rows, cfg.cols), bool)
        grid[stride // 2::stride, stride // 2::stride] = True
        sources = np.flatnonzero(grid.reshape(n)[hit])
        info = cfg.planar_info
        solid_angle = beams[hit[sources], 0] ** 3 / (info["fx"] * info["fy"]) * stride**2
        weights = albedo[sources] * solid_angle / np.pi
        tof = self.effects.tof
        frequency = tof.frequencies_mhz[0] * 1e6 if tof.mode == "cw" else 0.0
        bias = multipath_bias(points, normals, ranges, cos_direct, sources, weights, frequency).astype(np.float32)
        frame.range[hit] += bias
        frame.xyz[hit] += bias[:, None] * frame.beam_dirs_t.T[hit]

    def _spread(self, beam_dirs: np.ndarray) -> np.ndarray:
        beam = self.effects.beam
        return spread_directions(beam_dirs, beam.divergence_mrad * 1e-3, self._k, beam.profile)

    def _each_piece(self, jobs, fn) -> list:
        """[fn(k, a, b) for every piece], the first on the calling thread, the others on the kept "frame"
        pool of the backend's thread count (radarays_ros/threads.py)."""
        if len(jobs) == 1 or self._threads == 1:
            return [fn(*job) for job in jobs]
        rest = [pool("frame", self._threads).submit(fn, *job) for job in jobs[1:]]
        try:
            first = fn(*jobs[0])
        finally:
            others = [future.result() for future in rest]  # also waits for them when the first fails
        return [first, *others]

    def _library_stamp(self) -> tuple:
        """Which library, at which version and size, `self.materials` was parsed from."""
        library = self.scene.materials
        return id(library), getattr(library, "version", None), len(library)

    # -- pieces ---------------------------------------------------------------------------------
    def _place(self, frame: "_Frame", pose, t0_ns: int) -> None:
        """The frame's pose: one rotation + shift (rays rotated per piece), or per-pixel world rays."""
        if isinstance(pose, Trajectory) and len(pose.t_ns) > 1:
            times = t0_ns + np.round(self.config.column_times * 1e9).astype(np.int64)
            poses = pose.at(times)  # (M, 4, 4), one per measurement column
            frame.checked = frame.checked and bool(np.isfinite(poses.sum()))
            rot = poses[self._column, :3, :3]
            shift = poses[self._column, :3, 3]
            frame.rotation = rot[::self._k]  # one per beam (its sub-rays share its column): the points' frames
            frame.world_o = (np.einsum("nij,nj->ni", rot, self._origins) + shift).astype(np.float32)
            frame.world_d = np.einsum("nij,nj->ni", rot, frame.dirs).astype(np.float32)
            return
        if isinstance(pose, Trajectory):
            pose = pose.poses[0]
        m = self._checked_pose(pose)
        frame.rotation = m[:3, :3]
        frame.r = m[:3, :3].astype(np.float32)
        frame.t = m[:3, 3].astype(np.float32)

    def _checked_pose(self, pose) -> np.ndarray:
        """check_transform(pose) as float64, validated once for as long as the sensor stays at the same pose
        (a parked robot, a fixed sensor: 60 us of small numpy calls per frame, 2 % of a VLP-16 frame)."""
        key = pose.tobytes() if isinstance(pose, np.ndarray) and pose.dtype == np.float64 else None
        if key is not None and key == self._last_pose[0]:
            return self._last_pose[1]
        m = check_transform(pose, what="lidar sensor pose")
        if key is not None:
            m = m.copy()  # the caller may change its array afterwards; read-only as the scans share it
            m.setflags(write=False)
            self._last_pose = (key, m)
        return m

    def _world_rays(self, frame: "_Frame", a: int, b: int, starts: np.ndarray | None = None) -> None:
        """World origins and unit directions of rays a..b into the frame's buffers, in one pass, and their
        starts at tmin into `starts` (when given)."""
        world_rays(frame.dirs_t[:, a:b], frame.r, frame.t, self._origins_t[:, a:b] if self._has_origins else None,
                   self._tmin, self._world_o[a:b], self._world_d[a:b], None if starts is None else starts[a:b])

    def _surface_piece(self, frame: "_Frame", rng: np.random.Generator, traced, a: int, b: int) -> "_Part":
        """The material classes and the surface model on rays a..b (traced: their world origins,
        directions and first hits); fills the frame's arrays there."""
        cfg = self.config
        origins, dirs, first = traced
        m = self._k
        times = None if self._ray_times is None else self._ray_times[a * m:b * m]
        hits = trace_lidar(self.backend, origins, dirs, self.materials, self._tmin, self._tmax,
                           max_bounces=cfg.max_bounces, unit_directions=True, first_hits=first,
                           leaves=LeafDraws(rng, self._sub_radius) if self._foliage else None, times=times)
        if self._has_offset:  # Ouster ranges count from the lidar origin
            hits.range = hits.range + self._offset_traced[a * m:b * m]
        if self._alpha > 0:  # fog/rain: two-way extinction of every (sub-)ray's return
            hits.reflectivity = hits.reflectivity * two_way_transmission(hits.range, self._alpha)
        beams = [hits]
        ranges, rho, weights = hits.range.reshape(-1, m), hits.reflectivity.reshape(-1, m), self._weights
        if self._glass:  # the glass's specular return and its ghost join the beam's sub-returns
            glass = self.effects.glass
            g = glass_returns(self.backend, origins, dirs, first, self.materials, self._tmax, glass.refractive_index,
                              np.radians(glass.lobe_deg), glass.ghosts, times)
            extra = [g.specular_range, g.ghost_range]
            if self._has_offset:
                extra = [r + self._offset_traced[a * m:b * m] for r in extra]
            extra_rho = [g.specular_rho, g.ghost_rho]
            if self._alpha > 0:
                extra_rho = [p * two_way_transmission(r, self._alpha) for p, r in zip(extra_rho, extra)]
            ranges = np.hstack([ranges, *(r.reshape(-1, m) for r in extra)])
            rho = np.hstack([rho, *(p.reshape(-1, m) for p in extra_rho)])
            weights = np.tile(weights, 3)
        if self._echoes:  # the beam's echoes from its sub-rays' returns
            beam = self.effects.beam
            echoes = form_echoes(ranges, rho, weights, beam.echo_separation_m, beam.return_mode)
            if self.effects.detection.edge_dropout:  # split footprints: the echo kept with its power share
                drop_split_echoes(ranges, weights, echoes[0], echoes[1] if beam.return_mode in DUAL_MODES else None,
                                  beam.echo_separation_m, rng)
            if len(echoes) > 1:  # dual: only the few beams with a second echo go on (depth edges; a VLP-16
                # frame has ~2 % of them): the surface model runs on those alone (_SparsePart)
                second = np.flatnonzero(echoes[1].present)
                echoes[1] = Echo(*(v[second] for v in (echoes[1].range, echoes[1].reflectivity, echoes[1].dominant)))
            beams = [hits_of_echo(hits, echo, m, ranges.shape[1], g if self._glass else None) for echo in echoes]
        if self._backscatter:
            add_backscatter(beams[0], self.effects, self._alpha, cfg.range_min, rng)
        signal = self.effects.signal
        if signal.bloom_threshold > 0:  # halo returns beside retroreflectors (pieces hold whole rows or more)
            add_bloom(beams[0], cfg.cols, signal.bloom_threshold, signal.bloom_width_px, signal.bloom_leak, a)
        surface = cfg.surface
        if surface.texture_sigma > 0:  # the surfaces' albedo texture at each beam's returning point (texture.py)
            o, d = origins[::m], dirs[::m]
            for k, beam_hits in enumerate(beams):
                beam_hits.reflectivity = textured_reflectivity(
                    o, d, beam_hits.range, beam_hits.reflectivity, surface.texture_sigma, surface.texture_length_m,
                    self.seed, None if k == 0 else second)
        bias = None if self._ray_bias is None else self._ray_bias[a:b]
        gain = None if self._ray_gain is None else self._ray_gain[a:b]
        ret = self.model.apply(beams[0], None, rng, ray_bias=bias, ray_gain=gain)
        if len(beams) > 1:
            second_draws = rng.at(a, frame_key64([*frame.entropy, SECOND_ECHO_STREAM]))  # counter draws of their own
            frame.second.append((a, b, second, self.model.apply(
                beams[1], None, second_draws, ray_bias=None if bias is None else bias[second],
                ray_gain=None if gain is None else gain[second])))
        return self._write_returns(frame, ret, a, b)

    def _write_returns(self, frame: "_Frame", ret, a: int, b: int) -> "_Part":
        """The surface model's returns of beams a..b into the frame's arrays (and its cloud): the range
        window, points, intensity fields. ret: a physics Returns, or the device frame's (warp_frame.py)."""
        cfg = self.config
        rng_out = ret.range  # NaN where there is no return (physics contract)
        xyz = frame.pixels(frame.xyz, a, b)
        grid = xyz.shape[:-1] if xyz.ndim == 3 else (1, b - a)  # (rows, cols) of a cloud view, or one row
        offset = self._offset[a:b].reshape(grid) if self._has_offset else _NONE_2D
        origins = self._beam_origins_t[:, a:b].reshape(3, *grid) if self._point_origins else _NONE_3D
        range_mm = _NONE_MM if frame.range_mm is None else frame.pixels(frame.range_mm, a, b).reshape(grid)
        window = (rng_out.reshape(grid), ret.hit.reshape(grid), np.float32(cfg.range_min), np.float32(cfg.range_max),
                  offset, frame.beam_dirs_t[:, a:b].reshape(3, *grid), origins, frame.hit[a:b].reshape(grid),
                  frame.range[a:b].reshape(grid), xyz.reshape(*grid, 3), range_mm)
        counts = _photon_fields(frame, ret, a, b, grid)  # the fields copied in the same pass, or None
        pushed_out = _points_in_window(*window, *(_NO_COUNTS if counts is None else counts))
        dropped = None
        if pushed_out:  # returns that noise pushed outside [min, max]: no return (NaN) in every array
            dropped = np.flatnonzero(ret.hit & ~frame.hit[a:b])
            rng_out[dropped] = np.nan
        part = _Part(ret, dropped)
        if counts is None:
            for name, values in frame.fields.items():
                dst = frame.pixels(values, a, b)
                dst[...] = part.field(name).reshape(dst.shape)
            if frame.intensity is not frame.fields[cfg.intensity_field]:  # a float32 copy of an integer field
                dst = frame.pixels(frame.intensity, a, b)
                dst[...] = frame.pixels(frame.fields[cfg.intensity_field], a, b).reshape(dst.shape)
        if frame.cloud is not None:
            self._cloud.fill(frame.cloud, a // cfg.cols, b // cfg.cols, rng_out, frame.fresh_cloud,
                             frame.pixels(frame.intensity, a, b))
        return part

    def _scan(self, frame: "_Frame", t0_ns: int, parts: list) -> LidarScan:
        cfg = self.config
        shape = (cfg.rows, cfg.cols)
        if cfg.retime is None:
            azimuth, elevation = cfg.azimuth, cfg.elevation
        else:  # this frame's own rays (Risley patterns move from frame to frame)
            azimuth, elevation = (a.astype(np.float32).reshape(shape) for a in angles_of(frame.beam_dirs))
        fields = _LazyFields(parts, {k: v.reshape(shape) for k, v in frame.fields.items()}, shape)
        time = self._column_stamped_times(frame, t0_ns)
        if time is not cfg.time and frame.cloud is not None:
            self._cloud.stamp(frame.cloud, time)
        second = self._second_scan(frame, t0_ns, azimuth, elevation, fields, time) if frame.second else None
        return LidarScan(
            config=cfg,
            t0_ns=t0_ns,
            range=frame.range.reshape(shape),
            hit=frame.hit.reshape(shape),
            xyz=frame.xyz.reshape(*shape, 3),
            intensity=frame.intensity.reshape(shape),
            elevation_rad=elevation,
            azimuth_rad=azimuth,
            time=time,
            ring=cfg.ring,
            fields=fields,
            pose_rotation=frame.rotation,
            ground_truth_source=_GroundTruth(parts, shape),
            cloud=frame.cloud,  # already in its layout's shape
            cloud_writer=self._cloud,
            second=second,
        )

    def _column_stamped_times(self, frame: "_Frame", t0_ns: int) -> np.ndarray:
        """The pixels' times as the sensor stamps them: the config's nominal times, or with timing jitter and
        wander (column_timing.py) this frame's own, drawn from its own seeded stream."""
        cfg, timing = self.config, self.effects.timing
        if not timing.enabled:
            return cfg.time
        rng = np.random.default_rng([*self.frame_key(frame.index, t0_ns), TIMING_STREAM])
        offsets = column_time_offsets(len(cfg.column_times), timing.column_jitter_us * 1e-6,
                                      timing.column_wander_us * 1e-6, rng)
        return stamped_times(cfg.time, offsets, cfg.pixel_column)

    def _second_scan(self, frame: "_Frame", t0_ns: int, azimuth, elevation, first_fields, time) -> LidarScan:
        """The second echoes of a dual-return frame as a scan of their own (no cloud buffer). Ambient
        light is a pixel's, not a return's: the second scan reads the first scan's."""
        cfg = self.config
        shape = (cfg.rows, cfg.cols)
        n = cfg.rows * cfg.cols
        ranges = np.full(n, np.nan, np.float32)
        parts = []
        # the first echo is the strongest *detected* one (Ouster RANGE; Velodyne/Hesai strongest block): a second
        # return never stands alone (none in the shared real Ouster, VLP-16 and XT32 dual frames); one whose
        # first was lost to detection or the window is dropped with it
        alone_dropped = self.effects.beam.return_mode in DUAL_MODES
        for a, b, beams, ret in sorted(frame.second, key=lambda item: item[0]):
            r = ret.range
            keep = (r >= cfg.range_min) & (r <= cfg.range_max)
            if alone_dropped:
                keep &= frame.hit[a + beams]
            dropped = None if np.count_nonzero(keep) == np.count_nonzero(ret.hit) else np.flatnonzero(ret.hit & ~keep)
            if dropped is not None:
                r[dropped] = np.nan
            ranges[a + beams] = r
            parts.append(_SparsePart(ret, dropped, beams, b - a))
        xyz, hit = np.empty((n, 3), np.float32), np.empty(n, bool)
        grid = (1, n)  # the points as _write_returns places them (ranges are in the window already)
        _points_in_window(ranges.reshape(grid), np.isfinite(ranges).reshape(grid), np.float32(cfg.range_min),
                          np.float32(cfg.range_max), self._offset.reshape(grid) if self._has_offset else _NONE_2D,
                          frame.beam_dirs_t.reshape(3, *grid),
                          self._beam_origins_t.reshape(3, *grid) if self._point_origins else _NONE_3D,
                          hit.reshape(grid), ranges.reshape(grid), xyz.reshape(*grid, 3), _NONE_MM, *_NO_COUNTS)
        fields = _LazyFields(parts, {}, shape, shared={"ouster_ambient": first_fields})
        return LidarScan(
            config=cfg, t0_ns=t0_ns, range=ranges.reshape(shape), hit=hit.reshape(shape),
            xyz=xyz.reshape(*shape, 3),
            intensity=np.asarray(fields[cfg.intensity_field], np.float32), elevation_rad=elevation,
            azimuth_rad=azimuth, time=time, ring=cfg.ring, fields=fields, pose_rotation=frame.rotation,
            ground_truth_source=_GroundTruth(parts, shape),
        )


TIMING_STREAM = 0x7153_0001  # the column-time stream's key after frame_key (pieces use 0, 1, ...)
SECOND_ECHO_STREAM = 0x7153_0002  # the counter key of second echoes' draws after frame_key


class _Frame:
    """One frame's inputs (rays, pose) and the output arrays its pieces fill."""

    def __init__(self, index: int, shape: tuple[int, int], eager: tuple[str, ...], cloud: FrameSink | None = None):
        self.index = index
        self.entropy = None  # the frame's random entropy (LidarSimulator.frame_key)
        self.cols = shape[1]
        n = shape[0] * shape[1]
        self.dirs = self.dirs_t = self.rotation = self.r = self.t = None  # traced rays (sub-rays: beam-major)
        self.beam_dirs = self.beam_dirs_t = None  # the beams' nominal directions
        self.second = []  # (a, b, beams, Returns) of the second echoes of dual-return pieces (beams: in the piece)
        self.checked = False  # the frame's world rays are known valid (trace(checked=True))
        self.world_o = self.world_d = None  # per-pixel world rays (trajectory) instead of r, t
        self.range = np.empty(n, np.float32)
        self.hit = np.empty(n, bool)
        self.cloud, self.fresh_cloud = (None, True) if cloud is None else cloud.new()
        views = {} if cloud is None else cloud.views(self.cloud)  # (rows, cols) arrays that live in the cloud
        self._in_cloud = {id(v) for v in views.values()}
        self.xyz = views["xyz"] if views else np.empty((n, 3), np.float32)
        self.range_mm = views.get(RANGE_MM)  # the cloud's range in millimetres, written with xyz; None: none
        self.fields = {name: views[name] if name in views else np.empty(n, FIELD_DTYPES[name])
                       for name in dict.fromkeys(eager)}
        first = self.fields[eager[0]]  # the sensor's intensity field: float32 already, or copied per piece
        if "intensity" in views:
            self.intensity = views["intensity"]
        else:
            self.intensity = first if first.dtype == np.float32 else np.empty(n, np.float32)

    def pixels(self, values: np.ndarray, a: int, b: int) -> np.ndarray:
        """The part of a frame array that holds pixels a..b: (b - a, ...) of a flat array, or rows
        a/cols..b/cols of a (rows, cols, ...) view into the cloud (pieces are then whole rows)."""
        if id(values) in self._in_cloud:
            return values[a // self.cols:b // self.cols]
        return values[a:b]


FIELD_DTYPES = {"reflectivity": np.float32, "velodyne_intensity": np.float32, "ouster_reflectivity": np.uint16,
                "ouster_signal": np.uint16, "ouster_ambient": np.uint16}


class _Part:
    """The surface model's returns of one piece, and its returns that noise pushed out of range."""

    KEEP_ON_DROP = ("ouster_ambient",)  # ambient light is measured whether or not a return came back

    def __init__(self, ret, dropped: np.ndarray | None):
        self.ret, self.dropped = ret, dropped

    def field(self, name: str) -> np.ndarray:
        values = getattr(self.ret, name)
        if self.dropped is not None and name not in self.KEEP_ON_DROP:
            values[self.dropped] = 0
        return values

    def truth(self, name: str, missing) -> np.ndarray:
        values = getattr(self.ret, name)
        if self.dropped is not None:
            values[self.dropped] = missing
        return values


class _SparsePart(_Part):
    """The returns of the beams `beams` of a piece of `size` beams (a dual frame's second echoes): every
    other beam reads as a miss (fields 0, ground truth missing)."""

    def __init__(self, ret, dropped: np.ndarray | None, beams: np.ndarray, size: int):
        super().__init__(ret, dropped)
        self.beams, self.size = beams, size

    def field(self, name: str) -> np.ndarray:
        values = super().field(name)
        out = np.zeros((self.size, *values.shape[1:]), values.dtype)
        out[self.beams] = values
        return out

    def truth(self, name: str, missing) -> np.ndarray:
        values = super().truth(name, missing)
        out = np.full((self.size, *values.shape[1:]), missing, values.dtype)
        out[self.beams] = values
        return out


class _LazyFields(Mapping):
    """The physics model's intensity fields of one frame: the ones computed with the frame, the others
    on first access (joined from the frame's pieces).

    Returns that noise pushed outside [range_min, range_max] read 0 like any miss (the physics model
    already zeroes everything without a return); ambient light is kept."""

    NAMES = ("reflectivity", "velodyne_intensity", "ouster_reflectivity", "ouster_signal", "ouster_ambient")

    def __init__(self, parts, done: dict, shape, shared: Mapping | None = None):
        self._parts, self._shape, self._done = parts, shape, dict(done)
        self._shared = dict(shared or {})  # name -> the fields of another scan of the same pixels that hold it

    def __getitem__(self, name):
        if name not in self.NAMES:
            raise KeyError(name)
        if name in self._shared:
            return self._shared[name][name]
        if name not in self._done:
            values = [p.field(name) for p in self._parts]
            joined = values[0] if len(values) == 1 else np.concatenate(values)
            self._done[name] = joined.reshape(self._shape)
        return self._done[name]

    def __iter__(self):
        return iter(self.NAMES)

    def __len__(self):
        return len(self.NAMES)


class _GroundTruth:
    """Ground-truth arrays of one frame on demand (LidarScan.ground_truth_source), joined from its pieces."""

    MISSING = {"clean_range": np.nan, "cos_incidence": 0, "entity": -1, "material": -1, "normal_world": 0}
    SOURCE = {"normal_world": "normal"}

    def __init__(self, parts, shape):
        self._parts, self._shape = parts, shape

    def __call__(self, name: str) -> np.ndarray:
        values = [p.truth(self.SOURCE.get(name, name), self.MISSING[name]) for p in self._parts]
        joined = values[0] if len(values) == 1 else np.concatenate(values)
        return joined.reshape(*self._shape, *joined.shape[1:])


_NONE_2D, _NONE_3D = np.empty((0, 0), np.float32), np.empty((0, 0, 0), np.float32)  # terms that are off
_NONE_MM = np.empty((0, 0), np.uint32)  # no range-in-millimetres view
_range_millimetres = inlined(range_millimetres)
_NO_COUNTS = (*(np.empty(0, np.uint16),) * 3, *(np.empty((0, 0), np.uint16),) * 3, _NONE_2D, False, False, False)


@kernel
def _points_in_window(ranges, returned, range_min, range_max, offset, dirs, origins, keep, range_out, xyz, range_mm,
                      first, second, third, first_out, second_out, third_out, intensity_out, first_zeroed,
                      second_zeroed, third_zeroed):
    """Per pixel (rows, cols): keep = range within [range_min, range_max] (NaN: no); a return outside
    gets range NaN (also in `ranges`); x = origin + (range - offset) · nominal direction, NaN rows stay
    NaN; where range_mm has rows (a sink's RANGE_MM view; `_NONE_MM`: none) the range in millimetres
    (sink.range_millimetres; 0 where none). Returns how many returns fell outside.

    With three uint16 fields (first, second, third: flat, pixel order; `_photon_fields`; `_NO_COUNTS`: none),
    in the same pass each copied to its output (rows, cols), the first also as float32 intensity; a field
    marked `zeroed` reads 0 where the return fell outside the window, in its source too. One pass writes every
    field of a cloud point while its bytes are in cache (field-by-field copies each walk the whole cloud)."""
    pushed_out = 0
    cols = ranges.shape[1]
    counts = first.shape[0] > 0
    millimetres = range_mm.shape[0] > 0
    for row in range(ranges.shape[0]):
        for col in range(cols):
            r = ranges[row, col]
            inside = r >= range_min and r <= range_max
            keep[row, col] = inside
            pushed = returned[row, col] and not inside
            if pushed:
                pushed_out += 1
                r = ranges[row, col] = np.float32(np.nan)
            range_out[row, col] = r
            if millimetres:
                range_mm[row, col] = _range_millimetres(r)
            dist = r - offset[row, col] if offset.shape[0] else r
            for i in range(3):
                x = dirs[i, row, col] * dist
                xyz[row, col, i] = x + origins[i, row, col] if origins.shape[0] else x
            if counts:
                i = row * cols + col
                if pushed:
                    if first_zeroed:
                        first[i] = 0
                    if second_zeroed:
                        second[i] = 0
                    if third_zeroed:
                        third[i] = 0
                value = first[i]
                first_out[row, col] = value
                intensity_out[row, col] = np.float32(value)
                second_out[row, col] = second[i]
                third_out[row, col] = third[i]
    return pushed_out


def _photon_fields(frame: "_Frame", ret, a: int, b: int, grid: tuple[int, int]) -> tuple | None:
    """The fields `_points_in_window` copies in its pass, as its arguments, when the frame's fields are three uint16
    fields and its intensity a float32 copy of the first (the ouster layout; the intensity field is always the
    first: LidarSimulator makes the _Frame so); else None (then copied one by one, `_Part.field`). The sources are
    the returns' own arrays of pixels a..b (computed here), so a return pushed out of the window is zeroed in them
    as `_Part.field` does (the ground truth reads them); the outputs are the frame's arrays of those pixels as
    (rows, cols) `grid`, then its intensity; then per field whether a pushed-out return reads 0
    (`_Part.KEEP_ON_DROP`)."""
    fields = tuple(frame.fields.items())
    if (len(fields) != 3 or frame.intensity is fields[0][1] or frame.intensity.dtype != np.float32
            or any(values.dtype != np.uint16 for _, values in fields)):
        return None
    sources = tuple(getattr(ret, name) for name, _ in fields)
    if any(s.dtype != np.uint16 or s.shape != (b - a,) or not s.flags.c_contiguous for s in sources):
        return None
    outputs = (*(frame.pixels(values, a, b) for _, values in fields), frame.pixels(frame.intensity, a, b))
    return (*sources, *(o.reshape(grid) for o in outputs), *(name not in _Part.KEEP_ON_DROP for name, _ in fields))


def _valid_rays(origins: np.ndarray, directions: np.ndarray) -> bool:
    """Finite origins and finite unit directions (|d|^2 within 1e-6 of 1, as check_rays accepts)."""
    norm2 = np.einsum("ij,ij->i", directions.astype(np.float64), directions.astype(np.float64))
    return bool(np.isfinite(origins).all() and np.isfinite(norm2).all() and np.all(np.abs(norm2 - 1) <= 1e-6))


def world_rays(dirs_t: np.ndarray, r: np.ndarray, t: np.ndarray, origins_t: np.ndarray | None = None,
               tmin: float = 0.0, origins_out: np.ndarray | None = None, dirs_out: np.ndarray | None = None,
               starts_out: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(origins, directions, starts) of N rays, float32 (N, 3): directions r @ d of the component-major dirs_t
    (3, N); origins r @ o + t of the component-major origins_t (3, N) (None: every ray from t); starts the rays'
    `ray_start` at tmin (tracing.backend; only into a given starts_out, else None). Per component, the three
    float32 products summed in order, then the shift. One compiled pass over the rays, so the starts cost no
    second reading of the rays (the backend's own shift would)."""
    n = dirs_t.shape[1]
    if origins_t is not None and origins_t.shape != (3, n):
        raise ValueError(f"world_rays: origins_t must be (3, {n}); got {origins_t.shape}")
    arrays = [np.asarray(dirs_t), np.asarray(r), np.asarray(t)] + ([] if origins_t is None else [np.asarray(origins_t)])
    if any(a.dtype != np.float32 for a in arrays):
        raise ValueError("world_rays: rays, rotation and shift must be float32 (the sums are float32)")
    outs = [np.empty((n, 3), np.float32) if out is None else out for out in (origins_out, dirs_out)]
    for out in (*outs, starts_out):
        if out is not None and not (out.dtype == np.float32 and out.shape == (n, 3) and out.flags.c_contiguous):
            raise ValueError(f"world_rays: outputs must be C-contiguous ({n}, 3) float32 arrays")
    _world_rays_kernel(dirs_t, _NO_ORIGINS if origins_t is None else origins_t, r, t, np.float32(tmin),
                       outs[0], outs[1], _NO_STARTS if starts_out is None else starts_out)
    return outs[0], outs[1], starts_out


_NO_ORIGINS = np.empty((3, 0), np.float32)
_NO_STARTS = np.empty((0, 3), np.float32)


@inlined
def _turned(x, y, z, r):
    """r @ (x, y, z) for r a row-major 9-tuple: per component the three float32 products summed in order."""
    return (x * r[0] + y * r[1] + z * r[2], x * r[3] + y * r[4] + z * r[5], x * r[6] + y * r[7] + z * r[8])


@kernel
def _world_rays_kernel(dirs_t, origins_t, r, t, tmin, origins_out, dirs_out, starts_out):
    """world_rays' pass, one flat loop over the rays (the compiler vectorises it; nested loops over beams and
    their sub-rays, or blocks of rays, measured 2-3x slower); the outputs written through their flat views (4x
    faster than out[a, i] here: the rotation stays in registers and the stores in order)."""
    o_flat, d_flat, s_flat = origins_out.reshape(-1), dirs_out.reshape(-1), starts_out.reshape(-1)
    with_origins, with_starts = origins_t.shape[1] > 0, s_flat.shape[0] > 0
    x, y, z = dirs_t[0], dirs_t[1], dirs_t[2]
    ox, oy, oz = origins_t[0], origins_t[1], origins_t[2]
    rows = (r[0, 0], r[0, 1], r[0, 2], r[1, 0], r[1, 1], r[1, 2], r[2, 0], r[2, 1], r[2, 2])
    t0, t1, t2 = t[0], t[1], t[2]
    for a in range(dirs_t.shape[1]):
        du, dw, dh = _turned(x[a], y[a], z[a], rows)
        ou, ow, oh = t0, t1, t2
        if with_origins:
            u, w, h = _turned(ox[a], oy[a], oz[a], rows)
            ou, ow, oh = u + t0, w + t1, h + t2
        o_flat[3 * a], o_flat[3 * a + 1], o_flat[3 * a + 2] = ou, ow, oh
        d_flat[3 * a], d_flat[3 * a + 1], d_flat[3 * a + 2] = du, dw, dh
        if with_starts:
            s_flat[3 * a] = ray_start_inlined(ou, du, tmin)
            s_flat[3 * a + 1] = ray_start_inlined(ow, dw, tmin)
            s_flat[3 * a + 2] = ray_start_inlined(oh, dh, tmin)
