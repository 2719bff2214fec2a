"""The Warp kernels' per-hit formulas run alone on Warp's CPU device against the host: the radar BRDFs
(radar/warp_frame_kernels.brdf_factor against radar/brdf.py, all three built-ins) and the lidar detection
limit (lidar_ros/warp_frame_kernels.detection_limit32 against physics/detection.py DetectionLimit.limit32,
every form). Both sides run one source (radarays_ros/twin.py compiles brdf.py's and detection.py's formulas
for Warp); what differs is the arithmetic: numpy's dtype and libm on the host, float32 and Warp's on the device.

Bounds: the detection limit is the host's float32 operations in the host's order, so the same bytes,
except the two forms through a libm function the two sides take from different libraries (log, cbrt):
within 4 float32 ULP of the larger of the limit's two terms (|b f(rho)| and |a|: where they cancel near
r_L = 0 an ULP of the terms is many of the sum's). The BRDFs are float32 on the device and float64 on
the host: within 128 float32 ULP of the host value (cos of a float32 angle, then pow), and for
Cook-Torrance 128 + 8 tan^2(theta) / m^2 ULP (the Beckmann exp(-tan^2 / m^2) multiplies the rounding of
its argument by the argument; measured worst 135 ULP at tan^2 / m^2 = 57), plus 1e-30 absolute for
values that underflow in float32.
"""
import numpy as np
import pytest

from support.warp import require_warp

wp = require_warp()

from lidar_ros import warp_frame_kernels as lk  # noqa: E402
from lidar_ros.physics.config import DETECTION_MODELS, SurfaceConfig  # noqa: E402
from lidar_ros.physics.detection import DetectionLimit  # noqa: E402
from radarays_ros.radar import brdf  # noqa: E402
from radarays_ros.radar import warp_frame_kernels as rk  # noqa: E402
from radarays_ros.radar.warp_frame import BRDF_CODES  # noqa: E402

F32_EPS = float(np.finfo(np.float32).eps)
BRDF_ULPS = 128


@wp.kernel
def _brdf_values(m: rk.Materials, thetas: wp.array(dtype=float), out: wp.array2d(dtype=float)):
    i, j = wp.tid()
    out[i, j] = rk.brdf_factor(m, i, thetas[j])


