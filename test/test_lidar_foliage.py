"""Tree crowns as leaf volumes for the lidar (lidar_ros/physics/foliage.py, leaf_angles.py, leaf_sharing.py):
Beer–Lambert gaps, exponential leaf depths, the leaf-angle law, echoes behind a crown, determinism, and frames
without foliage unchanged."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import trimesh
from scipy import stats

from lidar_ros import LidarSimulator, load_sensor
from lidar_ros.physics import LidarMaterials, trace_lidar
from lidar_ros.physics.foliage import PROJECTION, extinction_per_m, gap_probability
from lidar_ros.physics.leaf_sharing import LeafDraws, shared_probability
from radarays_ros.errors import ConfigError
from radarays_ros.tracing import make_backend
from radarays_ros.world.materials import Material, MaterialLibrary
from radarays_ros.world.mesh import TriMesh
from radarays_ros.world.scene import Scene
from radarays_ros.world.transforms import pose_to_matrix

ROOT = Path(__file__).resolve().parents[1]
SPHERICAL = str(ROOT / "radarays_ros" / "data" / "examples" / "spherical_16x1800.yaml")  # origins 0, no noise
LAD = 1.0  # the shipped vegetation material's leaf area density (m²/m³)
LEAF_RHO = 0.45  # and its leaves' near-infrared reflectance
K = PROJECTION["spherical"] * LAD  # G·LAD, 1/m
FRONT, WALL = 5.0, 12.0  # the crown's front face and the wall's face (x, m)


def crown_scene(thickness: float, wall: bool = True, crown: bool = True, threads: int = 2):
    """A slab crown (vegetation) from x = FRONT, `thickness` deep and 60 m square, before a concrete wall at x = WALL."""
    scene = Scene()
    if crown:
        slab = trimesh.creation.box([thickness, 60.0, 60.0])
        scene.add_entity("crown", TriMesh(slab.vertices, slab.faces), pose_to_matrix(FRONT + thickness / 2, 0, 0),
                         material="vegetation")
    if wall:
        box = trimesh.creation.box([0.2, 200.0, 200.0])
        scene.add_entity("wall", TriMesh(box.vertices, box.faces), pose_to_matrix(WALL + 0.1, 0, 0), material="concrete")
    return scene, make_backend("embree", scene, threads=threads)


def parallel_rays(n: int, seed: int = 0):
    """n rays along +x from x = 0 at random (y, z) in a 20 m square: every one crosses the slab square on."""
    yz = np.random.default_rng(seed).uniform(-10.0, 10.0, (n, 2))
    origins = np.column_stack([np.zeros(n), yz]).astype(np.float32)
    directions = np.tile(np.array([1.0, 0.0, 0.0], np.float32), (n, 1))
    return origins, directions


def traced(scene, backend, n: int, seed: int):
    origins, directions = parallel_rays(n)
    materials = LidarMaterials.from_library(scene.materials)
    return trace_lidar(backend, origins, directions, materials, 0.0, 100.0, unit_directions=True,
                       leaves=LeafDraws(np.random.default_rng(seed)))


# -- the turbid medium --------------------------------------------------------------------------------------
@pytest.mark.parametrize("thickness", [1.0, 3.0])
def test_the_fraction_of_rays_through_a_slab_crown_is_beer_lambert(thickness):
    """A ray crosses L metres of crown without a leaf with P = exp(−G·LAD·L) (binomial 4σ), and the rest meet a
    leaf inside the slab; none returns from the crown's face."""
    scene, backend = crown_scene(thickness)
    n = 20000
    hits = traced(scene, backend, n, seed=1)
    on_wall = np.abs(hits.range - WALL) < 1e-3
    in_crown = (hits.range >= FRONT) & (hits.range < FRONT + thickness)
    assert np.all(on_wall | in_crown)
    p = float(gap_probability(thickness, K))
    assert p == pytest.approx(np.exp(-0.5 * thickness))
    assert abs(on_wall.mean() - p) < 4 * np.sqrt(p * (1 - p) / n)
    assert np.all(hits.entity[on_wall] == scene.find("wall")) and np.all(hits.entity[in_crown] == scene.find("crown"))
    assert np.all(hits.first_entity == scene.find("crown"))  # ground truth: the first surface met is the crown


