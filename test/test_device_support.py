"""Device support declared per config field, failing closed (radarays_ros/device_support.py; the
declarations: radar/warp_frame.py and lidar_ros/warp_frame.py DEVICE_SUPPORT).

Every field of RadarConfig and LidarConfig (nested sections walked by introspection) is declared; each
field the device does not implement is refused with a ConfigError naming it; each field it does is
exercised on both paths here (host frames on the same Warp backend, so the same first hits), compared
per output with stated bounds, not correlations:

* radar energy (before normalisation) per pixel: |device - host| <= 1e-4 |host| + 1e-6 max(host)
  (float32 atomics on the device against float64 sums on the host; measured: < 1e-4 relative on every
  pixel of the office world), the output image the same bound in output units;
* lidar: identical hit masks, materials and entities; clean ranges and points within 32 float32 ULP
  (the world ray is rotated in another float32 order; measured <= 14 ULP), reflectivity within 4 ULP,
  calibrated reflectivity and Ouster signal within 1 count (a rint at .5 may round either way);
* range noise, dust, dropouts and angular jitter: the same counter draws on both paths (radarays_ros/counter_random.py),
  so the same bounds as noise-free frames; the flat ambient's shot noise too (AMBIENT_WORD): the same near_ir bytes.
"""
import dataclasses
from pathlib import Path

import numpy as np
import pytest
import trimesh

from support.warp import require_warp

require_warp()

from lidar_ros import LidarSimulator, load_sensor  # noqa: E402
from lidar_ros.config import LidarConfig  # noqa: E402
from lidar_ros.warp_frame import DEVICE_SUPPORT as LIDAR_SUPPORT  # noqa: E402
from lidar_ros.warp_frame import WarpLidarSimulator, device_refusals  # noqa: E402
from radarays_ros.device_support import HOST, Support, field_keys, refuse, refusals, values  # noqa: E402
from radarays_ros.errors import ConfigError  # noqa: E402
from radarays_ros.radar.config import RadarConfig  # noqa: E402
from radarays_ros.radar.simulator import RadarSimulator  # noqa: E402
from radarays_ros.radar.warp_frame import DEVICE_SUPPORT as RADAR_SUPPORT  # noqa: E402
from radarays_ros.radar.warp_frame import WarpRadarSimulator  # noqa: E402
from radarays_ros.resources import shipped  # noqa: E402
from radarays_ros.sensors.units import LidarUnit, RadarUnit  # noqa: E402
from radarays_ros.tracing import make_backend  # noqa: E402
from radarays_ros.world.loader import load_world  # noqa: E402
from radarays_ros.world.mesh import TriMesh  # noqa: E402
from radarays_ros.world.scene import Scene  # noqa: E402
from radarays_ros.world.transforms import pose_to_matrix  # noqa: E402

RADAR_POSE = pose_to_matrix(4.0, 0.3, 1.0, 0, 0, 0.2)
LIDAR_POSE = pose_to_matrix(1.0, 0.5, 0.3, 0, 0, 0.4)


def on_device(declared) -> list[str]:
    return sorted(k for k, s in declared.items() if s.on_device)


def not_on_device(declared) -> list[str]:
    """Keys with values the device refuses: HOST fields and fields limited to some values."""
    return sorted(k for k, s in declared.items() if s.host or s.allowed is not None)


# -- the two divergences issue 26 found -------------------------------------------------------------
@pytest.fixture(scope="module")
def hall():
    scene = load_world("hall")
    return scene, make_backend("warp", scene, device="cpu")


