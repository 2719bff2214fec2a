"""Where a lidar ray ends up: surface interaction by material class (LiMOX §4.1, BlenSor §3.5).

The whole batch of rays is traced once per interaction round (one `backend.trace` call per bounce):

* general, retroreflective: the ray returns from this surface;
* absorbent: the ray ends and no point is produced;
* transparent: the ray continues in the same direction just past the surface (LiMOX "ignored");
* mirror: the ray is reflected, r = d − 2(d·n)n, and keeps travelling. The point is reported at the
  TOTAL path length along the ORIGINAL ray direction, i.e. on the virtual image behind the mirror
  (BlenSor §3.5: "the point appears farther away along the original ray").

The reported reflectivity is ρ(θ) of the final surface (reflectivity.py) times the two-way power
factor of every transparent crossing (t²) and mirror reflection (s²) on the way.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from radarays_ros.errors import TracingError
from radarays_ros.tracing.backend import Hits

from .materials import ABSORBENT, MIRROR, TRANSPARENT, LidarMaterials
from .reflectivity import reflectivity

# Continuing rays start this far past a surface (metres, plus a range-relative part), so that float32
# hit points that land a hair before the surface do not hit it again.
SKIP_ABS = 1e-4
SKIP_REL = 2e-6
MAX_TRANSPARENT = 16  # transparent crossings per ray before it counts as lost (a stack of glass panes)


@dataclass
class LidarHits:
    """Noise-free returns of N lidar rays.

    range (N,) f32          total path length, reported along the ORIGINAL ray; inf = no return
    entity, material (N,)   int32 of the final (returning) surface, -1 = no return
    normal (N, 3) f32       world-frame normal of the final surface, facing the arriving ray
    cos_incidence (N,) f32  |d·n| at the final surface (d: the ray as it arrives there), 0 = none
    reflectivity (N,) f32   angle-dependent ρ(θ) × crossing/mirror factors; 0 = no return
    bounces (N,) int16      mirror reflections on the way
    crossings (N,) int16    transparent surfaces passed on the way
    first_entity, first_material (N,) int32, first_range (N,) f32: the first surface the ray met,
                            whatever its class (ground truth: the glass pane, the mirror), -1/inf = none
    """

    range: np.ndarray
    entity: np.ndarray
    material: np.ndarray
    normal: np.ndarray
    cos_incidence: np.ndarray
    reflectivity: np.ndarray
    bounces: np.ndarray
    crossings: np.ndarray
    first_entity: np.ndarray
    first_material: np.ndarray
    first_range: np.ndarray

    @property
    def hit(self) -> np.ndarray:
        """(N,) bool: a surface returned the ray."""
        return self.entity >= 0

    @property
    def clean_range(self) -> np.ndarray:
        """The geometric range before any noise (the same array as `range`)."""
        return self.range

    def __len__(self) -> int:
        return len(self.range)

    @classmethod
    def misses(cls, n: int) -> "LidarHits":
        return cls(
            range=np.full(n, np.inf, np.float32),
            entity=np.full(n, -1, np.int32),
            material=np.full(n, -1, np.int32),
            normal=np.zeros((n, 3), np.float32),
            cos_incidence=np.zeros(n, np.float32),
            reflectivity=np.zeros(n, np.float32),
            bounces=np.zeros(n, np.int16),
            crossings=np.zeros(n, np.int16),
            first_entity=np.full(n, -1, np.int32),
            first_material=np.full(n, -1, np.int32),
            first_range=np.full(n, np.inf, np.float32),
        )


def trace_lidar(backend, origins, directions, materials: LidarMaterials, tmin: float = 0.0,
                tmax: float = np.inf, max_bounces: int = 4) -> LidarHits:
    """Trace N lidar rays through mirrors and transparent surfaces to the surface that returns them.

    origins, directions: (N, 3) world frame (directions need not be unit length). tmin/tmax bound
    the total path length. A ray that needs more than `max_bounces` mirror reflections (or
    MAX_TRANSPARENT crossings), or whose path exceeds tmax, gives no return: a miss, never a
    max-range point. Costs one backend.trace of all N rays, plus one per further round for the
    (few) rays that crossed glass or met a mirror.
    """
    o = np.asarray(origins, np.float32)
    d = np.asarray(directions, np.float32)
    if o.ndim != 2 or o.shape[1] != 3 or d.shape != o.shape:
        raise TracingError(f"origins and directions must both be (N, 3); got {o.shape} and {d.shape}")
    if max_bounces < 0:
        raise TracingError(f"max_bounces must be >= 0, got {max_bounces}")
    n = len(o)
    if n == 0:
        return LidarHits.misses(0)
    h = backend.trace(o, d, tmin, tmax)
    klass = materials.class_of(h.material)  # -1 (miss) -> NONE
    unit = _unit(d)
    if not np.any((klass == TRANSPARENT) | (klass == MIRROR)):
        return _first_surface_returns(h, klass, unit, materials)  # the usual frame: no second trace
    return _multi_round(backend, o, unit, h, klass, materials, tmax, max_bounces)


def _unit(d: np.ndarray) -> np.ndarray:
    norm = np.sqrt(np.einsum("ij,ij->i", d, d))
    if np.all(np.abs(norm - 1.0) < 1e-5):
        return d
    return d / np.where(norm > 0, norm, 1.0).astype(np.float32)[:, None]


def _first_surface_returns(h, klass, unit: np.ndarray, materials: LidarMaterials) -> LidarHits:
    """Rays end at their first surface (no glass or mirror was hit): returns or absorbed."""
    n = len(h.distance)
    first_entity, first_material, first_range = h.entity, h.material, h.distance
    absorbed = klass == ABSORBENT
    if np.any(absorbed):  # copies in which the absorbed rays are misses
        h = Hits(
            distance=np.where(absorbed, np.float32(np.inf), h.distance),
            normal=np.where(absorbed[:, None], np.float32(0.0), h.normal),
            entity=np.where(absorbed, -1, h.entity).astype(np.int32),
            face=np.where(absorbed, -1, h.face).astype(np.int32),
            material=np.where(absorbed, -1, h.material).astype(np.int32),
        )
    cos_inc = np.abs(np.einsum("ij,ij->i", unit, h.normal))
    rho = reflectivity(materials, h.material, cos_inc)  # id -1 reads the last row; zeroed next line
    rho[h.entity < 0] = 0.0
    return LidarHits(
        range=h.distance, entity=h.entity, material=h.material, normal=h.normal, cos_incidence=cos_inc,
        reflectivity=rho, bounces=np.zeros(n, np.int16), crossings=np.zeros(n, np.int16),
        first_entity=first_entity, first_material=first_material, first_range=first_range,
    )


def _multi_round(backend, origins, d, h, klass, materials: LidarMaterials, tmax, max_bounces) -> LidarHits:
    """Follow rays through transparent surfaces and mirrors, one batched trace per round."""
    n = len(origins)
    out = LidarHits.misses(n)
    hit = h.entity >= 0
    out.first_entity[:] = h.entity
    out.first_material[:] = h.material
    out.first_range[:] = h.distance
    o = np.array(origins, np.float32)  # copies: continuing rays move their origin and direction in place
    d = np.array(d, np.float32)
    active = np.arange(n)  # rays of the current round, indices into the batch
    travelled = np.zeros(n, np.float32)  # path length before the current segment
    factor = np.ones(n, np.float32)  # product of two-way transmission/mirror factors
    total = h.distance
    while True:
        returns = hit & (klass != ABSORBENT) & (klass != TRANSPARENT) & (klass != MIRROR)
        done = active[returns]
        if len(done):
            _record(out, done, h, returns, total, d, factor, materials)

        crossing = hit & (klass == TRANSPARENT)
        mirrored = hit & (klass == MIRROR)
        cross_idx, mirror_idx = active[crossing], active[mirrored]
        out.crossings[cross_idx] += 1
        out.bounces[mirror_idx] += 1
        if len(cross_idx):
            dist = total[crossing]
            skip = (SKIP_ABS + SKIP_REL * dist).astype(np.float32)
            o[cross_idx] = o[cross_idx] + d[cross_idx] * (h.distance[crossing] + skip)[:, None]
            travelled[cross_idx] = dist + skip
            factor[cross_idx] *= materials.pass_factor[h.material[crossing]]
        if len(mirror_idx):
            dm = d[mirror_idx]
            nm = h.normal[mirrored]
            dist = total[mirrored]
            point = o[mirror_idx] + dm * h.distance[mirrored][:, None]
            # the normal faces the arriving ray, so stepping along it leaves the mirror on the lit side
            o[mirror_idx] = point + nm * (SKIP_ABS + SKIP_REL * dist)[:, None]
            d[mirror_idx] = dm - 2.0 * np.einsum("ij,ij->i", dm, nm)[:, None] * nm  # r = d - 2(d.n)n
            travelled[mirror_idx] = dist
            factor[mirror_idx] *= materials.pass_factor[h.material[mirrored]]
        keep_cross = out.crossings[cross_idx] <= MAX_TRANSPARENT
        keep_mirror = out.bounces[mirror_idx] <= max_bounces
        active = np.concatenate([cross_idx[keep_cross], mirror_idx[keep_mirror]])
        if not len(active):
            return out
        # each segment starts at its own offset origin; the total path bound is re-checked per ray
        reach = float(tmax) - float(travelled[active].min())
        if reach <= 0:
            return out
        h = backend.trace(o[active], d[active], 0.0, reach)
        total = travelled[active] + h.distance
        hit = (h.entity >= 0) & (total <= tmax)
        klass = materials.class_of(h.material)


def _record(out: LidarHits, done, h, returns, total, d, factor, materials: LidarMaterials) -> None:
    """Store the rays in `done` (batch indices) that return from the surfaces of `h[returns]`."""
    normal = h.normal[returns]
    cos_inc = np.abs(np.einsum("ij,ij->i", d[done], normal)).astype(np.float32)
    material = h.material[returns]
    out.range[done] = total[returns]
    out.entity[done] = h.entity[returns]
    out.material[done] = material
    out.normal[done] = normal
    out.cos_incidence[done] = cos_inc
    out.reflectivity[done] = reflectivity(materials, material, cos_inc) * factor[done]
