"""Geometry of one frame for the physical stage: beam samples, first hits, mirror bounces.

For every azimuth column the beam is sampled afresh (beam_sampling.py); every sample is a ray tube of
solid angle dOmega = d_beta d_e cos(e). One backend call per pass traces all tubes of the frame. At each
hit the tube makes:

* clutter (distributed, incoherent): expected power by the radar equation with sigma = sigma0(theta) A,
  A = L^2 dOmega / cos(theta) (backscatter.py), spread over the ranges its stratum's footprint covers
  (first order on the hit plane: dR = L (n . dd) / cos(theta) for the angle steps from the sample to
  its stratum's bounds; strata tile the beam, so footprints tile a surface: a few rays fill every range
  bin, with no rings at fixed sample ranges);
* no glint: coherent returns (plates, curved surfaces, corners) come per scatterer of the scene, not per
  ray (facet_glints.py, from scatterers.py), so they never depend on which rays hit a small target;
* a mirror child (coherent reflectivity rho, roughness.py) traced in the next pass, up to
  scatter.specular_bounces: clutter it meets returns back along the path (a ghost at the total
  path length, rho twice) and, with scatter.multipath, straight to the sensor (bistatic, received
  with the pattern at its arrival direction, rho once).

Every received power carries pattern_tx(sent direction) x pattern_rx(arrival direction) exactly once.
Rays that hit an invisible material (wave velocity of air) end there. Direct multipath returns are
tested for occlusion with scatter.occlusion_test (one extra trace of their way back). Doppler uses the
first leg's radial velocity, (v_target - v_sensor) . d, with the rigid motion (translation and turn) of
moving entities: the twist their mover gave, else from their poses in consecutive frames (motion.py,
simulate.entity_motion).
"""
from __future__ import annotations

import math
import threading
from dataclasses import dataclass

import numpy as np

from ...threads import spans_inline
from ...tracing.backend import at_times
from . import antenna, backscatter, beam_sampling, facet_glints, foliage, geometry_loops, geometry_physics, radar_equation, thermal_noise

SKIP = 1e-3  # metres a mirror child starts off its surface
MIN_COS = 0.02  # footprint area 1/cos(theta) capped at grazing (sigma0 -> 0 there anyway)
MIN_RHO = 1e-3  # mirror children below this coherent reflectivity are not traced
INVISIBLE = 1e-4  # bistatic returns under this fraction of the noise per bin are dropped
NEAR_HIT = 1e-3  # metres: a first hit nearer than this (a quarter wavelength at 77 GHz) is the sensor resting on
# that surface (z = 0 on a floor): no far field, no radar equation (sigma / R^4 = 0 / 0 at R = 0): no return


@dataclass
class Clutter:
    azimuth: np.ndarray  # (N,) int64 azimuth index k
    near_m: np.ndarray  # (N,) apparent range where the footprint starts
    far_m: np.ndarray  # (N,) and ends
    power_w: np.ndarray  # (N,) expected received power
    velocity: np.ndarray  # (N,) radial velocity, m/s (receding positive)


@dataclass
class Glints:
    azimuth: np.ndarray
    range_m: np.ndarray
    amplitude: np.ndarray  # (N,) complex, sqrt(W), phase of the two-way path
    velocity: np.ndarray


def joined(parts, cls):
    """The Clutter (or Glints) sets `parts` as one of class `cls`, in their order (empty arrays for none)."""
    if not parts:
        empty = np.zeros(0)
        return cls(np.zeros(0, np.int64), empty, *([empty] * (len(cls.__dataclass_fields__) - 2)))
    return cls(*(np.concatenate([getattr(p, f) for p in parts]) for f in cls.__dataclass_fields__))


def sample_beam(rng, n_azimuths: int, antenna_cfg):
    """((beta, d_beta, beta_lo, beta_hi), (e, d_e, e_lo, e_hi)), each (A, samples of that axis): the beam
    samples of every azimuth per axis, their angular cells and their strata bounds (beam_rows: the grid)."""
    a_cfg = antenna_cfg
    w_az = math.radians(a_cfg.azimuth_width_deg)
    w_el = math.radians(a_cfg.elevation_width_deg)
    tilt = math.radians(a_cfg.elevation_tilt_deg)
    x_az = a_cfg.azimuth_extent * w_az
    beta, d_beta, b_lo, b_hi = beam_sampling.stratified(rng, n_azimuths, a_cfg.samples_azimuth, -x_az, x_az,
                                            lambda x: antenna.one_way(x, w_az, a_cfg.azimuth_pattern))
    lo = tilt - a_cfg.elevation_extent * w_el
    hi = tilt + a_cfg.elevation_extent * w_el
    if a_cfg.cosec2:
        lo = min(lo, math.radians(-60.0))
    lo, hi = max(lo, math.radians(-89.0)), min(hi, math.radians(89.0))
    e, d_e, e_lo, e_hi = beam_sampling.stratified(rng, n_azimuths, a_cfg.samples_elevation, lo, hi,
                                      lambda x: antenna.elevation_one_way(x, a_cfg))
    return (beta, d_beta, b_lo, b_hi), (e, d_e, e_lo, e_hi)


