"""Lidar surface interaction against analytic answers, traced with the real Embree backend.

Scenes are single quads (two triangles) placed where the answer is easy to work out by hand.
"""
import numpy as np
import pytest

from lidar_ros.physics import LidarMaterials, NoiseConfig, SurfaceConfig, SurfaceModel, trace_lidar
from lidar_ros.physics.reflectivity import table_reflectivity
from radarays_ros.errors import ConfigError
from radarays_ros.tracing import make_backend
from radarays_ros.world.materials import MaterialLibrary
from radarays_ros.world.mesh import TriMesh
from radarays_ros.world.scene import Scene

TABLE = [0.50, 0.48, 0.45, 0.40, 0.33, 0.25, 0.17, 0.10, 0.05]
LIBRARY = {
    "materials": {
        "grey": {"lidar": {"class": "general", "reflectivity": 0.4}},
        "dark": {"lidar": {"class": "general", "reflectivity": 0.05}},
        "bright": {"lidar": {"class": "general", "reflectivity": 0.9}},
        "tabled": {"lidar": {"class": "general", "angle_table": TABLE}},
        "glass": {"lidar": {"class": "transparent", "transmittance": 0.9}},
        "water": {"lidar": {"class": "absorbent"}},
        "sign": {"lidar": {"class": "retroreflective", "reflectivity": 50.0}},
        "sheeting": {"lidar": {"class": "retroreflective", "reflectivity": 0.8, "gain": 100.0}},
        "mirror": {"lidar": {"class": "mirror", "specular": 0.8}},
    },
    "default": "grey",
}


def quad(center, normal, size=20.0) -> TriMesh:
    """A square of side `size` centred at `center`, facing `normal`."""
    n = np.asarray(normal, float) / np.linalg.norm(normal)
    helper = np.array([0.0, 0.0, 1.0]) if abs(n[2]) < 0.9 else np.array([1.0, 0.0, 0.0])
    u = np.cross(n, helper)
    u /= np.linalg.norm(u)
    v = np.cross(n, u)
    h = size / 2
    c = np.asarray(center, float)
    corners = [c - h * u - h * v, c + h * u - h * v, c + h * u + h * v, c - h * u + h * v]
    return TriMesh(np.array(corners), np.array([[0, 1, 2], [0, 2, 3]]))


def world(*planes):
    """Scene + backend + LidarMaterials from (name, center, normal, material[, size]) tuples."""
    scene = Scene(MaterialLibrary.from_dict(LIBRARY, origin="test.yaml"))
    for name, center, normal, material, *size in planes:
        scene.add_entity(name, quad(center, normal, *size), material=material)
    return scene, make_backend("embree", scene, threads=1), LidarMaterials.from_library(scene.materials)


def rays_x(n=1, y=0.0):
    origins = np.zeros((n, 3))
    origins[:, 1] = y
    return origins, np.tile([1.0, 0.0, 0.0], (n, 1))


# -- Lambert's law and angle tables ----------------------------------------------------------------
@pytest.mark.parametrize("theta_deg", [0.0, 15.0, 30.0, 45.0, 60.0, 75.0])
def test_tilted_plane_follows_lamberts_cosine_law(theta_deg):
    t = np.radians(theta_deg)
    _, backend, mats = world(("plane", [10, 0, 0], [-np.cos(t), np.sin(t), 0], "grey"))
    hits = trace_lidar(backend, *rays_x(), mats)
    assert hits.hit[0] and hits.range[0] == pytest.approx(10.0, abs=1e-4)
    assert hits.cos_incidence[0] == pytest.approx(np.cos(t), abs=1e-6)
    assert hits.reflectivity[0] == pytest.approx(0.4 * np.cos(t), rel=1e-5)


