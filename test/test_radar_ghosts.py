"""Multipath ghosts off building faces (issue #22 item 6): a corner reflector in front of a large wall shows
its image behind the wall, at the mirrored range and bearing, at the level of the radar equation for the
image with the corner's analytic RCS (Knott, Table 7.1) and the wall's Fresnel/roughness reflectivity
twice (mirror_ghosts.py), in every frame (deterministic, no ray sampling)."""
from __future__ import annotations

import math

import numpy as np
import pytest
import trimesh

from radarays_ros.radar import RadarConfig, RadarSimulator
from radarays_ros.radar.physical import radar_equation, roughness
from radarays_ros.radar.physical import simulate as physical_simulate
from radarays_ros.radar.physical.backscatter import wavelength
from radarays_ros.world.materials import MaterialLibrary
from radarays_ros.world.mesh import TriMesh
from radarays_ros.world.scene import Scene
from radarays_ros.world.transforms import pose_to_matrix
from support.radar_physical import GHOST_EDGE, stage_inputs, trihedral_facing

NAMES = ("asphalt", "concrete", "metal", "glass", "brick")
LIB = MaterialLibrary.from_dict({"materials": {n: {"radar": {"velocity": 0.001, "brdf": "radarays", "A": 1.0, "B": 0.0, "C": 1}}
                                               for n in NAMES}, "default": "concrete"})
WALL_Y = 5.0  # the wall's face: the plane y = 5, facing the radar at the origin
TARGET = np.array([30.0, 2.0, 0.0])
IMAGE_OF_RADAR = np.array([0.0, 2 * WALL_Y, 0.0])


def scene(*items) -> Scene:
    s = Scene(LIB)
    for i, (mesh, pose, material) in enumerate(items):
        s.add_entity(f"e{i}", mesh, pose, material=material)
    return s


def wall(material: str):
    b = trimesh.creation.box((60.0, 0.2, 6.0))
    return TriMesh(b.vertices, b.faces), pose_to_matrix(30.0, WALL_Y + 0.1, 0.0, 0, 0, 0), material


def ghost_geometry():
    """(range, bearing rad, incidence cosine at the specular point) of the target's image."""
    image = TARGET * np.array([1.0, -1.0, 1.0]) + np.array([0.0, 2 * WALL_Y, 0.0])  # T mirrored in y = 5
    r = float(np.linalg.norm(image))
    bearing = math.atan2(image[1], image[0])
    t = WALL_Y / (2 * WALL_Y - TARGET[1])  # the line from the radar's image (0, 10) to T crosses y = 5 here
    x = IMAGE_OF_RADAR + (TARGET - IMAGE_OF_RADAR) * t
    cos_i = abs(x[1]) / np.linalg.norm(x)  # the face's normal is -y; from X the radar lies along -X
    return r, bearing, cos_i


def config(bearing_deg: float, seed: int, ghosts: bool = True) -> RadarConfig:
    """9 azimuths, 0.9 deg apart counter-clockwise, column 4 on the ghost's bearing; a quiet receiver."""
    return RadarConfig.from_dict({
        "sensor": {"model": "physical"},
        "azimuth": {"count": 9, "start_deg": bearing_deg - 4 * 0.9, "step_deg": 0.9},
        "range": {"resolution": 0.02, "bins": 2000},
        "antenna": {"samples_azimuth": 8, "samples_elevation": 16, "azimuth_width_deg": 1.8, "azimuth_pattern": "sinc"},
        "fmcw": {"bandwidth_hz": 1.0e9},
        "receiver": {"noise_dbm": -150.0, "stc_range_m": 0.0, "leakage_dbm": None},
        "scatter": {"specular_bounces": 0, "mirror_ghosts": ghosts}, "seed": seed}, origin="test")


def frame_glints(cfg, world, monkeypatch):
    _, glints, sim = stage_inputs(cfg, world, pose_to_matrix(0.0, 0.0, 0.0, 0, 0, 0), monkeypatch)
    return glints, physical_simulate.scatter_table(sim)


