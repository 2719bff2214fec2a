"""A geometry pass's per-ray physics as compiled loops: the tubes of a block, and the returns of a bounce.

No formula of its own. Each helper compiles one formula of another file and is tested against it
(test/test_radar_geometry_physics.py) at a stated bound:
- `_one_way`: antenna.one_way (gaussian exp(-4 ln2 (x/w)^2), sinc sinc^2(0.88589 x / w));
- `_elevation`: antenna.elevation_one_way (with the cosec^2 fill);
- `_sigma0`: backscatter.ScatterTable.sigma0_at (the table's fine grid, a linear blend);
- `_coherent`: roughness.coherent_reflectivity (|Gamma|^2 exp(-(4 pi h cos(theta) / lambda)^2));
- the radar equation (radar_equation.py): k g_t g_r rho^n sigma / (R_t^2 R_r^2).
The loops' bodies are geometry._tubes and geometry._trace_block's lines, in their order; the
transcendental functions are libm's (numpy uses its own SIMD ones), so values differ from numpy's in
the last bits (tested within a few ULP: 1e-14 relative; a return's power within 1e-12).

Why: after each trace a bounce ran some eighty numpy passes over its rays (arccos, the sigma0 lookup,
the area, the footprint's corners, the two-way pattern, the arrival direction's pattern, the bistatic
sigma0, the coherent reflectivity), each with its temporaries: about 60 ms of a Navtech frame of the 1 M
city on one core. One loop per ray does them at once, and it skips what cannot reach the image: the
bistatic pattern and sigma0 of a return that faces away from the sensor (its power is 0 anyway), the
coherent reflectivity after the last bounce (no child is traced).
"""
from __future__ import annotations

import math

import numpy as np

from ...compiled import inlined, kernel

PATTERNS = {"gaussian": 0, "sinc": 1}  # antenna.one_way's shapes
SINC_HALF_POWER = 0.44295  # antenna.SINC_HALF_POWER
FOUR_LN2 = 4.0 * math.log(2.0)


def antenna_parameters(cfg) -> np.ndarray:
    """antenna.gain's settings as a float64 vector for the loops: (azimuth width, azimuth shape,
    elevation width, tilt, elevation shape, cosec2, d0) (radians; shapes as PATTERNS; d0 the cosec^2
    fill's lower edge, antenna.elevation_one_way)."""
    for key in ("azimuth_pattern", "elevation_pattern"):
        if getattr(cfg, key) not in PATTERNS:
            raise ValueError(f"antenna.{key} = {getattr(cfg, key)!r}; allowed {', '.join(PATTERNS)}")
    width = math.radians(cfg.elevation_width_deg)
    tilt = math.radians(cfg.elevation_tilt_deg)
    d0 = max(-(tilt - width / 2.0), math.radians(1.0))
    return np.array([math.radians(cfg.azimuth_width_deg), PATTERNS[cfg.azimuth_pattern], width, tilt,
                     PATTERNS[cfg.elevation_pattern], 1.0 if cfg.cosec2 else 0.0, d0])


@inlined
def _one_way(x, width, shape):
    """antenna.one_way: gaussian exp(-4 ln2 (x / w)^2); sinc sinc(2 * 0.44295 x / w)^2 with np.sinc's
    sin(pi u) / (pi u) (u = 0 read as 1e-20, as np.sinc does)."""
    if shape == 0:
        r = x / width
        return math.exp(-FOUR_LN2 * (r * r))
    u = 2.0 * SINC_HALF_POWER * x / width
    if u == 0.0:
        u = 1.0e-20
    y = math.pi * u
    s = math.sin(y) / y
    return s * s


@inlined
def _elevation(e, p):
    """antenna.elevation_one_way at elevation e (p: antenna_parameters)."""
    g = _one_way(e - p[3], p[2], p[4])
    if p[5] != 0.0:
        d0 = p[6]
        depression = -e
        if depression > d0:
            clipped = min(depression, 0.5 * math.pi)
            ratio = math.sin(d0) / math.sin(clipped)
            fill = 0.5 * (ratio * ratio)
            if fill > g:
                g = fill
    return g


@inlined
def _gain(beta, e, p):
    """antenna.gain: one-way power pattern (peak 1) at azimuth offset beta, elevation e."""
    return _one_way(beta, p[0], p[1]) * _elevation(e, p)


