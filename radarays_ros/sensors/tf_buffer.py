"""A small tf2-style transform buffer: /tf and /tf_static in, world <- sensor poses at many times out.

tf2_ros is not on PyPI, and the sensors need something tf2's Python API does not offer anyway: the
pose at each azimuth's or column's firing time, as one vectorised lookup. Each edge of the frame
tree keeps its recent samples (time, translation, quaternion); a lookup walks both frames up to
their common ancestor and composes the edges, interpolating each one linearly in position and by
slerp in rotation, like tf2. No rclpy here: the node feeds it from its subscriptions.
"""
from __future__ import annotations

import bisect
import threading
from dataclasses import dataclass, field

import numpy as np

from ..errors import RadaraysError
from ..world.transforms import quaternions_to_matrices, slerp


class TransformLookupError(RadaraysError):
    """A transform is not available (unknown frame, no common root, or time outside the buffer)."""


@dataclass
class _Edge:
    """parent <- child samples, time-sorted (a static edge has one sample valid at every time)."""

    parent: str
    static: bool = False
    t_ns: list = field(default_factory=list)
    values: list = field(default_factory=list)  # (7,) x y z qx qy qz qw


class TransformBuffer:
    """Transforms between frames over the last `cache_s` seconds (tf2's default is 10 s).

    `tolerance_ns`: a lookup up to this much later than an edge's newest sample (or earlier than
    its oldest) uses that sample instead of failing. Sensors ask for the pose at the end of a sweep
    that has just finished, a few milliseconds before the next /tf arrives.
    """

    def __init__(self, cache_s: float = 10.0, tolerance_ns: int = 100_000_000):
        self.cache_ns = int(cache_s * 1e9)
        self.tolerance_ns = int(tolerance_ns)
        self._edges: dict[str, _Edge] = {}
        self._lock = threading.Lock()

    # -- input ---------------------------------------------------------------------------------
    def set_transform(self, parent: str, child: str, t_ns: int, translation, rotation_xyzw, static: bool = False) -> None:
        """Add one parent <- child sample. Raises TransformLookupError for NaN, a zero quaternion or a loop."""
        parent, child = parent.lstrip("/"), child.lstrip("/")
        value = np.array([*translation, *rotation_xyzw], dtype=float)
        if value.shape != (7,) or not np.all(np.isfinite(value)):
            raise TransformLookupError(f"transform {parent} <- {child}: non-finite translation or rotation {value.tolist()}")
        norm = np.linalg.norm(value[3:])
        if norm < 1e-9:
            raise TransformLookupError(f"transform {parent} <- {child}: zero quaternion")
        if not parent or not child or parent == child:
            raise TransformLookupError(f"transform '{parent}' <- '{child}': frame ids must be non-empty and different")
        value[3:] /= norm
        with self._lock:
            if self._creates_loop(parent, child):
                raise TransformLookupError(f"transform {parent} <- {child} would make a loop in the frame tree")
            edge = self._edges.get(child)
            if edge is None or edge.parent != parent or edge.static != static:
                edge = self._edges[child] = _Edge(parent, static)
            if static:
                edge.t_ns, edge.values = [0], [value]
                return
            i = bisect.bisect_left(edge.t_ns, int(t_ns))
            if i < len(edge.t_ns) and edge.t_ns[i] == int(t_ns):
                edge.values[i] = value
            else:
                edge.t_ns.insert(i, int(t_ns))
                edge.values.insert(i, value)
            cut = bisect.bisect_left(edge.t_ns, edge.t_ns[-1] - self.cache_ns)
            if cut:
                del edge.t_ns[:cut], edge.values[:cut]

    def _creates_loop(self, parent: str, child: str) -> bool:
        frame, seen = parent, 0
        while frame in self._edges and seen < 10_000:
            if frame == child:
                return True
            frame, seen = self._edges[frame].parent, seen + 1
        return frame == child

    def clear(self) -> None:
        """Forget every non-static transform (after a jump back in sim time, as tf2 does)."""
        with self._lock:
            self._edges = {k: e for k, e in self._edges.items() if e.static}

    def frames(self) -> list[str]:
        with self._lock:
            return sorted(set(self._edges) | {e.parent for e in self._edges.values()})

    # -- queries -------------------------------------------------------------------------------
    def _chain(self, frame: str) -> list[str]:
        chain = [frame]
        while chain[-1] in self._edges:
            chain.append(self._edges[chain[-1]].parent)
        return chain

    def lookup(self, target: str, source: str, t_ns, tolerance_ns: int | None = None) -> np.ndarray:
        """(N, 4, 4) transforms target <- source at each time (t_ns array, or 0 = latest common).

        tolerance_ns: this lookup's allowance beyond the buffered samples (default: the buffer's)."""
        tolerance = self.tolerance_ns if tolerance_ns is None else int(tolerance_ns)
        target, source = target.lstrip("/"), source.lstrip("/")
        times = np.atleast_1d(np.asarray(t_ns, dtype=np.int64))
        with self._lock:
            if target == source:
                return np.tile(np.eye(4), (len(times), 1, 1))
            up_source, up_target = self._chain(source), self._chain(target)
            common = next((f for f in up_source if f in up_target), None)
            if common is None:
                known = sorted(set(self._edges) | {e.parent for e in self._edges.values()})
                raise TransformLookupError(
                    f"no transform between '{target}' and '{source}': they are not connected "
                    f"(known frames: {', '.join(known) or 'none yet'})")
            src_edges = [self._edges[f] for f in up_source[: up_source.index(common)]]
            tgt_edges = [self._edges[f] for f in up_target[: up_target.index(common)]]
            names_src = up_source[: up_source.index(common)]
            names_tgt = up_target[: up_target.index(common)]
            if np.all(times == 0):
                times = np.full(len(times), self._latest_common(src_edges + tgt_edges), np.int64)
            common_from_source = self._compose(src_edges, names_src, times, tolerance)
            common_from_target = self._compose(tgt_edges, names_tgt, times, tolerance)
        return np.linalg.inv(common_from_target) @ common_from_source

    def _latest_common(self, edges: list[_Edge]) -> int:
        dynamic = [e.t_ns[-1] for e in edges if not e.static]
        return min(dynamic) if dynamic else 0

    def _compose(self, edges: list[_Edge], names: list[str], times: np.ndarray, tolerance: int) -> np.ndarray:
        """ancestor <- frame for the chain frame -> ... -> ancestor (edges listed child first)."""
        out = np.tile(np.eye(4), (len(times), 1, 1))
        for edge, child in zip(edges, names):
            out = self._edge_at(edge, child, times, tolerance) @ out
        return out

    def _edge_at(self, edge: _Edge, child: str, times: np.ndarray, tolerance: int) -> np.ndarray:
        values = np.asarray(edge.values)
        if edge.static or len(values) == 1:
            if not edge.static:
                self._check_range(edge, child, times, tolerance)
            v = np.broadcast_to(values[0], (len(times), 7))
            return self._matrices(v[:, :3], v[:, 3:])
        t = np.asarray(edge.t_ns, dtype=np.int64)
        self._check_range(edge, child, times, tolerance)
        clamped = np.clip(times, t[0], t[-1])
        i = np.clip(np.searchsorted(t, clamped, side="right") - 1, 0, len(t) - 2)
        a = ((clamped - t[i]) / (t[i + 1] - t[i]).astype(float))[:, None]
        position = values[i, :3] + (values[i + 1, :3] - values[i, :3]) * a
        rotation = slerp(values[i, 3:], values[i + 1, 3:], a[:, 0])
        return self._matrices(position, rotation)

    @staticmethod
    def _check_range(edge: _Edge, child: str, times: np.ndarray, tolerance: int) -> None:
        first, last = edge.t_ns[0], edge.t_ns[-1]
        early, late = times.min(), times.max()
        if early < first - tolerance or late > last + tolerance:
            raise TransformLookupError(
                f"transform {edge.parent} <- {child} is known from {first / 1e9:.3f} s to {last / 1e9:.3f} s, "
                f"requested {early / 1e9:.3f}..{late / 1e9:.3f} s (no extrapolation beyond "
                f"{tolerance / 1e9:g} s)")

    @staticmethod
    def _matrices(position: np.ndarray, rotation_xyzw: np.ndarray) -> np.ndarray:
        m = np.tile(np.eye(4), (len(position), 1, 1))
        m[:, :3, :3] = quaternions_to_matrices(np.asarray(rotation_xyzw, float))
        m[:, :3, 3] = position
        return m
