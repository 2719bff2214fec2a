"""The one interface between sensor models and ray tracers.

A backend answers "where does each of these rays first hit" for world-frame rays. Sensor code only
ever sees `Rays`, `Backend.trace` / `Backend.trace_rays` and `Hits`; which tracer runs is chosen by
name (`make_backend`).

The contract a backend implements (Embree in `embree.py`; a GPU backend follows the same):

* `__init__(scene, **options)`: build acceleration structures for `scene` and `scene.subscribe(self)`;
  then `on_entity_added/removed/moved(entity)` and `on_entities_moved(entities)` keep it in sync.
  Moving an entity must never rebuild the static structure (tests count `static_rebuilds`).
* `_trace(rays, tmin, tmax, names) -> Hits` (behind `trace_rays(rays, tmin, tmax, want)`, which checks
  the span and the attribute names once): the first hit of every ray with tmin <= t <= tmax.
  `rays` is a `Rays`: C-contiguous (N, 3) float32 world-frame origins and unit directions, already
  validated (a backend never checks them again). `want` (a frozenset of `ATTRIBUTES`) names what the
  caller will read for sure: the backend computes those during the trace. Every other attribute must
  still be readable, computed on first access (`Hits(..., resolve=)`), so results never depend on
  `want`: it only moves cost. "distance" is always computed.
* Results are deterministic and independent of how rays are batched or threaded: a ray's hit never
  depends on the other rays of its batch.
* `blocked(origins, directions, reach)` answers whether each ray's first hit is closer than its own reach (an
  occlusion test of segments); the base class traces once up to the longest reach, a backend may bound each ray
  by its own (the same answers).
* `close()`: unsubscribe and free resources.

Attributes (`Hits`): distance (float32 metres, inf = miss), normal (float32 unit world-frame, facing the
ray), ids (entity, face and material, int32, -1 = miss), incidence (|cos| between ray and normal,
0 = miss; `Hits.incidence_cosines`).
"""
from __future__ import annotations

import abc
import threading
from typing import Callable

import numpy as np

from ..compiled import inlined, kernel
from ..errors import TracingError
from ..world.scene import Scene