def test_a_physical_radar_preset_refuses_device_frames(hall):
    """Before: RadarUnit(frames='device') with navtech_ras6 silently ran the RadaRays stage."""
    scene, backend = hall
    with pytest.raises(ConfigError, match=r"not available in device frames: .*sensor.model = 'physical'"):
        RadarUnit("r", scene, backend, config="navtech_ras6", frames="device")
    compat = RadarConfig.from_yaml(shipped("example", "radarays_compat"))
    physical = compat.with_overrides({"sensor.model": "physical"})
    with pytest.raises(ConfigError, match=r"^[^\n]*sensor.model = 'physical' \(device frames: only 'radarays'"):
        WarpRadarSimulator(physical, scene, backend)
    unit = RadarUnit("r", scene, backend, config=compat, frames="device")
    with pytest.raises(ConfigError, match="sensor.model = 'physical'"):  # a node's reconfigure too
        unit.reconfigure(physical)
    assert unit.config is compat


def test_b_tof_multipath_refuses_device_frames(hall):
    """Before: a ToF camera with tof.multipath read +119.5 mm mean bias on the host and 0 on the device."""
    scene, backend = hall
    with pytest.raises(ConfigError, match=r"tof.multipath = True \(device frames: host frames only\)"):
        LidarUnit("tof", scene, backend, config="ToF-camera-320x240", overrides={"tof": {"multipath": True}},
                  frames="device")
    LidarUnit("tof", scene, backend, config="ToF-camera-320x240", frames="device")  # without it: on the device


def test_snow_refuses_device_frames():
    """The hand-written host-only list checked fog and rain only: snow ran on the device without its extinction."""
    for snow in ({"snow_rate_mm_h": 2.0}, {"snow_visibility_km": 1.0}):
        assert any(r.startswith("weather.snow") for r in device_refusals(load_sensor("VLP-16", {"weather": snow})))


# -- every key declared; the declarations fail closed ---------------------------------------------
def test_every_config_key_is_declared():
    assert sorted(field_keys(RadarConfig)) == sorted(RADAR_SUPPORT)
    assert sorted(field_keys(LidarConfig)) == sorted(LIDAR_SUPPORT)


def test_an_undeclared_field_is_refused_once_set():
    @dataclasses.dataclass(frozen=True)
    class Inner:
        known: float = 1.0
        new: float = 0.0

    @dataclasses.dataclass(frozen=True)
    class Config:
        inner: Inner = Inner()
        flag: bool = False

    declared = {"inner.known": HOST, "flag": values(False, True)}
    assert refusals(Config(), declared) == []
    assert refusals(Config(Inner(new=2.0)), declared) == ["inner.new = 2.0 (not declared for device frames)"]
    assert refusals(Config(Inner(known=3.0), True), declared) == ["inner.known = 3.0 (device frames: host frames only)"]
    read = {**declared, "inner.new": HOST.unless_read(lambda c: c.flag)}
    assert refusals(Config(Inner(new=2.0)), read) == []
    assert refusals(Config(Inner(new=2.0), True), read) == ["inner.new = 2.0 (device frames: host frames only)"]
    with pytest.raises(ConfigError, match=r"^where: not available in device frames: inner.new = 2.0 [^\n]*$"):
        refuse(Config(Inner(new=2.0)), declared, "where")
    assert Support().on_device and not HOST.on_device


# a value each refused radar key takes, with what makes it read (the keys of a section the physical
# stage reads are set with sensor.model physical, which is refused too)
PHYSICAL = {"sensor.model": "physical", "range.resolution": 0.04}
RADAR_REFUSED = {
    "returns.keep": {"returns.keep": True},
    "noise.ambient": {"noise.ambient": "perlin"},
    "noise.perlin_scale_low": {"noise.ambient": "perlin", "noise.perlin_scale_low": 0.1},
    "noise.perlin_scale_high": {"noise.ambient": "perlin", "noise.perlin_scale_high": 0.3},
    "noise.perlin_p_low": {"noise.ambient": "perlin", "noise.perlin_p_low": 0.5},
    "noise.perlin_coherent": {"noise.ambient": "perlin", "noise.perlin_coherent": True},
    "sensor.model": PHYSICAL,
    "interference.preset": {**PHYSICAL, "interference.preset": "navtech_cts350x"},  # a radar config, not any string
    "interference.entity": {**PHYSICAL, "interference.preset": "navtech_cts350x", "interference.entity": "car"},
    "interference.on_sensor": {**PHYSICAL, "interference.preset": "navtech_cts350x", "interference.on_sensor": True},
    "interference.others": {**PHYSICAL, "interference.others": str(Path(__file__).parent / "data/radar/two_interferers.yaml")},
}


