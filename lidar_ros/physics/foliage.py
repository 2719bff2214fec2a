"""A lidar ray inside a tree crown: how deep it goes before it meets a leaf (turbid-medium Beer–Lambert).

A crown is taken as a turbid medium: flat leaves, small against the crown, placed at random with a leaf area
density LAD (m² of one-sided leaf area per m³ of crown). A ray of direction Ω meets leaf area at the rate
G(Ω)·LAD per metre, G(Ω) being the mean projection of a unit of leaf area on the plane normal to Ω (Ross,
"The Radiation Regime and Architecture of Plant Stands", Junk 1981, ch. 2; G = 1/2 for every Ω when the leaf
normals are spread evenly over the sphere, the "spherical" leaf-angle distribution). So the ray crosses a
chord of L metres without meeting a leaf with the gap probability

    P_gap(L) = exp(−G·LAD·L)        (Monsi & Saeki 1953; Nilson, Agric. Meteorol. 8:25-38, 1971)

and the depth at which it first meets one is exponential with rate G·LAD:

    ℓ = −ln(1 − U) / (G·LAD),   U uniform on [0, 1)

A sub-ray (footprint.py) hits a leaf where ℓ is shorter than its way through the crown (to the crown's far side,
or to a surface that stands in the crown first, e.g. the trunk); else it leaves the crown and goes on. The
draw is memoryless, so a way through the crown cut into pieces (a pane, a mirror on the way) draws afresh on
each piece. The way back costs nothing more: a monostatic lidar's return retraces the gaps it came in through
(the hot spot of canopy reflectance: Kuusk, "The hot-spot effect of a uniform vegetative cover", Soviet J.
Remote Sensing 3:645-658, 1985). Several sub-rays of one beam meet leaves at different depths or pass to what
stands behind, and the beam's echo grouping (echoes.py) makes of them multiple echoes, weak partial returns and
holes; nothing here draws a "hole" or an "echo".

Numbers (lidar_ros/data materials, `leaf_area_density`): the crown LAD of broadleaved trees in leaf is of the
order of 1 m²/m³: the leaf area index of temperate deciduous broadleaf forest, ≈ 5 (Asner, Scurlock & Hicke,
"Global synthesis of leaf area index observations", Global Ecol. Biogeogr. 12:191-205, 2003), spread over
crowns some 5 m deep; voxel lidar measurements of single trees give LAD profiles of the same order (Hosoi &
Omasa, IEEE TGRS 44(12):3610-3618, 2006). With G = 1/2 the mean free path is then 2 m: a 2.6 m crown lets
exp(−1.3) = 27 % of the rays through its middle.
"""
from __future__ import annotations

import numpy as np

# G(Ω) of each leaf-angle distribution a material may name: spherical, leaf normals even over the sphere (Ross 1981)
PROJECTION = {"spherical": 0.5}


def extinction_per_m(leaf_area_density: float, distribution: str = "spherical") -> float:
    """G·LAD (1/m): the rate at which a ray meets leaf area in a crown."""
    return PROJECTION[distribution] * float(leaf_area_density)


def gap_probability(chord_m, extinction: float) -> np.ndarray:
    """P_gap = exp(−G·LAD·L): the fraction of rays crossing L metres of crown without meeting a leaf."""
    return np.exp(-extinction * np.asarray(chord_m, np.float64))


def leaf_depths(extinction: np.ndarray, u: np.ndarray) -> np.ndarray:
    """(N,) float64 depth (m) at which each ray meets its first leaf, ℓ = −ln(1 − U)/(G·LAD), of the uniforms u
    on [0, 1) (leaf_sharing.py draws them; extinction: (N,) G·LAD of the crown each ray is in, > 0)."""
    return -np.log1p(-np.asarray(u, np.float64)) / np.asarray(extinction, np.float64)