@pytest.mark.parametrize("theta_deg, expected", [
    (0.0, 0.50), (10.0, 0.48), (25.0, (0.45 + 0.40) / 2), (42.0, 0.33 + 0.2 * (0.25 - 0.33)),
    (80.0, 0.05), (85.0, 0.025), (89.0, 0.005),  # past 80° the last bin falls linearly to 0 at 90°
])
def test_angle_table_is_interpolated_at_the_traced_incidence(theta_deg, expected):
    t = np.radians(theta_deg)
    _, backend, mats = world(("plane", [10, 0, 0], [-np.cos(t), np.sin(t), 0], "tabled", 400.0))
    hits = trace_lidar(backend, *rays_x(), mats)
    assert hits.reflectivity[0] == pytest.approx(expected, abs=2e-5)


def test_table_interpolation_function_hits_every_bin():
    table = np.array([TABLE + [0.0]] * 10, np.float32)
    angles = np.arange(0.0, 91.0, 10.0)
    np.testing.assert_allclose(table_reflectivity(table, angles), TABLE + [0.0], atol=1e-7)


# -- material classes ---------------------------------------------------------------------------------
def test_transparent_pane_shows_the_wall_behind_at_its_own_distance():
    _, backend, mats = world(("pane", [4, 0, 0], [-1, 0, 0], "glass"), ("wall", [9, 0, 0], [-1, 0, 0], "grey"))
    origins, dirs = rays_x(3, y=0.0)
    dirs[1] = [1.0, 0.3, 0.0]
    hits = trace_lidar(backend, origins, dirs, mats)
    assert np.all(hits.hit)
    assert hits.entity.tolist() == [1, 1, 1] and hits.first_entity.tolist() == [0, 0, 0]
    assert hits.range[0] == pytest.approx(9.0, abs=1e-4)
    assert hits.range[1] == pytest.approx(9.0 * np.hypot(1.0, 0.3), abs=1e-4)
    assert hits.crossings[0] == 1 and hits.first_range[0] == pytest.approx(4.0, abs=1e-4)
    # two-way transmission through one surface: t² = 0.81
    assert hits.reflectivity[0] == pytest.approx(0.4 * 0.81, rel=1e-5)


def test_absorbent_surface_gives_no_point_and_hides_what_is_behind():
    _, backend, mats = world(("water", [4, 0, 0], [-1, 0, 0], "water"), ("wall", [9, 0, 0], [-1, 0, 0], "grey"))
    hits = trace_lidar(backend, *rays_x(), mats)
    assert not hits.hit[0] and np.isinf(hits.range[0]) and hits.first_entity[0] == 0
    returns = SurfaceModel().apply(hits, None, np.random.default_rng(0))
    assert not returns.hit[0] and np.isnan(returns.range[0])


def test_retroreflector_has_the_highest_intensity_and_saturates():
    _, backend, mats = world(("sign", [5, 2, 0], [-1, 0, 0], "sign", 2.0), ("wall", [5, -2, 0], [-1, 0, 0], "bright", 2.0))
    origins, _ = rays_x(2)
    dirs = np.array([[5.0, 2.0, 0.0], [5.0, -2.0, 0.0]])
    hits = trace_lidar(backend, origins, dirs, mats)
    returns = SurfaceModel(SurfaceConfig(model="root2")).apply(hits, None, np.random.default_rng(0))
    assert returns.hit.all()
    assert returns.intensity[0] > 10 * returns.intensity[1]
    assert returns.velodyne_intensity[0] > 100 >= returns.velodyne_intensity[1]  # retroreflector scale 101..255
    assert returns.ouster_reflectivity[0] > returns.ouster_reflectivity[1]
    assert returns.ouster_signal[0] == 65535 > returns.ouster_signal[1]  # saturates at close range


@pytest.mark.parametrize("theta_deg", [0.0, 30.0, 60.0])
def test_retroreflective_gain_scales_the_sheeting_and_ignores_incidence(theta_deg):
    t = np.radians(theta_deg)
    _, backend, mats = world(("sign", [10, 0, 0], [-np.cos(t), np.sin(t), 0], "sheeting"))
    hits = trace_lidar(backend, *rays_x(), mats)
    assert hits.reflectivity[0] == pytest.approx(80.0, rel=1e-6)


