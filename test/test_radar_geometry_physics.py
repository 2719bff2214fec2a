"""A geometry pass's compiled per-ray physics (issue #22, performance).

The loops changed a physical frame's bytes on purpose: their acos, atan2, asin, sin and exp are libm's
(numpy's are SIMD: they differ in the last bits). So: each compiled formula against its numpy form at a
stated bound (the numpy code the loops replaced is kept here as it stood), and whole frames against the
numpy path, byte by byte where nothing can differ and by their statistics where it can.
"""
from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from radarays_ros.radar import RadarSimulator
from radarays_ros.radar.physical import antenna, geometry, geometry_physics, roughness
from radarays_ros.radar.physical.backscatter import load_table
from radarays_ros.tracing import make_backend
from support.radar_physical import EYE, LIB, ground, physical, plate, scene
from support.radar_scenes import box

REL = 1e-13  # a few ULP of float64: libm's and numpy's transcendental functions are both within ~2 ULP


def _antenna_cfg(azimuth_pattern, elevation_pattern, cosec2, tilt=0.0):
    return physical(antenna={"azimuth_pattern": azimuth_pattern, "elevation_pattern": elevation_pattern,
                             "cosec2": cosec2, "elevation_tilt_deg": tilt, "azimuth_width_deg": 1.8,
                             "elevation_width_deg": 25.0}).antenna


@pytest.mark.parametrize("azimuth_pattern", ["sinc", "gaussian"])
@pytest.mark.parametrize("elevation_pattern,cosec2,tilt", [("gaussian", False, 0.0), ("sinc", True, -3.0), ("gaussian", True, 2.0)])
def test_compiled_antenna_pattern_against_antenna_gain(azimuth_pattern, elevation_pattern, cosec2, tilt):
    cfg = _antenna_cfg(azimuth_pattern, elevation_pattern, cosec2, tilt)
    rng = np.random.default_rng(1)
    beta = np.concatenate([rng.uniform(-0.2, 0.2, 20000), [0.0, -0.0, 1e-30, math.radians(1.8) / 0.88589]])
    e = np.concatenate([rng.uniform(-1.5, 1.5, 20000), [math.radians(tilt), 0.0, -1.5, -0.7]])
    want = antenna.gain(beta, e, cfg)
    got = geometry_physics.gain(beta, e, cfg)
    assert np.all(np.abs(got - want) <= REL * np.abs(want) + 1e-300)
    assert got[-4] == want[-4] == 1.0  # boresight: sinc(0) read as sin(pi 1e-20) / (pi 1e-20)


def test_compiled_antenna_pattern_refuses_an_unknown_shape():
    cfg = SimpleNamespace(**{**vars(_antenna_cfg("sinc", "gaussian", False)), "elevation_pattern": "cosine"})
    with pytest.raises(ValueError, match="elevation_pattern = 'cosine'; allowed gaussian, sinc"):
        geometry_physics.antenna_parameters(cfg)


def _table():
    return load_table("backscatter_77ghz", "concrete", LIB)


def test_compiled_sigma0_gives_the_table_lookup_bytes():
    table = _table()
    rng = np.random.default_rng(2)
    cls = rng.integers(0, len(table.classes), 50000)
    theta = np.concatenate([rng.uniform(-0.1, 1.7, 49996), [0.0, math.pi / 2, 2.0, -1.0]])
    assert geometry_physics.sigma0(table, cls, theta).tobytes() == table.sigma0_at(cls, theta).tobytes()


def test_compiled_coherent_reflectivity_against_roughness():
    table = _table()
    rng = np.random.default_rng(3)
    cls = rng.integers(0, len(table.classes), 50000)
    cos_t = np.concatenate([rng.uniform(0, 1, 49998), [0.0, 1.0]])
    want = roughness.coherent_reflectivity(table.gamma2[cls], table.rms_height[cls], cos_t, 0.0039)
    got = geometry_physics.coherent_reflectivity(table.gamma2[cls], table.rms_height[cls], cos_t, 0.0039)
    assert np.all(np.abs(got - want) <= REL * want)


# --- the numpy code the loops replaced (geometry.py before the loops), as it stood ---

def _dot(a, b):
    return a[:, 0] * b[:, 0] + a[:, 1] * b[:, 1] + a[:, 2] * b[:, 2]