def _physical_value(key: str):
    """A valid non-default value of a physical-stage key (from its rule: a choice, a flag, a number)."""
    section, name = key.split(".")
    from radarays_ros.radar.config import SECTIONS

    f = {f.name: f for f in dataclasses.fields(SECTIONS[section])}[name]
    rule, default = f.metadata, f.default
    if rule.get("choices"):
        return next(c for c in rule["choices"] if c != default)
    if rule["kind"] is bool:
        return not default
    if rule["kind"] is str:
        return "metal"
    lo, hi = rule["lo"], rule["hi"]
    value = (default if default is not None else lo) * 1.01 + (1 if rule["kind"] is int else 0.5)
    return min(max(rule["kind"](value), lo), hi)


@pytest.mark.parametrize("key", not_on_device(RADAR_SUPPORT))
def test_each_radar_key_the_device_lacks_is_refused_by_name(key):
    overrides = RADAR_REFUSED.get(key) or {**PHYSICAL, key: _physical_value(key)}
    cfg = RadarConfig.from_yaml(shipped("example", "radarays_compat")).with_overrides(overrides)
    found = refusals(cfg, RADAR_SUPPORT)
    assert any(r.startswith(f"{key} = ") for r in found), found


LIDAR_REFUSED = {
    "beam.divergence_mrad": {"beam": {"divergence_mrad": 2.0, "sub_rays": 4}},
    "beam.sub_rays": {"beam": {"divergence_mrad": 2.0, "sub_rays": 4}},
    "beam.profile": {"beam": {"divergence_mrad": 2.0, "sub_rays": 4, "profile": "gaussian"}},
    "beam.return_mode": {"beam": {"return_mode": "dual"}},
    "beam.echo_separation_m": {"beam": {"return_mode": "dual", "echo_separation_m": 1.0}},
    "detection.model": {"detection": {"model": "snr"}, "surface": {"model": "root2"}},
    "detection.snr_at_limit": {"detection": {"model": "snr", "snr_at_limit": 2.0}, "surface": {"model": "root2"}},
    "signal.poisson": {"signal": {"poisson": True}},
    "signal.noise_floor": {"signal": {"noise_floor": 2.0}},
    "signal.saturation": {"signal": {"saturation": 4000}},
    "signal.ambient_model": {"signal": {"ambient_model": "sun"}},
    "signal.sun_elevation_deg": {"signal": {"ambient_model": "sun", "sun_elevation_deg": 10.0}},
    "signal.sun_azimuth_deg": {"signal": {"ambient_model": "sun", "sun_azimuth_deg": 10.0}},
    "signal.row_gain_sigma": {"signal": {"ambient_model": "sun", "row_gain_sigma": 0.1}},
    "signal.bloom_threshold": {"signal": {"bloom_threshold": 5.0}},
    "signal.bloom_width_px": {"signal": {"bloom_threshold": 5.0, "bloom_width_px": 4}},
    "signal.bloom_leak": {"signal": {"bloom_threshold": 5.0, "bloom_leak": 0.05}},
    "weather.fog_visibility_km": {"weather": {"fog_visibility_km": 0.5}},
    "weather.rain_rate_mm_h": {"weather": {"rain_rate_mm_h": 5.0}},
    "weather.snow_rate_mm_h": {"weather": {"snow_rate_mm_h": 2.0}},
    "weather.snow_visibility_km": {"weather": {"snow_visibility_km": 1.0}},
    "weather.snow_type": {"weather": {"snow_rate_mm_h": 2.0, "snow_type": "wet"}},
    "weather.backscatter": {"weather": {"rain_rate_mm_h": 5.0, "backscatter": False}},
    "weather.wavelength_nm": {"weather": {"rain_rate_mm_h": 5.0, "wavelength_nm": 1550.0}},
    "tof.unambiguous_range_m": {"tof": {"unambiguous_range_m": 20.0}},
    "tof.mode": {"tof": {"mode": "cw"}},
    "tof.frequencies_mhz": {"tof": {"mode": "cw", "frequencies_mhz": [40.0, 50.0]}},
    "tof.periods": {"tof": {"mode": "cw", "periods": 5}},
    "tof.bias": {"tof": {"mode": "cw", "bias": [0.0, 0.1, 0.0]}},
    "tof.multipath": {"tof": {"multipath": True}},
    "tof.multipath_patches": {"tof": {"multipath": True, "multipath_patches": 64}},
    "glass.specular": {"glass": {"specular": True}},
    "glass.refractive_index": {"glass": {"specular": True, "refractive_index": 1.7}},
    "glass.lobe_deg": {"glass": {"specular": True, "lobe_deg": 1.0}},
    "glass.ghosts": {"glass": {"specular": True, "ghosts": False}},
    "detection.edge_dropout": {"beam": {"divergence_mrad": 2.0, "sub_rays": 4}, "detection": {"edge_dropout": True}},
    "surface.texture_sigma": {"surface": {"texture_sigma": 0.25}},
    "surface.texture_length_m": {"surface": {"texture_sigma": 0.25, "texture_length_m": 0.1}},
    "noise.snr_sigma": {"signal": {"noise_floor": 2.0}, "noise": {"snr_sigma": [[12, 0.1], [100, 0.03]]}},
    "noise.snr_floor": {"signal": {"noise_floor": 2.0}, "noise": {"snr_sigma": [[12, 0.1], [100, 0.03]], "snr_floor": 0.0}},
    "timing.column_jitter_us": {"timing": {"column_jitter_us": 1.4}},
    "timing.column_wander_us": {"timing": {"column_wander_us": 0.8}},
    "foliage.volume": {"foliage": {"volume": True}},
}


