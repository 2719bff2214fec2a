"""The multi-bounce wave loop, batched over the whole frame (Snell, Fresnel, BRDF Eq. 5 and the two return paths of Mock et al., RadaRays, RA-L 2025).

Every pass is ONE backend.trace call for all live waves of all azimuths; a hit splits a wave into a
reflected and a refracted child (Fresnel, fresnel.py), so the wave count can at most double per pass.
A wave starts in air with energy 1 (or its antenna-gain weight) at time 0 and advances its time by
distance / velocity of its medium. Leaving any object means entering air (no nested media).
Work that cannot change the image is skipped: the last pass traces only waves in air (the others can
make no return and have no successor), and no pass after the first runs when neither later-pass
return kind is recorded. With a horizon (the far end of the image, when the raw returns are not
kept), returns beyond it get no BRDF evaluation and waves whose time already puts every later return
beyond it are not traced further (time only grows along a path; a multipath return lies at >= c t / 2).

Returns (signals) are recorded when a wave reflects while in air with E_refl above the threshold:
* back along the path (pass 0, and later passes if returns.multi_reflection): apparent range
  c * t_incidence (round trip 2 t), strength BRDF(theta_i) * E_refl - so multi-bounce returns appear
  at the total one-way path length (ghosts, e.g. behind mirrors);
* multipath through air (passes > 0, returns.multipath): straight back to the sensor when
  dot(incoming dir, sensor->hit dir) > multipath_threshold, apparent range (c t + |h| c / v) / 2,
  strength BRDF(angle(-r, sensor->hit)) * E_refl; with returns.occlusion_test the way back must be free.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .fresnel import fresnel_coefficients, incidence_cosine, reflect, refract, row_dot
from .materials import AIR_VELOCITY, RadarMaterials

C = AIR_VELOCITY  # m/ns, converts signal time to apparent range


@dataclass
class Returns:
    """Raw returns of one frame, in firing order of the azimuths (k, not the scrolled column)."""

    azimuth: np.ndarray  # (R,) int64 azimuth index k
    range_m: np.ndarray  # (R,) float64 apparent range = c * round-trip time / 2
    energy: np.ndarray  # (R,) float64
    bounce: np.ndarray  # (R,) int16 pass in which the return was made (0 = first hit)

    @classmethod
    def concat(cls, parts: list["Returns"]) -> "Returns":
        if not parts:
            return cls(np.zeros(0, np.int64), np.zeros(0), np.zeros(0), np.zeros(0, np.int16))
        return cls(*(np.concatenate([getattr(p, f) for p in parts]) for f in ("azimuth", "range_m", "energy", "bounce")))


def primary_rays(sensor_origin: np.ndarray, column_rot: np.ndarray, cone: np.ndarray):
    """Origins and directions (A*S, 3) float32 of all azimuths' samples, azimuth-major."""
    a, s = len(column_rot), len(cone)
    dirs = np.matmul(column_rot.astype(np.float32), cone.T.astype(np.float32))  # (A, 3, S)
    dirs = np.ascontiguousarray(dirs.transpose(0, 2, 1)).reshape(a * s, 3)
    origins = np.repeat(sensor_origin.astype(np.float32), s, axis=0)
    return origins, dirs


