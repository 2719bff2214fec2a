"""A compiled first cut of the curved plates that may face this frame's sensor (facet_glints.curved_returns).

No formula of its own: it repeats curved_returns' two per-frame tests (the normal's cone against the line of
sight to the frame's mean sensor position, then the tilt of that line towards each principal direction
against the plate's share of the bend) in one loop per plate, with every threshold widened by CULL_SLACK,
so it keeps every plate those tests keep and a few more; curved_returns then runs its own tests, unchanged,
on the survivors only. So the survivors are the same plates, in the same order, as the full tests gave,
whatever the last bits of the compiled cos/arcsin (libm) against numpy's (SIMD) ones.

Why: a terrain's curved plates (a 1 M-triangle world: 330 k candidates, 6 k facing) made these two tests
over every candidate, with their gathers, ~75 ms of a Navtech frame on one core; the loop reads each
candidate once (~2 ms).
"""
from __future__ import annotations

import math

import numpy as np

from ...compiled import kernel

CULL_SLACK = 1e-9  # widening of each test: radians on the angle tests, a fraction of the range (+1 m) on the cone test


def may_face(candidates, centroid, normal, cone, principal, curvature, extent, centre, spread: float,
             cone_slack: float, straight: float) -> np.ndarray:
    """The candidates (sorted plate indices) that may pass curved_returns' facing and tilt tests for a
    sensor at `centre` (frame mean) wandering `spread` metres about it (a superset of those that do)."""
    keep = np.zeros(len(candidates), np.bool_)
    _may_face(np.ascontiguousarray(candidates, np.int64), centroid, normal, cone, principal, curvature, extent,
              np.asarray(centre, np.float64), float(spread), float(cone_slack), float(straight), CULL_SLACK, keep)
    return candidates[keep]


@kernel
def _may_face(candidates, centroid, normal, cone, principal, curvature, extent, centre, spread, cone_slack,
              straight, slack, keep):
    half_pi = 0.5 * math.pi
    for i in range(candidates.shape[0]):
        p = candidates[i]
        tx, ty, tz = centre[0] - centroid[p, 0], centre[1] - centroid[p, 1], centre[2] - centroid[p, 2]
        r = math.sqrt(tx * tx + ty * ty + tz * tz)
        angle = min(cone[p] + spread / max(r, 1e-6) + cone_slack, half_pi)
        facing = normal[p, 0] * tx + normal[p, 1] * ty + normal[p, 2] * tz
        margin = slack * (r + 1.0)
        if facing < (1.0 - 0.5 * angle * angle) * r - margin:  # cos x >= 1 - x^2 / 2: out without a cos
            continue
        if facing < math.cos(angle) * r - margin:
            continue
        inv = 1.0 / max(r, 1e-300)
        ux, uy, uz = tx * inv, ty * inv, tz * inv
        if normal[p, 0] * ux + normal[p, 1] * uy + normal[p, 2] * uz <= -0.1 - slack:
            continue
        wander = spread / max(r, 1e-6) + cone_slack
        near = True
        for k in range(2):
            bend = abs(curvature[p, k]) * extent[p, k]
            if bend < straight:
                continue
            m = principal[p, k, 0] * ux + principal[p, k, 1] * uy + principal[p, k, 2] * uz
            tilt = abs(math.asin(min(max(m, -1.0), 1.0)))
            if tilt > 0.75 * bend + wander + slack:
                near = False
                break
        keep[i] = near