def test_mirror_at_45_degrees_puts_the_point_on_the_virtual_image():
    # mirror through (5, 0, 0) turning +x into +y; a wall at y = 3 behind the turn
    _, backend, mats = world(("mirror", [5, 0, 0], [-1, 1, 0], "mirror", 4.0), ("wall", [5, 3, 0], [0, -1, 0], "grey"))
    hits = trace_lidar(backend, *rays_x(), mats)
    assert hits.hit[0] and hits.entity[0] == 1 and hits.first_entity[0] == 0 and hits.bounces[0] == 1
    assert hits.range[0] == pytest.approx(5.0 + 3.0, abs=1e-3)  # on the original ray: (8, 0, 0)
    np.testing.assert_allclose(hits.normal[0], [0, -1, 0], atol=1e-6)
    assert hits.cos_incidence[0] == pytest.approx(1.0, abs=1e-6)
    assert hits.reflectivity[0] == pytest.approx(0.4 * 0.8**2, rel=1e-5)


def test_mirror_rays_beyond_max_bounces_or_tmax_are_misses():
    mirrors = (("m1", [5, 0, 0], [-1, 0, 0], "mirror"), ("m2", [-5, 0, 0], [1, 0, 0], "mirror"))
    _, backend, mats = world(*mirrors)
    hits = trace_lidar(backend, *rays_x(), mats, max_bounces=6)  # a corridor of mirrors: never returns
    assert not hits.hit[0] and np.isinf(hits.range[0]) and hits.bounces[0] == 7
    _, backend, mats = world(("mirror", [5, 0, 0], [-1, 1, 0], "mirror", 4.0), ("wall", [5, 3, 0], [0, -1, 0], "grey"))
    assert not trace_lidar(backend, *rays_x(), mats, max_bounces=0).hit[0]
    assert not trace_lidar(backend, *rays_x(), mats, tmax=7.5).hit[0]  # 5 + 3 m path > 7.5 m
    assert trace_lidar(backend, *rays_x(), mats, tmax=8.5).hit[0]


def test_tmin_and_tmax_bound_the_first_surface():
    _, backend, mats = world(("near", [2, 0, 0], [-1, 0, 0], "grey", 2.0), ("far", [6, 0, 0], [-1, 0, 0], "grey"))
    assert trace_lidar(backend, *rays_x(), mats).range[0] == pytest.approx(2.0, abs=1e-5)
    assert trace_lidar(backend, *rays_x(), mats, tmin=3.0).range[0] == pytest.approx(6.0, abs=1e-5)
    assert not trace_lidar(backend, *rays_x(), mats, tmax=1.5).hit[0]


def test_input_rays_are_not_modified():
    _, backend, mats = world(("pane", [4, 0, 0], [-1, 0, 0], "glass"), ("wall", [9, 0, 0], [-1, 0, 0], "grey"))
    origins, dirs = rays_x(2)
    before = origins.copy(), dirs.copy()
    trace_lidar(backend, origins, dirs, mats)
    np.testing.assert_array_equal(origins, before[0])
    np.testing.assert_array_equal(dirs, before[1])


def test_hit_on_a_material_without_lidar_entry_is_an_error():
    scene, backend, mats = world(("wall", [9, 0, 0], [-1, 0, 0], "sign"))
    fewer = LidarMaterials.from_materials(scene.materials.materials[:2])
    with pytest.raises(ConfigError, match="material id"):
        trace_lidar(backend, *rays_x(), fewer)


