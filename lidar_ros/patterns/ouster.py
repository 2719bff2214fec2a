"""Ouster OS0/OS1/OS2 from a sensor metadata JSON (legacy flat, fw 2.x or 3.x nested layout).

Geometry (ouster-sdk's documented lidar-frame model): measurement column m of W has encoder angle
theta_e = 2*pi*(1 - m/W) (the sensor turns clockwise seen from above, column 0 looks along +x of the
lidar frame); beam u leaves from n * (cos theta_e, sin theta_e, 0), n = lidar_origin_to_beam_origin,
in direction (cos(theta_e - az_u) cos(alt_u), sin(theta_e - az_u) cos(alt_u), sin(alt_u)), and the
reported range counts from the lidar origin (point = origin + (range - n) * direction). Points are
given in the sensor frame: lidar_to_sensor_transform (mm) is applied to the table.

Rows = beams, row 0 the top beam (= ouster-ros `ring`). Columns are destaggered: destaggered column
c of row u was measured in column (c - shift_u) mod W; shifts come from the metadata's
pixel_shift_by_row when W matches it, else from the beam azimuths (round(az*W/360), shifted >= 0).
All pixels of a measurement column fire together at m / (W * rate).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from radarays_ros.errors import ConfigError

from radarays_ros.validate import Rule

from ..physics._validate import fail
from ..spec import SpecReader, check_number
from . import Pattern, column_sequence

COLUMNS = (512, 1024, 2048)
RATES_HZ = (10, 20)
MAX_COLUMNS_PER_SECOND = 20480  # 2048x10 and 1024x20 are the fastest modes; 2048x20 does not exist
OS1_LEGACY_BEAM_ORIGIN_MM = 12.163  # ouster-sdk's value for OS-1 metadata that predates the field


def read_metadata(path: str | Path) -> dict:
    """Beam table and transforms of an Ouster metadata JSON, whatever its firmware layout."""
    path = Path(path)
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"ouster metadata {path} not found") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"ouster metadata {path}: not valid JSON ({exc})") from None
    except RecursionError:
        raise ConfigError(f"ouster metadata {path}: nested too deeply to be sensor metadata") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"ouster metadata {path}: cannot be read ({type(exc).__name__})") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"ouster metadata {path}: expected a JSON object")
    flat: dict = {}
    for value in raw.values():  # fw 2.x/3.x nest the fields in sections; legacy files are flat
        if isinstance(value, dict):
            flat.update(value)
    flat.update({k: v for k, v in raw.items() if not isinstance(v, dict)})
    where = f"ouster metadata {path}"
    for key in ("beam_altitude_angles", "beam_azimuth_angles"):
        if not isinstance(flat.get(key), list) or not flat[key]:
            raise ConfigError(f"{where}: {key} missing; expected a list of angles in degrees")
    alt = np.array([check_number(v, f"{where}: beam_altitude_angles[{i}]", -90, 90) for i, v in enumerate(flat["beam_altitude_angles"])])
    az = np.array([check_number(v, f"{where}: beam_azimuth_angles[{i}]", -180, 180) for i, v in enumerate(flat["beam_azimuth_angles"])])
    if len(alt) != len(az):
        raise ConfigError(f"{where}: {len(alt)} altitude but {len(az)} azimuth angles")
    prod_line = str(flat.get("prod_line", ""))
    origin_mm = flat.get("lidar_origin_to_beam_origin_mm")
    if origin_mm is None:
        origin_mm = OS1_LEGACY_BEAM_ORIGIN_MM if prod_line.startswith("OS-1") else 0.0
    transform = _transform16(flat, "lidar_to_sensor_transform", where)
    imu = _transform16(flat, "imu_to_sensor_transform", where)
    shifts = flat.get("pixel_shift_by_row")
    return {
        "altitude_deg": alt,
        "azimuth_deg": az,
        "beam_origin_m": check_number(origin_mm, f"{where}: lidar_origin_to_beam_origin_mm", 0, 1000) / 1000.0,
        "lidar_to_sensor": _mm_to_m(transform.reshape(4, 4)),
        "imu_to_sensor": _mm_to_m(imu.reshape(4, 4)),  # os_sensor <- os_imu (ouster-ros' os_imu frame)
        "pixel_shift_by_row": None if shifts is None else np.asarray(shifts, np.int64),
        "columns_per_frame": int(flat.get("columns_per_frame", 1024)),
        "prod_line": prod_line,
        "lidar_mode": _lidar_mode(flat.get("lidar_mode"), where),
        "udp_profile_lidar": str(flat.get("udp_profile_lidar") or ""),  # e.g. RNG19_RFL8_SIG16_NIR16_DUAL
    }


def _lidar_mode(value, where: str) -> tuple[int, float] | None:
    """(columns, rate_hz) of a metadata lidar_mode such as '1024x20'; None when absent."""
    if value is None:
        return None
    cols, sep, rate = str(value).partition("x")
    if not (sep and cols.isdigit() and rate.isdigit()):
        fail(f"{where}: lidar_mode", value, "not COLUMNSxRATE", "COLUMNSxRATE, e.g. 1024x10")
    return int(cols), float(rate)


def _mm_to_m(t: np.ndarray) -> np.ndarray:
    out = t.copy()
    out[:3, 3] *= 1e-3
    return out


def destagger_shifts(azimuth_deg: np.ndarray, cols: int) -> np.ndarray:
    """Per-beam column shift that lines the staggered beams up (smallest shift 0)."""
    s = np.round(np.asarray(azimuth_deg) * cols / 360.0).astype(np.int64)
    return s - s.min()


def build(spec: SpecReader, base_dir: Path, rate_hz: float) -> Pattern:
    meta = read_metadata(base_dir / spec.text("metadata"))
    cols = spec.checked("columns", Rule(int, choices=tuple(COLUMNS)), 1024)
    Rule(float, choices=tuple(RATES_HZ)).check(rate_hz, f"{spec.origin}: rate_hz")
    if cols * rate_hz > MAX_COLUMNS_PER_SECOND:
        fail(spec.where("columns"), cols, f"not an Ouster mode at rate_hz = {rate_hz:g}",
             "512x10, 1024x10, 2048x10, 512x20, 1024x20")
    stride = spec.number("beam_stride", 1, 1, 8, integer=True)
    alt = np.radians(meta["altitude_deg"][::stride])
    az_deg = meta["azimuth_deg"][::stride]
    rows = len(alt)
    given = meta["pixel_shift_by_row"]
    if given is not None and len(given) == len(meta["azimuth_deg"]) and cols == meta["columns_per_frame"]:
        shift = given[::stride]  # the metadata's own rows (a 64-beam unit of a 128-beam table: every second)
    else:
        shift = destagger_shifts(az_deg, cols)

    c = np.arange(cols)
    measured = (c[None, :] - shift[:, None]) % cols  # (rows, cols) measurement column of each destaggered pixel
    theta_e = 2 * np.pi * (1.0 - measured / cols)
    ray_az = theta_e - np.radians(az_deg)[:, None]
    ca = np.cos(alt)[:, None]
    d_lidar = np.stack(np.broadcast_arrays(ca * np.cos(ray_az), ca * np.sin(ray_az), np.sin(alt)[:, None]), axis=-1)
    n = meta["beam_origin_m"]
    o_lidar = np.stack([n * np.cos(theta_e), n * np.sin(theta_e), np.zeros_like(theta_e)], axis=-1)
    t = meta["lidar_to_sensor"]
    # ouster-ros (ROS 2) publishes points in os_lidar by default (point_cloud_frame), os_sensor on request;
    # the rays are cast in os_sensor, the frame a user places the sensor by
    point_frame = spec.choice("point_frame", ("lidar", "sensor"), "lidar")
    return Pattern(
        point_transform=np.linalg.inv(t) if point_frame == "lidar" else None,
        point_frame_id="os_lidar" if point_frame == "lidar" else "os_sensor",
        ray_frame_id="os_sensor",
        imu_transform=meta["imu_to_sensor"],
        imu_frame_id="os_imu",
        directions=d_lidar @ t[:3, :3].T,
        origins=o_lidar @ t[:3, :3].T + t[:3, 3],
        ring=np.arange(rows),
        laser_index=np.arange(rows) * stride,
        column_times=column_sequence(cols, 1.0 / rate_hz),
        pixel_column=measured,
        beam_time_offset=np.zeros(rows),
        period=1.0 / rate_hz,
        range_offset=np.full(rows, n),
        pixel_shift=shift,
        driver_metadata=published_metadata(base_dir / spec.text("metadata"), stride, cols, rate_hz, shift),
    )


def published_metadata(path: Path, stride: int, cols: int, rate_hz: float, shift: np.ndarray) -> str:
    """The sensor metadata JSON as ouster-ros publishes it on /ouster/metadata (latched std_msgs/String: the
    sensor's own metadata text), made to say what this simulated sensor is: its lidar_mode (COLSxRATE),
    columns_per_frame and column_window, pixels_per_column and the beam tables of the rows it has (every
    `stride`-th of the file's), and its pixel_shift_by_row. The rest of the file (serial, firmware,
    transforms, IMU intrinsics) stays as the real unit reported it."""
    raw = json.loads(Path(path).read_text())
    rows = len(shift)

    def fix(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "lidar_mode":
                    node[key] = f"{cols}x{int(rate_hz)}"
                elif key == "columns_per_frame":
                    node[key] = cols
                elif key == "column_window":
                    node[key] = [0, cols - 1]
                elif key == "pixels_per_column":
                    node[key] = rows
                elif key in ("beam_altitude_angles", "beam_azimuth_angles") and isinstance(value, list):
                    node[key] = value[::stride]
                elif key == "pixel_shift_by_row":
                    node[key] = [int(s) for s in shift]
                else:
                    fix(value)
        elif isinstance(node, list):
            for value in node:
                fix(value)

    fix(raw)
    return json.dumps(raw, indent=2)


def _transform16(flat: dict, key: str, where: str) -> np.ndarray:
    """The metadata's 4x4 transform `key` (row-major, mm) as 16 finite numbers; identity when absent."""
    try:
        values = np.array(flat.get(key, np.eye(4).ravel()), float)
    except (TypeError, ValueError):
        values = np.zeros(0)
    if values.size != 16 or not np.all(np.isfinite(values)):
        raise ConfigError(f"{where}: {key} must be 16 numbers (row-major 4x4, mm)")
    return values