def _walked(key: str) -> str:
    """A refused table key as the config walk names it (the effect sections sit under `effects`)."""
    return key if key.startswith(("surface.", "noise.")) else f"effects.{key}"


def test_the_refused_lidar_table_names_every_key_the_device_lacks():
    assert sorted(_walked(k) for k in LIDAR_REFUSED) == not_on_device(LIDAR_SUPPORT)


@pytest.mark.parametrize("key", sorted(LIDAR_REFUSED))
def test_each_lidar_key_the_device_lacks_is_refused_by_name(key):
    sensor = "ToF-camera-320x240" if key.startswith("tof.multipath") else "VLP-16"
    found = device_refusals(load_sensor(sensor, LIDAR_REFUSED[key]))
    assert any(r.startswith(f"{key} = ") for r in found), found


# -- every key the device implements, on both paths -------------------------------------------------
def compat(overrides) -> RadarConfig:
    base = {"azimuth.count": 16, "range.bins": 300, "noise.ambient": "none"}
    return RadarConfig.from_yaml(shipped("example", "radarays_compat")).with_overrides({**base, **overrides})


# (overrides, how the outputs compare: exact within the bounds of the docstring, or statistics of the
# noise the two paths draw from different generators); every radar key the device implements is in one
RADAR_CASES = {
    "defaults": ({}, "exact"),
    "azimuth": ({"azimuth.count": 12, "azimuth.start_deg": 30.0, "azimuth.step_deg": 2.0, "azimuth.scroll": 5,
                 "azimuth.rate_hz": 10.0}, "exact"),
    "range": ({"range.resolution": 0.08, "range.max_range": 20.0, "range.offset": 0.3, "range.write_bin_zero": True},
              "exact"),
    "bins": ({"range.bins": 120}, "exact"),
    "beam": ({"beam.width_deg": 6.0, "beam.samples": 14, "beam.distribution": "D4", "beam.p_in_cone": 0.6,
              "beam.gain_weighting": True, "beam.redraw": "per_frame"}, "exact"),
    "elliptic beam": ({"beam.width_h_deg": 4.0, "beam.width_v_deg": 12.0, "beam.distribution": "D1"}, "exact"),
    "tracing": ({"tracing.passes": 3, "tracing.energy_threshold": 0.01, "tracing.skip_distance": 0.002,
                 "tracing.max_distance": 30.0, "tracing.polarization": 0.3}, "exact"),
    "returns": ({"returns.multi_reflection": False, "returns.multipath": True, "returns.multipath_threshold": 0.2,
                 "returns.occlusion_test": True}, "exact"),
    "kernel": ({"kernel.type": "gaussian", "kernel.width": 30, "kernel.mode": 0.5, "kernel.gaussian_sigma": 4.0},
               "exact"),
    "output": ({"output.normalisation": "global", "output.energy_max": 0.7, "output.signal_max": 100.0,
                "output.radar_equation": True, "output.reference_range": 2.0}, "exact"),
    "db": ({"output.normalisation": "db", "output.db_reference": 0.5, "output.db_range": 40.0}, "exact"),
    "uniform noise": ({"noise.ambient": "uniform", "noise.at_signal_0": 0.2, "noise.at_signal_1": 0.05,
                       "noise.energy_max": 0.4, "noise.energy_min": 0.05, "noise.energy_loss": 0.1,
                       "noise.system_std": 1.0, "seed": 7}, "statistics"),
}
RADAR_SHARED = {"origin"}  # a name only


