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

    origins, directions: (N, 3) world frame (directions are normalised). tmin/tmax bound the total
    path length. A ray that needs more than `max_bounces` mirror reflections (or MAX_TRANSPARENT
    crossings), or whose path exceeds tmax, gives no return: a miss, never a max-range point.
    """
    o = np.array(origins, np.float32)  # a copy: continuing rays move their origins in place
    d = np.asarray(directions, np.float32)
    if o.ndim != 2 or o.shape[1] != 3 or d.shape != o.shape:
        raise TracingError(f"origins and directions must both be (N, 3); got {o.shape} and {d.shape}")
    if max_bounces < 0:
        raise TracingError(f"max_bounces must be >= 0, got {max_bounces}")
    n = len(o)
    out = LidarHits.misses(n)
    if n == 0:
        return out
    norm = np.linalg.norm(d, axis=1, keepdims=True)
    d = d / np.where(norm > 0, norm, 1).astype(np.float32)

    active = np.arange(n)  # rays still travelling, indices into the batch
    travelled = np.zeros(n, np.float32)  # path length before the current segment
    factor = np.ones(n, np.float32)  # product of two-way transmission/mirror factors
    first_round = True
    while len(active):
        if first_round:
            h = backend.trace(o, d, tmin, tmax)
        else:  # each segment starts at its own offset origin; the path bound is re-checked below
            reach = float(tmax) - float(travelled[active].min())
            h = backend.trace(o[active], d[active], 0.0, max(reach, 1e-6))
        hit = h.entity >= 0
        total = travelled[active] + h.distance
        hit &= total <= tmax
        if first_round:
            out.first_entity[:] = np.where(hit, h.entity, -1)
            out.first_material[:] = np.where(hit, h.material, -1)
            out.first_range[:] = np.where(hit, total, np.inf)
            first_round = False
        materials.check_ids(h.material[hit])
        klass = np.where(hit, materials.cls[np.maximum(h.material, 0)], ABSORBENT)
        returns = hit & (klass != ABSORBENT) & (klass != TRANSPARENT) & (klass != MIRROR)

        done = active[returns]
        if len(done):
            _record(out, done, h, returns, total, d, factor, materials)

        crossing = hit & (klass == TRANSPARENT)
        mirrored = hit & (klass == MIRROR)
        cross_idx, mirror_idx = active[crossing], active[mirrored]
        out.crossings[cross_idx] += 1
        out.bounces[mirror_idx] += 1
        keep_cross = out.crossings[cross_idx] <= MAX_TRANSPARENT
        keep_mirror = out.bounces[mirror_idx] <= max_bounces
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
            d[mirror_idx] = dm - 2.0 * np.einsum("ij,ij->i", dm, nm)[:, None] * nm
            travelled[mirror_idx] = dist
            factor[mirror_idx] *= materials.pass_factor[h.material[mirrored]]
        active = np.concatenate([cross_idx[keep_cross], mirror_idx[keep_mirror]])
    return out


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