class Hits:
    """First hits of N rays. Misses: distance inf, entity/face/material -1, normal 0.

    distance  (N,) float32 metres along the unit direction, inf = miss
    normal    (N, 3) float32 unit world-frame normal facing the ray (dot(n, d) <= 0)
    entity    (N,) int32 entity id, -1 = miss
    face      (N,) int32 face index in the entity's source mesh file, -1 = miss
    material  (N,) int32 material id in the scene's library, -1 = miss

    A backend may hand over normal/entity/face/material as a `resolve(name) -> array` callable
    instead of arrays: each is then computed or looked up on first access only (callers pay for the
    attributes they use). Such a backend may also resolve "cos_incidence" (see `incidence_cosines`).
    """

    FIELDS = ("normal", "entity", "face", "material")

    def __init__(self, distance, normal=None, entity=None, face=None, material=None, *, resolve=None):
        self.distance = distance
        self._ids = {"normal": normal, "entity": entity, "face": face, "material": material,
                     "cos_incidence": None}
        self._resolve = resolve
        if resolve is None and any(self._ids[name] is None for name in self.FIELDS):
            raise TypeError("Hits needs normal, entity, face and material arrays, or a resolve callable")

    def _field(self, name: str) -> np.ndarray:
        value = self._ids[name]
        if value is None:
            value = self._ids[name] = self._resolve(name)
        return value

    def fields(self, *names: str) -> tuple:
        """Several attributes at once ("distance" or FIELDS), in the order asked. Those not read yet are
        resolved in one call when the backend's resolver offers `many(names)` (its per-hit bookkeeping,
        e.g. which layer each hit came from, done once instead of once per attribute)."""
        missing = [name for name in names if name != "distance" and self._ids[name] is None]
        many = getattr(self._resolve, "many", None)
        if len(missing) > 1 and many is not None:
            for name, value in zip(missing, many(missing)):
                self._ids[name] = value
        return tuple(self.distance if name == "distance" else self._field(name) for name in names)

    def normals_at(self, rows) -> np.ndarray:
        """(len(rows), 3) float32 normal[rows], the same bits; a backend whose resolver offers
        `normal_rows(rows)` computes only those rows while the normals are not resolved yet (a lidar with
        beam divergence reads one sub-ray's normal per beam)."""
        rows = np.asarray(rows, np.int64)
        at = getattr(self._resolve, "normal_rows", None)
        if self._ids["normal"] is None and at is not None:
            return at(rows)
        return np.asarray(self.normal, np.float32)[rows]

    def ids_at(self, name: str, rows) -> np.ndarray:
        """entity[rows], face[rows] or material[rows] (name), the same values; a backend whose resolver offers
        `ids_at(name, rows)` looks up only those rows while the attribute is not resolved yet (a lidar frame
        follows its few rays past glass, mirrors and tree crowns)."""
        rows = np.asarray(rows, np.int64)
        at = getattr(self._resolve, "ids_at", None)
        if self._ids[name] is None and at is not None:
            return at(name, rows)
        return np.asarray(self._field(name))[rows]

    normal = property(lambda self: self._field("normal"), lambda self, v: self._ids.__setitem__("normal", v))
    entity = property(lambda self: self._field("entity"), lambda self, v: self._ids.__setitem__("entity", v))
    face = property(lambda self: self._field("face"), lambda self, v: self._ids.__setitem__("face", v))
    material = property(lambda self: self._field("material"), lambda self, v: self._ids.__setitem__("material", v))

    def span(self, a: int, b: int) -> "Hits":
        """Rays a..b as a Hits of views into this one's arrays; attributes not read yet stay lazy
        (a backend's resolver may offer `span(a, b)`, else the whole attribute is resolved once)."""
        sub = Hits(self.distance[a:b], resolve=self._span_resolver(a, b))
        for name, value in self._ids.items():
            if value is not None:
                sub._ids[name] = value[a:b]
        return sub

    def _span_resolver(self, a: int, b: int):
        if self._resolve is not None and hasattr(self._resolve, "span"):
            return self._resolve.span(a, b)

        def resolve(name: str):
            if name != "cos_incidence":
                return self._field(name)[a:b]
            value = self._ids[name]
            if value is None and self._resolve is not None:
                value = self._resolve(name)
            return None if value is None else value[a:b]
        return resolve

    def incidence_cosines(self, directions) -> np.ndarray:
        """(N,) float32 |cos| of the angle between each traced unit direction and its hit's normal, 0 = miss.

        A backend that knows it from the trace hands it over (then `directions` is not read);
        otherwise it is |d . n| of `directions` ((N, 3) unit, as traced) and `normal`."""
        value = self._ids["cos_incidence"]
        if value is None and self._resolve is not None:
            value = self._resolve("cos_incidence")
        if value is None:
            d, n = np.asarray(directions, np.float32), self.normal
            value = d[:, 0] * n[:, 0]
            value += d[:, 1] * n[:, 1]
            value += d[:, 2] * n[:, 2]
            np.abs(value, out=value)
        self._ids["cos_incidence"] = value
        return value

    @property
    def hit(self) -> np.ndarray:
        return np.isfinite(self.distance)

    def __len__(self) -> int:
        return len(self.distance)

    def __repr__(self) -> str:
        return f"Hits(n={len(self)}, hits={int(self.hit.sum())})"

    @classmethod
    def misses(cls, n: int) -> "Hits":
        return cls(
            np.full(n, np.inf, np.float32),
            np.zeros((n, 3), np.float32),
            np.full(n, -1, np.int32),
            np.full(n, -1, np.int32),
            np.full(n, -1, np.int32),
        )

    def take(self, index) -> "Hits":
        taken = Hits(self.distance[index], self.normal[index], self.entity[index], self.face[index], self.material[index])
        if self._ids["cos_incidence"] is not None:
            taken._ids["cos_incidence"] = self._ids["cos_incidence"][index]
        return taken


ATTRIBUTES = frozenset({"distance", "normal", "ids", "incidence"})
ALL = ATTRIBUTES


def wanted(want) -> frozenset:
    """The attribute names of `want` (an iterable of ATTRIBUTES); "distance" is always included."""
    names = frozenset([want] if isinstance(want, str) else want)
    unknown = names - ATTRIBUTES
    if unknown:
        raise TracingError(f"unknown hit attribute(s) {', '.join(sorted(unknown))}; "
                           f"allowed: {', '.join(sorted(ATTRIBUTES))}")
    return names | {"distance"}


