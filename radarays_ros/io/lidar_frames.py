"""Lidar frame files read into lidar_ros.compare.LidarFrame, real and simulated alike.

Recognised by content, not by name:
  - Ouster `.npz` of shared/realdata (range_mm, xyz_m, timestamp_ns, meas_col; destaggered [beam, column])
  - nebula VLP-16 / Hesai XT32 `.npz` of shared/realdata (grid_distance_raw [firing, laser, echo])
  - `.npz` written by `radarays lidar` (range, hit, xyz, time; Ouster: reflectivity, signal, near_ir;
    dual: range2, signal2; several scans: a leading scan axis, `scan` picks one)
  - Ouster `.pcap` + metadata `.json` (or `.osf`) through ouster-sdk (`pip install ouster-sdk`), read as
    shared/realdata/README.md derived its `.npz` files
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from lidar_ros.compare import LidarFrame

from ..errors import ConfigError, one_line
from .npz_files import read_npz


def read_lidar_frame(path: str | Path, meta: str | Path | None = None, scan: int = 0) -> LidarFrame:
    """The frame in `path` (see the module docstring); `meta`: the Ouster metadata JSON of a .pcap."""
    file = Path(path)
    if not file.is_file():
        raise ConfigError(f"lidar frame {path}: no such file")
    suffix = file.suffix.lower()
    if suffix in (".pcap", ".osf"):
        return LidarFrame(**ouster_frame(read_ouster_sdk(file, meta), file.name))
    if suffix != ".npz":
        raise ConfigError(f"lidar frame {path}: unknown file type '{file.suffix}'; allowed: .npz (shared/realdata or "
                          "`radarays lidar --out X.npz`), .pcap + --meta JSON or .osf (Ouster, needs ouster-sdk)")
    data = read_npz(file, "lidar frame")
    for key, value in data.items():  # real numbers and text (names): no complex values, dates or bytes
        if value.dtype.kind not in "biufU":
            raise ConfigError(f"lidar frame {path}: array {one_line(key, 60)!r} is {value.dtype}, allowed real "
                              "numbers or text")
    if "range_mm" in data:
        build = ouster_frame
    elif "grid_distance_raw" in data and "laser_vert_deg" in data:
        build = velodyne_grid_frame
    elif "grid_distance_raw" in data and "beam_elevation_deg" in data:
        build = hesai_grid_frame
    elif "range" in data and "xyz" in data:
        def build(data, name):
            return simulated_frame(data, name, scan)
    else:
        keys = ", ".join(one_line(k, 40) for k in sorted(data)[:8])
        raise ConfigError(f"lidar frame {path}: no lidar frame in it (keys {keys}); expected an Ouster or nebula .npz "
                          "of shared/realdata or one of `radarays lidar --out X.npz`")
    try:  # arrays of the right names but wrong shapes or values fail inside numpy: one line naming the file
        with np.errstate(all="ignore"):
            return LidarFrame(**build(data, file.name))
    except (TypeError, ValueError, IndexError, KeyError, OverflowError) as exc:
        if isinstance(exc, ConfigError):
            raise
        raise ConfigError(f"lidar frame {path}: malformed arrays ({type(exc).__name__}: {one_line(str(exc), 100)})") from None


def _need(data: dict, keys: tuple, name: str, what: str) -> None:
    missing = [k for k in keys if k not in data]
    if missing:
        raise ConfigError(f"lidar frame {name}: a {what} .npz without {', '.join(missing)}")


def _text(value) -> str:
    return str(np.asarray(value).item()) if value is not None else ""


def ouster_frame(data: dict, name: str) -> dict:
    """The LidarFrame fields of an Ouster frame in shared/realdata's layout (destaggered arrays)."""
    _need(data, ("range_mm", "xyz_m"), name, "Ouster")
    r_mm = np.asarray(data["range_mm"], np.float64)
    if r_mm.ndim != 2:
        raise ConfigError(f"lidar frame {name}: range_mm must be (beams, columns), got shape {r_mm.shape}")

    def opt(key):
        return np.asarray(data[key], np.float64) if key in data else None

    r = np.where(r_mm > 0, r_mm / 1000.0, np.nan)
    r2 = opt("range2_mm")
    fields = dict(name=name, sensor=_text(data.get("sensor")), range_m=r, xyz_m=np.asarray(data["xyz_m"], np.float64),
                  reflectivity=opt("reflectivity"), signal=opt("signal"), near_ir=opt("near_ir"),
                  range2_m=None if r2 is None else np.where(r2 > 0, r2 / 1000.0, np.nan), signal2=opt("signal2"),
                  dual="DUAL" in _text(data.get("udp_profile_lidar")).upper())
    if "timestamp_ns" in data:
        ts = np.asarray(data["timestamp_ns"], np.int64)
        good = ts > 0
        if good.any():
            t = (ts - ts[good].min()) * 1e-9
            fields["column_time_s"] = t[good]
            if "meas_col" in data and np.asarray(data["meas_col"]).shape == r.shape:
                fields["time_s"] = t[np.asarray(data["meas_col"], np.int64) % len(t)]
    return fields


