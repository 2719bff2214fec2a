"""One frame of the physical model: geometry (geometry.py) then the sensor stage (stage.py)."""
from __future__ import annotations

import weakref

import numpy as np

from ..image import RadarImage
from . import backscatter, interference, interferers, motion, scatterers, stage
from .geometry import joined, trace_physical
from .stage import run_stage


def sensor_velocities(pose, times: np.ndarray, frame_start_ns: int, frame_end_ns: int) -> np.ndarray:
    """(A, 3) world-frame velocity of the sensor (antenna) at each firing time (zero for a fixed pose). A firing
    time jittered (azimuth.time_jitter_s) out of the frame [start, end] takes the velocity at the frame's edge:
    a sweep's trajectory covers the frame only (sensors/poses.py poses_over), so the held pose past its ends
    (zero velocity, motion.derivative_window) would make a moving sensor still for that azimuth's Doppler."""
    from ...world.trajectory import Trajectory

    if not isinstance(pose, Trajectory):
        return np.zeros((len(times), 3))
    return motion.trajectory_velocity(pose, np.clip(np.asarray(times, np.int64), frame_start_ns, frame_end_ns))


def entity_motion(sim, t0_ns: int) -> motion.EntityMotion | None:
    """Rigid motion of every moving entity (by id): velocity of its origin, angular velocity, origin now. Its twist
    where the source that moved it gave one (a scenario's trajectory: exact, from the first frame on), else from
    its pose now and at the frame before (over that frame's time step; zero on the first frame); zero for static
    entities. None when nothing moves. With scatter.moving_entities: sweep, the entities whose twist moves them
    are `swept` (the backend traces them where they are at each azimuth's time)."""
    track = sim.__dict__.setdefault("_entity_track", {})
    moving = [e for e in sim.scene.entities if not e.static]
    if not moving:
        return None
    size = max(e.id for e in sim.scene.entities) + 1
    result = motion.EntityMotion(np.zeros((size, 3)), np.zeros((size, 3)), np.zeros((size, 3)))
    if sim.config.scatter.moving_entities == "sweep":
        result.swept = np.zeros(size, bool)
    for entity in moving:
        pose = np.array(entity.pose, np.float64)
        result.origin[entity.id] = pose[:3, 3]
        before = track.get(entity.id)
        if entity.twist is not None:
            result.velocity[entity.id], result.angular[entity.id] = entity.twist
            if result.swept is not None:
                result.swept[entity.id] = entity.sweeps
        elif before is not None and t0_ns > before[0]:
            result.velocity[entity.id], result.angular[entity.id] = motion.rigid_motion(before[1], pose, (t0_ns - before[0]) * 1e-9)
        track[entity.id] = (t0_ns, pose)
    return result


def scatter_table(sim) -> backscatter.ScatterTable:
    """The backscatter table for the simulator's scene library (cached until either changes)."""
    cfg = sim.config.scatter
    library = sim.scene.materials
    key = (cfg.table, cfg.default_class, id(library), getattr(library, "version", None), len(library))
    cached = getattr(sim, "_scatter_cache", None)
    if cached is None or cached[0] != key:
        sim._scatter_cache = (key, backscatter.load_table(cfg.table, cfg.default_class, library))
    return sim._scatter_cache[1]


_SCATTERERS: dict[int, tuple] = {}  # id(scene) -> (weak reference to it, its cache)


def _scene_cache(scene) -> dict:
    """The scatterer cache of a scene, shared by every simulator of it, dropped with the scene."""
    entry = _SCATTERERS.get(id(scene))
    if entry is None or entry[0]() is not scene:
        entry = (weakref.ref(scene), {})
        _SCATTERERS[id(scene)] = entry
        weakref.finalize(scene, _SCATTERERS.pop, id(scene), None)
    return entry[1]