class Rays:
    """World-frame rays a backend may trace as they are: C-contiguous (N, 3) float32 origins and unit
    directions, finite (validated once, here, never again in a backend).

    Rays(origins, directions)          checks every ray (NaN/inf, zero length) and normalises directions
                                       that are not unit (only those rows: a ray never depends on others)
    Rays.trusted(origins, directions)  O(1) checks only (dtype, shape, layout): for callers that know
                                       their values are good, e.g. rays rotated from a validated table

    times: None, or (N,) seconds of each ray after the scene's poses (a sweep's firing times, checked
    finite): a backend that can (`SWEEPS_ENTITIES`) traces each ray against the entities that have a
    twist where they are at its time (world/twist_pose.py); the others stay where they are.

    starts (trusted rays only): None, or (tmin, (N, 3) float32 `ray_start` of every ray at that tmin), made by a
    caller that had the rays in hand anyway (a lidar frame writes them in the pass that rotates its rays): a
    backend that starts its rays at tmin by moving their origins there (Embree) reads them instead of making
    them again, when it traces from that tmin; other backends ignore them.
    """

    __slots__ = ("origins", "directions", "times", "starts")

    def __init__(self, origins, directions, times=None):
        self.origins, self.directions = check_rays(origins, directions)
        self.times = check_times(times, len(self.origins))
        self.starts = None

    @classmethod
    def trusted(cls, origins: np.ndarray, directions: np.ndarray, times=None, starts=None) -> "Rays":
        rays = cls.__new__(cls)
        rays.origins, rays.directions = checked_rays(origins, directions)
        rays.times = trusted_times(times, len(rays.origins))
        rays.starts = trusted_starts(starts, len(rays.origins))
        return rays

    def starts_at(self, tmin) -> np.ndarray | None:
        """The given starts of these rays at `tmin` (compared as float32, as the trace uses it), else None."""
        if self.starts is None or np.float32(self.starts[0]) != np.float32(tmin):
            return None
        return self.starts[1]

    def __len__(self) -> int:
        return len(self.origins)

    def __repr__(self) -> str:
        return f"Rays(n={len(self)})"


def ray_start(origin: float, direction: float, tmin: float) -> float:
    """Where a ray traced from tmin on starts, one component: origin + tmin·direction in float32, the product
    rounded, then the sum (backends that move origins to tmin, and callers that make `Rays.starts`, use this)."""
    return direction * tmin + origin


ray_start_inlined = inlined(ray_start)


def trusted_starts(starts, n: int):
    """None, or (float tmin, (n, 3) C-contiguous float32 array) as given (values not scanned); TracingError else."""
    if starts is None:
        return None
    if not (isinstance(starts, tuple) and len(starts) == 2):
        raise TracingError("ray starts must be (tmin, (N, 3) float32 array)")
    tmin, points = starts
    if not (isinstance(points, np.ndarray) and points.dtype == np.float32 and points.shape == (n, 3)
            and points.flags.c_contiguous):
        raise TracingError(f"ray starts must be a C-contiguous ({n}, 3) float32 array; got "
                           f"{getattr(points, 'dtype', type(points).__name__)} {np.shape(points)}")
    return float(tmin), points


def check_span(tmin: float, tmax: float) -> tuple[float, float]:
    """0 <= tmin < tmax (tmax may be inf); TracingError otherwise."""
    tmin, tmax = float(tmin), float(tmax)
    if not (0.0 <= tmin < tmax):
        raise TracingError(f"need 0 <= tmin < tmax, got tmin={tmin}, tmax={tmax}")
    return tmin, tmax


