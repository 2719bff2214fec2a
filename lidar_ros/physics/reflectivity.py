"""Angle-dependent reflectivity ρ(θ) of the surface a lidar ray hits (LiMOX, Rott et al. 2024, §4.1).

* lambertian: ρ(θ) = ρ(0)·cos θ (LiMOX §4.1; Heiden et al. 2020 use the same diffuse term k_R/π).
* table:      a measured table at θ = 0°, 10°, …, 80° (Ritter et al. 945 nm dataset, as in LiMOX),
              interpolated linearly; beyond 80° the last bin falls linearly to 0 at 90°.
* constant:   ρ(θ) = ρ(0) (a retroreflector inside its entrance angle).

θ is the incidence angle between the ray and the surface normal: cos θ = |d·n|.
"""
from __future__ import annotations

import numpy as np
import numpy as xm  # the formulas' vocabulary (radarays_ros/twin.py)

from radarays_ros.compiled import inlined, kernel

from .materials import LidarMaterials

def table_reflectivity(table: np.ndarray, theta_deg: np.ndarray) -> np.ndarray:
    """Linear interpolation of rows of `table` ((K, 10): 0°, 10°, …, 90°) at `theta_deg` ((K,))."""
    position = table_position(theta_deg)
    low = np.minimum(position.astype(np.int64), 8)  # bin 8..9 covers 80°..90°
    frac = (position - low).astype(np.float32)
    rows = np.arange(len(table))
    return table_interpolation(table[rows, low], table[rows, low + 1], frac)


# rho(theta), written once: numpy runs these on the host, Warp compiles their source for device
# frames (radarays_ros/twin.py; lidar_ros/warp_frame_kernels.py). ASCII only in their lines.
def lambertian_reflectivity(lambertian: float, cos_theta: float, constant: float) -> float:
    """rho = rho_lambertian cos(theta) + rho_constant (each 0 where a material's model does not use it)."""
    return lambertian * cos_theta + constant


def incidence_degrees(cos_theta: float) -> float:
    """theta in degrees from cos(theta), clipped to [0, 1] first (cos(theta) = |d.n| up to rounding)."""
    return xm.degrees(xm.arccos(xm.clip(cos_theta, 0.0, 1.0)))


def table_position(theta_deg: float) -> float:
    """Where theta falls among a table's bins at 0, 10, ..., 90 deg: theta / 10 deg, clipped to [0, 9]."""
    return xm.clip(theta_deg, 0.0, 90.0) / 10.0


def table_interpolation(below: float, above: float, frac: float) -> float:
    """Linear interpolation between a bin's two table values at fraction frac of the bin."""
    return below * (1.0 - frac) + above * frac


def reflectivity(materials: LidarMaterials, material_ids: np.ndarray, cos_incidence: np.ndarray) -> np.ndarray:
    """ρ(θ) (float32) for hits on `material_ids` at incidence cos θ = `cos_incidence`; id -1 (a miss) gives 0.

    One formula for the whole batch, ρ = lambertian[id]·cos θ + constant[id], from per-material
    lookups (0 where a model does not apply, and for a miss); rows on table materials are then
    interpolated in their table. Terms no material of the library uses are skipped.
    """
    ids = np.asarray(material_ids)  # int32 ids as they are (the kernel reads either); others once np.intp
    if ids.dtype != np.int32:
        ids = np.asarray(ids, np.intp)
    cos_theta = np.asarray(cos_incidence, np.float32)
    out = np.empty(len(ids), np.float32)
    _lambertian_and_constant(ids, cos_theta, materials._lambertian_ext, materials._constant_ext,
                             materials.has_constant, out)
    if materials.has_table:
        tabled = np.flatnonzero(materials._tabled_ext[ids])
        if len(tabled):
            theta_deg = incidence_degrees(cos_theta[tabled])
            out[tabled] = table_reflectivity(materials.table[ids[tabled]], theta_deg)
    return out


_lambertian_compiled = inlined(lambertian_reflectivity)


@kernel
def _lambertian_and_constant(ids, cos_theta, lambertian, constant, has_constant, out):
    """out = lambertian[id]·cos θ (+ constant[id]) per ray; cos θ = |d·n| of unit vectors lies within
    [0, 1] up to rounding. Ids index the tables' extended last row for a miss (-1), as numpy does."""
    m = lambertian.shape[0]
    for i in range(ids.shape[0]):
        k = ids[i] if ids[i] >= 0 else ids[i] + m
        if k < 0 or k >= m:
            raise IndexError("material id past the material table")
        out[i] = _lambertian_compiled(lambertian[k], cos_theta[i], constant[k] if has_constant else np.float32(0.0))