def beam_rows(beam, k0: int, k1: int):
    """(beta, e, d_beta, d_e, beta_lo, beta_hi, e_lo, e_hi) each (k1 - k0, S): sample_beam's samples of azimuths
    k0..k1-1 on their grid (S = strata az x el, elevation fastest). Made per block of azimuths: in the blocks'
    tasks, side by side, not before them (eight (A, S) arrays: 1.5 ms of a ras6 frame)."""
    (beta, d_beta, b_lo, b_hi), (e, d_e, e_lo, e_hi) = beam
    nb, ne = beta.shape[1], e.shape[1]
    rep = lambda v, axis: (np.repeat(v[k0:k1, :, None], ne, axis=2) if axis == 0  # noqa: E731
                           else np.repeat(v[k0:k1, None, :], nb, axis=1))
    return tuple(rep(v, axis).reshape(k1 - k0, -1) for v, axis in
                 ((beta, 0), (e, 1), (d_beta, 0), (d_e, 1), (b_lo, 0), (b_hi, 0), (e_lo, 1), (e_hi, 1)))


def _dot(a, b):
    """Row-wise dot products of (N, 3) arrays."""
    return a[:, 0] * b[:, 0] + a[:, 1] * b[:, 1] + a[:, 2] * b[:, 2]


def trace_physical(backend, origins, column_rot, sensor_velocity, cfg, table, rng, max_range: float,
                   ray_log: list | None = None, entities=None, parallel=None, scatterers=None, times=None):
    """(Clutter, Glints) of one frame. origins (A, 3), column_rot (A, 3, 3) world <- column frame.
    scatterers: the scene's scatterers.Scatterers in world coordinates (the frame's glints), None = none.
    ray_log: a list that receives (origins, directions) of every pass, as traced (benchmarks); an occlusion pass
    (Backend.blocked) as (origins, directions, reach).
    entities: a motion.EntityMotion of the moving entities, None = a static world.
    parallel: parallel(task, items) -> [task(item)...] in item order (a thread pool), None = in turn.
    times: (A,) seconds of each azimuth after the frame's start, or None: every ray of an azimuth, and its
    scatterers' returns, meet the entities `entities.swept` where their twist takes them by then.

    The beam is sampled for the whole frame (the only random draws), then each of AZIMUTH_BLOCKS blocks
    of azimuths makes its tubes and runs their passes as one task: blocks trace and compute side by side
    (embreex and numpy release the GIL). Every ray's result depends on that ray alone, and the blocks'
    parts are joined pass by pass in azimuth order, so the returns are the same arrays, in the same order,
    as one block would give."""
    a = len(origins)
    frame = _Frame(backend, cfg, table, max_range, entities, ray_log is not None, origins, column_rot, sensor_velocity,
                   sample_beam(rng, a, cfg.antenna), times)
    blocks = min(AZIMUTH_BLOCKS, a)
    edges = [a * k // blocks for k in range(blocks + 1)]
    spans = [(lo, hi) for lo, hi in zip(edges[:-1], edges[1:]) if hi > lo]
    # the glints are one or two more tasks beside the blocks (they trace only their occlusion rays). With at least
    # as many tasks as the backend has threads (the frame's pool has as many), each task traces on its own thread
    # (threads.spans_inline): the tasks fill the cores already
    glint_tasks = _glint_tasks(frame, scatterers)
    inline = parallel is not None and len(spans) + len(glint_tasks) >= getattr(backend, "threads", 1)

    def task(item):
        with spans_inline(inline):
            return item() if callable(item) else _trace_block(frame, _tubes(frame, *item))
    done = (parallel or _in_turn)(task, glint_tasks + spans)
    glints, parts = done[len(glint_tasks) - 1], done[len(glint_tasks):]
    if ray_log is not None:  # one entry per pass, as a single block would trace it
        ray_log.extend(tuple(np.concatenate(x) for x in zip(*pieces)) for pieces in _by_pass(parts, 2))
    return joined([c for pieces in _by_pass(parts, 0) for c in pieces], Clutter), glints


def _glints(frame: "_Frame", scatterers, parts=None) -> Glints:
    """The frame's coherent returns, one per scatterer and azimuth (facet_glints.py; parts: its static_parts)."""
    if scatterers is None or scatterers.empty:
        return joined([], Glints)
    cfg = frame.cfg
    lam = backscatter.wavelength(cfg.fmcw.carrier_hz)
    az, rng_m, amp, v_r = facet_glints.frame_glints(
        scatterers, frame.backend, frame.origins, frame.column_rot, frame.sensor_velocity, cfg, frame.table,
        radar_equation.constant(cfg.receiver, cfg.antenna, lam), lam, frame.max_range, _glint_floor(cfg),
        frame.entities, cfg.scatter.occlusion_test, frame.times, parts)
    return Glints(az.astype(np.int64), rng_m, amp, v_r)


def _glint_floor(cfg) -> float:
    return INVISIBLE * thermal_noise.noise_power_w(cfg.receiver, cfg.fmcw)


def _glint_tasks(frame: "_Frame", scatterers) -> list:
    """The frame's glints as tasks ahead of the geometry blocks, the last returning the Glints. Where the scatterers
    stay where they are over the frame, two: the curved plates' returns (about half the glints' time), and the
    other kinds' that then wait for the curved ones and join them (facet_glints.static_parts: the same parts, so
    the same arrays). Two tasks side by side, not one beside the blocks: on 2 threads one thread ran the glints
    and two blocks while the other ran two blocks and waited 16 ms (a ras6 frame of the 1 M city). The curved
    task is first: in a pool it starts before or with the task that waits for it, in turn it is done by then."""
    if scatterers is None or scatterers.empty or facet_glints.sweeps(frame.entities, frame.times):
        return [lambda: _glints(frame, scatterers)]
    cfg = frame.cfg
    lam = backscatter.wavelength(cfg.fmcw.carrier_hz)
    settings = (scatterers, frame.origins, frame.column_rot, cfg, frame.table,
                radar_equation.constant(cfg.receiver, cfg.antenna, lam), lam, frame.max_range, _glint_floor(cfg))
    curved, ready = {}, threading.Event()

    def curved_task():
        try:
            curved.update(facet_glints.static_parts(("curved",), *settings))
        finally:  # set also on failure (no part then): the other task must not wait for ever
            ready.set()

    def rest_task():
        rest = facet_glints.static_parts(("plates", "dihedrals", "trihedrals"), *settings)
        ready.wait()
        if "curved" not in curved:
            raise RuntimeError("the curved plates' glint task failed")
        return _glints(frame, scatterers, {**rest, **curved})
    return [curved_task, rest_task]


AZIMUTH_BLOCKS = 4  # geometry tasks per frame (a constant: the returns do not depend on the thread count)


def _in_turn(task, items) -> list:
    return [task(item) for item in items]


def _by_pass(parts, which: int) -> list[list]:
    """Pass by pass (sorted keys of the blocks' dicts parts[k][which]), that pass's pieces in block order."""
    keys = sorted(set().union(*(p[which].keys() for p in parts)))
    return [[p[which][key] for p in parts if key in p[which]] for key in keys]


@dataclass
class _Frame:
    """What every block of a frame shares: settings, sensor poses and the frame's beam samples."""
    backend: object
    cfg: object
    table: object
    max_range: float
    entities: object
    log: bool
    origins: np.ndarray  # (A, 3)
    column_rot: np.ndarray  # (A, 3, 3)
    sensor_velocity: np.ndarray  # (A, 3)
    beam: tuple  # sample_beam's per-axis (A, n) arrays (beam_rows: a block's grid)
    times: np.ndarray | None = None  # (A,) seconds of each azimuth after the frame's start (swept entities)



@dataclass
class _Tubes:
    """The ray tubes of azimuths k0..k1-1, flat (azimuth-major): direction, its derivatives in e and
    beta, the stratum bounds as steps from the sample, solid angle, transmit gain, radial velocity."""
    beta: np.ndarray  # (k1 - k0, S)
    e: np.ndarray
    az: np.ndarray  # (T,) azimuth index of each tube
    sensor: np.ndarray  # (T, 3)
    d: np.ndarray
    dd_e: np.ndarray
    dd_b: np.ndarray
    steps_e: np.ndarray  # (T, 2)
    steps_b: np.ndarray
    d_omega: np.ndarray  # (T,)
    g_tx: np.ndarray
    v_r: np.ndarray  # (T,) (the targets' motion is added by the first pass)


def _tubes(frame: _Frame, k0: int, k1: int) -> _Tubes:
    beta, e, d_beta, d_e, b_lo, b_hi, e_lo, e_hi = beam_rows(frame.beam, k0, k1)
    s = beta.shape[1]
    # directions and their derivatives turned into the world, strata steps, solid angle, transmit pattern and
    # the sensor's radial velocity: one compiled pass per tube (geometry_physics.tubes)
    d, dd_e, dd_b, steps_e, steps_b, d_omega, g_tx, v_r = geometry_physics.tubes(
        beta, e, d_beta, d_e, b_lo, b_hi, e_lo, e_hi, frame.column_rot[k0:k1], frame.sensor_velocity[k0:k1],
        geometry_physics.antenna_parameters(frame.cfg.antenna), period=frame.cfg.antenna.samples_elevation)
    return _Tubes(beta=beta, e=e, az=np.repeat(np.arange(k0, k1), s), sensor=np.repeat(frame.origins[k0:k1], s, axis=0),
                  d=d, dd_e=dd_e, dd_b=dd_b, steps_e=steps_e, steps_b=steps_b, d_omega=d_omega, g_tx=g_tx, v_r=v_r)


def _trace_block(frame: _Frame, f: _Tubes):
    """The passes of the tubes f: ({(pass, kind): Clutter}, {}, {(pass, kind): rays})."""
    cfg, table, backend, max_range, column_rot = frame.cfg, frame.table, frame.backend, frame.max_range, frame.column_rot
    lam = backscatter.wavelength(cfg.fmcw.carrier_hz)
    k_radar = radar_equation.constant(cfg.receiver, cfg.antenna, lam)
    noise = thermal_noise.noise_power_w(cfg.receiver, cfg.fmcw)
    az, d_omega, sensor, v_r = f.az, f.d_omega, f.sensor, f.v_r
    o, d = sensor.copy(), f.d
    path = np.zeros(len(az))  # one-way path so far
    rho = np.ones(len(az))  # product of mirror reflectivities (and foliage transmissions) so far
    straight = np.ones(len(az), bool)  # still on the straight line from the sensor (only through foliage)
    clutter, glints, rays = {}, {}, {}
    idx = np.arange(len(az))  # tube index of each live ray
    is_volume = np.zeros(len(table.classes), bool)  # by class index: a lookup, not np.isin's sort per pass
    is_volume[[table.classes.index(c) for c in foliage.VOLUME_CLASSES if c in table.classes]] = True
    kappa = foliage.extinction_np_per_m()
    pattern = geometry_physics.antenna_parameters(cfg.antenna)
    for bounce in range(cfg.scatter.specular_bounces + 1):
        if not len(idx):
            break
        reach = (2.0 if cfg.scatter.multipath and bounce else 1.0) * max_range - path
        o32, d32 = o.astype(np.float32), d.astype(np.float32)
        if frame.log:
            rays[bounce, 0] = (o32, d32)
        hits = backend.trace(o32, d32, 0.0, float(max(reach.max(), 1e-3)), want=("normal", "ids"), **at_times(frame.times, az[idx]))
        # kept: finite, within reach (and past NEAR_HIT on the first pass), of a material with a class (compiled)
        keep, dist, cls = geometry_loops.traced_hits(hits.distance, hits.material, reach, table.material_class,
                                                     NEAR_HIT if bounce == 0 else -math.inf)
        if not len(keep):
            break
        if bounce == 0 and frame.entities is not None:  # the target's own motion along the ray
            at = o[keep] + d[keep] * dist[keep][:, None]
            v_hit = frame.entities.at(np.asarray(hits.entity)[keep].astype(np.int64), at)
            v_r[idx[keep]] += _dot(v_hit, d[keep])
        # the kept rays at their hits: unit normal (float64), hit point, path, cos(incidence), one compiled pass
        d, dist, cls, idx, rho, straight, n, hit, path, cos_t = geometry_loops.kept_hits(
            keep, o, d, dist, hits.normal, cls, idx, path, rho, straight)
        volume = np.flatnonzero(is_volume[cls])  # foliage: returns from its depth (foliage.py)
        if len(volume):
            depth = _foliage_depth(backend, hit[volume], d[volume], rays if frame.log else None, bounce,
                                   at_times(frame.times, az[idx[volume]]))
            slab_near, slab_far, weight = foliage.slab_weights(depth, path[volume], kappa)
            sigma_v = foliage.volume_coefficient(table.sigma0_at(cls[volume], np.zeros(len(volume))), kappa)
            p_v = (k_radar * f.g_tx[idx[volume]] ** 2 * rho[volume] ** 2 * sigma_v * d_omega[idx[volume]]
                   / path[volume] ** 2)[:, None] * weight
            reps = lambda v: np.repeat(v, foliage.SLABS)  # noqa: E731
            clutter[bounce, 2] = Clutter(reps(az[idx[volume]]), (path[volume][:, None] + slab_near).reshape(-1),
                                         (path[volume][:, None] + slab_far).reshape(-1), p_v.reshape(-1), reps(v_r[idx[volume]]))
        # sigma0(theta) A, the footprint's ranges, the radar equation (ghost back along the path, and straight
        # back with the receive pattern at the arrival direction), the coherent reflectivity: one compiled pass
        # (geometry_physics.bounce_returns; foliage's monostatic sigma is 0: it returns from its depth above)
        near, far, power, near_b, far_b, power_b, u, back_len, rho_c = geometry_physics.bounce_returns(
            bounce, cfg.scatter.multipath, bounce == cfg.scatter.specular_bounces, idx, cls, cos_t, path, n, hit, rho,
            straight, is_volume, f, sensor, az, column_rot, table, pattern, k_radar, lam, INVISIBLE * noise, MIN_COS)
        az_idx, v_idx = az[idx], v_r[idx]  # (both sets' azimuths and velocities: gathered once, joined copies them)
        clutter[bounce, 0] = Clutter(az_idx, near, far, power, v_idx)
        if bounce and cfg.scatter.multipath:
            if cfg.scatter.occlusion_test:
                power_b = _unoccluded(backend, hit, u, back_len, power_b, rays if frame.log else None, bounce,
                                      None if frame.times is None else frame.times[az_idx])
            clutter[bounce, 1] = Clutter(az_idx, near_b, far_b, power_b, v_idx)
        if bounce == cfg.scatter.specular_bounces:
            break
        # the mirror children (rho rho_c > MIN_RHO): d + 2 cos_t n, from hit, one compiled pass
        o_next, d_next, idx_next, path_next, rho_next = geometry_loops.mirror_children(rho, rho_c, MIN_RHO, hit, d, cos_t,
                                                                                       n, idx, path, SKIP)
        straight_next = np.zeros(len(idx_next), bool)
        if len(volume):  # and rays on through the foliage, weakened by its extinction
            through = np.flatnonzero(rho[volume] * foliage.transmission(depth, kappa) > MIN_RHO)
            v_sel = volume[through]
            on = (hit[v_sel] + d[v_sel] * (depth[through] + SKIP)[:, None], d[v_sel], idx[v_sel],
                  path[v_sel] + depth[through] + SKIP, rho[v_sel] * foliage.transmission(depth[through], kappa), straight[v_sel])
            # azimuth order (tube order, as one block's rays): both sets are, merged in one compiled pass
            o_next, d_next, idx_next, path_next, rho_next, straight_next = geometry_loops.merge_by_tube(
                (o_next, d_next, idx_next, path_next, rho_next, straight_next), on)
        o, d, idx, path, rho, straight = o_next, d_next, idx_next, path_next, rho_next, straight_next
    return clutter, glints, rays


def _foliage_depth(backend, hit, d, rays: dict | None, bounce: int, when: dict) -> np.ndarray:
    """Metres of foliage each ray crosses from its entry point hit along d: to the next surface (the crown's
    far side), at most foliage.MAX_DEPTH_M (when: the rays' `times=`, tracing.backend.at_times)."""
    start = (hit + d * SKIP).astype(np.float32)
    d32 = d.astype(np.float32)
    if rays is not None:
        rays[bounce, 2] = (start, d32)
    out = np.asarray(backend.trace(start, d32, 0.0, foliage.MAX_DEPTH_M, want=(), **when).distance, np.float64)
    return np.where(np.isfinite(out), np.minimum(out + SKIP, foliage.MAX_DEPTH_M), foliage.MAX_DEPTH_M)


def _unoccluded(backend, hit, u, back_len, power, rays: dict | None, bounce: int, times=None):
    """power with 0 where the straight way back to the sensor is blocked (only returns with power traced);
    times: each return's azimuth time (swept entities), or None."""
    test, start, direction, reach = geometry_loops.occlusion_rays(power, hit, u, back_len, SKIP)  # (one compiled pass)
    if not len(test):
        return power
    if rays is not None:  # (with their reach: benchmarks ask Embree the same question for their bare reference)
        rays[bounce, 1] = (start, direction, reach)
    blocked = backend.blocked(start, direction, reach, **at_times(times, test))  # a surface closer than reach
    power = power.copy()
    power[test[blocked]] = 0.0
    return power
