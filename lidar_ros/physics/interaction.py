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

With leaf volumes on (`leaves`), a general material with a leaf area density (a tree crown, a hedge) is
not a surface but a turbid medium: the ray goes into it straight through its face, meets a leaf at an
exponentially drawn depth (foliage.py) if that lies before the next surface it would hit (the crown's far face,
the trunk), and returns from that leaf (leaf_angles.py: the leaf's incidence and normal); else it reaches that
surface, leaving the crown through its far face and going on. Crowns are taken not to overlap (a face met
inside a crown is its way out).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from radarays_ros.twin import vec3

from radarays_ros.compiled import kernel
from radarays_ros.errors import TracingError
from radarays_ros.tracing.backend import Rays, at_times

from .foliage import leaf_depths
from .leaf_angles import leaf_cosines, leaf_normals
from .leaf_sharing import LeafDraws
from .materials import ABSORBENT, MIRROR, TRANSPARENT, LidarMaterials
from .reflectivity import reflectivity

# Continuing rays start this far past a surface (metres, plus a range-relative part), so that float32
# hit points that land a hair before the surface do not hit it again.
SKIP_ABS = 1e-4
SKIP_REL = 2e-6
MAX_TRANSPARENT = 16  # transparent crossings per ray before it counts as lost (a stack of glass panes)
MAX_CROWN_FACES = 32  # crown faces (in and out) a ray crosses before it counts as lost (16 crowns in a row)


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

    `normal`, `entity`, `first_*`, `bounces` and `crossings` may be given as zero-argument callables:
    they are then computed on first access (most frames never read them). Arrays of one LidarHits
    may share memory (a frame without glass or mirrors: first_* are the final surface's arrays).
    """

    _LAZY = ("normal", "entity", "first_entity", "bounces", "crossings", "first_material", "first_range")

    def __init__(self, range, entity, material, normal, cos_incidence, reflectivity, bounces, crossings,
                 first_entity, first_material, first_range):
        self.range = range
        self.material = material
        self.cos_incidence = cos_incidence
        self.reflectivity = reflectivity
        self._lazy = {}
        for name, value in zip(self._LAZY, (normal, entity, first_entity, bounces, crossings, first_material,
                                            first_range)):
            self._lazy[name] = value

    def _get(self, name):
        value = self._lazy[name]
        if callable(value):
            value = self._lazy[name] = value()
        return value

    def _set(self, name, value):
        self._lazy[name] = value

    normal = property(lambda self: self._get("normal"), lambda self, v: self._set("normal", v))
    entity = property(lambda self: self._get("entity"), lambda self, v: self._set("entity", v))
    first_entity = property(lambda self: self._get("first_entity"), lambda self, v: self._set("first_entity", v))
    bounces = property(lambda self: self._get("bounces"), lambda self, v: self._set("bounces", v))
    crossings = property(lambda self: self._get("crossings"), lambda self, v: self._set("crossings", v))
    first_material = property(lambda self: self._get("first_material"), lambda self, v: self._set("first_material", v))
    first_range = property(lambda self: self._get("first_range"), lambda self, v: self._set("first_range", v))

    @property
    def hit(self) -> np.ndarray:
        """(N,) bool: a surface returned the ray."""
        return np.isfinite(self.range)

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
                tmax: float = np.inf, max_bounces: int = 4, unit_directions: bool = False,
                checked_rays: bool = False, first_hits=None,
                leaves: LeafDraws | None = None, times=None) -> LidarHits:
    """Trace N lidar rays through mirrors and transparent surfaces to the surface that returns them.

    origins, directions: (N, 3) world frame (directions need not be unit length; a caller that
    passes unit float32 directions says so with unit_directions=True and saves the check; one that
    built C-contiguous float32 rays from validated tables (finite origins, unit directions) passes
    checked_rays=True and the backend skips its per-ray checks too). tmin/tmax
    bound the total path length. A ray that needs more than `max_bounces` mirror reflections (or
    MAX_TRANSPARENT crossings), or whose path exceeds tmax, gives no return: a miss, never a
    max-range point. Costs one backend.trace of all N rays, plus one per further round for the
    (few) rays that crossed glass or met a mirror.

    first_hits: the first round's `first_trace(backend, origins, directions, tmin, tmax, ...)` when
    the caller traced it already (e.g. on another thread); the rays must be the same.

    leaves: materials with a leaf area density are leaf volumes (module docstring), their leaves drawn by
    it (leaf_sharing.py; only when a ray is in a crown: frames without foliage draw nothing); None: they
    return from their surface like any general material.

    times: (N,) seconds of each ray after the scene's poses (its firing time), or None: every round traces
    it against moving entities where they are then (tracing.Rays; the path's light time is left out).
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
    h = first_trace(backend, o, d, tmin, tmax, checked_rays, times) if first_hits is None else first_hits
    unit = d if unit_directions or checked_rays else _unit(d)
    volumes = leaves is not None and materials.has_foliage  # a crown's face: the ray goes in
    count, not_first, continuing, klass = materials.first_round(h.material, volumes)  # one pass; miss -> False
    if not count:
        return _first_surface_returns(h, None, unit, materials)  # the usual frame: a single trace
    out = _first_surface_returns(h, not_first, unit, materials)
    _follow(backend, out, np.flatnonzero(continuing), o, unit, h, klass, materials, tmax, max_bounces,
            leaves if volumes else None, times)
    return out


# what a lidar frame reads for sure; normals (mirrors, glass, ground truth) are computed on access
FIRST_TRACE_WANTS = frozenset({"distance", "ids", "incidence"})


def first_trace(backend, origins, directions, tmin: float = 0.0, tmax: float = np.inf, checked_rays: bool = False,
                times=None, starts=None):
    """The first round of `trace_lidar`: the backend's hits of every ray (normals on first access:
    most frames read only the cosines of incidence); times: as trace_lidar's. starts: the rays' starts at tmin
    (tracing.Rays.starts) when the caller made them, read with checked rays only."""
    rays = Rays.trusted(origins, directions, times, starts) if checked_rays else Rays(origins, directions, times)
    return backend.trace_rays(rays, tmin, tmax, want=FIRST_TRACE_WANTS)


class _FirstNormals:
    """The first trace's normals on first access, or only the rows a caller reads (Hits.normals_at)."""

    def __init__(self, hits):
        self.hits = hits

    def __call__(self):
        return self.hits.normal

    def at(self, rows):
        return self.hits.normals_at(rows)


def _unit(d: np.ndarray) -> np.ndarray:
    norm = np.sqrt(np.einsum("ij,ij->i", d, d))
    if np.all(np.abs(norm - 1.0) < 1e-5):
        return d
    return d / np.where(norm > 0, norm, 1.0).astype(np.float32)[:, None]


def _first_surface_returns(h, no_return: np.ndarray | None, unit: np.ndarray, materials: LidarMaterials) -> LidarHits:
    """Rays that return from their first surface; the rays in `no_return` (bool mask) are reported as misses."""
    n = len(h.distance)
    distance, material = h.distance, h.material  # face is never read
    if no_return is None:  # every ray returns from the surface it met: the first surface IS the final one
        entity = first_entity = (lambda: h.entity)  # resolved only if someone reads it (ground truth)
        normal = _FirstNormals(h)  # callable; .at(rows) computes only those rows (a beam's dominant sub-ray)
        first_material, first_range = material, distance
        cos_inc = h.incidence_cosines(unit)
    else:  # copies in which those rays are misses; first_* keep what was met. Normals and entities stay lazy
        # (the later rounds put their rows in, _Patched): most frames read one normal per beam, no entity
        first_entity, first_material, first_range = (lambda: h.entity), material, distance
        normal = _Patched(lambda: np.where(no_return[:, None], np.float32(0.0), h.normal),
                          lambda rows: _zeroed(h.normals_at(rows), no_return[rows]))
        entity = _Patched(lambda: np.where(no_return, np.int32(-1), h.entity).astype(np.int32, copy=False))
        distance, material, cos_inc = _as_misses(no_return, distance, material, h.incidence_cosines(unit))
    rho = reflectivity(materials, material, cos_inc)  # 0 for misses (id -1)
    return LidarHits(
        range=distance, entity=entity, material=material, normal=normal, cos_incidence=cos_inc,
        reflectivity=rho, bounces=lambda: np.zeros(n, np.int16), crossings=lambda: np.zeros(n, np.int16),
        first_entity=first_entity, first_material=first_material, first_range=first_range,
    )


def _follow(backend, out: LidarHits, active, origins, unit, h, klass, materials: LidarMaterials,
            tmax, max_bounces, leaves: LeafDraws | None = None, times=None) -> None:
    """Follow the rays `active` (batch indices) past transparent surfaces and mirrors (and through leaf
    volumes, given `leaves`), one trace per round.

    The local arrays hold one row per active ray and shrink as rays return, end or run out of bounces. Each round's
    bookkeeping is two compiled passes (_settle_round, _keep_alive) and the next trace's one (_next_round): the
    same values as `_follow_numpy`, its reference, whose ~25 numpy calls a round on a few thousand rows cost
    ~1 ms of a realistic OS1-128 frame in call overhead. Mirrors and returns stay numpy (their einsum dot)."""
    o = origins[active].astype(np.float32)
    d = unit[active].astype(np.float32)
    h = _Segment(h.distance[active], h.normals_at(active), h.ids_at("entity", active), h.material[active])  # those rows
    klass = klass[active]
    m = len(active)
    hit = np.ones(m, bool)
    travelled = np.zeros(m, np.float32)  # path length before the current segment
    factor = np.ones(m, np.float32)  # product of two-way transmission/mirror factors
    total = h.distance
    crown = _Crowns(m) if leaves is not None else _Crowns(0)  # the leaf volume each ray is in
    crossings, bounces = out.crossings, out.bounces
    tmax_as = _as_numpy_compares(tmax)
    while True:
        if leaves is not None:  # leaves on this segment inside a crown; then the crown faces it reaches
            _meet_leaves(out, active, crown, hit, h.distance, travelled, tmax, d, factor, materials, leaves)
        m = len(active)
        returns, mirrored, alive, skip = np.empty(m, bool), np.empty(m, bool), np.empty(m, bool), np.empty(m, np.float32)
        n_returns, n_mirrored, n_alive = _settle_round(
            hit, h.distance, h.material, h.entity, klass, total, o, d, travelled, factor, active, crossings, bounces,
            materials.pass_factor, materials._extinction_ext, leaves is not None, crown.extinction, crown.material,
            crown.entity, crown.faces, max_bounces, returns, mirrored, alive, skip)
        if n_returns:
            _record(out, active[returns], h.take(returns), total[returns], d[returns], factor[returns], materials)
        if n_mirrored:  # r = d - 2(d.n)n from a point lifted off the mirror along its (ray-facing) normal
            mm = mirrored[:, None]
            point = o + d * np.where(mirrored, h.distance, 0)[:, None]
            o = np.where(mm, point + h.normal * skip[:, None], o)
            d = np.where(mm, mirror_direction(d, h.normal, np.einsum("ij,ij->i", d, h.normal)[:, None]), d)
            travelled = np.where(mirrored, total, travelled)
        if not n_alive:
            return
        kept = _Crowns(n_alive if leaves is not None else 0)
        o_kept, d_kept = np.empty((n_alive, 3), np.float32), np.empty((n_alive, 3), np.float32)
        travelled_kept, factor_kept = np.empty(n_alive, np.float32), np.empty(n_alive, np.float32)
        active_kept = np.empty(n_alive, active.dtype)
        nearest = _keep_alive(alive, o, d, travelled, factor, active, crown.extinction, crown.material, crown.entity,
                              crown.faces, o_kept, d_kept, travelled_kept, factor_kept, active_kept, kept.extinction,
                              kept.material, kept.entity, kept.faces)
        o, d, travelled, factor, active, crown = o_kept, d_kept, travelled_kept, factor_kept, active_kept, kept
        reach = float(tmax) - float(nearest)  # the total path bound is re-checked per ray below
        if reach <= 0:
            return
        h = _Segment.of(backend.trace(o, d, 0.0, reach, **at_times(times, active)))
        total, hit, klass = np.empty(n_alive, np.float32), np.empty(n_alive, bool), np.empty(n_alive, np.int8)
        if not _next_round(travelled, h.distance, h.entity, h.material, tmax_as, materials._cls_ext, total, hit, klass):
            materials.class_of(h.material)  # raises the explanatory error
            raise IndexError("material id past the material table")


def _as_numpy_compares(tmax):
    """tmax as numpy compares a float32 array with it: as a float32 when it is a Python number (NEP 50: 21.7 is then
    21.7000008, and a float32 total of that value is within it), else in its own type (a numpy float64)."""
    return np.result_type(np.float32, tmax).type(tmax)


_SKIP_ABS32, _SKIP_REL32 = np.float32(SKIP_ABS), np.float32(SKIP_REL)  # as numpy casts them against float32 arrays


@kernel
def _settle_round(hit, distance, material, entity, klass, total, o, d, travelled, factor, active, crossings, bounces,
                  pass_factor, extinction, volumes, crown_extinction, crown_material, crown_entity, crown_faces,
                  max_bounces, returns, mirrored, alive, skip):
    """One round of `_follow_numpy` after its leaves, up to its mirrors, per row: which rays return, cross, are
    mirrored or cross a crown's face (`volumes`); crossing and bounce counts, the skip past the surface, the straight
    step of o and travelled, the crown's change, the factor and which rays go on. Fills returns, mirrored, alive and
    skip; returns their counts (returns, mirrored, alive). Float32 operations in numpy's order, so the same bits."""
    n_table = extinction.shape[0]
    n_returns, n_mirrored, n_alive = 0, 0, 0
    for i in range(hit.shape[0]):
        on = hit[i]
        k = material[i] if material[i] >= 0 else material[i] + n_table  # -1 (a miss) reads the extended last row
        face = on and volumes and extinction[k] > 0
        c = klass[i]
        crossing = on and c == TRANSPARENT
        mirror = on and c == MIRROR
        returns[i] = on and c != ABSORBENT and not crossing and not mirror and not face
        mirrored[i] = mirror
        n_returns += returns[i]
        n_mirrored += mirror
        ray = active[i]
        if crossing:
            crossings[ray] += 1
        if mirror:
            bounces[ray] += 1
        s = _SKIP_ABS32 + _SKIP_REL32 * (total[i] if on else np.float32(0.0))  # skip_distance, in float32
        skip[i] = s
        # continue straight on from just past the surface (a pane, a crown's face). numpy stepped the other rows by 0
        # too (o + d * 0), which may turn a -0.0 coordinate into +0.0; those rows are dropped or mirrored, and the
        # mirror's point o + d * distance has the same bits from either zero (d * distance is 0 only with d's zero sign)
        if crossing or face:
            step = distance[i] + s
            for a in range(3):
                o[i, a] = o[i, a] + d[i, a] * step
            travelled[i] = total[i] + s
        if face:  # into a crown through its face (when outside one), or out of it
            if crown_extinction[i] == 0:
                crown_extinction[i] = extinction[k]
                crown_material[i] = material[i]
                crown_entity[i] = entity[i]
            else:
                crown_extinction[i] = 0.0
            crown_faces[i] += 1
        if crossing or mirror:
            factor[i] = factor[i] * pass_factor[max(material[i], 0)]
        go_on = (crossing and crossings[ray] <= MAX_TRANSPARENT) or (mirror and bounces[ray] <= max_bounces)
        if volumes and face and crown_faces[i] <= MAX_CROWN_FACES:
            go_on = True
        alive[i] = go_on
        n_alive += go_on
    return n_returns, n_mirrored, n_alive


@kernel
def _keep_alive(alive, o, d, travelled, factor, active, crown_extinction, crown_material, crown_entity, crown_faces,
                o_kept, d_kept, travelled_kept, factor_kept, active_kept, kept_extinction, kept_material, kept_entity,
                kept_faces):
    """The rows `alive` of the round's arrays into the *_kept ones (the crown's when it has rows); returns the least
    travelled of them."""
    j = 0
    nearest = np.float32(np.inf)
    crowns = kept_extinction.shape[0] > 0
    for i in range(alive.shape[0]):
        if alive[i]:
            for a in range(3):
                o_kept[j, a] = o[i, a]
                d_kept[j, a] = d[i, a]
            travelled_kept[j] = travelled[i]
            nearest = min(nearest, travelled[i])
            factor_kept[j] = factor[i]
            active_kept[j] = active[i]
            if crowns:
                kept_extinction[j] = crown_extinction[i]
                kept_material[j] = crown_material[i]
                kept_entity[j] = crown_entity[i]
                kept_faces[j] = crown_faces[i]
            j += 1
    return nearest


@kernel
def _next_round(travelled, distance, entity, material, tmax, classes, total, hit, klass):
    """The next round's total path, hit (a surface within tmax) and class per row; False for a material id past the
    class table (its last row, a miss, is read for -1 as numpy indexing does)."""
    m = classes.shape[0]
    ok = True
    for i in range(travelled.shape[0]):
        total[i] = travelled[i] + distance[i]
        hit[i] = entity[i] >= 0 and total[i] <= tmax
        k = material[i] if material[i] >= 0 else material[i] + m
        inside = k >= 0 and k < m
        ok = ok and inside
        klass[i] = classes[k if inside else 0]
    return ok


def _follow_numpy(backend, out: LidarHits, active, origins, unit, h, klass, materials: LidarMaterials,
            tmax, max_bounces, leaves: LeafDraws | None = None, times=None) -> None:
    """`_follow` with numpy, one call per step of a round: its reference (test_lidar_foliage)."""
    o = origins[active].astype(np.float32)
    d = unit[active].astype(np.float32)
    h = _Segment(h.distance[active], h.normals_at(active), h.ids_at("entity", active), h.material[active])  # those rows
    klass = klass[active]
    hit = np.ones(len(active), bool)
    travelled = np.zeros(len(active), np.float32)  # path length before the current segment
    factor = np.ones(len(active), np.float32)  # product of two-way transmission/mirror factors
    total = h.distance
    crown = _Crowns(len(active)) if leaves is not None else None  # the leaf volume each ray is in
    while True:
        if crown is not None:  # leaves on this segment inside a crown; then the crown faces it reaches
            _meet_leaves(out, active, crown, hit, h.distance, travelled, tmax, d, factor, materials, leaves)
            face = hit & (materials.extinction_of(h.material) > 0)
        else:
            face = np.zeros(len(hit), bool)
        returns = hit & (klass != ABSORBENT) & (klass != TRANSPARENT) & (klass != MIRROR) & ~face
        if np.any(returns):
            _record(out, active[returns], h.take(returns), total[returns], d[returns], factor[returns], materials)

        crossing = hit & (klass == TRANSPARENT)
        mirrored = hit & (klass == MIRROR)
        out.crossings[active[crossing]] += 1
        out.bounces[active[mirrored]] += 1
        dist = total
        skip = skip_distance(np.where(hit, dist, 0), SKIP_ABS, SKIP_REL).astype(np.float32)
        straight = crossing | face
        if np.any(straight):  # continue straight on from just past the surface (a pane, a crown's face)
            step = np.where(straight, h.distance + skip, 0)
            o = o + d * step[:, None]
            travelled = np.where(straight, dist + skip, travelled)
        if crown is not None and np.any(face):  # into a crown through its face, or out of it
            crown.cross(face, h.material, h.entity, materials)
        if np.any(mirrored):  # r = d - 2(d.n)n from a point lifted off the mirror along its (ray-facing) normal
            m = mirrored[:, None]
            point = o + d * np.where(mirrored, h.distance, 0)[:, None]
            o = np.where(m, point + h.normal * skip[:, None], o)
            d = np.where(m, mirror_direction(d, h.normal, np.einsum("ij,ij->i", d, h.normal)[:, None]), d)
            travelled = np.where(mirrored, dist, travelled)
        passing = crossing | mirrored
        factor = np.where(passing, factor * materials.pass_factor[np.maximum(h.material, 0)], factor)

        counts_ok = np.where(crossing, out.crossings[active] <= MAX_TRANSPARENT, out.bounces[active] <= max_bounces)
        alive = passing & counts_ok
        if crown is not None:
            alive |= face & (crown.faces <= MAX_CROWN_FACES)
            crown = crown.take(alive)
        if not np.any(alive):
            return
        active, o, d, travelled, factor = active[alive], o[alive], d[alive], travelled[alive], factor[alive]
        reach = float(tmax) - float(travelled.min())  # the total path bound is re-checked per ray below
        if reach <= 0:
            return
        h = _Segment.of(backend.trace(o, d, 0.0, reach, **at_times(times, active)))
        total = travelled + h.distance
        hit = (h.entity >= 0) & (total <= tmax)
        klass = materials.class_of(h.material)


class _Crowns:
    """Per followed ray: the leaf volume it is in (G·LAD, material, entity; extinction 0 = outside any) and how
    many crown faces it has crossed."""

    def __init__(self, n: int):
        self.extinction = np.zeros(n)
        self.material = np.full(n, -1, np.int32)
        self.entity = np.full(n, -1, np.int32)
        self.faces = np.zeros(n, np.int32)

    def cross(self, face: np.ndarray, material: np.ndarray, entity: np.ndarray, materials: LidarMaterials) -> None:
        """The rays `face` (mask) cross a crown's face: in when outside, out when inside."""
        entering = face & (self.extinction == 0)
        self.extinction = np.where(entering, materials.extinction_of(material), np.where(face, 0.0, self.extinction))
        self.material = np.where(entering, material, self.material).astype(np.int32)
        self.entity = np.where(entering, entity, self.entity).astype(np.int32)
        self.faces = self.faces + face

    def take(self, keep: np.ndarray) -> "_Crowns":
        out = _Crowns(0)
        out.extinction, out.material, out.entity, out.faces = (
            self.extinction[keep], self.material[keep], self.entity[keep], self.faces[keep])
        return out


def _meet_leaves(out: LidarHits, active, crown: _Crowns, hit, distance, travelled, tmax, d, factor,
                 materials: LidarMaterials, leaves: LeafDraws) -> None:
    """The rays inside a crown on this segment: a leaf at depth ℓ (foliage.py) where ℓ comes before the
    segment's surface (or, without one, the ray's end at tmax); those return from their leaf (leaf_angles.py)
    and their `hit` is cleared, so that they end here.

    The gathers before the draws and the scatters after them are compiled passes (_crown_rows, _leaf_rows,
    _leaf_returns); the draws, ℓ's log1p and the normals' cos and sin stay numpy's: the same values as
    `_meet_leaves_numpy`, its reference."""
    m = len(active)
    inside, way, material, rays, ranges, leaf_size, extinction = (
        np.empty(m, np.int64), np.empty(m), np.empty(m, np.int32), np.empty(m, np.int64), np.empty(m, np.float32),
        np.empty(m), np.empty(m))
    count = _crown_rows(crown.extinction, crown.material, hit, distance, travelled, np.float64(tmax), active,
                        materials._leaf_size_ext, inside, way, material, rays, ranges, leaf_size, extinction)
    if not count:
        return
    inside, way, material, rays, ranges = inside[:count], way[:count], material[:count], rays[:count], ranges[:count]
    u = leaves.uniforms(rays, ranges, leaf_size[:count])
    depth = leaf_depths(extinction[:count], u[:, 0])
    met, incidence, azimuth, d_met = np.empty(count, np.int64), np.empty(count), np.empty(count), \
        np.empty((count, 3), np.float32)
    n_met = _leaf_rows(depth, way, inside, u, d, met, incidence, azimuth, d_met)
    if not n_met:
        return
    met, mu = met[:n_met], leaf_cosines(incidence[:n_met])
    normal = leaf_normals(d_met[:n_met], mu, azimuth[:n_met])
    done = active[met]
    leaf_material = np.empty(n_met, np.int32)
    _leaf_returns(met, inside, depth, way, material, travelled, mu, done, out.range, out.material, out.cos_incidence,
                  hit, leaf_material)
    _put(out, "entity", done, crown.entity[met])
    _put(out, "normal", done, normal)
    out.reflectivity[done] = reflectivity(materials, leaf_material, mu) * factor[met]


@kernel
def _crown_rows(crown_extinction, crown_material, hit, distance, travelled, tmax, active, leaf_sizes, inside, way,
                material, rays, ranges, leaf_size, extinction):
    """The rows in a crown (extinction > 0), in order, with their way to the segment's end (the surface's distance
    where one is hit, else tmax - travelled, in float64), crown material, ray, range so far, leaf size and
    extinction (the first `count` rows of each output). Returns count."""
    n_sizes = leaf_sizes.shape[0]
    count = 0
    for i in range(crown_extinction.shape[0]):
        if crown_extinction[i] > 0:
            inside[count] = i
            way[count] = np.float64(distance[i]) if hit[i] else tmax - np.float64(travelled[i])
            material[count] = crown_material[i]
            rays[count] = active[i]
            ranges[count] = travelled[i]
            k = crown_material[i] if crown_material[i] >= 0 else crown_material[i] + n_sizes
            leaf_size[count] = leaf_sizes[k]
            extinction[count] = crown_extinction[i]
            count += 1
    return count


@kernel
def _leaf_rows(depth, way, inside, u, d, met, incidence, azimuth, d_met):
    """The crown rows whose leaf comes before the segment's end (depth < way): their row, incidence and azimuth
    uniforms and direction (the first n_met rows of each output). Returns n_met."""
    n_met = 0
    for j in range(depth.shape[0]):
        if depth[j] < way[j]:
            row = inside[j]
            met[n_met] = row
            incidence[n_met] = u[j, 1]
            azimuth[n_met] = u[j, 2]
            for a in range(3):
                d_met[n_met, a] = d[row, a]
            n_met += 1
    return n_met


@kernel
def _leaf_returns(met, inside, depth, way, material, travelled, mu, done, out_range, out_material, out_cos, hit,
                  leaf_material):
    """The rays that met a leaf return from it: range travelled + depth (float64, then float32), the crown's
    material, cos μ; their hit is cleared. leaf_material: their materials, in order."""
    n_met = 0
    for j in range(depth.shape[0]):
        if depth[j] < way[j]:
            row = inside[j]
            ray = done[n_met]
            out_range[ray] = np.float32(np.float64(travelled[row]) + depth[j])
            out_material[ray] = material[j]
            out_cos[ray] = mu[n_met]
            leaf_material[n_met] = material[j]
            hit[row] = False
            n_met += 1


def _meet_leaves_numpy(out: LidarHits, active, crown: _Crowns, hit, distance, travelled, tmax, d, factor,
                 materials: LidarMaterials, leaves: LeafDraws) -> None:
    """The rays inside a crown on this segment: a leaf at depth ℓ (foliage.py) where ℓ comes before the
    segment's surface (or, without one, the ray's end at tmax); those return from their leaf (leaf_angles.py)
    and their `hit` is cleared, so that they end here."""
    inside = np.flatnonzero(crown.extinction > 0)
    if not len(inside):
        return
    way = np.where(hit[inside], distance[inside], np.float64(tmax) - travelled[inside])
    material = crown.material[inside]
    u = leaves.uniforms(active[inside], travelled[inside], materials.leaf_size_of(material))
    depth = leaf_depths(crown.extinction[inside], u[:, 0])
    on_leaf = depth < way
    met = inside[on_leaf]
    if not len(met):
        return
    mu = leaf_cosines(u[on_leaf, 1])
    normal = leaf_normals(d[met], mu, u[on_leaf, 2])
    done = active[met]
    material = material[on_leaf]
    out.range[done] = (travelled[met] + depth[on_leaf]).astype(np.float32)
    _put(out, "entity", done, crown.entity[met])
    out.material[done] = material
    _put(out, "normal", done, normal)
    out.cos_incidence[done] = mu
    out.reflectivity[done] = reflectivity(materials, material, mu) * factor[met]
    hit[met] = False


class _Patched:
    """A per-ray array of a LidarHits computed on first access, `base()` with the rows the later rounds put in
    (`put`, each ray at most once); `at(rows)` gives only those rows (a beam's dominant sub-ray's normal) when
    `base_at` is given. The same bits as writing the rows into the computed array."""

    def __init__(self, base, base_at=None):
        self.base, self.base_at = base, base_at
        self.rows: list = []
        self.values: list = []

    @property
    def at(self):
        """`_at` when rows can be read alone (base_at given), else no such attribute (getattr(lazy, "at", None)).
        A property, not `self.at = self._at`: that bound method would make a reference cycle, which kept each
        frame's first trace (its Embree result arrays, ~10 MB) alive until the garbage collector ran, so the next
        frame's trace took fresh pages from the system (2 500 page faults, 8-30 ms of system CPU a frame)."""
        if self.base_at is None:
            raise AttributeError("at")
        return self._at

    def put(self, rows, values) -> None:
        self.rows.append(np.asarray(rows, np.int64))
        self.values.append(np.asarray(values))

    def __call__(self) -> np.ndarray:
        out = self.base()
        for rows, values in zip(self.rows, self.values):
            out[rows] = values
        return out

    def _at(self, rows) -> np.ndarray:
        rows, out, put_rows, values = self._base_and_puts(rows)
        if len(put_rows):
            flat = out.reshape(len(rows), -1)
            if not np.shares_memory(flat, out):  # a copy: written rows would be lost
                return self._overlaid_numpy(rows, out, put_rows, values)
            _overlay(rows, put_rows, values.reshape(len(put_rows), -1), flat)
        return out

    def _at_numpy(self, rows) -> np.ndarray:
        """`_at` with numpy (a slot table over all rows): the reference of the compiled overlay."""
        return self._overlaid_numpy(*self._base_and_puts(rows))

    def _base_and_puts(self, rows):
        """(rows as int64, base_at's values of them, every put row, their values in put order)."""
        rows = np.asarray(rows, np.int64)
        if len(self.rows) <= 1:  # no copy for one round's rows
            put_rows = self.rows[0] if self.rows else np.zeros(0, np.int64)
            values = self.values[0] if self.values else None
        else:
            put_rows, values = np.concatenate(self.rows), np.concatenate(self.values)
        return rows, self.base_at(rows), put_rows, values

    @staticmethod
    def _overlaid_numpy(rows, out, put_rows, values) -> np.ndarray:
        if len(put_rows):
            slot = np.full(int(max(rows.max(initial=-1), put_rows.max(initial=-1))) + 1, -1, np.int32)
            slot[put_rows] = np.arange(len(put_rows), dtype=np.int32)
            which = slot[rows]
            taken = which >= 0
            out[taken] = values[which[taken]]
        return out


@kernel
def _overlay(rows, put_rows, values, out):
    """out[j] = values[k] where rows[j] == put_rows[k] (the last such k), through a slot table over the put rows'
    span only (not all rows: a 2 MB table a frame)."""
    if put_rows.shape[0] == 0:
        return
    low, high = put_rows.min(), put_rows.max()
    slot = np.full(high - low + 1, -1, np.int32)
    for k in range(put_rows.shape[0]):
        slot[put_rows[k] - low] = k
    for j in range(rows.shape[0]):
        row = rows[j]
        if low <= row <= high and slot[row - low] >= 0:
            k = slot[row - low]
            for c in range(out.shape[1]):
                out[j, c] = values[k, c]


def _as_misses(no_return, distance, material, cos_inc):
    """Copies of the first trace's distance, material and cosine with the rays `no_return` as misses (inf, -1,
    0): the values of np.where on each, in one compiled pass instead of three (and a cast)."""
    n = len(no_return)
    out_distance = np.empty(n, np.result_type(np.float32, distance.dtype))
    out_material = np.empty(n, np.int32)
    out_cos = np.empty(n, np.result_type(np.float32, cos_inc.dtype))
    _as_misses_kernel(no_return, distance, material, cos_inc, out_distance, out_material, out_cos)
    return out_distance, out_material, out_cos


@kernel
def _as_misses_kernel(no_return, distance, material, cos_inc, out_distance, out_material, out_cos):
    for i in range(no_return.shape[0]):
        if no_return[i]:
            out_distance[i], out_material[i], out_cos[i] = np.inf, -1, 0.0
        else:
            out_distance[i], out_material[i], out_cos[i] = distance[i], material[i], cos_inc[i]


def _zeroed(values: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """values (a fresh array) with the rows `rows` (mask) set to 0, in place."""
    values[rows] = 0
    return values


def _put(out: LidarHits, name: str, rows, values) -> None:
    """out.<name>[rows] = values, kept as a patch while that array is not computed yet (_Patched)."""
    lazy = out._lazy[name]
    if isinstance(lazy, _Patched):
        lazy.put(rows, values)
    else:
        getattr(out, name)[rows] = values


class _Segment(NamedTuple):
    """The parts of a backend's Hits that the interaction rounds read (never the face ids)."""

    distance: np.ndarray
    normal: np.ndarray
    entity: np.ndarray
    material: np.ndarray

    @classmethod
    def of(cls, hits) -> "_Segment":
        return cls(*hits.fields("distance", "normal", "entity", "material"))  # one round trip to the backend

    def take(self, index) -> "_Segment":
        return _Segment(self.distance[index], self.normal[index], self.entity[index], self.material[index])


def _record(out: LidarHits, done, h: _Segment, total, d, factor, materials: LidarMaterials) -> None:
    """Store the rays `done` (batch indices) returning from the surfaces in `h` (one row per ray)."""
    cos_inc = np.abs(np.einsum("ij,ij->i", d, h.normal)).astype(np.float32)
    out.range[done] = total
    _put(out, "entity", done, h.entity)
    out.material[done] = h.material
    _put(out, "normal", done, h.normal)
    out.cos_incidence[done] = cos_inc
    out.reflectivity[done] = reflectivity(materials, h.material, cos_inc) * factor


# Written once: numpy runs these on the host, Warp compiles their source for device frames (radarays_ros/twin.py;
# lidar_ros/warp_frame_kernels.py). ASCII only in their lines.
def skip_distance(travelled: float, skip_abs: float, skip_rel: float) -> float:
    """How far a ray continues past a surface it crosses or leaves (m): skip_abs + skip_rel * the path so far,
    so that float32 rounding of a far hit point cannot put the next segment's start behind the surface."""
    return skip_abs + skip_rel * travelled


def mirror_direction(d: vec3, n: vec3, d_dot_n: float) -> vec3:
    """A mirror's reflection r = d - 2 (d.n) n of a ray d on the normal n (d_dot_n = d.n)."""
    return d - (2.0 * d_dot_n) * n