def scene_scatterers(sim) -> scatterers.Scatterers:
    """The scene's coherent scatterers in world coordinates: the static entities read together (corners
    between a wall and the ground are found), cached while they stay as they are; each moving entity read
    once in its own frame and moved to its pose."""
    cache = _scene_cache(sim.scene)  # per scene: simulators of one world share it
    static = [e for e in sim.scene.entities if e.static]
    key = tuple((e.id, id(e.mesh), id(e.face_materials), np.asarray(e.pose).tobytes()) for e in static)
    if cache.get("static_key") != key:
        parts = (scatterers.from_mesh(np.asarray(e.mesh.vertices) @ np.asarray(e.pose)[:3, :3].T + np.asarray(e.pose)[:3, 3],
                                      e.mesh.faces, e.face_materials, e.id, corners=False) for e in static)
        cache["static"] = scatterers.with_corners(scatterers.concatenate(parts))  # (a generator: joined as built)
        cache["static_key"] = key
    moving = {}
    for e in sim.scene.entities:
        if e.static:
            continue
        own = cache.get(("moving", e.id))
        if own is None or own[0] is not e.mesh:
            own = (e.mesh, scatterers.from_mesh(e.mesh.vertices, e.mesh.faces, e.face_materials, e.id))
            cache[("moving", e.id)] = own
        moving[e.id] = own[1].transformed(np.asarray(e.pose, np.float64))
    combined = scatterers.concatenate([cache["static"], *moving.values()])
    combined.by_entity = moving  # each moving entity's own (facet_glints._swept_returns looks at them one by one)
    return combined


def _line_of_sight(backend, passable: frozenset = frozenset(), times=None):
    """(origins, directions, distances) -> (N,) bool: no hit before each distance, or the first hit on an entity of
    `passable` (the model carrying the other radar: whatever lies beyond its surface is part of it too). times:
    (N,) seconds of each way after the frame's start (swept entities where they are then), or None."""
    want = ("distance", "ids") if passable else ("distance",)
    when = {} if times is None else {"times": times}

    def clear(origins, directions, distances):
        hits = backend.trace(origins, directions, 0.0, float(np.max(distances, initial=0.0)) + 1e-3, want=want, **when)
        free = hits.distance >= distances
        if passable:
            free |= np.isin(hits.entity, np.fromiter(passable, np.int64))
        return free
    return clear


def simulate_physical(sim, poses: np.ndarray, pose, times: np.ndarray, theta: np.ndarray, column_rot: np.ndarray,
                      rng: np.random.Generator, t0_ns: int, scrolled) -> RadarImage:
    cfg = sim.config
    origins = np.ascontiguousarray(poses[:, :3, 3])
    max_range = cfg.range.offset + (cfg.range.n_bins + 1) * cfg.range.resolution
    workers = getattr(sim.backend, "threads", None)  # the run's tracing threads size the stage's pool too
    moving = entity_motion(sim, t0_ns)  # once a frame: it keeps each entity's pose for the next frame's velocity
    velocities = sensor_velocities(pose, times, t0_ns, int(t0_ns) + round(1e9 / cfg.azimuth.rate_hz))
    # each azimuth's time after the frame's start, where the poses hold: swept entities are traced there
    swept = moving is not None and moving.swept is not None and bool(moving.swept.any())
    azimuth_s = (np.asarray(times, np.int64) - int(t0_ns)) * 1e-9 if swept else None
    clutter, glints = trace_physical(sim.backend, origins, column_rot, velocities, cfg,
                                     scatter_table(sim), rng, max_range, sim.ray_log, moving,
                                     parallel=lambda task, items: stage._parallel(task, items, workers),
                                     scatterers=scene_scatterers(sim), times=azimuth_s)
    for other in interferers.interferers_of(cfg, sim.scene, moving, poses):  # other radars' chirps crossing ours: spokes
        heard = interference.returns(cfg, other, origins, column_rot, times, t0_ns,
                                     _line_of_sight(sim.backend, other.carrier, azimuth_s), velocities)
        clutter, glints = (joined([mine, theirs], type(mine)) for mine, theirs in zip((clutter, glints), heard))
    out = run_stage(clutter, glints, cfg, rng, workers)
    shift = cfg.azimuth.scroll % cfg.azimuth.count
    return RadarImage(
        image_f32=scrolled(out.counts_f32, shift),
        image=scrolled(out.counts, shift),
        azimuth_rad=scrolled(theta, shift),
        range_m=cfg.range.offset + np.arange(cfg.range.n_bins) * cfg.range.resolution,
        azimuth_time_ns=scrolled(times, shift),
        t0_ns=int(t0_ns),
        config=cfg,
        energy=scrolled(out.power_w, shift),
        chirp_up=scrolled(out.chirp_up, shift),
        velocity=None if out.velocity is None else scrolled(out.velocity, shift),
    )