def test_every_radar_key_the_device_implements_has_a_case():
    covered = {k for overrides, _ in RADAR_CASES.values() for k in overrides} | RADAR_SHARED
    limited = {k for k, s in RADAR_SUPPORT.items() if s.allowed is not None}  # their allowed values: cases too
    assert sorted(set(on_device(RADAR_SUPPORT)) - covered - limited) == []
    assert {"noise.ambient", "returns.keep", "sensor.model"} == limited


@pytest.fixture(scope="module")
def office():
    scene = load_world("office")
    return scene, make_backend("warp", scene, device="cpu")


def assert_within(device, host, rtol, atol, what):
    bound = rtol * np.abs(host) + atol
    worst = np.abs(device - host) - bound
    assert worst.max() <= 0, f"{what}: {int((worst > 0).sum())} values beyond the bound, worst by {worst.max():.3g}"


@pytest.mark.parametrize("case", sorted(RADAR_CASES))
def test_radar_device_frames_equal_host_frames_per_pixel(office, case):
    scene, backend = office
    overrides, how = RADAR_CASES[case]
    cfg = compat(overrides)
    device, host = WarpRadarSimulator(cfg, scene, backend), RadarSimulator(cfg, scene, backend=backend)
    for _ in range(2):  # a second frame: per-frame draws (beam.redraw per_frame, noise)
        a, b = device.simulate(RADAR_POSE), host.simulate(RADAR_POSE)
        assert a.image.shape == b.image.shape and b.energy.max() > 0
        np.testing.assert_array_equal(a.azimuth_rad, b.azimuth_rad)
        np.testing.assert_array_equal(a.azimuth_time_ns, b.azimuth_time_ns)
        np.testing.assert_array_equal(a.range_m, b.range_m)
        assert_within(a.energy, b.energy, 1e-4, 1e-6 * b.energy.max(), "energy")
        if how == "exact":
            assert_within(a.image_f32, b.image_f32, 1e-4, 1e-4, "image")
        else:  # Warp's draws against numpy's: the same noise model, row means and the frame mean agree
            assert abs(a.image_f32.mean() - b.image_f32.mean()) < 0.03 * b.image_f32.mean()
            assert abs(a.image_f32.std() - b.image_f32.std()) < 0.1 * b.image_f32.std()