def _unwrapped_azimuth_deg(cdeg: np.ndarray) -> np.ndarray:
    """Block azimuths in firing order, unwrapped; a block pair's repeated azimuth interpolated between pairs."""
    a = np.degrees(np.unwrap(np.radians(np.asarray(cdeg, np.float64) / 100.0)))
    same = np.flatnonzero(np.diff(a) == 0) + 1
    inner = same[same < len(a) - 1]
    a[inner] = 0.5 * (a[inner - 1] + a[inner + 1])
    return a


def _echoes(grid: np.ndarray, intensity: np.ndarray, unit: float) -> tuple[np.ndarray, ...]:
    """(first, second, first's intensity) from [row, column, 2] raw grids of a dual-return firing: the first
    is the stronger echo as the sensor ranks them, by received power (echo 1 on a tie), the second the other
    where its range differs. The intensity byte is calibrated reflectivity (range-corrected, Velodyne and
    Hesai manuals), so the power is ∝ intensity / r² (the simulator's echo strength ρ/r², echoes.py);
    ranked by the byte alone, a near echo of lower reflectivity lost to a far one the sensor ranks weaker."""
    d = np.asarray(grid, np.float64) * unit
    ints = np.asarray(intensity, np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        power = ints / np.maximum(d, 0.1) ** 2
    pick1 = (d[..., 1] > 0) & ((power[..., 1] >= power[..., 0]) | (d[..., 0] <= 0))
    first = np.where(pick1, d[..., 1], d[..., 0])
    other = np.where(pick1, d[..., 0], d[..., 1])
    second = np.where((first > 0) & (other > 0) & (other != first), other, 0.0)
    return (np.where(first > 0, first, np.nan), np.where(second > 0, second, np.nan),
            np.where(pick1, ints[..., 1], ints[..., 0]))


def velodyne_grid_frame(data: dict, name: str) -> dict:
    """A nebula VLP-16 frame (grid_distance_raw [firing, laser_id, echo]) as [ring, firing] images."""
    _need(data, ("grid_distance_raw", "grid_azimuth_cdeg", "grid_in_frame", "laser_vert_deg", "distance_unit_m"),
          name, "nebula VLP-16")
    keep = np.asarray(data["grid_in_frame"], bool)
    order = np.argsort(np.asarray(data["laser_vert_deg"]))  # rows: rings, by elevation (ring 0 lowest)
    grid = np.asarray(data["grid_distance_raw"])[keep][:, order].transpose(1, 0, 2)
    ints = np.asarray(data.get("grid_intensity", np.zeros(grid.shape)), np.float64)
    ints = ints[keep][:, order].transpose(1, 0, 2) if ints.ndim == 3 and ints.shape[1] == len(order) else np.zeros(grid.shape)
    first, second, refl = _echoes(grid, ints, float(data["distance_unit_m"]))
    elev = np.radians(np.asarray(data["laser_vert_deg"], np.float64)[order])[:, None]
    az = np.radians(_unwrapped_azimuth_deg(data["grid_azimuth_cdeg"])[keep])[None, :]
    xyz = np.stack([first * np.cos(elev) * np.cos(az), -first * np.cos(elev) * np.sin(az),
                    first * np.sin(elev) * np.ones_like(az)], axis=-1)
    fields = dict(name=name, sensor="VLP-16", range_m=first, xyz_m=xyz, range2_m=second, dual=True,
                  reflectivity=refl if "grid_intensity" in data else None)
    if "grid_time_rel_ns" in data:
        t = np.asarray(data["grid_time_rel_ns"], np.float64)[keep] * 1e-9
        t = t - t.min()
        fields["column_time_s"] = t
        fields["time_s"] = t[None, :] + order[:, None] * 2.304e-6  # the VLP-16 fires its lasers 2.304 us apart
    return fields


def hesai_grid_frame(data: dict, name: str) -> dict:
    """A nebula Pandar XT32 frame (grid_distance_raw [block pair, channel, echo]) as [channel, azimuth] images."""
    _need(data, ("grid_distance_raw", "grid_azimuth_cdeg", "grid_in_frame", "beam_elevation_deg", "distance_unit_m"),
          name, "nebula Hesai")
    inframe = np.asarray(data["grid_in_frame"], bool)
    counts = inframe.sum(0)
    if counts.min() != counts.max():
        raise ConfigError(f"lidar frame {name}: channels hold different column counts ({counts.min()}-{counts.max()})")
    raw = np.asarray(data["grid_distance_raw"])
    refl = np.asarray(data.get("grid_reflectivity", np.zeros_like(raw)), np.float64)
    cols = [np.flatnonzero(inframe[:, c]) for c in range(raw.shape[1])]
    grid = np.stack([raw[idx, c] for c, idx in enumerate(cols)])
    ints = np.stack([refl[idx, c] for c, idx in enumerate(cols)])
    first, second, first_refl = _echoes(grid, ints, float(data["distance_unit_m"]))
    azimuth = np.asarray(data["grid_azimuth_cdeg"], np.float64) / 100.0
    offset = np.asarray(data.get("beam_azimuth_offset_deg", np.zeros(raw.shape[1])), np.float64)
    az = np.radians(np.stack([azimuth[idx] + offset[c] for c, idx in enumerate(cols)]))
    elev = np.radians(np.asarray(data["beam_elevation_deg"], np.float64))[:, None]
    xyz = np.stack([first * np.cos(elev) * np.sin(az), first * np.cos(elev) * np.cos(az),
                    first * np.sin(elev) * np.ones_like(az)], axis=-1)
    return dict(name=name, sensor="XT32", range_m=first, xyz_m=xyz, range2_m=second, dual=True,
                reflectivity=first_refl if "grid_reflectivity" in data else None)


def simulated_frame(data: dict, name: str, scan: int = 0) -> dict:
    """A `radarays lidar --out X.npz` frame (a leading scan axis: scan `scan`)."""
    r = np.asarray(data["range"])
    if r.ndim == 3:
        if not 0 <= scan < r.shape[0]:
            raise ConfigError(f"lidar frame {name}: --scan {scan} outside the {r.shape[0]} scans of the file")
        data = {k: (np.asarray(v)[scan] if k != "ring" and np.asarray(v).ndim >= 1
                    and np.asarray(v).shape[0] == r.shape[0] else v) for k, v in data.items()}
        r = np.asarray(data["range"])
    if r.ndim != 2:
        raise ConfigError(f"lidar frame {name}: range must be (rows, columns) or (scans, rows, columns), "
                          f"got shape {r.shape}")

    def opt(key):
        return np.asarray(data[key], np.float64) if key in data else None

    hit = np.asarray(data.get("hit", np.isfinite(r)), bool)
    rng = np.where(hit & np.isfinite(r), r.astype(np.float64), np.nan)
    refl, label = opt("reflectivity"), "reflectivity"
    if refl is None:
        refl = opt("velodyne_intensity")
    if refl is None:
        refl, label = opt("intensity"), "intensity"
    r2 = opt("range2")
    if r2 is not None and "hit2" in data:
        r2 = np.where(np.asarray(data["hit2"], bool), r2, np.nan)
    fields = dict(name=name, sensor="", range_m=rng, xyz_m=np.asarray(data["xyz"], np.float64), reflectivity=refl,
                  signal=opt("signal"), near_ir=opt("near_ir"), range2_m=r2, signal2=opt("signal2"),
                  dual=r2 is not None, reflectivity_label=label)
    if "time" in data and np.asarray(data["time"]).shape == r.shape:
        t = np.asarray(data["time"], np.float64)
        fields["time_s"] = t
        unique = np.unique(t)
        fields["column_time_s"] = unique if len(unique) == r.shape[1] else np.sort(t.min(axis=0))
    return fields


def read_ouster_sdk(path: Path, meta: str | Path | None) -> dict:
    """An Ouster pcap (+ metadata JSON) or OSF decoded with ouster-sdk into the shared/realdata .npz layout."""
    try:
        from ouster.sdk import core, open_source
    except ImportError:
        raise ConfigError(f"lidar frame {path}: reading an Ouster {path.suffix} needs ouster-sdk "
                          "(`pip install ouster-sdk`); or give the frame as .npz (shared/realdata/README.md "
                          "shows the conversion)") from None
    if path.suffix.lower() == ".pcap" and meta is None:
        guess = path.with_suffix(".json")
        if not guess.is_file():
            raise ConfigError(f"lidar frame {path}: a pcap needs its metadata JSON (--real-meta / --sim-meta)")
        meta = guess
    try:
        kwargs = {"meta": [str(meta)]} if meta is not None else {}
        src = open_source(str(path), collate=False, **kwargs)
        info = src.sensor_info[0]
        frame = next(fs[0] for fs in src)
    except Exception as exc:  # the SDK's own errors: one line
        raise ConfigError(f"lidar frame {path}: ouster-sdk cannot read it ({str(exc)[:100]})") from None
    lut = core.XYZLut(info)
    out = {"sensor": np.array(str(getattr(info, "prod_line", ""))),
           "udp_profile_lidar": np.array(str(info.format.udp_profile_lidar)),
           "xyz_m": core.destagger(info, lut(frame.field("RANGE"))),
           "timestamp_ns": np.asarray(frame.timestamp, np.uint64)}
    for field, key in (("RANGE", "range_mm"), ("RANGE2", "range2_mm"), ("SIGNAL", "signal"), ("SIGNAL2", "signal2"),
                       ("REFLECTIVITY", "reflectivity"), ("NEAR_IR", "near_ir")):
        if frame.has_field(field):
            out[key] = core.destagger(info, frame.field(field))
    W, H = info.format.columns_per_frame, info.format.pixels_per_column
    out["meas_col"] = core.destagger(info, np.tile(np.arange(W, dtype=np.uint16), (H, 1)))
    return out