@wp.kernel
def _limit_values(s: lk.SurfaceSettings, rho: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = lk.detection_limit32(rho[i], s.limit_model, s.limit_root, s.limit_a, s.limit_b, s.limit_rho1,
                                  s.limit_d1, s.limit_slope)


# per material row: (brdf, its parameters), the ranges of brdf.BUILTIN
ROWS = [
    ("radarays", {"A": 0.2, "B": 0.8, "C": 6.0}),
    ("radarays", {"A": 0.0, "B": 1.0, "C": 1.0}),
    ("radarays", {"A": 0.05, "B": 3.0, "C": 120.0}),
    ("paper", {"A": 0.2, "B": 0.5, "C": 30.0}),
    ("paper", {"A": 0.0, "B": 0.1, "C": 2.0}),
    ("paper", {"A": 0.9, "B": 0.05, "C": 400.0}),
    ("cook_torrance", {"diffuse": 0.3, "roughness": 0.3, "n": 2.5}),
    ("cook_torrance", {"diffuse": 0.0, "roughness": 0.1, "n": 9.0}),
    ("cook_torrance", {"diffuse": 1.0, "roughness": 1.0, "n": 1.5}),
    ("cook_torrance", {"diffuse": 0.05, "roughness": 2.0, "n": 1.01}),
]
THETAS = np.concatenate([np.linspace(0.0, np.pi, 181), [1e-4, 0.01, 1.5, 1.57, 1.5707, 1.5708]]).astype(np.float32)


def device_brdfs(rows) -> np.ndarray:
    """(rows, thetas) float32 brdf_factor values on Warp's CPU device, the material table as warp_frame.py makes it."""
    def column(key, default=0.0):
        return wp.array(np.array([float(p.get(key, default)) for _, p in rows], np.float32), dtype=float, device="cpu")

    m = rk.Materials()
    m.velocity = m.transmittance = column("none", 1.0)
    m.brdf = wp.array(np.array([BRDF_CODES[name] for name, _ in rows], np.int32), dtype=wp.int32, device="cpu")
    m.a, m.b, m.c = column("A"), column("B"), column("C")
    m.diffuse, m.roughness, m.n = column("diffuse"), column("roughness", 1.0), column("n", 1.0)
    out = wp.zeros((len(rows), len(THETAS)), dtype=float, device="cpu")
    wp.launch(_brdf_values, dim=(len(rows), len(THETAS)), inputs=[m, wp.array(THETAS, dtype=float, device="cpu"), out],
              device="cpu")
    return out.numpy()


def host_brdf(name, params, thetas) -> np.ndarray:
    """brdf.py in float64 at the device's float32 parameters and angles, as RadarMaterials.evaluate clips it."""
    p = {k: np.float64(np.float32(v)) for k, v in params.items()}
    value = brdf.BUILTIN[name].function(thetas.astype(np.float64), p)
    return np.maximum(np.nan_to_num(value), 0.0)


def ulp_bound(name, params) -> np.ndarray:
    """The float32 ULP bound of the module docstring, per angle of THETAS."""
    if name != "cook_torrance":
        return np.full(len(THETAS), BRDF_ULPS, np.float64)
    c = np.clip(np.cos(THETAS.astype(np.float64)), 1e-6, 1.0)
    return BRDF_ULPS + 8 * ((1 - c * c) / (c * c)) / params["roughness"] ** 2


def test_every_builtin_brdf_has_a_device_code():
    assert sorted(BRDF_CODES) == sorted(brdf.BUILTIN)
    assert {name for name, _ in ROWS} == set(brdf.BUILTIN)


def test_device_brdfs_equal_the_host_formulas_within_the_ulp_bound():
    got = device_brdfs(ROWS)
    for row, (name, params) in enumerate(ROWS):
        want = host_brdf(name, params, THETAS)
        bound = ulp_bound(name, params) * F32_EPS * np.abs(want) + 1e-30
        worst = np.abs(got[row].astype(np.float64) - want) - bound
        assert worst.max() <= 0, f"{name} {params}: {int((worst > 0).sum())} angles off, e.g. theta = " \
                                 f"{THETAS[int(np.argmax(worst))]}: {got[row][np.argmax(worst)]} != {want[np.argmax(worst)]}"
        assert want.max() > 0


@pytest.mark.parametrize("name", sorted(brdf.BUILTIN))
def test_a_wrong_device_brdf_fails_the_comparison(name):
    """The comparison can fail: a host formula with one coefficient changed is outside the bound."""
    rows = [r for r in ROWS if r[0] == name]
    got = device_brdfs(rows)
    for row, (_, params) in enumerate(rows):
        key = next(iter(params))
        off = host_brdf(name, {**params, key: params[key] * 1.001 + 1e-3}, THETAS)
        assert (np.abs(got[row] - off) > ulp_bound(name, params) * F32_EPS * np.abs(off) + 1e-30).any()


def device_limits(limit: DetectionLimit, rho: np.ndarray) -> np.ndarray:
    """detection_limit32 on Warp's CPU device, its settings filled as WarpLidarSimulator fills them."""
    s = lk.SurfaceSettings()
    code, a, b, _, d1, rho1, slope = limit.curve
    s.limit_model, s.limit_root = code, limit.root
    s.limit_a, s.limit_b, s.limit_rho1, s.limit_d1, s.limit_slope = a, b, rho1, d1, slope
    out = wp.zeros(len(rho), dtype=float, device="cpu")
    wp.launch(_limit_values, dim=len(rho), inputs=[s, wp.array(rho, dtype=float, device="cpu"), out], device="cpu")
    return out.numpy()


RHO = np.concatenate([np.geomspace(1e-4, 50.0, 4000), [0.1, 0.8, 1.0, 0.0, -0.5]]).astype(np.float32)


@pytest.mark.parametrize("model", [m for m in DETECTION_MODELS if m != "none"])
@pytest.mark.parametrize("limits", [((0.1, 50.0), (0.8, 120.0)), ((0.05, 8.0), (0.9, 25.0))])
def test_device_detection_limit_equals_the_host_curve(model, limits):
    limit = DetectionLimit(SurfaceConfig(model=model, limits=limits))
    host, device = limit.limit32(RHO), device_limits(limit, RHO)
    assert host.dtype == device.dtype == np.float32
    hair = np.zeros_like(host)  # byte-equal forms: a range one float32 step beyond the limit decides alike
    if model in ("log", "root3"):  # libm's log / cbrt on each side
        _, a, b, *_ = limit.curve
        f = np.log(np.maximum(RHO, 1e-30)) if model == "log" else np.cbrt(np.maximum(RHO, 1e-30))
        terms = np.maximum(np.abs(np.float32(b) * f), abs(np.float32(a))).astype(np.float32)
        assert (np.abs(host - device) <= 4 * np.spacing(terms)).all()
        hair = 4 * np.spacing(terms)
    else:
        assert host.tobytes() == device.tobytes()
    # the decisions on ranges (>= 0) just inside and outside each limit: the same on both paths
    positive = (RHO > 0) & (host - hair > 0)
    inside = (host - hair).astype(np.float32)[positive]
    outside = np.nextafter(host + hair, np.float32(np.inf)).astype(np.float32)[positive]
    rho = RHO[positive]
    assert limit.keep(inside, rho).all() and not limit.keep(outside, rho).any()
    assert (inside <= device[positive]).all() and not (outside <= device[positive]).any()


@wp.kernel
def _fresnel_values(cos_i: wp.array(dtype=float), cos_t: wp.array(dtype=float), v1: float, v2: float,
                    pol: float, out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = rk.fresnel_reflectance(cos_i[i], cos_t[i], v1, v2, pol)


@pytest.mark.parametrize("v1, v2, pol", [(0.3, 0.05, 0.5), (0.3, 0.2, 1.0), (0.1, 0.3, 0.0)])
def test_device_fresnel_split_is_the_host_formula_in_float32(v1, v2, pol):
    """fresnel.fresnel_reflectance on Warp's CPU device against the host's float32 evaluation of the same source
    (fresnel_coefficients' dtype): within 8 float32 ULP of R plus 8 ULP of 1 (rs, rp cancel near Brewster)."""
    from radarays_ros.radar.fresnel import fresnel_reflectance

    cos_i = np.linspace(0.02, 1.0, 500).astype(np.float32)
    eta = np.float32(v2 / v1)
    k = np.float32(1.0) - eta * eta * (np.float32(1.0) - cos_i * cos_i)
    keep = k > 0
    cos_i, cos_t = cos_i[keep], np.sqrt(k[keep])
    f32 = np.float32
    host = fresnel_reflectance(cos_i, cos_t, f32(v1), f32(v2), f32(pol))
    out = wp.zeros(len(cos_i), dtype=float, device="cpu")
    wp.launch(_fresnel_values, dim=len(cos_i), inputs=[wp.array(cos_i, dtype=float, device="cpu"),
              wp.array(cos_t, dtype=float, device="cpu"), v1, v2, pol, out], device="cpu")
    device = out.numpy()
    assert host.dtype == device.dtype == np.float32
    assert (np.abs(device - host) <= 8 * F32_EPS * (np.abs(host) + 1.0)).all()
    by_hand = (((v2 * 1.0 - v1 * 1.0) / (v2 + v1)) ** 2)  # normal incidence: ((v2 - v1) / (v2 + v1))^2, any pol
    assert device[-1] == pytest.approx(by_hand, rel=1e-5)


# -- every other formula the kernels share with the host, each alone on Warp's CPU device -----------------------
def device_values(formula, *columns, wrap=None) -> np.ndarray:
    """`formula` compiled by twin.device_twin (or `wrap`, a wp.func around it), evaluated on Warp's CPU device
    over float32 argument columns, element by element: the float32 result of each."""
    from radarays_ros.twin import device_twin

    f = wrap or device_twin(formula)
    n = len(columns[0])
    args = wp.array(np.stack([np.asarray(c, np.float32) for c in columns]), dtype=float, device="cpu")
    out = wp.zeros(n, dtype=float, device="cpu")
    wp.launch(_ARITY_KERNELS[len(columns)](f), dim=n, inputs=[args, out], device="cpu")
    return out.numpy()


def _arity_kernels():
    def one(f):
        @wp.kernel(module="unique")
        def k(a: wp.array2d(dtype=float), out: wp.array(dtype=float)):
            i = wp.tid()
            out[i] = f(a[0, i])
        return k

    def two(f):
        @wp.kernel(module="unique")
        def k(a: wp.array2d(dtype=float), out: wp.array(dtype=float)):
            i = wp.tid()
            out[i] = f(a[0, i], a[1, i])
        return k

    def three(f):
        @wp.kernel(module="unique")
        def k(a: wp.array2d(dtype=float), out: wp.array(dtype=float)):
            i = wp.tid()
            out[i] = f(a[0, i], a[1, i], a[2, i])
        return k

    def four(f):
        @wp.kernel(module="unique")
        def k(a: wp.array2d(dtype=float), out: wp.array(dtype=float)):
            i = wp.tid()
            out[i] = f(a[0, i], a[1, i], a[2, i], a[3, i])
        return k

    def six(f):
        @wp.kernel(module="unique")
        def k(a: wp.array2d(dtype=float), out: wp.array(dtype=float)):
            i = wp.tid()
            out[i] = f(a[0, i], a[1, i], a[2, i], a[3, i], a[4, i], a[5, i])
        return k

    return {1: one, 2: two, 3: three, 4: four, 6: six}


_ARITY_KERNELS = _arity_kernels()
RNG = np.random.default_rng(26)
N = 20000


def f32(*shape_low_high):
    low, high = shape_low_high
    return RNG.uniform(low, high, N).astype(np.float32)


def test_snell_formulas_are_the_host_bytes():
    """fresnel.velocity_ratio, refraction_cosine_squared and fresnel_defined, float32 on both sides: the same bytes
    (and the same decisions)."""
    from radarays_ros.radar import fresnel

    v1 = np.concatenate([f32(0.0, 0.3), np.zeros(100, np.float32)])
    v2 = np.concatenate([f32(0.0, 0.3), np.full(100, 0.1, np.float32)])
    host = fresnel.velocity_ratio(v1, v2)
    assert host.dtype == np.float32 and host.tobytes() == device_values(fresnel.velocity_ratio, v1, v2).tobytes()
    cos_i, eta = f32(0.0, 1.0), f32(0.1, 3.0)
    host = fresnel.refraction_cosine_squared(cos_i, eta)
    assert host.dtype == np.float32 and (host < 0).any() and (host > 0).any()  # both sides of total reflection
    assert host.tobytes() == device_values(fresnel.refraction_cosine_squared, cos_i, eta).tobytes()

    @wp.func
    def defined(cos_i: float, cos_t: float, v1: float, v2: float):
        return wp.where(rk.fresnel_defined(cos_i, cos_t, v1, v2), 1.0, 0.0)

    columns = (f32(-1.0, 1.0), f32(-1.0, 1.0), f32(-0.1, 0.3), f32(-0.1, 0.3))
    host = fresnel.fresnel_defined(*columns)
    assert 0.1 < host.mean() < 0.9
    np.testing.assert_array_equal(device_values(None, *columns, wrap=defined) == 1.0, host)


def test_radar_range_gain_and_db_grey_within_their_ulp_bounds():
    """draw.range_cell: the same bin except within float32 rounding of a bin edge. draw.range_gain and normalise.db_grey: float64 on the host, float32 on the device. (ref / r)^4 takes the
    rounding of ref / r four times plus pow's own: within 8 float32 ULP. The grey level 255 (10 log10(E / E0) + D) / D:
    log10 of a float32 quotient (2 ULP) and the float32 sums, within 4 ULP of 255 (|L| + D) / D."""
    from radarays_ros.radar.draw import range_gain
    from radarays_ros.radar.normalise import db_grey

    from radarays_ros.radar.draw import range_cell

    columns = (f32(0.0, 60.0), f32(0.0, 1.0), f32(0.01, 0.2))  # the bin: float64 on the host, float32 on the
    host = range_cell(*(c.astype(np.float64) for c in columns))  # device, the same bin away from bin edges
    device = device_values(range_cell, *columns)
    exact = (columns[0].astype(np.float64) - columns[1]) / columns[2]
    edge = np.abs(exact - np.rint(exact)) <= 4 * F32_EPS * (columns[0] + columns[1]) / columns[2]  # 3 roundings
    assert np.array_equal(device[~edge], host[~edge]) and (np.abs(device - host) <= 1).all() and edge.mean() < 1e-3
    columns = (f32(0.0, 60.0), f32(0.0, 1.0), f32(0.01, 0.2), f32(0.5, 5.0))
    host = range_gain(*(c.astype(np.float64) for c in columns))
    device = device_values(range_gain, *columns)
    assert (np.abs(device - host) <= 8 * F32_EPS * host).all()
    energy = np.exp(RNG.uniform(-60, 10, N)).astype(np.float32)
    columns = (energy, f32(0.01, 2.0), f32(20.0, 120.0))
    host = db_grey(*(c.astype(np.float64) for c in columns))
    device = device_values(db_grey, *columns)
    level = np.abs(10 * np.log10(energy.astype(np.float64) / columns[1]))
    assert (host == 0).any() and (host > 255).any()
    assert (np.abs(device - host) <= 4 * F32_EPS * 255 * (level + columns[2]) / columns[2]).all()


def test_radar_ambient_noise_formulas():
    """noise.ambient_level in float32 on both sides: the same bytes; noise.range_floor, float64 on the host: within
    (4 + loss r) float32 ULP of e_max (exp multiplies its argument's rounding by the argument)."""
    from radarays_ros.radar.noise import ambient_level, range_floor

    columns = (f32(0.0, 2.0), f32(0.0, 3.0), f32(0.0, 1.0), f32(-0.5, 0.5), f32(0.0, 0.5), f32(0.0, 0.5))
    host = ambient_level(*columns)
    assert host.dtype == np.float32 and host.tobytes() == device_values(ambient_level, *columns).tobytes()
    from radarays_ros.radar import noise  # the host's numba loop over the same source: the same bytes too

    step, at1, ones = np.float32(0.3), np.float32(0.05), np.ones(N, np.float32)
    looped = np.empty((1, N), np.float32)
    noise._ambient_levels(columns[0][None], columns[1][:1], columns[2][None], step, at1, columns[5], ones[:1], looped)
    assert looped[0].tobytes() == ambient_level(columns[0], columns[1][0], columns[2], step, at1, columns[5]).tobytes()
    r, e_max, e_min, loss = f32(0.0, 300.0), f32(0.1, 1.0), f32(0.0, 0.1), f32(0.0, 0.2)
    host = range_floor(*(c.astype(np.float64) for c in (r, e_max, e_min, loss)))
    device = device_values(range_floor, r, e_max, e_min, loss)
    assert (np.abs(device - host) <= (4 + loss * r) * F32_EPS * e_max).all()


def test_lidar_reflectivity_table_formulas_are_the_host_bytes():
    """reflectivity.incidence_degrees within 4 float32 ULP (numpy's float32 arccos and Warp's acos are other
    libraries: measured 4 ULP apart at most over 200 001 cosines, numpy's the less exact, 3.8 ULP from the float64
    angle), table_position and table_interpolation: the same bytes."""
    from lidar_ros.physics.reflectivity import incidence_degrees, table_interpolation, table_position

    cos = np.concatenate([f32(-0.1, 1.1), [0.0, 1.0, 0.5]]).astype(np.float32)
    host, device = incidence_degrees(cos), device_values(incidence_degrees, cos)
    assert host.dtype == np.float32 and (np.abs(device - host) <= 4 * np.spacing(host)).all()
    theta = f32(-5.0, 95.0)
    assert table_position(theta).tobytes() == device_values(table_position, theta).tobytes()
    columns = (f32(0.0, 1.0), f32(0.0, 1.0), f32(0.0, 1.0))
    assert table_interpolation(*columns).tobytes() == device_values(table_interpolation, *columns).tobytes()


def test_lidar_intensity_formulas_are_the_host_bytes():
    """intensity.diffuse_percent, signal_count, flat_ambient_mean and shot_noise_count, float32 on both sides: the
    same bytes. retro_percent (float64 on the host): the same integers except where the float64 value lies within
    1e-4 of a half (there the float32 one may round the other way, by 1)."""
    from lidar_ros.physics import intensity

    rho = f32(-0.5, 3.0)
    assert intensity.diffuse_percent(rho).tobytes() == device_values(intensity.diffuse_percent, rho).tobytes()
    columns = (f32(0.0, 3.0), f32(0.1, 80.0), f32(100.0, 9000.0), f32(0.0, 1.0))
    host = intensity.signal_count(*columns)
    assert (host == 65535).any() and host.tobytes() == device_values(intensity.signal_count, *columns).tobytes()

    @wp.func
    def flat(rho: float, in_view: float, level: float, sky: float):
        return lk.flat_ambient_mean(rho, in_view > 0.5, level, sky)

    columns = (f32(0.0, 2.0), f32(0.0, 1.0), f32(0.0, 2000.0), f32(0.0, 200.0))
    host = intensity.flat_ambient_mean(columns[0], columns[1] > 0.5, *columns[2:])
    assert host.tobytes() == device_values(None, *columns, wrap=flat).tobytes()
    columns = (f32(0.0, 3000.0), RNG.standard_normal(N).astype(np.float32))
    assert intensity.shot_noise_count(*columns).tobytes() == device_values(intensity.shot_noise_count, *columns).tobytes()
    rho, full = np.exp(RNG.uniform(0.0, 6.0, N)).astype(np.float32), np.float32(50.0)
    host = intensity.retro_percent(rho.astype(np.float64), np.log(np.float64(full)))
    device = device_values(intensity.retro_percent, rho, np.full(N, np.log(full), np.float32))
    exact = 101.0 + 154.0 * np.log(rho.astype(np.float64)) / np.log(np.float64(full))
    tie = np.abs(exact - np.floor(exact) - 0.5) < 1e-4
    assert (host == 255).any() and np.array_equal(device[~tie], host[~tie]) and (np.abs(device - host) <= 1).all()


def test_lidar_lambertian_dust_and_quantisation_are_the_host_bytes():
    """reflectivity.lambertian_reflectivity, noise.dust_range and noise.quantised, float32 on both sides (numba
    runs the first and the last inside the host's loops): the same bytes."""
    from lidar_ros.physics import noise, reflectivity

    columns = (f32(0.0, 1.0), f32(-0.01, 1.0), f32(0.0, 2.0))
    host = reflectivity.lambertian_reflectivity(*columns)
    assert host.tobytes() == device_values(reflectivity.lambertian_reflectivity, *columns).tobytes()
    columns = (f32(0.0, 100.0), f32(0.0, 5.0), f32(0.0, 1.0))
    host = noise.dust_range(*columns)
    assert ((host >= np.minimum(columns[0], columns[1])) & (host <= columns[0])).all()
    assert host.tobytes() == device_values(noise.dust_range, *columns).tobytes()
    columns = (f32(-1.0, 100.0), np.full(N, 0.05, np.float32))
    host = noise.quantised(*columns)
    assert host.tobytes() == device_values(noise.quantised, *columns).tobytes()
    compiled = np.array([noise._quantised_compiled(v, np.float32(0.05)) for v in columns[0][:200]], np.float32)
    assert compiled.tobytes() == host[:200].tobytes()  # numba's compile of the same source


def test_the_detection_decision_is_the_host_decision():
    """detection.detected on both sides over ranges at, just inside and just past each limit, NaN and inf ranges
    and reflectivities <= 0: the same decisions, and the ones the curve means (a return at its limit is seen, a
    black surface and a miss never are)."""
    from lidar_ros.physics.detection import detected

    limit = f32(0.0, 120.0)
    rho = np.concatenate([f32(-0.5, 2.0)[: N // 2], np.zeros(N - N // 2, np.float32)])
    r = np.where(RNG.random(N) < 0.5, limit, RNG.uniform(0.0, 150.0, N)).astype(np.float32)
    r[:300] = np.nextafter(limit[:300], np.float32(np.inf))
    r[300:400], r[400:500] = np.nan, np.inf
    host = detected(r, rho, limit)
    np.testing.assert_array_equal(host, (rho > 0) & (r <= limit))
    assert host[(r == limit) & (rho > 0)].all() and not host[rho <= 0].any() and not host[300:500].any()

    @wp.func
    def decision(r: float, rho: float, limit: float):
        return wp.where(lk.detected(r, rho, limit), 1.0, 0.0)

    np.testing.assert_array_equal(device_values(None, r, rho, limit, wrap=decision) == 1.0, host)


@wp.kernel
def _directions(d: wp.array(dtype=wp.vec3), n: wp.array(dtype=wp.vec3), s: wp.array2d(dtype=float),
                reflected: wp.array(dtype=wp.vec3), refracted: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    reflected[i] = rk.reflection_direction(d[i], n[i], s[0, i])
    refracted[i] = rk.refraction_direction(d[i], n[i], s[1, i], s[0, i], s[2, i])


def test_radar_directions_and_multipath_range_are_the_host_formulas():
    """fresnel.reflection_direction and refraction_direction on float32 vectors: the host's bytes (fresnel.reflect
    and refract; the device then normalises what it traces, as the host's tracer does). waves.multipath_range,
    float64 on the host: within 3 float32 ULP (a quotient, a sum of positive terms and a product, each rounded once)."""
    from radarays_ros.radar import fresnel
    from radarays_ros.radar.waves import multipath_range

    def unit(v):
        return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)

    d, n = unit(RNG.standard_normal((N, 3))), unit(RNG.standard_normal((N, 3)))
    cos_i, eta = np.abs(fresnel.row_dot(d, n)), f32(0.1, 2.0)
    cos_t = np.sqrt(np.maximum(fresnel.refraction_cosine_squared(cos_i, eta), np.float32(0.0)))
    vectors = [wp.array(v, dtype=wp.vec3, device="cpu") for v in (d, n)]
    outs = [wp.zeros(N, dtype=wp.vec3, device="cpu") for _ in range(2)]
    scalars = wp.array(np.stack([cos_i, eta, cos_t]), dtype=float, device="cpu")
    wp.launch(_directions, dim=N, inputs=[*vectors, scalars, *outs], device="cpu")
    assert fresnel.reflect(d, n, cos_i).tobytes() == outs[0].numpy().tobytes()
    assert fresnel.refract(d, n, eta, cos_i, cos_t).tobytes() == outs[1].numpy().tobytes()
    columns = (f32(0.0, 400.0), f32(0.0, 60.0), f32(0.05, 0.3), np.full(N, 0.299792458, np.float32))
    host = multipath_range(*(c.astype(np.float64) for c in columns))
    device = device_values(multipath_range, *columns)
    assert (np.abs(device - host) <= 3 * F32_EPS * host).all()


def test_radar_transmittance_and_column_scale_within_their_ulp_bounds():
    """waves.path_transmittance T^d and normalise.column_scale signal_max / M, float64 on the host: within
    (4 + |d ln T|) float32 ULP (pow's exp multiplies the rounding of d ln T by it) and 1 ULP (one division)."""
    from radarays_ros.radar.normalise import column_scale
    from radarays_ros.radar.waves import path_transmittance

    t, d = f32(0.01, 1.0), f32(0.0, 30.0)
    host = path_transmittance(t.astype(np.float64), d.astype(np.float64))
    device = device_values(path_transmittance, t, d)
    assert (np.abs(device - host) <= (4 + np.abs(d * np.log(t.astype(np.float64)))) * F32_EPS * host + 1e-37).all()
    columns = (f32(1.0, 255.0), np.exp(RNG.uniform(-40, 5, N)).astype(np.float32))
    host = column_scale(*(c.astype(np.float64) for c in columns))
    assert (np.abs(device_values(column_scale, *columns) - host) <= F32_EPS * host).all()


@wp.kernel
def _mirror(d: wp.array(dtype=wp.vec3), n: wp.array(dtype=wp.vec3), out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    out[i] = lk.mirror_direction(d[i], n[i], wp.dot(d[i], n[i]))


def test_lidar_mirror_and_skip_are_the_host_bytes():
    """interaction.mirror_direction (d.n as numpy's einsum and Warp's dot sum it, in the same order) and
    interaction.skip_distance, float32 on both sides: the same bytes."""
    from lidar_ros.physics.interaction import SKIP_ABS, SKIP_REL, mirror_direction, skip_distance

    d = RNG.standard_normal((N, 3)).astype(np.float32)
    n = (d + RNG.standard_normal((N, 3))).astype(np.float32)
    host = mirror_direction(d, n, np.einsum("ij,ij->i", d, n)[:, None])
    out = wp.zeros(N, dtype=wp.vec3, device="cpu")
    wp.launch(_mirror, dim=N, inputs=[wp.array(d, dtype=wp.vec3, device="cpu"), wp.array(n, dtype=wp.vec3, device="cpu"),
                                      out], device="cpu")
    assert host.dtype == np.float32 and host.tobytes() == out.numpy().tobytes()
    total = f32(0.0, 300.0)
    host = skip_distance(total, SKIP_ABS, SKIP_REL)
    abs32, rel32 = np.full(N, SKIP_ABS, np.float32), np.full(N, SKIP_REL, np.float32)
    assert host.dtype == np.float32 and host.tobytes() == device_values(skip_distance, total, abs32, rel32).tobytes()


def test_incidence_cosine_is_the_host_bytes():
    """fresnel.incidence_cosine_of (-d.n clipped to [0, 1]), float32 on both sides: the same bytes."""
    from radarays_ros.radar.fresnel import incidence_cosine_of

    dot = f32(-1.2, 1.2)
    host = incidence_cosine_of(dot)
    assert (host == 0).any() and (host == 1).any()
    assert host.tobytes() == device_values(incidence_cosine_of, dot).tobytes()


@wp.kernel
def _counter_draws(key: wp.uint64, word: wp.uint64, bits: wp.array(dtype=wp.uint64), u: wp.array(dtype=float),
                   v: wp.array(dtype=float), z: wp.array(dtype=float), z_sine: wp.array(dtype=float),
                   per_ray: wp.array(dtype=float)):
    i = wp.tid()
    b = lk.random_bits(key, wp.uint64(i), word)
    bits[i] = b
    u[i] = lk.uniform(b)
    v[i] = lk.second_uniform(b)
    z[i] = lk.gaussian_radius(b) * lk.box_muller_cosine(b, wp.uint64(0))
    z_sine[i] = lk.gaussian_radius(b) * lk.box_muller_cosine(b, wp.uint64(1))
    per_ray[i] = lk.ray_gaussian(key, wp.uint64(i), word)


def test_counter_draws_are_the_host_bytes():
    """radarays_ros/counter_random.py on Warp's CPU device and in the host's numba loops, 2^20 draws of two words:
    the same bits, uniforms and Gaussians (both Box-Muller halves; per ray as the lidar kernel draws them against
    the host's `gaussians`), byte for byte (integer steps and exactly rounded float32 operations)."""
    from radarays_ros.counter_random import frame_key64, gaussians
    from support.draws import host_draws

    n = 1 << 20
    key = frame_key64([3, 7, 10**8])
    for word in (0, 5):
        device = [wp.empty(n, dtype=t, device="cpu") for t in (wp.uint64, float, float, float, float, float)]
        wp.launch(_counter_draws, dim=n, inputs=[wp.uint64(int(key)), wp.uint64(word), *device], device="cpu")
        for host, dev in zip(host_draws(key, n, word), device):
            assert host.tobytes() == dev.numpy().tobytes()
        assert gaussians(key, 0, word, n).tobytes() == device[-1].numpy().tobytes()  # the kernel's ray_gaussian


@wp.kernel
def _jittered(d: wp.array(dtype=wp.vec3), z: wp.array(dtype=wp.vec3), sigma: float, out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    x, y, w = lk.jittered_direction(d[i][0], d[i][1], d[i][2], z[i][0], z[i][1], z[i][2], sigma)
    out[i] = wp.vec3(x, y, w)


def test_angular_jitter_is_the_host_bytes():
    """noise.jittered_direction in Warp and in the host's numba loop (noise._jitter_compiled): the same bytes."""
    from lidar_ros.physics import noise

    rng = np.random.default_rng(4)
    d = rng.normal(size=(4096, 3)).astype(np.float32)
    z = rng.normal(size=(4096, 3)).astype(np.float32)
    out = wp.empty(len(d), dtype=wp.vec3, device="cpu")
    wp.launch(_jittered, dim=len(d), device="cpu", inputs=[wp.array(d, dtype=wp.vec3, device="cpu"),
                                                            wp.array(z, dtype=wp.vec3, device="cpu"), 0.003, out])
    host = np.array([noise._jittered_compiled(*d[i], *z[i], np.float32(0.003)) for i in range(len(d))], np.float32)
    assert host.tobytes() == out.numpy().tobytes()
    assert np.abs(np.linalg.norm(host.astype(np.float64), axis=1) - 1).max() < 1e-6
