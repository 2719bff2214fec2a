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