def _tubes_numpy(beta, e, d_beta, d_e, b_lo, b_hi, e_lo, e_hi, rot, sensor_velocity, cfg):
    s = beta.shape[1]
    cb, sb, ce, se = np.cos(beta), np.sin(beta), np.cos(e), np.sin(e)
    turn = lambda v: np.matmul(v, rot.transpose(0, 2, 1)).reshape(-1, 3)  # noqa: E731
    d = turn(np.stack([ce * cb, ce * sb, se], axis=-1))
    return (d, turn(np.stack([-se * cb, -se * sb, ce], axis=-1)), turn(np.stack([-ce * sb, ce * cb, np.zeros_like(e)], axis=-1)),
            np.stack([(e_lo - e).reshape(-1), (e_hi - e).reshape(-1)], axis=1),
            np.stack([(b_lo - beta).reshape(-1), (b_hi - beta).reshape(-1)], axis=1),
            (d_beta * d_e * np.cos(e)).reshape(-1), antenna.gain(beta, e, cfg).reshape(-1),
            -_dot(np.repeat(sensor_velocity, s, axis=0), d))


def _rotations(rng, k):
    q = rng.normal(size=(k, 4))
    q /= np.linalg.norm(q, axis=1)[:, None]
    w, x, y, z = q.T
    return np.stack([np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
                     np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
                     np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1)], 1)


def test_compiled_tubes_against_numpy():
    cfg = _antenna_cfg("sinc", "gaussian", False)
    rng = np.random.default_rng(4)
    k, s = 37, 40
    beta, e = rng.uniform(-0.1, 0.1, (k, s)), rng.uniform(-0.7, 0.7, (k, s))
    d_beta, d_e = rng.uniform(0, 0.01, (k, s)), rng.uniform(0, 0.05, (k, s))
    b_lo, b_hi, e_lo, e_hi = beta - d_beta / 3, beta + d_beta / 2, e - d_e / 4, e + d_e / 2
    rot, velocity = _rotations(rng, k), rng.normal(size=(k, 3)) * 10
    args = (beta, e, d_beta, d_e, b_lo, b_hi, e_lo, e_hi, rot, velocity)
    want = _tubes_numpy(*args, cfg)
    got = geometry_physics.tubes(*args, geometry_physics.antenna_parameters(cfg))
    names = ("d", "dd_e", "dd_b", "steps_e", "steps_b", "d_omega", "g_tx", "v_r")
    for name, g, w in zip(names, got, want):
        assert g.shape == w.shape, name
        bound = {"v_r": 1e-13 * 30, "g_tx": REL * np.abs(w)}.get(name, 1e-15)  # unit vectors: absolute; v_r: |v| ~ 30 m/s
        assert np.all(np.abs(g - w) <= bound), name
    assert got[3].tobytes() == want[3].tobytes() and got[4].tobytes() == want[4].tobytes()  # differences: exact


def test_tubes_on_the_beam_grid_reuse_only_equal_angles():
    """period: a row's azimuths in runs and its elevations repeating every `period` samples (the beam's grid); the
    reused sines and pattern must give the bytes of computing every sample afresh, also where a row breaks the grid
    and where an angle is -0.0 against 0.0 (equal as floats, sines of two signs)."""
    cfg = _antenna_cfg("sinc", "gaussian", False)
    rng = np.random.default_rng(5)
    k, nb, ne = 9, 4, 6
    beta = np.repeat(rng.uniform(-0.1, 0.1, (k, nb)), ne, axis=1)
    e = np.tile(rng.uniform(-0.7, 0.7, (k, ne)), nb)
    beta[1, :ne], beta[1, ne:2 * ne] = 0.0, -0.0
    e[2, 0], e[2, ne] = 0.0, -0.0
    e[3, 2 * ne + 1] += 1e-9  # off the grid
    d_beta, d_e = rng.uniform(0, 0.01, (k, nb * ne)), rng.uniform(0, 0.05, (k, nb * ne))
    args = (beta, e, d_beta, d_e, beta - d_beta / 3, beta + d_beta / 2, e - d_e / 4, e + d_e / 2, _rotations(rng, k),
            rng.normal(size=(k, 3)) * 10, geometry_physics.antenna_parameters(cfg))
    fresh = geometry_physics.tubes(*args)
    reused = geometry_physics.tubes(*args, period=ne)
    assert all(a.tobytes() == b.tobytes() for a, b in zip(fresh, reused))