@inlined
def _sigma0(fine, cls, theta, scale):
    """ScatterTable.sigma0_at: the fine table (classes, angles) at class cls and incidence theta."""
    top = fine.shape[1] - 1.000001
    x = theta * scale
    if x < 0.0:
        x = 0.0
    elif x > top:
        x = top
    i = int(x)
    x -= i
    low = fine[cls, i]
    return low + (fine[cls, i + 1] - low) * x


@inlined
def _coherent(gamma2, rms_height, cos_theta, wavelength):
    """roughness.coherent_reflectivity."""
    r = 4.0 * math.pi * rms_height * cos_theta / wavelength
    return gamma2 * math.exp(-(r * r))


def gain(beta: np.ndarray, e: np.ndarray, cfg) -> np.ndarray:
    """antenna.gain(beta, e, cfg) through the compiled pattern (for tests and callers with arrays)."""
    beta, e = np.broadcast_arrays(np.asarray(beta, np.float64), np.asarray(e, np.float64))
    out = np.empty(beta.shape)
    _gains(np.ascontiguousarray(beta).reshape(-1), np.ascontiguousarray(e).reshape(-1), antenna_parameters(cfg),
           out.reshape(-1))
    return out


@kernel
def _gains(beta, e, p, out):
    for i in range(beta.shape[0]):
        out[i] = _gain(beta[i], e[i], p)