class Backend(abc.ABC):
    """A ray tracer kept in sync with a Scene (it subscribes to the scene's changes); see the module doc."""

    name = "abstract"

    def __init__(self, scene: Scene):
        self.scene = scene
        self._lock = threading.Lock()  # the listener's state: scene callbacks arrive on other threads

    # -- scene listener (moves; additions and removals are the backend's own) ------------------
    def on_entity_moved(self, entity) -> None:
        with self._lock:
            self._moved(entity)

    def on_entities_moved(self, entities: list) -> None:
        """A batch of moves under one lock (the Gazebo mirror moves many entities per pose message)."""
        with self._lock:
            for entity in entities:
                self._moved(entity)

    def _moved(self, entity) -> None:
        """Follow one moved entity (called with `_lock` held); never rebuild the static structure."""
        raise NotImplementedError

    def trace(self, origins, directions, tmin: float = 0.0, tmax: float = np.inf, *, want=ALL, times=None) -> Hits:
        """First hit of each ray in [tmin, tmax]; origins, directions: (N, 3) world frame, any float dtype,
        checked here (`Rays`). `want`: the attributes the caller reads for sure (see the module doc).
        times: (N,) seconds of each ray after the scene's poses, or None (`Rays`)."""
        return self.trace_rays(Rays(origins, directions, times), tmin, tmax, want=want)

    def trace_rays(self, rays: Rays, tmin: float = 0.0, tmax: float = np.inf, *, want=ALL) -> Hits:
        """First hit of each of the validated `rays` in [tmin, tmax]; every attribute readable, those in
        `want` computed during the trace. The span and the names are checked here, once, then `_trace`
        runs (a backend implements `_trace`, or overrides this method and calls `check_span(tmin, tmax)`
        and `wanted(want)` itself)."""
        tmin, tmax = check_span(tmin, tmax)
        self.check_sweeps(rays)
        return self._trace(rays, tmin, tmax, wanted(want))

    def blocked(self, origins, directions, reach, *, times=None) -> np.ndarray:
        """(N,) bool: whether each ray's first hit lies closer than its own reach[i] (metres, (N,), >= 0, compared
        as given with the float32 distance): an occlusion test of segments. origins, directions, times: as `trace`."""
        rays = Rays(origins, directions, times)
        reach = check_reach(reach, len(rays))
        if not len(reach) or not reach.max() > 0.0:  # no distance is under 0
            return np.zeros(len(reach), bool)
        self.check_sweeps(rays)
        return self._blocked(rays, reach)

    def _blocked(self, rays: Rays, reach: np.ndarray) -> np.ndarray:
        """`blocked` after its checks (reach.max() > 0): one trace up to the longest reach, each first hit then
        compared with its ray's reach. A backend may bound each ray by its own reach instead (Embree does): a ray
        with a surface closer than its reach finds its first hit either way, and one without finds none closer."""
        return np.asarray(self.trace_rays(rays, 0.0, float(reach.max()), want=()).distance) < reach

    SWEEPS_ENTITIES = False  # traces rays with times against moving entities where they are at those times

    def check_sweeps(self, rays: Rays) -> None:
        """TracingError for rays with times on a backend that traces every ray at the scene's poses, while an
        entity's twist moves it (else the times change nothing and the rays are traced as they are)."""
        if rays.times is not None and not self.SWEEPS_ENTITIES:
            with self.scene.lock:
                moving = [self.scene.entity(i).name for i in sorted(self.scene.sweeping_ids())]
            if moving:
                raise TracingError(f"the {self.name} backend traces every ray at the scene's poses, so it cannot meet "
                                   f"'{moving[0]}' (and {len(moving) - 1} more moving) where each ray's time puts it: "
                                   "use the embree backend, or moving_entities: frame")

    def _trace(self, rays: Rays, tmin: float, tmax: float, names: frozenset) -> Hits:
        """`trace_rays` after its checks: 0 <= tmin < tmax floats, names = wanted(want)."""
        raise NotImplementedError(f"the {self.name} backend implements neither _trace nor trace_rays")

    def close(self) -> None:
        self.scene.unsubscribe(self)  # type: ignore[arg-type]


_BACKENDS: dict[str, Callable[..., Backend]] = {}


def register_backend(name: str, factory: Callable[..., Backend]) -> None:
    _BACKENDS[name] = factory


def available_backends() -> list[str]:
    _load_builtin()
    return sorted(_BACKENDS)


def make_backend(name: str, scene: Scene, **options) -> Backend:
    """Create a backend by name: 'embree' (CPU), 'warp' (NVIDIA Warp, device='cuda' or 'cpu'); 'optix' is reserved."""
    _load_builtin()
    if name not in _BACKENDS:
        raise TracingError(f"unknown backend '{name}'; available: {', '.join(sorted(_BACKENDS))}")
    return _BACKENDS[name](scene, **options)


def at_times(times, rows) -> dict:
    """The `times=` of a backend call for the rays `rows` of `times` (nothing where there are none, so any
    backend's `trace`, and a stand-in without the keyword, takes it)."""
    return {} if times is None else {"times": times[rows]}


def check_times(times, n: int) -> np.ndarray | None:
    """None, or (n,) finite float64 seconds; TracingError otherwise."""
    if times is None:
        return None
    t = np.asarray(times, np.float64)
    if t.shape != (n,):
        raise TracingError(f"ray times must be (N,) = ({n},); got {t.shape}")
    if not np.isfinite(t).all():
        raise TracingError("ray times contain NaN or inf")
    return t


