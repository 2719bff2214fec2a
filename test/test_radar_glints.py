"""Coherent glints per scatterer (issue #22 item 5): plate, dihedral, trihedral, cylinder and sphere read
their analytic radar cross-section (Knott, "Radar Cross Section", Tables 5.1 and 7.1) in every frame, at
the presets' own beam sampling and with four times the rays, through the real Embree backend."""
from __future__ import annotations

import math

import numpy as np
import pytest
import trimesh

from radarays_ros.radar import RadarConfig, RadarSimulator
from radarays_ros.radar.physical import corner_rcs, facet_po, radar_equation, scatterers
from radarays_ros.radar.physical.backscatter import wavelength
from radarays_ros.resources import shipped
from radarays_ros.world.materials import MaterialLibrary
from radarays_ros.world.mesh import TriMesh
from radarays_ros.world.scene import Scene
from radarays_ros.world.transforms import pose_to_matrix
from support.radar_physical import stage_inputs

# helpers of our own (no imports from other test modules)
NAMES = ("asphalt", "concrete", "metal", "vegetation", "glass", "brick")
LIB = MaterialLibrary.from_dict({"materials": {n: {"radar": {"velocity": 0.001, "brdf": "radarays", "A": 1.0, "B": 0.0, "C": 1}}
                                               for n in NAMES}, "default": "concrete"})


def scene(*items) -> Scene:
    """items: (mesh, pose, material)."""
    s = Scene(LIB)
    for i, (mesh, pose, material) in enumerate(items):
        s.add_entity(f"e{i}", mesh, pose, material=material)
    return s


def box(size, centre=(0, 0, 0), yaw=0.0):
    b = trimesh.creation.box(size)
    return TriMesh(b.vertices, b.faces), pose_to_matrix(*centre, 0, 0, yaw)


def physical(**sections) -> RadarConfig:
    """A small physical config: 0.02 m x 1500 bins, a quiet receiver (-150 dBm noise, no STC, no leakage)."""
    base = {"sensor": {"model": "physical"}, "azimuth": {"count": 16, "step_deg": -0.9},
            "range": {"resolution": 0.02, "bins": 1500}, "antenna": {"samples_azimuth": 8, "samples_elevation": 16},
            "fmcw": {"bandwidth_hz": 1.0e9}, "receiver": {"noise_dbm": -150.0, "stc_range_m": 0.0, "leakage_dbm": None},
            "scatter": {"specular_bounces": 0}, "seed": 3}
    for name, values in sections.items():
        base[name] = {**base.get(name, {}), **values}
    return RadarConfig.from_dict(base, origin="test")


def trihedral(apex_distance: float, edge: float, material="metal"):
    """A triangular trihedral whose symmetry axis points at the sensor (origin) from (apex_distance, 0, 0)."""
    v = np.array([[0, 0, 0], [edge, 0, 0], [0, edge, 0], [0, 0, edge]], float)
    faces = np.array([[0, 1, 2], [0, 2, 3], [0, 3, 1]])
    axis, target = np.ones(3) / math.sqrt(3.0), np.array([-1.0, 0, 0])
    k = np.cross(axis, target)
    s, c = np.linalg.norm(k), float(axis @ target)
    kx = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]]) / s
    pose = np.eye(4)
    pose[:3, :3] = np.eye(3) + s * kx + (1 - c) * kx @ kx
    pose[:3, 3] = (apex_distance, 0, 0)
    return TriMesh(v, faces), pose, material

PRESETS = ("navtech_ras6", "navtech_cts350x")


def preset(name: str, seed: int, more_rays: bool = False) -> RadarConfig:
    cfg = RadarConfig.from_yaml(shipped("radar", name))
    over = {"azimuth.count": 8, "seed": seed, "receiver.stc_range_m": 0.0}
    if more_rays:  # x4 rays: twice the samples in azimuth and in elevation
        over.update({"antenna.samples_azimuth": 2 * cfg.antenna.samples_azimuth,
                     "antenna.samples_elevation": 2 * cfg.antenna.samples_elevation})
    return cfg.with_overrides(over)