def unit_rows(d: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length, always (float32 round-off leaves |d| - 1 ~ 1e-7).

    The backend re-normalises a whole batch when any row is off by more than 1e-6, so without this a
    wave's traced direction (hence its distance, to ~1e-8 m) depended on the other waves of its pass.
    """
    norm2 = row_dot(d, d)
    return d / np.sqrt(norm2)[:, None]


def trace_frame(backend, sensor_origin: np.ndarray, column_rot: np.ndarray, cone: np.ndarray, weights,
                materials: RadarMaterials, tracing, returns, ray_log: list | None = None,
                horizon_m: float | None = None) -> Returns:
    """All returns of one frame. sensor_origin (A,3) and column_rot (A,3,3) world <- column frame.

    Geometry is float32 (what the tracer takes), time and energy float64. horizon_m: apparent range
    at and beyond which a return cannot be drawn (None: record every return).
    """
    a, s = len(column_rot), len(cone)
    o, d = primary_rays(sensor_origin, column_rot, cone)
    az = np.repeat(np.arange(a), s)
    energy = np.tile(np.asarray(weights, np.float64), a) if weights is not None else np.ones(a * s)
    time = np.zeros(a * s)
    air = materials.air
    medium = np.full(a * s, air, np.int64)
    velocity = materials.velocity
    velocity32 = velocity.astype(np.float32)
    threshold = tracing.energy_threshold
    skip = np.float32(tracing.skip_distance)
    lossy = bool(np.any(materials.transmittance < 1.0))
    with np.errstate(divide="ignore"):  # a wave never travels in a velocity-0 medium (it cannot enter one)
        skip_time = float(skip) / velocity  # ns to step off a surface, per medium (a table, not per wave)
    found: list[Returns] = []
    wave_horizon = None if horizon_m is None else horizon_m * (2.0 if returns.multipath else 1.0)
    for pass_id in range(tracing.passes):
        if pass_id > 0 and not (returns.multi_reflection or returns.multipath):
            break  # later passes could only feed returns that are not recorded
        last = pass_id == tracing.passes - 1
        if last:  # only waves in air can make a return, and no wave outlives this pass
            in_air_now = np.flatnonzero(medium == air)
            if len(in_air_now) < len(o):
                o, d = np.take(o, in_air_now, axis=0), np.take(d, in_air_now, axis=0)
                az, energy, time, medium = az[in_air_now], energy[in_air_now], time[in_air_now], medium[in_air_now]
        if not len(o):
            break
        if ray_log is not None:
            ray_log.append((o, d))
        hits = backend.trace(o, d, 0.0, tracing.max_distance)
        dist, material, normal = hits.fields("distance", "material", "normal")  # one round trip to the backend
        keep = np.flatnonzero(dist < np.inf)
        surface = material[keep].astype(np.int64)
        dist, normal = dist[keep], np.take(normal, keep, axis=0)
        if len(keep) < len(o):
            o, d = np.take(o, keep, axis=0), np.take(d, keep, axis=0)
            az, energy, time, medium = az[keep], energy[keep], time[keep], medium[keep]

        v1 = velocity[medium]
        pos = o + d * dist[:, None]
        time = time + dist / v1
        if lossy:
            energy = energy * path_transmittance(materials.transmittance[medium], dist)
        in_air = medium == air
        behind = np.where(in_air, surface, air)
        cos_i = incidence_cosine(d, normal)
        r_eff, refracts, eta, cos_t = fresnel_coefficients(cos_i, velocity32[medium], velocity32[behind],
                                                           tracing.polarization)
        e_refl = r_eff * energy
        e_trans = energy - e_refl

        reflects = e_refl > threshold
        signal = np.flatnonzero(in_air & reflects)
        if len(signal) and (pass_id == 0 or returns.multi_reflection):
            back = signal
            if horizon_m is not None:
                back = signal[C * time[signal] < horizon_m]
            theta = np.arccos(cos_i[back])  # float32, as the tracer's geometry
            strength = materials.evaluate(surface[back], theta) * e_refl[back]
            found.append(Returns(az[back], C * time[back], strength, np.full(len(back), pass_id, np.int16)))
        if len(signal) and pass_id > 0 and returns.multipath:
            found.append(_multipath(backend, signal, pos, d, normal, cos_i, az, time, v1, surface, e_refl,
                                    sensor_origin, materials, returns, float(skip), pass_id, horizon_m))

        if last:
            break
        # children: reflections stay in the medium, refractions enter `behind`; both step off by skip
        spawn_refl, spawn_trans = reflects, refracts & (e_trans > threshold)
        if wave_horizon is not None:  # children start later than their parent: no drawable return left
            near = C * time <= wave_horizon
            spawn_refl, spawn_trans = spawn_refl & near, spawn_trans & near
        refl = np.flatnonzero(spawn_refl)
        trans = np.flatnonzero(spawn_trans)
        r_dir = reflect(np.take(d, refl, axis=0), np.take(normal, refl, axis=0), cos_i[refl])
        if len(trans):
            t_dir = refract(np.take(d, trans, axis=0), np.take(normal, trans, axis=0), eta[trans], cos_i[trans],
                            cos_t[trans])
            d = np.concatenate([r_dir, t_dir])
            pick = np.concatenate([refl, trans])
            energy = np.concatenate([e_refl[refl], e_trans[trans]])
            medium = np.concatenate([medium[refl], behind[trans]])
        else:
            d = r_dir
            pick = refl
            energy = e_refl[refl]
            medium = medium[refl]
        d = unit_rows(d)
        o = np.take(pos, pick, axis=0)
        o += d * skip
        time = time[pick] + skip_time[medium]
        if lossy:  # the skip is travelled inside the new medium too: lose its share (as time counts it)
            energy = energy * path_transmittance(materials.transmittance[medium], float(skip))
        az = az[pick]
    return Returns.concat(found)


def _multipath(backend, signal, pos, d, normal, cos_i, az, time, v1, surface, e_refl, sensor_origin, materials,
               returns, skip, pass_id, horizon_m=None) -> Returns:
    """Returns straight back through air to the sensor from reflections in pass > 0.

    With horizon_m, candidates whose apparent range falls past the image get no occlusion test and
    no BRDF (they would be dropped when drawing)."""
    h = pos[signal].astype(np.float64) - sensor_origin[az[signal]]
    h_len = np.linalg.norm(h, axis=1)
    h_hat = h / np.maximum(h_len, 1e-12)[:, None]
    gate = row_dot(d[signal].astype(np.float64), h_hat) > returns.multipath_threshold
    if horizon_m is not None:
        gate &= multipath_range(time[signal], h_len, v1[signal], C) < horizon_m
    idx = signal[gate]
    h_len, h_hat = h_len[gate], h_hat[gate]
    if returns.occlusion_test and len(idx):
        back = -h_hat
        reach = np.maximum(h_len - 2.0 * skip, 0.0)
        free = np.ones(len(idx), bool)
        far = reach > 0
        if far.any():
            start = pos[idx][far].astype(np.float64) + back[far] * skip
            blocked = backend.trace(start, back[far], 0.0, float(reach[far].max()))
            free[np.flatnonzero(far)] = ~(blocked.hit & (blocked.distance < reach[far]))
        idx, h_len, h_hat = idx[free], h_len[free], h_hat[free]
    r_dir = reflect(d[idx], normal[idx], cos_i[idx]).astype(np.float64)
    cos_dev = np.clip(-row_dot(r_dir, h_hat), -1.0, 1.0)
    strength = materials.evaluate(surface[idx], np.arccos(cos_dev)) * e_refl[idx]
    range_m = multipath_range(time[idx], h_len, v1[idx], C)
    return Returns(az[idx], range_m, strength, np.full(len(idx), pass_id, np.int16))


def multipath_range(time: float, distance: float, velocity: float, light_speed: float) -> float:
    """Apparent range of a multipath return, c (t + |h| / v) / 2: the wave's time t (ns) to its last surface plus
    the straight way |h| (m) back to the sensor at the velocity v (m/ns) of the air it is in, halved as a radar
    reads a round trip. Written once: numpy runs it on the host, Warp compiles it for device frames
    (radarays_ros/twin.py). ASCII only in these lines."""
    return light_speed * (time + distance / velocity) / 2.0


def path_transmittance(transmittance: float, distance: float) -> float:
    """Fraction of a wave's energy left after `distance` metres inside a lossy medium that keeps `transmittance`
    per metre: T^distance (Beer-Lambert). Written once (radarays_ros/twin.py)."""
    return transmittance ** distance