# -- detection limit, per ray -------------------------------------------------------------------------
def test_dark_far_wall_is_partly_visible_and_exactly_where_the_limit_says():
    limits = ((0.10, 50.0), (0.80, 120.0))
    surface = SurfaceConfig(model="root2", limits=limits)
    model = SurfaceModel(surface)
    angles = np.radians(np.linspace(-70, 70, 281))
    dirs = np.stack([np.cos(angles), np.sin(angles), np.zeros_like(angles)], axis=1)
    fractions = {}
    for material in ("dark", "grey"):
        _, backend, mats = world(("wall", [30, 0, 0], [-1, 0, 0], material, 1000.0))
        hits = trace_lidar(backend, np.zeros_like(dirs), dirs, mats)
        assert hits.hit.all()
        returns = model.apply(hits, None, np.random.default_rng(0))
        rho = mats.reflectivity[hits.material[0]] * np.cos(angles)  # Lambert, incidence = ray angle
        expected = 30.0 / np.cos(angles) <= model.limit.max_range(rho)
        assert np.array_equal(returns.hit, expected)
        fractions[material] = returns.hit.mean()
        if material == "dark":  # a 5 % wall at 30 m: only the square-on part is seen
            assert 0.0 < fractions[material] < 1.0
    assert fractions["grey"] > fractions["dark"]


def test_retroreflector_survives_a_range_where_diffuse_targets_vanish():
    _, backend, mats = world(("sign", [150, 0, 0], [-1, 0, 0], "sign"))
    hits = trace_lidar(backend, *rays_x(), mats)
    assert SurfaceModel(SurfaceConfig(model="blensor")).apply(hits, None, np.random.default_rng(0)).hit[0]
    _, backend, mats = world(("wall", [150, 0, 0], [-1, 0, 0], "bright"))
    hits = trace_lidar(backend, *rays_x(), mats)
    assert not SurfaceModel(SurfaceConfig(model="blensor")).apply(hits, None, np.random.default_rng(0)).hit[0]


# -- material parsing errors -----------------------------------------------------------------------------
@pytest.mark.parametrize("lidar, key, allowed", [
    ({"class": "glassy"}, "class", "general, transparent, absorbent, retroreflective, mirror"),
    ({"reflectivity": -0.1}, "reflectivity", "[0, 10]"),
    ({"reflectivity": "high"}, "reflectivity", "a number"),
    ({"angle_table": [0.5] * 8}, "angle_table", "9 reflectivities"),
    ({"angle_table": [0.5] * 8 + [float("nan")]}, "angle_table[8]", "[0, 10]"),
    ({"model": "phong"}, "model", "lambertian, table, constant"),
    ({"model": "table"}, "model", "needs angle_table"),
    ({"reflectivity": 0.3, "angle_table": TABLE}, "reflectivity", "angle_table[0]"),
    ({"class": "general", "transmittance": 0.5}, "transmittance", "class transparent"),
    ({"class": "mirror", "specular": 1.5}, "specular", "[0, 1]"),
    ({"class": "general", "gain": 10}, "gain", "class retroreflective"),
    ({"class": "retroreflective", "gain": 0.5}, "gain", "[1, 10000]"),
    ({"colour": "red"}, "colour", "allowed one of class, reflectivity"),
])
def test_bad_lidar_material_is_rejected_with_file_material_key_and_allowed_values(lidar, key, allowed):
    lib = MaterialLibrary.from_dict({"materials": {"paint": {"lidar": lidar}}}, origin="world/mats.yaml")
    with pytest.raises(ConfigError) as err:
        LidarMaterials.from_library(lib)
    message = str(err.value)
    assert "world/mats.yaml: materials.paint.lidar" in message and key in message and allowed in message


def test_shipped_library_parses_with_every_class():
    mats = LidarMaterials.from_library(MaterialLibrary.load())
    assert set(mats.material_class.tolist()) == {0, 1, 2, 3, 4}
    assert len(mats) == len(MaterialLibrary.load())