def measured_sigma(cfg, world, distance: float, sensor=(0.0, 0.0, 0.0), monkeypatch=None) -> float:
    """sigma (m^2) from the glints of azimuth 0 (boresight +x) within 0.3 m of distance."""
    _, g, _ = stage_inputs(cfg, world, pose_to_matrix(*sensor, 0, 0, 0), monkeypatch)
    near = (g.azimuth == 0) & (np.abs(g.range_m - distance) < 0.3)
    lam = wavelength(cfg.fmcw.carrier_hz)
    k_radar = radar_equation.constant(cfg.receiver, cfg.antenna, lam)
    return float(abs(g.amplitude[near].sum()) ** 2 * distance ** 4 / k_radar)


def sheet(*quads) -> TriMesh:
    """Single-sided rectangles (a, b, c, d counter-clockwise about the side that faces the radar)."""
    v = np.concatenate([np.asarray(q, float) for q in quads])
    f = np.concatenate([[[4 * i, 4 * i + 1, 4 * i + 2], [4 * i, 4 * i + 2, 4 * i + 3]] for i in range(len(quads))])
    return TriMesh(v, f)


def square_plate(distance, a, yaw=0.0):
    h = a / 2
    mesh = sheet([(0, -h, -h), (0, -h, h), (0, h, h), (0, h, -h)])  # normal -x: facing the radar
    return mesh, pose_to_matrix(distance, 0, 0, 0, 0, yaw), "metal"


def dihedral(fold_distance, a, b):
    """Right dihedral, fold vertical (length b) at fold_distance, faces a wide at +-45 deg to the line of sight."""
    s = a / math.sqrt(2.0)
    h = b / 2
    face1 = [(0, 0, -h), (0, 0, h), (-s, s, h), (-s, s, -h)]  # normal (-1, -1, 0)/sqrt 2: into the corner
    face2 = [(0, 0, -h), (-s, -s, -h), (-s, -s, h), (0, 0, h)]  # normal (-1, 1, 0)/sqrt 2
    return sheet(face1, face2), pose_to_matrix(fold_distance, 0, 0, 0, 0, 0), "metal"


def cylinder(distance, radius, length, sections=32):
    c = trimesh.creation.cylinder(radius, length, sections=sections)
    return TriMesh(c.vertices, c.faces), pose_to_matrix(distance, 0, 0, 0, 0, 0), "metal"


def sphere(distance, radius):
    s = trimesh.creation.icosphere(3, radius)
    return TriMesh(s.vertices, s.faces), pose_to_matrix(distance, 0, 0, 0, 0, 0), "metal"


LAM = wavelength(76.5e9)
K = 2 * math.pi / LAM
# far field for each (R > 2 D^2 / lambda), small enough that the Fresnel zone does not limit them
TARGETS = {
    "plate": (lambda: square_plate(30.0, 0.15), 30.0, 4 * math.pi * 0.15 ** 4 / LAM ** 2),
    "tilted plate": (lambda: square_plate(30.0, 0.15, yaw=math.radians(0.3)), 30.0,
                     4 * math.pi * 0.15 ** 4 / LAM ** 2 * math.cos(math.radians(0.3)) ** 2
                     * np.sinc(K * 0.15 * math.sin(math.radians(0.3)) / math.pi) ** 2),
    "dihedral": (lambda: dihedral(30.0, 0.1, 0.12), 30.0, 8 * math.pi * 0.1 ** 2 * 0.12 ** 2 / LAM ** 2),
    "trihedral": (lambda: trihedral(20.0, 0.1), 20.0, 4 * math.pi * 0.1 ** 4 / (3 * LAM ** 2)),
    "cylinder": (lambda: cylinder(30.0, 0.05, 0.15), 30.0 - 0.05, 2 * math.pi * 0.05 * 0.15 ** 2 / LAM),
    "sphere": (lambda: sphere(20.0, 0.1), 20.0 - 0.1, math.pi * 0.1 ** 2),
}