def _bounce_numpy(bounce, multipath, idx, cls, cos_t, path, n, hit, rho, straight, is_volume, f, sensor, az, column_rot,
                  table, cfg, k_radar, lam, invisible_w, min_cos):
    """geometry._trace_block's lines for one bounce (after kept_hits), as they stood before the loop."""
    d_omega = f.d_omega
    theta = np.arccos(cos_t)
    area = path ** 2 * d_omega[idx] / np.maximum(cos_t, min_cos)
    sigma = table.sigma0_at(cls, theta) * area
    sigma[is_volume[cls]] = 0.0
    tan_t = np.sqrt(1.0 - cos_t ** 2) / np.maximum(cos_t, min_cos)
    if bounce == 0:
        slope_e = path * _dot(f.dd_e[idx], n) / np.maximum(cos_t, min_cos)
        slope_b = path * _dot(f.dd_b[idx], n) / np.maximum(cos_t, min_cos)
        e0, e1 = slope_e * f.steps_e[idx, 0], slope_e * f.steps_e[idx, 1]
        b0, b1 = slope_b * f.steps_b[idx, 0], slope_b * f.steps_b[idx, 1]
        near = path + np.maximum(np.minimum(e0, e1) + np.minimum(b0, b1), -0.5 * path)
        far = path + np.minimum(np.maximum(e0, e1) + np.maximum(b0, b1), 0.5 * path)
    else:
        half = np.minimum(0.5 * path * np.sqrt(d_omega[idx]) * tan_t, 0.25 * path)
        near, far = path - half, path + half
    g_t = f.g_tx[idx]
    out = {"near": near, "far": far}
    if bounce == 0:
        out["power"] = k_radar * g_t * g_t * sigma / path ** 4
    else:
        out["power"] = k_radar * g_t * g_t * rho ** 2 * sigma / path ** 4
        if multipath:
            back = sensor[idx] - hit
            back_len = np.maximum(np.sqrt(_dot(back, back)), 1e-9)
            u = back / back_len[:, None]
            arrival = np.einsum("nji,nj->ni", column_rot[az[idx]], -u)
            g_r = antenna.gain(np.arctan2(arrival[:, 1], arrival[:, 0]), np.arcsin(np.clip(arrival[:, 2], -1, 1)), cfg)
            n_u = _dot(n, u)
            lit = (n_u > 0) & ~straight
            theta_b = 0.5 * (theta + np.arccos(np.clip(n_u, -1, 1)))
            sigma_b = table.sigma0_at(cls, theta_b) * area
            p = np.where(lit, k_radar * g_t * g_r * rho * sigma_b / (path ** 2 * back_len ** 2), 0.0)
            out["power_b"] = np.where(p > invisible_w, p, 0.0)
            shift = 0.5 * (back_len - path)
            out["near_b"] = 0.5 * (near + far) + shift - 0.5 * (far - near) / 2
            out["far_b"] = 0.5 * (near + far) + shift + 0.5 * (far - near) / 2
            out["u"], out["back_len"] = u, back_len
    out["rho_c"] = roughness.coherent_reflectivity(table.gamma2[cls], table.rms_height[cls], cos_t, lam)
    return out