def test_leaf_depths_in_the_crown_are_exponential():
    """Depth of the leaf met, given it lies in an L-deep slab: F(x) = (1 − e^{−kx})/(1 − e^{−kL}), k = G·LAD
    (Kolmogorov–Smirnov); the same sample rejects a rate 30 % off, so the test can fail."""
    thickness = 4.0
    scene, backend = crown_scene(thickness, wall=False)
    hits = traced(scene, backend, 6000, seed=2)
    depth = hits.range[np.isfinite(hits.range)].astype(np.float64) - FRONT
    assert len(depth) > 4000

    def cdf(rate):
        return lambda x: (1 - np.exp(-rate * x)) / (1 - np.exp(-rate * thickness))

    assert stats.kstest(depth, cdf(K)).pvalue > 1e-3
    assert stats.kstest(depth, cdf(1.3 * K)).pvalue < 1e-3
    assert np.isinf(hits.range).mean() == pytest.approx(np.exp(-K * thickness), abs=0.03)  # no wall: misses


def test_leaves_met_follow_the_spherical_leaf_angle_law():
    """The leaf a ray meets has incidence cosine μ of density 2μ (spherical leaves weighted by their projected
    area: K–S against F = μ²; mean 2/3), returns ρ_L·μ, and its normal is a unit vector facing the ray at μ."""
    scene, backend = crown_scene(3.0, wall=False)
    hits = traced(scene, backend, 6000, seed=3)
    leaf = np.isfinite(hits.range)
    mu = hits.cos_incidence[leaf].astype(np.float64)
    assert stats.kstest(mu, lambda m: np.clip(m, 0, 1) ** 2).pvalue > 1e-3
    assert stats.kstest(mu, lambda m: np.clip(m, 0, 1)).pvalue < 1e-3  # a uniform μ (every leaf alike) is rejected
    np.testing.assert_allclose(hits.reflectivity[leaf], LEAF_RHO * mu, rtol=1e-5)
    normal = hits.normal[leaf].astype(np.float64)
    np.testing.assert_allclose(np.linalg.norm(normal, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(-normal[:, 0], mu, atol=1e-5)  # rays along +x: n·d = −μ


def test_near_sub_rays_share_a_leaf_as_the_leaf_size_says():
    """Sub-rays s apart take the beam axis's leaf with c(s) = exp(−s/l): at s = l, 1/e of them (binomial 4σ), so
    a beam narrower than a leaf meets it whole; the marginal draws stay uniform."""
    n, radius, leaf = 20000, 0.01, 0.07  # 10 mrad sub-ray offset; at R = 7 m it lies 7 cm (= l) off the axis
    draws = LeafDraws(np.random.default_rng(4), (0.0, radius))
    rays = np.arange(2 * n)
    u = draws.uniforms(rays, np.full(2 * n, 7.0), np.full(2 * n, leaf))
    axis, off = u[0::2], u[1::2]
    same = np.all(axis == off, axis=1)
    c = float(shared_probability(7.0 * radius, leaf))
    assert c == pytest.approx(np.exp(-1.0))
    assert abs(same.mean() - c) < 4 * np.sqrt(c * (1 - c) / n)
    assert stats.kstest(off[:, 0], "uniform").pvalue > 1e-3


# -- the sensor: echoes behind a crown -------------------------------------------------------------------------
def crown_beams(scan):
    """Beams whose axis crosses the crown slab head on enough (dx > 0.9) and so reaches the wall."""
    dx = np.cos(scan.elevation_rad) * np.cos(scan.azimuth_rad)
    return dx > 0.9, dx


def second_echo_fraction(divergence_mrad: float, backend, scene, seed: int = 5) -> tuple[float, int, object]:
    cfg = load_sensor(SPHERICAL, {"foliage.volume": True, "beam.divergence_mrad": divergence_mrad,
                                  "beam.sub_rays": 8, "beam.return_mode": "dual", "beam.echo_separation_m": 0.5})
    scan = LidarSimulator(cfg, scene, backend, seed=seed).simulate(np.eye(4))
    beams, _ = crown_beams(scan)
    return float(np.mean(scan.second.hit[beams])), int(beams.sum()), scan


def test_a_crown_before_a_wall_gives_second_echoes_on_the_wall_that_grow_with_the_divergence():
    """A 2 m crown before a wall, dual mode (strongest + last): a beam's sub-rays meet leaves at several depths or
    pass to the wall, so beams report a leaf and the wall behind it (or two leaves); the wider the beam
    (footprint against the 7 cm leaves), the more beams split. A thin beam (no divergence) never does."""
    scene, backend = crown_scene(2.0)
    fractions = {}
    for divergence in (0.0, 2.0, 10.0, 40.0):
        fractions[divergence], n, scan = second_echo_fraction(divergence, backend, scene)
        beams, dx = crown_beams(scan)
        two = beams & scan.second.hit
        first, second = scan.range[two] * dx[two], scan.second.range[two] * dx[two]
        tol = 0.2  # m: ranges along the beam's axis of sub-rays up to 20 mrad off it
        on_wall = np.abs(second - WALL) < tol
        leaf_first = (first > FRONT - tol) & (first < FRONT + 2.0 + tol)
        if divergence == 0.0:
            assert not two.any()
            continue
        assert np.all((first > FRONT - tol) & (first < WALL + tol) & (second > FRONT - tol) & (second < WALL + tol))
        # a leaf and the wall behind it (else two leaves at two depths, or the wall strongest and a leaf)
        assert np.sum(on_wall & leaf_first) > 0.25 * two.sum()
        assert np.all(second[on_wall] > first[on_wall])
    assert fractions[0.0] == 0.0
    margin = lambda f: 4 * np.sqrt(max(f, 1e-3) / n)  # noqa: E731 (binomial, n beams)
    assert fractions[2.0] + margin(fractions[2.0]) < fractions[10.0]
    assert fractions[10.0] + margin(fractions[10.0]) < fractions[40.0]


# -- determinism and frames without foliage --------------------------------------------------------------------
def frame_bytes(scene, threads: int, seed: int, **overrides) -> bytes:
    backend = make_backend("embree", scene, threads=threads)
    cfg = load_sensor(SPHERICAL, {"beam.divergence_mrad": 5.0, "beam.sub_rays": 4, "beam.return_mode": "dual",
                                  "detection.edge_dropout": True, "surface.model": "blensor",
                                  "noise.sigma": 0.01, **overrides})
    scan = LidarSimulator(cfg, scene, backend, seed=seed).simulate(np.eye(4))
    backend.close()
    parts = [scan.range, scan.fields["reflectivity"], scan.second.range, scan.second.fields["reflectivity"],
             scan.normal_world, scan.entity]
    return b"".join(np.ascontiguousarray(p).tobytes() for p in parts)


def test_foliage_frames_are_seeded_and_the_same_on_one_and_two_threads():
    scene, _ = crown_scene(2.0)
    one = frame_bytes(scene, 1, 7, **{"foliage.volume": True})
    assert one == frame_bytes(scene, 2, 7, **{"foliage.volume": True}) == frame_bytes(scene, 1, 7, **{"foliage.volume": True})
    assert one != frame_bytes(scene, 1, 8, **{"foliage.volume": True})
    assert one != frame_bytes(scene, 1, 7)  # off: the crown is a surface again


def test_a_world_without_foliage_keeps_its_bytes_with_foliage_on():
    scene, _ = crown_scene(2.0, crown=False)
    assert frame_bytes(scene, 2, 3, **{"foliage.volume": True}) == frame_bytes(scene, 2, 3)


def test_with_foliage_off_a_crown_returns_from_its_face():
    scene, backend = crown_scene(2.0)
    scan = LidarSimulator(load_sensor(SPHERICAL), scene, backend, seed=1).simulate(np.eye(4))
    beams, dx = crown_beams(scan)
    np.testing.assert_allclose(scan.range[beams] * dx[beams], FRONT, atol=1e-3)


# -- configuration ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("lidar, words", [
    ({"class": "mirror", "leaf_area_density": 1.0}, "leaf_area_density: only allowed with class general"),
    ({"class": "general", "leaf_angles": "spherical"}, "leaf_angles: only allowed with leaf_area_density"),
    ({"class": "general", "leaf_area_density": -1.0}, "leaf_area_density"),
    ({"class": "general", "leaf_area_density": 1.0, "leaf_angles": "planophile"}, "spherical"),
    ({"class": "general", "leaf_area_density": 1.0, "leaf_size_m": 0.0}, "leaf_size_m"),
])
def test_bad_foliage_keys_name_the_key_and_the_allowed_values(lidar, words):
    material = Material("hedge", {}, lidar, "test")
    with pytest.raises(ConfigError, match=words):
        LidarMaterials.from_materials([material])