@pytest.mark.parametrize("name", PRESETS)
@pytest.mark.parametrize("target", sorted(TARGETS))
def test_facet_rcs_matches_the_analytic_answer_in_every_frame(name, target, monkeypatch):
    make, distance, expected = TARGETS[target]
    world = scene(make())
    errors = []
    for seed, sensor in [(0, (0, 0, 0)), (1, (0, 0.01, 0)), (2, (0.02, -0.01, 0.005))]:
        sigma = measured_sigma(preset(name, seed), world, distance - sensor[0], sensor, monkeypatch)
        errors.append(10 * math.log10(max(sigma, 1e-30) / expected))
    more = measured_sigma(preset(name, 5, more_rays=True), world, distance, monkeypatch=monkeypatch)
    assert max(abs(e) for e in errors) < 1.0, errors
    assert abs(10 * math.log10(max(more, 1e-30) / expected) - errors[0]) < 1.0


def test_near_plate_reads_the_fresnel_zone_whatever_the_ray_count(monkeypatch):
    # a 1 m plate at 20 m is deep in its near field (2 D^2 / lambda = 1 km): it returns the radar's
    # mirror image, pi R^2, not 4 pi A^2 / lambda^2 (+32 dB), and not less with more rays
    world = scene(square_plate(20.0, 1.0))
    levels = [measured_sigma(preset("navtech_ras6", 0, more), world, 20.0, monkeypatch=monkeypatch) for more in (False, True)]
    for level in levels:
        assert 10 * math.log10(level / (math.pi * 20.0 ** 2)) == pytest.approx(0.0, abs=0.5)


def test_near_pole_reads_its_fresnel_length(monkeypatch):
    # a 6 m lamp pole (r = 8 cm) at 10 m, the radar at 1.2 m height: the wave adds in phase over the
    # Fresnel length sqrt(lambda R / 2) of the pole around the radar's height, sigma = 2 pi a (lambda R / 2) / lambda
    mesh, _, _ = cylinder(0.0, 0.08, 6.0)
    world = scene((mesh, pose_to_matrix(10.0, 0, 3.0 - 1.2, 0, 0, 0), "metal"))
    r = 10.0 - 0.08
    expected = 2 * math.pi * 0.08 * (0.5 * LAM * r) / LAM
    sigma = measured_sigma(preset("navtech_ras6", 0), world, r, monkeypatch=monkeypatch)
    assert 10 * math.log10(sigma / expected) == pytest.approx(0.0, abs=1.0)


def test_a_plate_behind_foliage_is_weaker_by_its_two_way_extinction(monkeypatch):
    from radarays_ros.radar.physical import foliage
    hedge = (*box((2.0, 6.0, 6.0), (21.0, 0, 0)), "vegetation")  # 2 m of foliage from x = 20 m
    bare = measured_sigma(preset("navtech_ras6", 0), scene(square_plate(30.0, 0.15)), 30.0, monkeypatch=monkeypatch)
    behind = measured_sigma(preset("navtech_ras6", 0), scene(square_plate(30.0, 0.15), hedge), 30.0, monkeypatch=monkeypatch)
    assert 10 * math.log10(behind / bare) == pytest.approx(-2 * foliage.EXTINCTION_DB_PER_M * 2.0, abs=0.3)


def test_a_long_wall_returns_its_mirror_image_abeam_not_at_its_middle(monkeypatch):
    # a 40 m metal wall 5 m to the left, from 10 m behind to 30 m ahead: its middle is 27 deg off the
    # beam that looks left, its foot straight in it; near field: the radar's image, pi h^2
    wall = sheet([(-10, 5, -3), (30, 5, -3), (30, 5, 3), (-10, 5, 3)])
    cfg = preset("navtech_ras6", 0).with_overrides({"azimuth.start_deg": 90.0})
    sigma = measured_sigma(cfg, scene((wall, np.eye(4), "metal")), 5.0, monkeypatch=monkeypatch)
    assert 10 * math.log10(sigma / (math.pi * 5.0 ** 2)) == pytest.approx(0.0, abs=1.0)