def check_reach(reach, n: int) -> np.ndarray:
    """(n,) float64 metres >= 0 (inf allowed) of Backend.blocked; TracingError otherwise."""
    r = np.asarray(reach, np.float64)
    if r.shape != (n,):
        raise TracingError(f"reach must be (N,) = ({n},); got {r.shape}")
    if not (r >= 0.0).all():
        raise TracingError("reach must be >= 0 metres (inf allowed); got a negative value or NaN")
    return r


def trusted_times(times, n: int) -> np.ndarray | None:
    """check_times' O(1) part, for `Rays.trusted`: None, or (n,) float64 as given (values not scanned: a
    sweep's firing times come from a checked sensor table); TracingError for another shape or dtype."""
    if times is None:
        return None
    if not isinstance(times, np.ndarray) or times.dtype != np.float64 or times.shape != (n,):
        raise TracingError(f"trusted ray times must be a (N,) = ({n},) float64 array; got "
                           f"{getattr(times, 'dtype', type(times).__name__)} {np.shape(times)}")
    return times


def check_rays(origins, directions) -> tuple[np.ndarray, np.ndarray]:
    """(N,3) float32 origins and unit directions; raises TracingError for bad shapes or values."""
    o = np.ascontiguousarray(origins, dtype=np.float32)
    d = np.ascontiguousarray(directions, dtype=np.float32)
    if o.ndim != 2 or o.shape[1] != 3 or d.shape != o.shape:
        raise TracingError(f"origins and directions must both be (N, 3); got {o.shape} and {d.shape}")
    if len(o) == 0:
        return o, d
    unit = np.empty_like(d)  # the caller's array stays as it is
    bad_origins, bad_directions, zero_length = _unit_directions(o, d, unit)
    if bad_origins:
        raise TracingError("origins contain NaN or inf")
    if bad_directions:
        raise TracingError("directions contain NaN or inf")
    if zero_length:
        raise TracingError(f"{zero_length} ray direction(s) have zero length")
    return o, unit


@kernel
def _unit_directions(o, d, unit):
    """One pass over the rays: (any non-finite origin, any non-finite direction, how many directions of
    zero length); unit = d, with the rows whose |d|² is off 1 by more than 1e-6 divided by |d| (only
    those: a ray's result never depends on the other rays of its batch)."""
    of, df, uf = o.reshape(-1), d.reshape(-1), unit.reshape(-1)
    bad_origins, bad_directions, zero_length = False, False, 0
    for i in range(o.shape[0]):
        bad_origins |= not np.isfinite(of[3 * i] + of[3 * i + 1] + of[3 * i + 2])
        x, y, z = df[3 * i], df[3 * i + 1], df[3 * i + 2]
        norm2 = x * x + y * y + z * z
        if not np.isfinite(norm2):
            bad_directions = True
        elif norm2 < np.float32(1e-24):
            zero_length += 1
        scale = np.sqrt(norm2) if abs(norm2 - np.float32(1.0)) > np.float32(1e-6) else np.float32(1.0)
        uf[3 * i], uf[3 * i + 1], uf[3 * i + 2] = x / scale, y / scale, z / scale  # x / 1 is x exactly
    return bad_origins, bad_directions, zero_length


def checked_rays(origins, directions) -> tuple[np.ndarray, np.ndarray]:
    """The O(1) part of `check_rays` for callers that vouch for their values (trace(checked=True))."""
    for name, a in (("origins", origins), ("directions", directions)):
        if not (isinstance(a, np.ndarray) and a.dtype == np.float32 and a.ndim == 2 and a.shape[1:] == (3,)
                and a.flags.c_contiguous):
            raise TracingError(f"checked rays: {name} must be a C-contiguous (N, 3) float32 array")
    if origins.shape != directions.shape:
        raise TracingError(f"origins and directions must both be (N, 3); got {origins.shape} and {directions.shape}")
    return origins, directions


def _load_builtin() -> None:
    if "embree" not in _BACKENDS:
        from . import embree  # noqa: F401  (registers itself)
    if "warp" not in _BACKENDS:  # imports warp-lang only when the backend is asked for
        _BACKENDS["warp"] = _make_warp_backend
    if "optix" not in _BACKENDS:
        from .optix import make_optix_backend

        _BACKENDS["optix"] = make_optix_backend


def _make_warp_backend(scene: Scene, **options) -> Backend:
    from .warp import WarpBackend

    return WarpBackend(scene, **options)