def test_radar_device_frames_with_paper_and_cook_torrance_materials_equal_host_frames(office):
    """The device material table and brdf_factor's dispatch for the two BRDFs no shipped material uses: the
    office's materials turned paper and Cook-Torrance by turns, per-pixel energy within the bound above."""
    from radarays_ros.radar import brdf
    from radarays_ros.radar.materials import RadarMaterials

    scene, backend = office
    cfg = compat({"tracing.passes": 3})
    base = RadarSimulator(cfg, scene, backend=backend).materials
    kinds = [("paper", {"A": 0.2, "B": 0.5, "C": 30.0}), ("cook_torrance", {"diffuse": 0.3, "roughness": 0.3, "n": 2.5}),
             ("paper", {"A": 0.05, "B": 0.9, "C": 300.0}), ("cook_torrance", {"diffuse": 0.05, "roughness": 0.8, "n": 6.0})]
    picked = [kinds[i % len(kinds)] for i in range(len(base))]
    table = RadarMaterials(base.names, base.velocity, [k for k, _ in picked], [p for _, p in picked], base.transmittance,
                           {name: brdf.BUILTIN[name].function for name in ("paper", "cook_torrance")})
    device = WarpRadarSimulator(cfg, scene, backend, materials=table).simulate(RADAR_POSE)
    host = RadarSimulator(cfg, scene, backend=backend, materials=table).simulate(RADAR_POSE)
    default = RadarSimulator(cfg, scene, backend=backend).simulate(RADAR_POSE)
    assert host.energy.max() > 0 and np.abs(host.energy - default.energy).max() > 0.1 * host.energy.max()
    assert_within(device.energy, host.energy, 1e-4, 1e-6 * host.energy.max(), "energy")
    assert_within(device.image_f32, host.image_f32, 1e-4, 1e-4, "image")


def room() -> Scene:
    """A box room (walls facing in) and a retroreflective sign: distances 2-14 m, some beyond a short
    detection limit, reflectivities above 1."""
    scene = Scene()
    box = trimesh.creation.box([28, 20, 8])
    box.invert()
    scene.add_entity("room", TriMesh(box.vertices, box.faces), pose_to_matrix(3, 0, 2), material="concrete")
    sign = trimesh.creation.box([0.05, 2, 2])
    scene.add_entity("sign", TriMesh(sign.vertices, sign.faces), pose_to_matrix(-4, -3, 0.5, 0, 0, 1.0),
                     material="retroreflective_sheeting")
    crate = trimesh.creation.box([1, 1, 1])
    scene.add_entity("crate", TriMesh(crate.vertices, crate.faces), pose_to_matrix(4, 2, -1, 0, 0, 0.5), material="wood")
    return scene