def test_hidden_target_returns_nothing(monkeypatch):
    wall = (*square_plate(10.0, 2.0)[:2], "concrete")
    world = scene(square_plate(30.0, 0.15), wall)
    assert measured_sigma(preset("navtech_ras6", 0), world, 30.0, monkeypatch=monkeypatch) == 0.0


def test_polygon_integral_is_the_rectangle_sinc_and_the_area():
    a, b = 0.3, 0.2
    tris = np.array([[[0, 0, 0], [a, 0, 0], [a, b, 0]], [[0, 0, 0], [a, b, 0], [0, b, 0]]], float) - [a / 2, b / 2, 0]
    for p in ([0.0, 0, 0], [40.0, 0, 0], [0, 70.0, 0], [25.0, -31.0, 0]):
        p_arr = np.repeat([p], 2, axis=0)
        got = facet_po.triangle_integral(p_arr, tris).sum()
        want = a * b * np.sinc(p[0] * a / 2 / math.pi) * np.sinc(p[1] * b / 2 / math.pi)
        assert got == pytest.approx(want, abs=1e-9 * a * b)


def test_corner_apertures():
    lam = LAM
    # dihedral at 45 deg: sigma = 8 pi a^2 b^2 / lambda^2
    ap = corner_rcs.dihedral_aperture(0.1, 0.1, 0.2, math.pi / 4, 0.0, lam, 10.0)
    assert 4 * math.pi * ap ** 2 / lam ** 2 == pytest.approx(8 * math.pi * 0.01 * 0.04 / lam ** 2, rel=1e-9)
    # triangular trihedral on its axis: A = a^2 / sqrt 3; square faces: sqrt 3 a^2
    axis = np.ones(3) / math.sqrt(3)
    e1 = np.cross(axis, [1.0, 0, 0])
    e1 /= np.linalg.norm(e1)
    e2 = np.cross(axis, e1)
    a = 0.4
    tri_pts = np.array([[a, 0, 0], [0, a, 0], [0, 0, a], [0, 0, 0]])
    sq_pts = np.array([[a, 0, 0], [0, a, 0], [0, 0, a], [a, a, 0], [0, a, a], [a, 0, a], [0, 0, 0]])
    proj = lambda pts: np.stack([pts @ e1, pts @ e2], axis=1)  # noqa: E731
    assert corner_rcs.trihedral_aperture(proj(tri_pts)) == pytest.approx(a ** 2 / math.sqrt(3), rel=1e-9)
    assert corner_rcs.trihedral_aperture(proj(sq_pts)) == pytest.approx(math.sqrt(3) * a ** 2, rel=1e-9)


def test_mesh_reading_finds_plates_surfaces_and_corners():
    c = trimesh.creation.cylinder(0.2, 1.0, sections=24)
    sc = scatterers.from_mesh(c.vertices, c.faces, np.zeros(len(c.faces), np.int64), 0)
    assert sc.plate_curved.sum() == 24 and (~sc.plate_curved).sum() == 2
    radius = 1 / np.max(np.abs(sc.curvature[sc.plate_curved]), axis=1)
    assert radius == pytest.approx(0.2 * math.cos(math.pi / 24), rel=1e-3)  # the facets' inscribed radius
    mesh, _, _ = trihedral(0.0, 0.5)
    sc = scatterers.from_mesh(mesh.vertices, mesh.faces, np.zeros(3, np.int64), 0)
    assert len(sc.tri_apex) == 1 and len(sc.dih_length) == 3
    b = trimesh.creation.box((1, 1, 1))  # convex edges only: no corners
    sc = scatterers.from_mesh(b.vertices, b.faces, np.zeros(12, np.int64), 0)
    assert len(sc.plate_area) == 6 and len(sc.dih_length) == 0 and not sc.plate_curved.any()


