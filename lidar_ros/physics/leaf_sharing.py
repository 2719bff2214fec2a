"""Which sub-rays of one beam meet the same leaf: leaves have a size, so near rays see the same gaps.

The turbid medium of foliage.py draws each ray's leaf on its own, as if leaves were points. Leaves of linear
size l are not: two parallel rays s apart meet the same leaf, and see the same gaps, with a probability that
falls off as

    c(s) = exp(−s / l)

(the correlation of gaps along two paths in Kuusk's hot-spot model of canopy reflectance: Kuusk, "The hot-spot
effect of a uniform vegetative cover", Soviet J. Remote Sensing 3:645-658, 1985). A beam's sub-ray i lies
s_i = R·r_i from the beam's axis at range R (footprint.py: r_i its angular radius); it takes the draws of the
beam's axis (the axis's leaf: its depth, incidence and azimuth) with probability c(s_i), else draws its own.
Every sub-ray's draws stay uniform, so the gap fraction and the depth law of foliage.py hold for each sub-ray;
what changes is how a beam's sub-rays agree: a narrow beam, whose footprint is smaller than a leaf, meets one
leaf whole and gives one echo; a wide one meets several leaves at several depths, and its echoes split
(echoes.py).

Leaf size l (a material's `leaf_size_m`, LEAF_SIZE_M when not given): the leaf width of the common broadleaf
street trees, 5-10 cm (lime, maple, plane: species floras); 7 cm.
"""
from __future__ import annotations

import numpy as np

from radarays_ros.compiled import kernel

LEAF_SIZE_M = 0.07
DRAWS = 3  # uniforms per leaf draw: depth (foliage.py), incidence and azimuth (leaf_angles.py)


def shared_probability(separation_m, leaf_size_m) -> np.ndarray:
    """c(s) = exp(−s/l): two rays s apart meet the same leaf (leaves of size l)."""
    return np.exp(-np.asarray(separation_m, np.float64) / np.asarray(leaf_size_m, np.float64))


class LeafDraws:
    """The uniforms of the leaf draws of a batch of sub-rays (beam-major, `len(sub_ray_radius_rad)` per beam),
    from one seeded generator: each sub-ray's own, or its beam axis's with probability c(s)."""

    def __init__(self, rng: np.random.Generator, sub_ray_radius_rad=(0.0,)):
        self.rng = rng
        self.radius = np.asarray(sub_ray_radius_rad, np.float64)
        self.k = len(self.radius)

    def uniforms(self, rays: np.ndarray, range_m: np.ndarray, leaf_size_m: np.ndarray) -> np.ndarray:
        """(n, DRAWS) float64 uniforms for the sub-rays `rays` (batch indices) in a crown at ranges range_m.
        Draw order: every ray's own, then one set per beam among them (in beam order), then the choices.
        The bookkeeping around the draws (which beam, the separations, the choices) is compiled; c(s)'s exp stays
        numpy's: the same values as `uniforms_numpy` (~0.2 ms of a realistic OS1-128 frame's ~0.27 ms was numpy
        call overhead and np.unique's sort of rays that come sorted)."""
        rays = np.asarray(rays, np.int64)
        own = self.rng.random((len(rays), DRAWS))
        if self.k == 1 or not len(rays):  # one ray per beam: nothing to share
            return own
        which, separation = np.empty(len(rays), np.int64), np.empty(len(rays), np.float64)
        n_beams = _beams_of_sorted(rays, self.k, np.asarray(range_m, np.float64), self.radius, which, separation)
        if n_beams < 0:  # rays not in increasing order: np.unique sorts them
            return self.uniforms_numpy(rays, range_m, leaf_size_m, own)
        axis = self.rng.random((n_beams, DRAWS))
        choice = self.rng.random(len(rays))
        out = np.empty_like(own)
        _choose(choice, shared_probability(separation, leaf_size_m), axis, which, own, out)
        return out

    def uniforms_numpy(self, rays: np.ndarray, range_m: np.ndarray, leaf_size_m: np.ndarray, own=None) -> np.ndarray:
        """`uniforms` with numpy (its reference; and for rays in any order); own: the rays' own draws, when drawn."""
        rays = np.asarray(rays, np.int64)
        if own is None:
            own = self.rng.random((len(rays), DRAWS))
        if self.k == 1 or not len(rays):  # one ray per beam: nothing to share
            return own
        beam, sub = np.divmod(rays, self.k)
        beams, which = np.unique(beam, return_inverse=True)
        axis = self.rng.random((len(beams), DRAWS))[which]
        same = self.rng.random(len(rays)) < shared_probability(np.asarray(range_m, np.float64) * self.radius[sub],
                                                               leaf_size_m)
        return np.where(same[:, None], axis, own)


@kernel
def _beams_of_sorted(rays, k, range_m, radius, which, separation):
    """Per ray of increasing batch index: which of the distinct beams (rays // k) it is in, counted in order (what
    np.unique's return_inverse gives), and its separation from the beam's axis, range · radius[rays % k]. Returns
    how many beams, or -1 where the rays are not increasing."""
    n_beams = 0
    last = -1
    for i in range(rays.shape[0]):
        if i and rays[i] <= rays[i - 1]:
            return -1
        beam = rays[i] // k
        if beam != last:
            n_beams += 1
            last = beam
        which[i] = n_beams - 1
        separation[i] = range_m[i] * radius[rays[i] % k]
    return n_beams


@kernel
def _choose(choice, shared, axis, which, own, out):
    """out[i] = the beam axis's draws where choice[i] < shared[i] (c(s)), else the ray's own."""
    for i in range(out.shape[0]):
        same = choice[i] < shared[i]
        for j in range(out.shape[1]):
            out[i, j] = axis[which[i], j] if same else own[i, j]