def test_the_shipped_vegetation_is_a_leaf_volume_of_the_cited_density():
    materials = LidarMaterials.from_library(MaterialLibrary.load())
    veg = materials.names.index("vegetation")
    assert materials.foliage_extinction[veg] == pytest.approx(extinction_per_m(LAD))
    assert materials.reflectivity[veg] == pytest.approx(LEAF_RHO)
    assert sum(materials.foliage_extinction > 0) == 1  # no other shipped material is foliage


def test_a_beams_normal_read_alone_has_the_bits_of_the_whole_frames_normals():
    """With crowns in view the frame's normals and entities are computed on access, with the rows the later
    rounds put in (leaves met, the wall behind): reading some rows alone (a beam's dominant sub-ray, as the sun's
    ambient light does) gives the bits of the same rows of the whole array, and every ray's entity is the one
    it returned from (the crown's for a leaf, the wall's, -1 for none)."""
    scene, backend = crown_scene(2.0)
    hits = traced(scene, backend, 4000, seed=5)
    rows = np.random.default_rng(1).integers(0, len(hits), 1500)
    alone = hits._lazy["normal"].at(rows)  # before the whole array exists
    np.testing.assert_array_equal(alone, hits.normal[rows])
    leaf, wall = hits.range < FRONT + 2.0, np.isfinite(hits.range) & (hits.range >= WALL - 1e-3)
    assert leaf.any() and wall.any()
    assert np.all(hits.entity[leaf] == scene.find("crown")) and np.all(hits.entity[wall] == scene.find("wall"))
    assert np.all(hits.entity[~np.isfinite(hits.range)] == -1)
    np.testing.assert_array_equal(hits.normal[wall], np.tile(np.float32([-1, 0, 0]), (int(wall.sum()), 1)))