# -- foliage as a volume (issue #22 item 6) -----------------------------------------------------------
def clutter_power(cfg, world, lo: float, hi: float, monkeypatch) -> float:
    """Expected clutter power (W) of azimuth 0 whose footprints' middles lie in [lo, hi) m (no glints)."""
    c, _, _ = stage_inputs(cfg, world, np.eye(4), monkeypatch)
    mid = 0.5 * (c.near_m + c.far_m)
    return float(c.power_w[(c.azimuth == 0) & (mid >= lo) & (mid < hi)].sum())


def test_foliage_returns_decay_with_depth_and_a_thick_crown_keeps_its_sigma0(monkeypatch, tmp_path):
    from radarays_ros.radar.physical import foliage
    kappa = foliage.extinction_np_per_m()
    r = 10.0
    cfg = physical(azimuth={"count": 1}, scatter={"speckle": False}, antenna={"elevation_width_deg": 4.0})
    crown = (*box((8.0, 20.0, 20.0), (r + 4.0, 0, 0)), "vegetation")
    p = RadarSimulator(cfg, scene(crown)).simulate(np.eye(4)).energy[0].astype(np.float64)
    bins = lambda a, b: slice(int(a / 0.02), int(b / 0.02))  # noqa: E731
    # the volume's returns fall by 2 kappa_e per metre of depth (and by the range spreading)
    span = foliage.SPAN / kappa / foliage.SLABS
    first, second = p[bins(r + 0.2 * span, r + 0.8 * span)].mean(), p[bins(r + 1.2 * span, r + 1.8 * span)].mean()
    expected = math.exp(-2 * kappa * span) * (r + 0.5 * span) ** 4 / (r + 1.5 * span) ** 4
    assert 10 * math.log10(first / second) == pytest.approx(-10 * math.log10(expected), abs=0.5)
    # all of it together: the same power as the class's sigma0(0) on the crown's face (less range spreading)
    x = np.linspace(0, 20, 20001)
    spread = np.trapezoid(2 * kappa * np.exp(-2 * kappa * x) * (r / (r + x)) ** 4, x)
    # against a surface of the same sigma0 at every angle (a table of flat classes)
    flat = tmp_path / "flat.yaml"
    flat.write_text("theta_deg: [0, 90]\nclasses:\n"
                    "  vegetation: {sigma0_db: [-3, -3], eps_r: 10.0, rms_height_m: 0.01}\n"
                    "  concrete: {sigma0_db: [-3, -3], eps_r: 5.5, rms_height_m: 0.01}\n")
    cfg = cfg.with_overrides({"scatter.table": str(flat)})
    s0 = np.ones(2)
    surface = (*box((8.0, 20.0, 20.0), (r + 4.0, 0, 0)), "concrete")
    ratio = clutter_power(cfg, scene(crown), r - 1, r + 9, monkeypatch) / clutter_power(cfg, scene(surface), r - 1, r + 9, monkeypatch)
    assert 10 * math.log10(ratio) == pytest.approx(10 * math.log10(spread * s0[0] / s0[1]), abs=0.5)


def test_a_wall_behind_foliage_is_weaker_by_its_two_way_extinction(monkeypatch):
    from radarays_ros.radar.physical import foliage
    depth = 2.0
    cfg = physical(azimuth={"count": 1}, scatter={"speckle": False, "specular_bounces": 1, "multipath": True},
                          antenna={"elevation_width_deg": 4.0})
    wall = (*box((0.5, 20.0, 20.0), (16.25, 0, 0)), "concrete")
    hedge = (*box((depth, 20.0, 20.0), (10.0 + depth / 2, 0, 0)), "vegetation")
    bare = clutter_power(cfg, scene(wall), 15.5, 17.0, monkeypatch)
    hidden = clutter_power(cfg, scene(wall, hedge), 15.5, 17.0, monkeypatch)
    expected_db = -2 * foliage.EXTINCTION_DB_PER_M * depth
    assert 10 * math.log10(hidden / bare) == pytest.approx(expected_db, abs=0.5)