@pytest.mark.parametrize("bounce,multipath", [(0, True), (1, True), (2, False)])
def test_compiled_bounce_returns_against_numpy(bounce, multipath):
    table = _table()
    cfg = _antenna_cfg("sinc", "gaussian", False)
    rng = np.random.default_rng(10 + bounce)
    k, s, m = 12, 30, 6000
    beta, e = rng.uniform(-0.05, 0.05, (k, s)), rng.uniform(-0.5, 0.5, (k, s))
    d_beta, d_e = rng.uniform(0, 0.01, (k, s)), rng.uniform(0, 0.05, (k, s))
    rot = _rotations(rng, k)
    tubes = geometry_physics.tubes(beta, e, d_beta, d_e, beta - d_beta / 2, beta + d_beta / 2, e - d_e / 2,
                                   e + d_e / 2, rot, np.zeros((k, 3)), geometry_physics.antenna_parameters(cfg))
    f = geometry._Tubes(beta, e, np.repeat(np.arange(k), s), np.repeat(rng.normal(size=(k, 3)), s, axis=0), *tubes)
    idx = np.sort(rng.integers(0, k * s, m))
    cls = rng.integers(0, len(table.classes), m)
    n = rng.normal(size=(m, 3))
    n /= np.linalg.norm(n, axis=1)[:, None]
    cos_t = np.clip(rng.uniform(-0.1, 1.05, m), 0, 1)  # incl. exactly 0 and 1
    path = rng.uniform(0.5, 300, m)
    hit = f.sensor[idx] + rng.normal(size=(m, 3)) * path[:, None] / 2
    rho = rng.uniform(0, 1, m)
    straight = rng.uniform(size=m) < 0.1
    is_volume = np.array([c == "vegetation" for c in table.classes])
    k_radar, lam, invisible_w, min_cos = 3e-3, 0.0039, 1e-16, geometry.MIN_COS
    want = _bounce_numpy(bounce, multipath, idx, cls, cos_t, path, n, hit, rho, straight, is_volume, f, f.sensor, f.az,
                         rot, table, cfg, k_radar, lam, invisible_w, min_cos)
    near, far, power, near_b, far_b, power_b, u, back_len, rho_c = geometry_physics.bounce_returns(
        bounce, multipath, False, idx, cls, cos_t, path, n, hit, rho, straight, is_volume, f, f.sensor, f.az, rot, table,
        geometry_physics.antenna_parameters(cfg), k_radar, lam, invisible_w, min_cos)
    close = lambda got, w, rel: np.all(np.abs(got - w) <= rel * np.abs(w))  # noqa: E731
    assert close(near, want["near"], 1e-13) and close(far, want["far"], 1e-13)
    # acos and the sigma0 blend: the lookup's index may move by a grid step only when theta sits on one (never here)
    assert close(power, want["power"], 1e-12)
    assert close(rho_c, want["rho_c"], REL)
    if bounce and multipath:
        lit = want["power_b"] > 0
        assert 0 < lit.sum() < m and np.array_equal(power_b > 0, lit)  # the same returns pass the gates
        assert close(power_b, want["power_b"], 1e-12)
        assert close(near_b, want["near_b"], 1e-13) and close(far_b, want["far_b"], 1e-13)
        assert close(back_len, want["back_len"], 1e-15) and np.all(np.abs(u - want["u"]) <= 1e-15)
    else:
        assert not power_b.any()
    # the last bounce traces no child: no reflectivity
    last = geometry_physics.bounce_returns(bounce, multipath, True, idx, cls, cos_t, path, n, hit, rho, straight, is_volume,
                                           f, f.sensor, f.az, rot, table, geometry_physics.antenna_parameters(cfg), k_radar,
                                           lam, invisible_w, min_cos)
    assert not last[-1].any() and last[2].tobytes() == power.tobytes()


# --- whole frames against the numpy path ---

def _numpy_geometry(monkeypatch, table_holder):
    """geometry_physics' loops replaced by the numpy they replaced."""
    def tubes(beta, e, d_beta, d_e, b_lo, b_hi, e_lo, e_hi, rot, velocity, pattern, period=0):
        return _tubes_numpy(beta, e, d_beta, d_e, b_lo, b_hi, e_lo, e_hi, rot, velocity, table_holder["cfg"].antenna)

    def bounce(bounce, multipath, last, idx, cls, cos_t, path, n, hit, rho, straight, is_volume, f, sensor, az, column_rot,
               table, pattern, k_radar, lam, invisible_w, min_cos):
        w = _bounce_numpy(bounce, multipath, idx, cls, cos_t, path, n, hit, rho, straight, is_volume, f, sensor, az,
                          column_rot, table, table_holder["cfg"].antenna, k_radar, lam, invisible_w, min_cos)
        zeros = np.zeros(len(idx))
        return (w["near"], w["far"], w["power"], w.get("near_b", zeros), w.get("far_b", zeros), w.get("power_b", zeros),
                w.get("u", np.zeros((len(idx), 3))), w.get("back_len", zeros), w["rho_c"])

    monkeypatch.setattr(geometry_physics, "tubes", tubes)
    monkeypatch.setattr(geometry_physics, "bounce_returns", bounce)


def _street():
    wall_mesh, wall_pose = box((0.3, 40.0, 6.0), (0.0, 9.0, 1.5), math.pi / 2)
    return scene(ground("asphalt", 120.0), (wall_mesh, wall_pose, "brick"), plate(25.0, 1.5), plate(14.0, 2.0, 0.4, "glass"),
                 plate(30.0, 3.0, 0.1, "vegetation"))


def _frame(cfg, world, monkeypatch, numpy_geometry=False):
    with monkeypatch.context() as m:
        if numpy_geometry:
            _numpy_geometry(m, {"cfg": cfg})
        return RadarSimulator(cfg, world, backend=make_backend("embree", world, threads=1)).simulate(EYE)


def _ras6_like():
    from pathlib import Path
    from radarays_ros.radar import RadarConfig
    cfg = RadarConfig.from_yaml(Path(geometry.__file__).resolve().parents[2] / "data/radar/navtech_ras6.yaml")
    return cfg.with_overrides({"azimuth.count": 200, "azimuth.step_deg": -1.8, "range.bins": 2000})