CLEAN = {"noise": {"sigma": 0.0, "resolution": 0.0, "bias_sigma": 0.0, "dust_probability": 0.0}}
LIMIT = {"model": "root2", "limits": [[0.1, 8.0], [0.8, 25.0]]}
# (sensor, overrides, comparison, the keys it exercises); every lidar key the device implements is in one
LIDAR_CASES = {
    "velodyne": ("VLP-16", {}, "exact",
                 {"name", "kind", "origin", "spec", "base_dir", "rows", "cols", "directions", "origins", "azimuth",
                  "elevation", "time", "column_times", "pixel_column", "ring", "laser_index", "layout",
                  "organized", "planar", "planar_info", "intensity_field", "frame_id", "point_transform",
                  "ray_frame_id", "retime", "point_directions", "point_origins", "driver", "derived",
                  "surface.retro_full_scale", "noise.bias_distribution"}),
    "velodyne driver exact": ("HDL-32E", {"driver": {"model": "32E", "exact": True}}, "exact",
                              {"driver", "point_directions", "point_origins"}),
    "ouster": ("OS1-64", {"columns": 512}, "exact",
               {"range_offset", "pixel_shift", "point_transform", "ray_frame_id", "surface.signal_scale", "driver_metadata",
                "imu_transform", "imu_frame_id"}),
    "risley": ("Mid-40", {}, "exact", {"retime"}),
    "planar": ("LMS1xx", {}, "exact", {"planar", "planar_info"}),
    "depth camera": ("ToF-camera-320x240", {}, "exact", {"kind"}),
    "window and timing": ("VLP-16", {"range": {"min": 3.0, "max": 9.0}, "rate_hz": 20.0, "max_bounces": 1,
                                     "layout": "gazebo", "organized": False, "time_reference": "first",
                                     "intensity": "reflectivity", "frame_id": "x", "seed": 9}, "exact",
                          {"range_min", "range_max", "rate_hz", "period", "max_bounces", "layout", "organized",
                           "time_reference", "intensity_field", "frame_id", "seed"}),
    **{f"limit {model}": ("VLP-16", {"surface": {**LIMIT, "model": model, "retro_full_scale": 50.0}}, "exact",
                          {"surface.model", "surface.limits", "surface.retro_full_scale"})
       for model in ("linear", "root2", "root3", "root4", "log", "blensor")},
    "ambient": ("OS1-64", {"columns": 512, "surface": {"ambient_level": 900.0, "ambient_sky": 120.0}}, "ambient",
                {"surface.ambient_level", "surface.ambient_sky"}),
    "range noise": ("VLP-16", {"noise": {"sigma": 0.02, "relative_sigma": 0.004, "relative_exponent": 1.5,
                                         "resolution": 0.0}}, "exact", {"noise.sigma", "noise.relative_sigma",
                                                                        "noise.relative_exponent"}),
    "bias": ("VLP-16", {"noise": {"bias_sigma": 0.05, "bias_distribution": "laplace", "sigma": 0.0, "resolution": 0.0}},
             "bias", {"noise.bias_sigma", "noise.bias_distribution"}),
    "resolution": ("VLP-16", {"noise": {"resolution": 0.05}}, "resolution", {"noise.resolution"}),
    "dust": ("VLP-16", {"noise": {"dust_probability": 0.2, "dust_min_range": 1.0}}, "exact",
             {"noise.dust_probability", "noise.dust_min_range"}),
    "dropouts": ("VLP-16", {"detection": {"dropout_probability": 0.3}}, "exact",
                 {"effects.detection.dropout_probability"}),
    "jitter": ("VLP-16", {"noise": {"angular_sigma": 0.002}}, "exact", {"noise.angular_sigma"}),
    "overlap": ("OS1-64", {"columns": 512, "surface": {"overlap_range_m": 10.0}}, "exact", {"surface.overlap_range_m"}),
    "limits probability": ("VLP-16", {"surface": {**LIMIT, "limits_probability": 0.9}}, "exact",
                           {"surface.limits_probability"}),
    "sweep": ("VLP-16", {"timing": {"moving_entities": "sweep"}}, "sweep", {"effects.timing.moving_entities"}),
}


def test_every_lidar_key_the_device_implements_has_a_case():
    covered = {k for *_, keys in LIDAR_CASES.values() for k in keys}
    assert sorted(set(on_device(LIDAR_SUPPORT)) - covered) == []


def ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Float32 units in the last place between a and b (same sign)."""
    return np.abs(a.astype(np.float32).view(np.int32).astype(np.int64) - b.astype(np.float32).view(np.int32))


@pytest.fixture(scope="module")
def lidar_scene():
    scene = room()
    return scene, make_backend("warp", scene, device="cpu")


def lidar_frames(lidar_scene, sensor, overrides):
    scene, backend = lidar_scene
    cfg = load_sensor(sensor, {**CLEAN, **overrides} if "noise" not in overrides else overrides)
    device = WarpLidarSimulator(cfg, scene, backend, seed=3)
    host = LidarSimulator(cfg, scene, backend, seed=3)
    return device.simulate(LIDAR_POSE), host.simulate(LIDAR_POSE)


def assert_same_frames(a, b):
    np.testing.assert_array_equal(a.hit, b.hit)
    np.testing.assert_array_equal(a.entity, b.entity)
    np.testing.assert_array_equal(a.material, b.material)
    both = a.hit
    assert ulps(a.clean_range[both], b.clean_range[both]).max(initial=0) <= 32
    assert ulps(a.range[both], b.range[both]).max(initial=0) <= 32
    np.testing.assert_array_equal(np.isfinite(a.xyz), np.isfinite(b.xyz))
    finite = np.isfinite(b.xyz) & both[..., None]
    assert np.abs(a.xyz[finite] - b.xyz[finite]).max(initial=0) <= 32 * np.spacing(np.abs(b.xyz[finite]).max(initial=1))
    assert ulps(a.fields["reflectivity"][both], b.fields["reflectivity"][both]).max(initial=0) <= 4
    for name in ("velodyne_intensity", "ouster_signal"):
        fa, fb = a.fields[name].astype(np.int64), b.fields[name].astype(np.int64)
        assert np.abs(fa - fb).max(initial=0) <= 1, name


def swept_room() -> tuple[Scene, int]:
    """room() with a cart crossing the sensor's view at 15 m/s while it turns (its twist moves it 1.5 m in a sweep)."""
    scene = room()
    cart = trimesh.creation.box([2.0, 1.0, 1.5])
    start = pose_to_matrix(4.0, -3.0, 0.0)
    cart_id = scene.add_entity("cart", TriMesh(cart.vertices, cart.faces), start, static=False, material="metal")
    scene.set_poses([(cart_id, start)], twists=[((0.0, 15.0, 0.0), (0.0, 0.0, 2.0))])
    return scene, cart_id


@pytest.mark.parametrize("case", sorted(LIDAR_CASES))
def test_lidar_device_frames_equal_host_frames_per_output(lidar_scene, case):
    sensor, overrides, how, _ = LIDAR_CASES[case]
    if how == "sweep":  # a cart the sweep meets where it is at each firing: the device against Embree's host frame
        scene, cart = swept_room()
        cfg = load_sensor(sensor, {**CLEAN, **overrides})
        a = WarpLidarSimulator(cfg, scene, make_backend("warp", scene, device="cpu"), seed=3).simulate(LIDAR_POSE)
        b = LidarSimulator(cfg, scene, make_backend("embree", scene, threads=1), seed=3).simulate(LIDAR_POSE)
        still = LidarSimulator(load_sensor(sensor, CLEAN), scene, make_backend("embree", scene), seed=3).simulate(LIDAR_POSE)
        assert (b.entity == cart).sum() > 50 and ((b.entity == cart) != (still.entity == cart)).sum() > 50
        assert_same_frames(a, b)
        return
    a, b = lidar_frames(lidar_scene, sensor, overrides)
    assert b.hit.mean() > 0.05
    if how == "exact":
        assert_same_frames(a, b)
        if case.startswith("limit"):  # the limit drops some of the room: the curve decides, on both paths alike
            assert 0.05 < 1 - b.hit.mean() and (b.fields["reflectivity"][b.hit] > 1).any()
        return
    if how in ("ambient", "bias", "resolution"):  # the same returns
        np.testing.assert_array_equal(a.hit, b.hit)
        assert ulps(a.clean_range[a.hit], b.clean_range[a.hit]).max(initial=0) <= 32
    err_a, err_b = (s.range[s.hit] - s.clean_range[s.hit] for s in (a, b))
    if how == "ambient":  # both paths draw the shot noise by ray index (AMBIENT_WORD): the same counts
        fa, fb = (s.fields["ouster_ambient"] for s in (a, b))
        assert fa.tobytes() == fb.tobytes() and fb.astype(np.float64).std() > 1
    elif how == "bias":  # one bias per laser, drawn on the host for both paths: the same values
        np.testing.assert_allclose(err_a, err_b, atol=1e-5)  # float32 sums of the same terms
        assert err_b.std() > 0.01
    elif how == "resolution":
        steps = a.range[a.hit] / 0.05
        np.testing.assert_allclose(steps, np.rint(steps), atol=1e-3)
        assert np.mean(a.range[a.hit] != b.range[b.hit]) < 1e-3  # a clean range at a half step may round either way