def test_a_crown_frames_hits_are_freed_when_dropped_without_the_garbage_collector():
    """The lazy normals and entities of a frame with crowns (interaction._Patched) hold the first trace; dropping
    the frame's hits must free that trace by reference counting alone. A reference cycle kept it (and its Embree
    arrays) alive until the collector ran, and each next frame took fresh pages from the system."""
    import gc
    import weakref

    from lidar_ros.physics.interaction import first_trace

    scene, backend = crown_scene(2.0, threads=1)
    origins, directions = parallel_rays(2000)
    materials = LidarMaterials.from_library(scene.materials)
    enabled = gc.isenabled()
    gc.disable()
    try:
        first = first_trace(backend, origins, directions, 0.0, 100.0, checked_rays=True)
        watch = weakref.ref(first)
        hits = trace_lidar(backend, origins, directions, materials, 0.0, 100.0, unit_directions=True,
                           first_hits=first, leaves=LeafDraws(np.random.default_rng(0)))
        assert hits.normal.shape == (2000, 3) and np.any(hits.range < FRONT + 2.0)  # read; leaves were met
        del first, hits
        assert watch() is None
    finally:
        if enabled:
            gc.enable()


def mixed_scene():
    """Crowns, glass panes, a mirror, water and walls around the origin: rays that cross panes and crowns (in and
    out, two crowns in a row), bounce off the mirror into a crown, end in water or run past tmax."""
    scene = Scene()

    def box(name, size, at, material):
        mesh = trimesh.creation.box(size)
        scene.add_entity(name, TriMesh(mesh.vertices, mesh.faces), pose_to_matrix(*at, 0, 0, 0), material=material)

    box("crown_a", [3.0, 8.0, 8.0], (6.0, 0.0, 0.0), "vegetation")
    box("crown_b", [2.0, 8.0, 8.0], (10.0, 0.0, 0.0), "vegetation")
    box("pane", [0.02, 8.0, 8.0], (3.0, 0.0, 0.0), "glass")
    box("pane_behind", [0.02, 8.0, 8.0], (12.0, 0.0, 0.0), "glass")
    box("wall", [0.2, 40.0, 40.0], (25.0, 0.0, 0.0), "concrete")  # beyond tmax for most rays
    box("mirror", [8.0, 0.05, 8.0], (0.0, 6.0, 0.0), "mirror")
    box("crown_c", [8.0, 3.0, 8.0], (0.0, -7.0, 0.0), "vegetation")
    box("mirror_behind", [8.0, 0.05, 8.0], (0.0, -10.0, 0.0), "mirror")  # back into crown_c
    box("pond", [8.0, 8.0, 0.05], (-6.0, 0.0, -3.0), "water")
    return scene, make_backend("embree", scene, threads=1)