def test_the_compiled_geometry_changes_a_frame_only_at_rounding(monkeypatch):
    # same draws: only the geometry's last bits differ; through the float32 range FFT and the integer-power
    # detector they may move a few pixels by a count (the finding of issue #22: ~1e-7 of a row's power)
    cfg, world = _ras6_like(), _street()
    new = _frame(cfg, world, monkeypatch)
    old = _frame(cfg, world, monkeypatch, numpy_geometry=True)
    assert new.image.max() > 100  # a frame with strong returns
    rel = np.abs(new.energy.astype(np.float64) - old.energy) / np.maximum(old.energy, 1e-30)
    assert np.median(rel) < 1e-4 and np.quantile(rel, 0.999) < 0.05
    changed = new.image != old.image
    assert changed.mean() < 0.01 and np.abs(new.image.astype(int) - old.image).max() <= 2


def _band_floor_db(frames, bands=5):
    """The floor over range as the image shows it: the mean of 10 log10(power) per range band (all azimuths,
    all frames given), dB (robust to the few strong pixels a mean of powers hangs on)."""
    return np.array([np.mean([10 * np.mean(np.log10(np.maximum(b, 1e-30)))
                              for b in [np.array_split(f.energy.astype(np.float64), bands, axis=1)[k] for f in frames]])
                     for k in range(bands)])


def test_frames_with_the_compiled_geometry_have_the_numpy_paths_statistics(monkeypatch):
    cfg, world = _ras6_like(), _street()
    seeds = range(4)
    new = [_frame(cfg.with_overrides({"seed": s}), world, monkeypatch) for s in seeds]
    old = [_frame(cfg.with_overrides({"seed": s}), world, monkeypatch, numpy_geometry=True) for s in seeds]
    assert new[0].image.tobytes() != old[0].image.tobytes()  # other last bits
    # count histograms (pooled over the seeds): as close as two halves of the numpy path's seeds are (total variation)
    hist = lambda frames: sum(np.bincount(f.image.reshape(-1), minlength=256) for f in frames) / sum(f.image.size for f in frames)  # noqa: E731
    tv = 0.5 * np.abs(hist(new) - hist(old)).sum()
    tv_seeds = 0.5 * np.abs(hist(old[:2]) - hist(old[2:])).sum()
    assert tv < max(1.5 * tv_seeds, 0.005)
    # the floor over range (mean dB per band, pooled over 4 seeds): within 0.15 dB (seed to seed one frame moves ~0.1-0.25 dB)
    assert np.all(np.abs(_band_floor_db(new) - _band_floor_db(old)) <= 0.15)
    # median counts per band: within a count
    med = lambda frames: np.array([np.median(np.concatenate([np.array_split(f.image, 5, axis=1)[k].reshape(-1) for f in frames]))  # noqa: E731
                                   for k in range(5)])
    assert np.all(np.abs(med(new) - med(old)) <= 1)
    # the strong returns (glints, walls) stay where they are: the pixels above 100 counts, as many within 3 %
    strong_new, strong_old = (sum((f.image > 100).sum() for f in frames) for frames in (new, old))
    assert strong_old > 0 and abs(strong_new - strong_old) <= 0.03 * strong_old + 5


def test_noise_spectrum_on_its_band_gives_the_full_spectrum_bytes():
    # stage._noise_spectrum now returns the band only (finish adds it there): the same values as the full
    # (rows, n // 2 + 1) spectrum it used to build, zero elsewhere
    from radarays_ros.radar.physical import stage
    from radarays_ros.radar.physical.range_response import range_kernel

    kernel = range_kernel("hann", 8.5655e8, 0.04381, 8.0)
    n = stage._fft_length(700, kernel.taps)
    spectrum, support = stage._taps_spectrum(tuple(kernel.taps), n)
    re_band, im_band = stage._noise_spectrum(np.random.default_rng(3), 25, n, 2.5e-15, spectrum, support)
    rng = np.random.default_rng(3)  # the old construction, as it stood
    width = support.stop - support.start
    re, im = stage.speckle.unit_parts(rng, (25, 2 * width))
    band = np.arange(support.start, support.stop)
    real = (band == 0) | (2 * band == n)
    gain = np.float32(math.sqrt(n * 2.5e-15 / 2.0)) * spectrum[support]
    for k, got in enumerate((re_band, im_band)):
        part = slice(k * width, (k + 1) * width)
        full = np.zeros((25, n // 2 + 1), np.complex64)
        values = full[:, support]
        values.real, values.imag = re[:, part], im[:, part]
        values[:, real] = re[:, part][:, real] * np.float32(math.sqrt(2.0))
        values *= gain
        assert stage._full_spectrum(got, n, support).tobytes() == full.tobytes()