def test_mixed_batch_matches_rays_traced_alone():
    # rays 0/1 cross the pane (second round), ray 2 hits the wall only, ray 3 misses, ray 4 hits water behind glass
    planes = (("pane", [4, 0, 0], [-1, 0, 0], "glass", 4.0), ("wall", [9, 0, 0], [-1, 0, 0], "grey", 40.0),
              ("water", [6, 0, -6], [-1, 0, 0], "water", 2.0), ("pane2", [3, 0, -4], [-1, 0, 0], "glass", 4.0))
    _, backend, mats = world(*planes)
    origins = np.zeros((5, 3))
    dirs = np.array([[1, 0, 0], [1, 0.1, 0], [1, 0.9, 0], [-1, 0, 0], [1, 0, -1]], float)
    together = trace_lidar(backend, origins, dirs, mats)
    for i in range(5):
        alone = trace_lidar(backend, origins[i:i + 1], dirs[i:i + 1], mats)
        for field in ("range", "entity", "material", "reflectivity", "cos_incidence", "crossings", "first_entity"):
            np.testing.assert_array_equal(getattr(together, field)[i:i + 1], getattr(alone, field))
    assert together.hit.tolist() == [True, True, True, False, False]
    assert together.first_entity[4] == 3 and together.crossings.tolist()[:3] == [1, 1, 0]


def test_lazy_fields_do_not_depend_on_access_order():
    _, backend, mats = world(("wall", [9, 0, 0], [-1, 0, 0], "grey"))
    dirs = np.random.default_rng(0).normal(size=(500, 3))
    hits = trace_lidar(backend, np.zeros_like(dirs), dirs, mats)
    model = SurfaceModel(noise=NoiseConfig(sigma=0.01))
    a = model.apply(hits, None, np.random.default_rng(1))
    b = model.apply(hits, None, np.random.default_rng(1))
    ambient_first = a.ouster_ambient
    _ = b.ouster_signal, b.velodyne_intensity, b.normal
    np.testing.assert_array_equal(ambient_first, b.ouster_ambient)
    np.testing.assert_array_equal(a.range, b.range)
    assert a.hit.any() and not a.hit.all() and np.all(a.entity[~a.hit] == -1) and np.all(a.normal[~a.hit] == 0)


@pytest.mark.parametrize("volumes", [False, True])
def test_the_first_rounds_one_pass_gives_the_gathers_values(volumes):
    """materials.first_round (one compiled pass) against the per-table gathers it replaces, on every id of the
    shipped library (glass, mirror, absorbent, vegetation included) and misses (-1)."""
    from lidar_ros.physics.materials import ABSORBENT, MIRROR, TRANSPARENT

    mats = LidarMaterials.from_library(MaterialLibrary.load())
    classes = set(mats.material_class.tolist())
    assert {TRANSPARENT, MIRROR, ABSORBENT} <= classes and mats.has_foliage  # the test covers every branch
    ids = np.random.default_rng(3).integers(-1, len(mats), 5000).astype(np.int32)
    count, not_first, continuing, klass = mats.first_round(ids, volumes)
    crown = (mats.extinction_of(ids) > 0) & volumes
    expected_klass = mats.class_of(ids)
    assert np.array_equal(klass, expected_klass)
    assert np.array_equal(not_first, mats.not_returning(ids) | crown)
    assert np.array_equal(continuing, (expected_klass == TRANSPARENT) | (expected_klass == MIRROR) | crown)
    assert count == np.count_nonzero(not_first) and 0 < count < len(ids)
    with pytest.raises(ConfigError, match="material id"):
        mats.first_round(np.array([0, len(mats) + 1], np.int32), volumes)  # past the extended miss row, as gather


def test_rays_made_misses_in_one_pass_read_as_np_where():
    from lidar_ros.physics.interaction import _as_misses

    rng = np.random.default_rng(4)
    no_return = rng.random(1000) < 0.3
    distance = rng.uniform(0, 50, 1000).astype(np.float32)
    material = rng.integers(-1, 5, 1000).astype(np.int32)
    cos_inc = rng.random(1000).astype(np.float32)
    got = _as_misses(no_return, distance, material, cos_inc)
    expected = (np.where(no_return, np.float32(np.inf), distance), np.where(no_return, np.int32(-1), material),
                np.where(no_return, np.float32(0.0), cos_inc))
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype and np.array_equal(g, e)