def test_the_compiled_follow_loop_gives_the_numpy_loops_bits(monkeypatch):
    """_follow's and _meet_leaves' compiled bookkeeping against their numpy references, on every output of a batch that
    crosses panes and crowns, meets mirrors and water and is cut at a float tmax (a float32 comparison in numpy)."""
    from lidar_ros.physics import interaction

    scene, backend = mixed_scene()
    rng = np.random.default_rng(11)
    n = 6000
    directions = rng.normal(size=(n, 3))
    directions[:, 2] *= 0.3
    directions = (directions / np.linalg.norm(directions, axis=1)[:, None]).astype(np.float32)
    origins = rng.uniform(-0.5, 0.5, (n, 3)).astype(np.float32)
    origins[::7, 1] = -0.0  # a -0.0 coordinate stays -0.0 or turns +0.0 as numpy's straight step makes it
    materials = LidarMaterials.from_library(scene.materials)

    def run():
        hits = trace_lidar(backend, origins, directions, materials, 0.0, 21.7, max_bounces=1, unit_directions=True,
                           leaves=LeafDraws(np.random.default_rng(3), (0.0, 0.002)))
        return {name: np.asarray(getattr(hits, name)) for name in
                ("range", "entity", "material", "normal", "cos_incidence", "reflectivity", "bounces", "crossings",
                 "first_entity", "first_material", "first_range")}

    compiled = run()
    monkeypatch.setattr(interaction, "_follow", interaction._follow_numpy)
    monkeypatch.setattr(interaction, "_meet_leaves", interaction._meet_leaves_numpy)
    reference = run()
    assert np.count_nonzero(compiled["bounces"]) > 100 and np.count_nonzero(compiled["crossings"]) > 100
    assert np.count_nonzero(compiled["material"] == scene.materials.id_of("vegetation")) > 100  # leaves met
    assert np.any(compiled["bounces"] > 1) and np.any(np.isinf(compiled["range"]))  # out of bounces; past tmax
    for name in compiled:
        assert compiled[name].dtype == reference[name].dtype, name
        assert compiled[name].tobytes() == reference[name].tobytes(), name