def sigma0(table, cls: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """table.sigma0_at(cls, theta) through the compiled lookup (for tests)."""
    cls, theta = np.broadcast_arrays(np.asarray(cls, np.int64), np.asarray(theta, np.float64))
    out = np.empty(cls.shape)
    _sigma0s(table._fine, np.ascontiguousarray(cls).reshape(-1), np.ascontiguousarray(theta).reshape(-1),
             float(table._fine_scale), out.reshape(-1))
    return out


@kernel
def _sigma0s(fine, cls, theta, scale, out):
    for i in range(cls.shape[0]):
        out[i] = _sigma0(fine, cls[i], theta[i], scale)


def coherent_reflectivity(gamma2, rms_height, cos_theta, wavelength: float) -> np.ndarray:
    """roughness.coherent_reflectivity through the compiled formula (for tests)."""
    g, h, c = np.broadcast_arrays(*(np.asarray(v, np.float64) for v in (gamma2, rms_height, cos_theta)))
    out = np.empty(g.shape)
    _coherents(np.ascontiguousarray(g).reshape(-1), np.ascontiguousarray(h).reshape(-1),
               np.ascontiguousarray(c).reshape(-1), float(wavelength), out.reshape(-1))
    return out


@kernel
def _coherents(g, h, c, wavelength, out):
    for i in range(g.shape[0]):
        out[i] = _coherent(g[i], h[i], c[i], wavelength)


def tubes(beta, e, d_beta, d_e, b_lo, b_hi, e_lo, e_hi, rot, sensor_velocity, antenna: np.ndarray, period: int = 0) -> tuple:
    """geometry._tubes' arrays of azimuth rows (each (K, S); rot (K, 3, 3) world <- column, sensor_velocity
    (K, 3)): (d, dd_e, dd_b, steps_e, steps_b, d_omega, g_tx, v_r), flat azimuth-major (T = K S). In the
    column frame d = (cos e cos b, cos e sin b, sin e), dd_e = (-sin e cos b, -sin e sin b, cos e),
    dd_b = (-cos e sin b, cos e cos b, 0), each turned into the world by rot; steps = bounds - sample;
    d_omega = d_beta d_e cos e; g_tx the one-way pattern; v_r = -(v_sensor . d).
    period: the elevations of a row repeat every `period` samples (the beam's grid, geometry.beam_rows: S = azimuth
    samples x elevation samples, elevation fastest), 0: no such repeat. A sample whose azimuth equals the one before
    (bit for bit), or whose elevation equals the one `period` before, reuses their sines, cosines and pattern: the
    same values, each computed once per row (measured on a ras6 frame, one core: 4.1 -> 1.6 ms)."""
    k, s = beta.shape
    t = k * s
    out = (np.empty((t, 3)), np.empty((t, 3)), np.empty((t, 3)), np.empty((t, 2)), np.empty((t, 2)), np.empty(t),
           np.empty(t), np.empty(t))
    args = [np.ascontiguousarray(v, np.float64) for v in (beta, e, d_beta, d_e, b_lo, b_hi, e_lo, e_hi, rot, sensor_velocity)]
    _tubes(args[0].view(np.int64), args[1].view(np.int64), int(period), *args, antenna, *out)
    return out


@inlined
def _turn(out, t, r, cx, cy, cz):
    """out[t] = r (cx, cy, cz): a column-frame vector into the world."""
    for i in range(3):
        out[t, i] = (cx * r[i, 0] + cy * r[i, 1]) + cz * r[i, 2]


@kernel
def _tubes(beta_bits, e_bits, period, beta, e, d_beta, d_e, b_lo, b_hi, e_lo, e_hi, rot, velocity, p,
           d, dd_e, dd_b, steps_e, steps_b, d_omega, g_tx, v_r):
    k_count, s_count = beta.shape
    cb = sb = g_b = 0.0
    cos_e, sin_e, g_e = np.empty(s_count), np.empty(s_count), np.empty(s_count)  # the row's, by sample
    for k in range(k_count):
        r = rot[k]
        for j in range(s_count):
            t = k * s_count + j
            b, el = beta[k, j], e[k, j]
            if j == 0 or beta_bits[k, j] != beta_bits[k, j - 1]:  # (bits: -0.0 and 0.0 have sines of two signs)
                cb, sb, g_b = math.cos(b), math.sin(b), _one_way(b, p[0], p[1])
            if period > 0 and j >= period and e_bits[k, j] == e_bits[k, j - period]:
                cos_e[j], sin_e[j], g_e[j] = cos_e[j - period], sin_e[j - period], g_e[j - period]
            else:
                cos_e[j], sin_e[j], g_e[j] = math.cos(el), math.sin(el), _elevation(el, p)
            ce, se = cos_e[j], sin_e[j]
            _turn(d, t, r, ce * cb, ce * sb, se)
            _turn(dd_e, t, r, -se * cb, -se * sb, ce)
            _turn(dd_b, t, r, -ce * sb, ce * cb, 0.0)
            steps_e[t, 0], steps_e[t, 1] = e_lo[k, j] - el, e_hi[k, j] - el
            steps_b[t, 0], steps_b[t, 1] = b_lo[k, j] - b, b_hi[k, j] - b
            d_omega[t] = d_beta[k, j] * d_e[k, j] * ce
            g_tx[t] = g_b * g_e[j]  # _gain(b, el, p): the same product
            v_r[t] = -((velocity[k, 0] * d[t, 0] + velocity[k, 1] * d[t, 1]) + velocity[k, 2] * d[t, 2])


def bounce_returns(bounce: int, multipath: bool, last: bool, idx, cls, cos_t, path, n, hit, rho, straight, volume_class,
                   tubes, sensor, az, column_rot, table, antenna: np.ndarray, k_radar: float, wavelength: float,
                   invisible_w: float, min_cos: float) -> tuple:
    """The returns of a bounce's kept rays (geometry._trace_block after its kept_hits): (near, far, power) of
    the clutter back along the path (first hits: footprint corners on the hit plane; later bounces: the
    tube's half-width about the path), the bistatic return straight to the sensor (near_b, far_b, power_b,
    u, back_len: zero power unless multipath, bounce > 0, lit and above invisible_w), and the coherent
    reflectivity rho_c of the surface (zeros on the last bounce: no child is traced).
    tubes: geometry._Tubes (d_omega, g_tx, dd_e, dd_b, steps_e, steps_b by tube index idx);
    volume_class: (classes,) bool, foliage (their monostatic sigma is 0: foliage.py returns from the depth)."""
    m = len(idx)
    out = tuple(np.empty(m) for _ in range(5)) + (np.zeros(m), np.zeros(m), np.empty((m, 3)), np.empty(m))
    _bounce(int(bounce), bool(multipath and bounce), bool(last), np.ascontiguousarray(idx, np.int64),
            np.ascontiguousarray(cls, np.int64), cos_t, path, n, hit, rho, straight, volume_class, tubes.d_omega, tubes.g_tx,
            tubes.dd_e, tubes.dd_b, tubes.steps_e, tubes.steps_b, sensor, np.ascontiguousarray(az, np.int64), column_rot,
            table._fine, float(table._fine_scale), table.gamma2, table.rms_height, antenna, float(k_radar),
            float(wavelength), float(invisible_w), float(min_cos), *out)
    near, far, power, near_b, far_b, power_b, rho_c, u, back_len = out
    return near, far, power, near_b, far_b, power_b, u, back_len, rho_c


@kernel
def _bounce(bounce, bistatic, last, idx, cls, cos_t, path, n, hit, rho, straight, volume_class, d_omega, g_tx,
            dd_e, dd_b, steps_e, steps_b, sensor, az, column_rot, fine, scale, gamma2, rms_height, p, k_radar,
            wavelength, invisible_w, min_cos,
            near, far, power, near_b, far_b, power_b, rho_c, u, back_len):
    for j in range(idx.shape[0]):
        t, c, ct, r_path = idx[j], cls[j], cos_t[j], path[j]
        theta = math.acos(ct)
        cos_floor = max(ct, min_cos)
        area = r_path * r_path * d_omega[t] / cos_floor
        sigma = 0.0 if volume_class[c] else _sigma0(fine, c, theta, scale) * area
        tan_t = math.sqrt(1.0 - ct * ct) / cos_floor
        if bounce == 0:  # range at the stratum's corners, first order on the hit plane
            slope_e = r_path * ((dd_e[t, 0] * n[j, 0] + dd_e[t, 1] * n[j, 1]) + dd_e[t, 2] * n[j, 2]) / cos_floor
            slope_b = r_path * ((dd_b[t, 0] * n[j, 0] + dd_b[t, 1] * n[j, 1]) + dd_b[t, 2] * n[j, 2]) / cos_floor
            e0, e1 = slope_e * steps_e[t, 0], slope_e * steps_e[t, 1]
            b0, b1 = slope_b * steps_b[t, 0], slope_b * steps_b[t, 1]
            near[j] = r_path + max(min(e0, e1) + min(b0, b1), -0.5 * r_path)
            far[j] = r_path + min(max(e0, e1) + max(b0, b1), 0.5 * r_path)
        else:
            half = min(0.5 * r_path * math.sqrt(d_omega[t]) * tan_t, 0.25 * r_path)
            near[j], far[j] = r_path - half, r_path + half
        g_t = g_tx[t]
        r4 = (r_path * r_path) * (r_path * r_path)
        if bounce == 0:
            power[j] = k_radar * g_t * g_t * sigma / r4
        else:  # a ghost back along the mirror path
            power[j] = k_radar * g_t * g_t * (rho[j] * rho[j]) * sigma / r4
        if bistatic:  # straight back to the sensor, received with the pattern at its arrival direction
            bx, by, bz = sensor[t, 0] - hit[j, 0], sensor[t, 1] - hit[j, 1], sensor[t, 2] - hit[j, 2]
            length = max(math.sqrt((bx * bx + by * by) + bz * bz), 1e-9)
            ux, uy, uz = bx / length, by / length, bz / length
            u[j, 0], u[j, 1], u[j, 2] = ux, uy, uz
            back_len[j] = length
            shift = 0.5 * (length - r_path)  # the footprint at the bistatic apparent range
            mid = 0.5 * (near[j] + far[j]) + shift
            quarter = 0.5 * (far[j] - near[j]) / 2.0
            near_b[j], far_b[j] = mid - quarter, mid + quarter
            n_u = (n[j, 0] * ux + n[j, 1] * uy) + n[j, 2] * uz
            if n_u > 0.0 and not straight[j]:  # lit (a ray straight through foliage: its way back is the way out)
                rot = column_rot[az[t]]
                ax = -((ux * rot[0, 0] + uy * rot[1, 0]) + uz * rot[2, 0])  # R^T (-u): the arrival in the column frame
                ay = -((ux * rot[0, 1] + uy * rot[1, 1]) + uz * rot[2, 1])
                az_ = -((ux * rot[0, 2] + uy * rot[1, 2]) + uz * rot[2, 2])
                g_r = _gain(math.atan2(ay, ax), math.asin(min(max(az_, -1.0), 1.0)), p)
                theta_b = 0.5 * (theta + math.acos(min(n_u, 1.0)))
                sigma_b = _sigma0(fine, c, theta_b, scale) * area
                value = k_radar * g_t * g_r * rho[j] * sigma_b / ((r_path * r_path) * (length * length))
                if value > invisible_w:  # not worth an occlusion trace: 40 dB under the noise
                    power_b[j] = value
        if not last:
            rho_c[j] = _coherent(gamma2[c], rms_height[c], ct, wavelength)