@pytest.mark.parametrize("material", ["metal", "glass", "concrete"])
@pytest.mark.parametrize("seed", [1, 2])
def test_a_corner_in_front_of_a_wall_has_its_ghost_at_the_mirrored_range_and_bearing(material, seed, monkeypatch):
    r_ghost, bearing, cos_i = ghost_geometry()
    cfg = config(math.degrees(bearing), seed)
    world = scene(wall(material), trihedral_facing(TARGET, IMAGE_OF_RADAR))
    g, table = frame_glints(cfg, world, monkeypatch)
    lam = wavelength(cfg.fmcw.carrier_hz)
    k_radar = radar_equation.constant(cfg.receiver, cfg.antenna, lam)
    cls = table.material_class[world.materials.id_of(material)]
    rho = float(roughness.coherent_reflectivity(table.gamma2[cls], table.rms_height[cls], cos_i, lam))
    sigma = 4 * math.pi * GHOST_EDGE ** 4 / (3 * lam ** 2)  # triangular trihedral on its axis (seen from the radar's image)
    expected = k_radar * sigma * rho ** 2 / r_ghost ** 4  # column 4 looks straight at the image: g = 1
    at = (g.azimuth == 4) & (np.abs(g.range_m - r_ghost) < 0.05)
    assert at.sum() == 1, (g.azimuth, g.range_m)
    measured = float(np.abs(g.amplitude[at][0]) ** 2)
    assert 10 * math.log10(measured / expected) == pytest.approx(0.0, abs=1.0)
    # the ghost rises and falls with the beam around its bearing: strongest in the column that looks at it
    ghost = np.abs(g.range_m - r_ghost) < 0.05
    powers = np.bincount(g.azimuth[ghost], np.abs(g.amplitude[ghost]) ** 2, minlength=9)
    assert int(np.argmax(powers)) == 4
    # nothing at the ghost's range without the image method, nor with the wall gone
    g_off, _ = frame_glints(config(math.degrees(bearing), seed, ghosts=False), world, monkeypatch)
    assert not (np.abs(g_off.range_m - r_ghost) < 0.05).any()
    g_free, _ = frame_glints(cfg, scene(trihedral_facing(TARGET, IMAGE_OF_RADAR)), monkeypatch)
    assert not (np.abs(g_free.range_m - r_ghost) < 0.05).any()


def test_a_ghost_needs_its_specular_point_on_the_wall(monkeypatch):
    """The same corner beside a wall too short to hold the specular point: no ghost."""
    r_ghost, bearing, _ = ghost_geometry()
    b = trimesh.creation.box((10.0, 0.2, 6.0))  # x from 25 to 35: the specular point (x = 18.75) is off it
    short = (TriMesh(b.vertices, b.faces), pose_to_matrix(30.0, WALL_Y + 0.1, 0.0, 0, 0, 0), "metal")
    g, _ = frame_glints(config(math.degrees(bearing), 1), scene(short, trihedral_facing(TARGET, IMAGE_OF_RADAR)), monkeypatch)
    assert not (np.abs(g.range_m - r_ghost) < 0.05).any()


def test_the_image_moves_as_the_derivative_of_the_mirrored_point():
    """mirror_ghosts.image_velocity against a central difference of reflect_rows over a plane carried by random
    twists (twist_pose.poses_at: translating and turning) and a point moving in a straight line."""
    from radarays_ros.radar.physical import mirror_ghosts
    from radarays_ros.world.twist_pose import poses_at

    rng = np.random.default_rng(7)
    dt = 1e-5
    for _ in range(20):
        body = pose_to_matrix(*rng.normal(0, 5, 3), *rng.uniform(-math.pi, math.pi, 3))
        v, w = rng.normal(0, 3, 3), rng.normal(0, 1, 3) * rng.integers(0, 2)  # some only translate
        c0, n0 = rng.normal(0, 5, 3), rng.normal(size=3)
        n0 /= np.linalg.norm(n0)
        s0, v_s = rng.normal(0, 10, 3), rng.normal(0, 5, 3)
        turn, shift = poses_at(body, v, w, np.array([-dt, 0.0, dt]))
        local_c, local_n = body[:3, :3].T @ (c0 - body[:3, 3]), body[:3, :3].T @ n0  # on the body at t = 0
        centroids = np.einsum("tij,j->ti", turn, local_c) + shift
        normals = np.einsum("tij,j->ti", turn, local_n)
        points = s0 + v_s * np.array([-dt, 0.0, dt])[:, None]
        images = mirror_ghosts.reflect_rows(points, centroids, normals)
        numeric = (images[2] - images[0]) / (2 * dt)
        plane_velocity = v + np.cross(w, c0 - body[:3, 3])
        exact = mirror_ghosts.image_velocity(s0[None], v_s[None], c0[None], n0[None], plane_velocity[None], w[None])[0]
        np.testing.assert_allclose(exact, numeric, rtol=1e-6, atol=1e-5)
    # a still plane mirrors the velocity (H v), one moving along its normal at a adds 2 a n
    n = np.array([[0.0, 1.0, 0.0]])
    still = mirror_ghosts.image_velocity(np.zeros((1, 3)), np.array([[1.0, 2.0, 3.0]]), np.array([[0, 5.0, 0]]), n,
                                         np.zeros((1, 3)), np.zeros((1, 3)))
    np.testing.assert_array_equal(still, [[1.0, -2.0, 3.0]])
    moving = mirror_ghosts.image_velocity(np.zeros((1, 3)), np.zeros((1, 3)), np.array([[0, 5.0, 0]]), n,
                                          np.array([[4.0, 6.0, 0.0]]), np.zeros((1, 3)))
    np.testing.assert_array_equal(moving, [[0.0, 12.0, 0.0]])