@pytest.mark.parametrize("tmax, first_within", [(21.7, True), (np.float64(21.7), False), (21, False), (np.inf, True)])
def test_the_next_rounds_hits_within_tmax_compare_as_numpy_does(tmax, first_within):
    """total <= tmax of float32 totals: in float32 against a Python number, in float64 against a numpy float64 (a
    total of float32(21.7) = 21.7000008 is within 21.7 and not within np.float64(21.7)); classes as class_of."""
    from lidar_ros.physics import interaction

    materials = LidarMaterials.from_library(MaterialLibrary.load())
    travelled = np.array([0.0, 10.0, 20.0, 21.0, 0.0, 1.0], np.float32)
    distance = np.array([np.float32(21.7), np.float32(11.7), np.float32(1.7), 0.0, np.inf, 2.0], np.float32)
    entity = np.array([0, 1, 2, 3, -1, 4], np.int32)
    material = np.array([0, 1, 2, 3, -1, len(materials) - 1], np.int32)
    total, hit, klass = np.empty(6, np.float32), np.empty(6, bool), np.empty(6, np.int8)
    ok = interaction._next_round(travelled, distance, entity, material, interaction._as_numpy_compares(tmax),
                                 materials._cls_ext, total, hit, klass)
    assert ok
    assert total.tobytes() == (travelled + distance).tobytes()
    assert hit.tolist() == ((entity >= 0) & (travelled + distance <= tmax)).tolist()
    assert hit[0] == first_within  # a total of float32(21.7)
    assert klass.tolist() == materials.class_of(material).tolist()
    bad = material.copy()
    bad[2] = len(materials) + 1  # past the extended table, where class_of raises
    assert not interaction._next_round(travelled, distance, entity, bad, np.float32(1.0), materials._cls_ext, total,
                                       hit, klass)


def test_leaf_normals_have_the_bits_of_the_numpy_formula():
    """leaf_normals (compiled after numpy's cos and sin) against the formula in numpy written out here, float64 then
    float32, on random rays and the basis' edge cases (z = ±0, straight up and down, μ near 1)."""
    from lidar_ros.physics.leaf_angles import leaf_cosines, leaf_normals

    rng = np.random.default_rng(4)
    n = 20000
    d = rng.normal(size=(n, 3))
    d = (d / np.linalg.norm(d, axis=1)[:, None]).astype(np.float32)
    d[:100, 2], d[100:200, 2], d[200:210], d[210:220] = 0.0, -0.0, (0, 0, -1), (0, 0, 1)
    u = rng.random((n, 2))
    u[:50, 0] = 1.0 - 1e-12
    mu = leaf_cosines(u[:, 0])

    x, y, z = (d.astype(np.float64)[:, k] for k in range(3))
    sign = np.where(z >= 0.0, 1.0, -1.0)
    a = -1.0 / (sign + z)
    b = x * y * a
    e1 = np.stack([1.0 + sign * x * x * a, sign * b, -sign * x], axis=1)
    e2 = np.stack([b, sign + y * y * a, -y], axis=1)
    m = mu.astype(np.float64)[:, None]
    phi = 2.0 * np.pi * u[:, 1]
    side = np.sqrt(np.maximum(1.0 - m * m, 0.0))
    expected = (-m * d.astype(np.float64) + side * (np.cos(phi)[:, None] * e1 + np.sin(phi)[:, None] * e2)).astype(
        np.float32)
    assert leaf_normals(d, mu, u[:, 1]).tobytes() == expected.tobytes()


@pytest.mark.parametrize("order", ["increasing", "shuffled"])
def test_shared_leaf_draws_have_the_values_and_draw_order_of_numpy(order):
    """LeafDraws.uniforms (compiled bookkeeping) against uniforms_numpy from the same seed: the same uniforms and the
    generator left in the same state, for increasing rays (a frame's) and shuffled ones (np.unique's fallback)."""
    rng = np.random.default_rng(8)
    rays = np.sort(rng.choice(4 * 3000, 2000, replace=False))
    if order == "shuffled":
        rays = rng.permutation(rays)
    range_m = rng.uniform(1.0, 60.0, len(rays)).astype(np.float32)
    leaf = np.full(len(rays), 0.07)
    radius = (0.0, 0.0011, 0.0017, 0.0023)
    compiled, reference = LeafDraws(np.random.default_rng(9), radius), LeafDraws(np.random.default_rng(9), radius)
    got, want = compiled.uniforms(rays, range_m, leaf), reference.uniforms_numpy(rays, range_m, leaf)
    assert got.tobytes() == want.tobytes()
    assert compiled.rng.random() == reference.rng.random()
    distinct = len(np.unique(got, axis=0))
    assert len(np.unique(rays // 4)) < distinct < len(rays)  # some sub-rays took their beam's draws, some their own
