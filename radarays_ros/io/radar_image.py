"""Radar outputs: sensor_msgs/Image layouts, radar point clouds, pictures and Oxford/Boreas polar PNGs.

Arrays inside the package are [azimuth, range bin]. On the wire:
* layout "range_rows" (default): rows = range bins, columns = azimuths - RadaRays' radar/image and
  MulRan's /Navtech/Polar;
* layout "azimuth_rows": rows = azimuths - the Navtech ROS 2 driver and Oxford/Boreas.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .. import limits
from ..errors import ConfigError
from ..validate import plain
from . import messages

LAYOUTS = ("range_rows", "azimuth_rows")
ENCODINGS = ("mono8", "32FC1")
POINT_DTYPE = np.dtype([("x", "<f4"), ("y", "<f4"), ("z", "<f4"), ("intensity", "<f4")])
OXFORD_ENCODER_SIZE = 5600  # encoder ticks per revolution in the Oxford/Boreas polar PNGs


def image_array(img, layout: str = "range_rows", encoding: str = "mono8") -> np.ndarray:
    """The 2-D array of a RadarImage in a wire layout and encoding (uint8 or float32)."""
    if layout not in LAYOUTS:
        raise ConfigError(f"radar image layout {layout!r}: must be one of {', '.join(LAYOUTS)}")
    if encoding not in ENCODINGS:
        raise ConfigError(f"radar image encoding {encoding!r}: must be one of {', '.join(ENCODINGS)}")
    data = img.image if encoding == "mono8" else img.image_f32.astype(np.float32)
    return np.ascontiguousarray(data.T if layout == "range_rows" else data)


def radar_image_msg(img, t_ns: int, frame_id: str, layout: str = "range_rows", encoding: str = "mono8"):
    """rosbags sensor_msgs/Image of a RadarImage (mono8 or 32FC1, range_rows or azimuth_rows)."""
    return messages.image(image_array(img, layout, encoding), t_ns, frame_id)


# -- radar point cloud -----------------------------------------------------------------------------
def radar_points(img, k: int = 5, threshold: float = 3.0, min_value: float = 1.0, guard: int | None = None,
                 train: int = 16, z: float = 0.0, pfa: float | None = None) -> np.ndarray:
    """Per azimuth the k strongest local range peaks above a CA-CFAR threshold, as x, y, z, intensity.

    A bin is a detection when its value exceeds the threshold over the mean of `train` bins on each side
    (skipping `guard` bins, by default the range kernel's width so that a return's own spread is not
    taken for noise; radar/cfar.py's one CA estimator and edge rule), exceeds `min_value`, and is a local
    maximum along range. Points are in the sensor frame at the bin centre.
    Physical images (log-detector counts): the test runs on linear power (the intensity is that relative
    power), and with `pfa` the threshold is the CA factor of that false-alarm rate for the image's own
    correlated bins (effective training cells from its range response) instead of `threshold`.
    RadaRays images: their ambient noise is a smooth floor model with Perlin bumps, not exponential noise,
    so a local mean is no noise estimate between the bumps; a detection must also exceed the largest value
    that noise can take at its range (radar/noise.ambient_bound x signal_max, + 4 system_std).
    """
    from ..radar import cfar

    if k < 1:
        raise ConfigError(f"radar_points: k = {k}: must be >= 1")
    if pfa is not None and not 0 < pfa < 1:
        raise ConfigError(f"radar_points: pfa = {pfa}: must be in (0, 1)")
    values = np.asarray(img.image_f32, np.float64)
    physical = _is_physical(img)
    if physical:  # log-detector counts: CFAR on linear power, guard = two range resolutions
        values = cfar.counts_to_power(values, img.config.receiver.db_per_count)
        if guard is None:
            guard = int(np.ceil(2 * 299_792_458.0 / (2 * img.config.fmcw.bandwidth_hz) / img.resolution))
    if guard is None:
        kernel = img.config.kernel
        guard = kernel.width if kernel.type != "none" else 2
    a, b = values.shape
    noise, count = cfar.ca_noise(values, guard, train)
    if physical and pfa is not None:
        from ..radar.physical.range_response import range_kernel

        fm = img.config.fmcw
        taps = range_kernel(fm.window, fm.bandwidth_hz, img.resolution, fm.response_half_width).taps
        n_eff = cfar.effective_cells(guard, train, taps, pfa)
        above = values > cfar.ca_threshold(noise, count, train, pfa, n_eff)
    else:
        above = values > threshold * noise
        if not physical and img.config.output.normalisation in ("radarays", "global", "gazebo"):
            from ..radar.noise import ambient_bound

            centres = img.range_m + 0.5 * img.config.range.resolution
            bound = img.config.output.signal_max * ambient_bound(img.config.noise, centres) + 4.0 * img.config.noise.system_std
            above &= values > bound[None, :]
    left = np.concatenate([np.full((a, 1), -np.inf), values[:, :-1]], axis=1)
    right = np.concatenate([values[:, 1:], np.full((a, 1), -np.inf)], axis=1)
    peak = above & (values >= min_value) & (values >= left) & (values > right)
    score = np.where(peak, values, -np.inf)
    kk = min(k, b)
    top = np.argpartition(-score, kk - 1, axis=1)[:, :kk]
    rows = np.repeat(np.arange(a), kk)
    cols = top.reshape(-1)
    ok = np.isfinite(score[rows, cols])
    rows, cols = rows[ok], cols[ok]
    r = img.range_m[cols] + 0.5 * img.config.range.resolution
    theta = img.azimuth_rad[rows]
    pts = np.zeros(len(rows), POINT_DTYPE)
    pts["x"] = r * np.cos(theta)
    pts["y"] = r * np.sin(theta)
    pts["z"] = z
    pts["intensity"] = values[rows, cols]
    return pts


def radar_points_msg(img, t_ns: int, frame_id: str, **options):
    """rosbags sensor_msgs/PointCloud2 of radar_points(img, **options)."""
    return messages.pointcloud2(radar_points(img, **options), t_ns, frame_id)


# -- pictures ----------------------------------------------------------------------------------------
def polar_png(img, path: str | Path | None = None, layout: str = "range_rows") -> np.ndarray:
    """The uint8 polar image (rows = range bins by default); written as a grey PNG when path is given."""
    data = image_array(img, layout, "mono8")
    if path is not None:
        save_png(path, data)
    return data


def _nearest_azimuth(img, angle: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Column index nearest to each angle and the angular distance to it (radians)."""
    az = np.mod(img.azimuth_rad, 2 * np.pi)
    order = np.argsort(az)
    sorted_az = az[order]
    a = np.mod(angle, 2 * np.pi)
    pos = np.searchsorted(sorted_az, a)
    lo = (pos - 1) % len(sorted_az)
    hi = pos % len(sorted_az)
    d_lo = np.abs((a - sorted_az[lo] + np.pi) % (2 * np.pi) - np.pi)
    d_hi = np.abs((a - sorted_az[hi] + np.pi) % (2 * np.pi) - np.pi)
    use_hi = d_hi < d_lo
    return order[np.where(use_hi, hi, lo)], np.where(use_hi, d_hi, d_lo)


def cartesian_image(img, m_per_px: float | None = None, max_range: float | None = None, colormap: str = "viridis",
                    rings_m: float | None = None, size_px: int | None = None, scale: str = "max") -> np.ndarray:
    """Bird's-eye RGB uint8 picture: sensor at the centre, +x (forward) up, +y (left) to the left.

    m_per_px defaults to fit max_range (default: the last bin) into size_px (default 800) pixels.
    rings_m draws range rings every that many metres (default: about 5 rings); 0 disables them.
    scale "max" maps the image maximum to the top of the colour map, "full" maps 255 there.
    """
    if scale not in ("max", "full"):
        raise ConfigError(f"cartesian_image: scale {scale!r}: must be max or full")
    from matplotlib import colormaps

    max_range = float(max_range or (img.range_m[-1] + img.config.range.resolution))
    size_px = int(size_px or 800)
    m_per_px = float(m_per_px or 2.0 * max_range / size_px)
    if m_per_px <= 0:
        raise ConfigError(f"cartesian_image: m_per_px = {m_per_px}: must be > 0")
    half = int(np.ceil(max_range / m_per_px))
    n = 2 * half + 1
    rows, cols = np.mgrid[0:n, 0:n]
    x = (half - rows) * m_per_px
    y = (half - cols) * m_per_px
    r = np.hypot(x, y)
    col, dist = _nearest_azimuth(img, np.arctan2(y, x))
    step = 2 * np.pi / max(img.n_azimuths, 1)
    if img.n_azimuths == 1:
        step = img.config.beam.widths_rad[0]
    res = img.config.range.resolution
    bin_idx = np.floor((r - img.range_m[0]) / res).astype(np.int64)
    inside = (bin_idx >= 0) & (bin_idx < img.n_bins) & (dist <= step / 2 + 1e-9) & (r <= max_range)
    values = np.zeros((n, n), np.float64)
    top = max(float(img.image.max()), 1.0) if scale == "max" else 255.0
    values[inside] = img.image[col[inside], bin_idx[inside]] / top
    rgb = (colormaps[colormap](values)[..., :3] * 255).astype(np.uint8)
    rgb[~inside] = 0
    if rings_m is None:
        rings_m = float(max(1.0, np.round(max_range / 5.0)))
    if rings_m > 0:
        ring = (np.abs(r - np.round(r / rings_m) * rings_m) < 0.5 * m_per_px) & (r > 0.5 * rings_m) & (r <= max_range)
        rgb[ring] = (255, 255, 255)
    rgb[half, half] = (255, 0, 0)
    return rgb


def save_png(path: str | Path, array: np.ndarray) -> Path:
    """Write an (H, W) uint8 grey or (H, W, 3) uint8 RGB array as PNG."""
    from PIL import Image as PILImage

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    a = np.ascontiguousarray(array)
    if a.dtype != np.uint8 or a.ndim not in (2, 3):
        raise ConfigError(f"save_png {path}: expected uint8 (H, W) or (H, W, 3), got {a.dtype} {a.shape}")
    PILImage.fromarray(a).save(path)
    return path


def oxford_encoder_values(azimuth_rad: np.ndarray, encoder_offset: int = 0) -> np.ndarray:
    """Encoder ticks (0..5599) of azimuths (radians, counter-clockwise from +x): the Oxford/Boreas angle
    is clockwise from forward, angle = enc / 5600 * 2 pi; `encoder_offset` ticks are added (a sensor whose
    encoder zero is not the vehicle's forward axis), modulo one turn."""
    clockwise = np.mod(-np.asarray(azimuth_rad, np.float64), 2 * np.pi)
    ticks = np.round(clockwise / (2 * np.pi) * OXFORD_ENCODER_SIZE).astype(np.int64) + int(encoder_offset)
    return np.mod(ticks, OXFORD_ENCODER_SIZE)


def oxford_polar_array(img, encoder_offset: int = 0) -> np.ndarray:
    """Oxford Radar RobotCar / Boreas polar layout (rows = azimuths, uint8).

    Columns 0-7: int64 little-endian timestamp in microseconds; 8-9: uint16 encoder value
    (angle = enc / 5600 * 2 pi, clockwise from forward); 10: flag - 255 for a valid azimuth (Oxford),
    and for a radar with alternating chirps (img.chirp_up, Navtech RAS6 / Boreas-RT) 255 on up-chirps and
    0 on down-chirps; then one column per range bin. Rows are in increasing encoder order, as the
    readers assume (they interpolate from azimuths[0] with a positive step): a counter-clockwise sweep
    is written in reverse firing order, each row keeping its own timestamp.
    """
    a = img.n_azimuths
    encoder = oxford_encoder_values(img.azimuth_rad, encoder_offset)
    order = np.argsort(encoder, kind="stable")
    header = np.zeros((a, 11), np.uint8)
    micro = (np.asarray(img.azimuth_time_ns, np.int64)[order] // 1000).astype("<i8")
    header[:, 0:8] = micro.view(np.uint8).reshape(a, 8)
    header[:, 8:10] = encoder[order].astype("<u2").view(np.uint8).reshape(a, 2)
    chirp_up = getattr(img, "chirp_up", None)
    header[:, 10] = 255 if chirp_up is None else np.where(np.asarray(chirp_up)[order], 255, 0)
    return np.concatenate([header, img.image[order]], axis=1)


def oxford_polar_png(img, path: str | Path, encoder_offset: int = 0, sidecar_path: str | Path | None = None) -> Path:
    """Write the Oxford/Boreas polar PNG (see oxford_polar_array) that radar odometry tools read, and
    PATH.yaml beside it (or `sidecar_path`) with what the format does not hold: the range resolution
    (m per bin), the encoder size and offset and what column 10 means."""
    path = save_png(path, oxford_polar_array(img, encoder_offset))
    chirp = getattr(img, "chirp_up", None) is not None and not bool(np.all(img.chirp_up))
    sidecar = {
        "range_resolution_m": float(img.resolution),
        "range_bins": int(img.n_bins),
        "azimuths": int(img.n_azimuths),
        "encoder_size": OXFORD_ENCODER_SIZE,
        "encoder_offset": int(encoder_offset),
        "column_10": "chirp: 255 up, 0 down" if chirp else "valid: 255",
        "units": "Navtech counts, 0.5 dB per count" if _is_physical(img) else "image values (RadaRays scale)",
    }
    import yaml

    Path(sidecar_path or str(path) + ".yaml").write_text(yaml.safe_dump(sidecar, sort_keys=False))
    return path


def _is_physical(img) -> bool:
    sensor = getattr(getattr(img, "config", None), "sensor", None)
    return getattr(sensor, "model", "radarays") == "physical"


def read_picture(path: str | Path, what: str) -> np.ndarray:
    """The pixels of a picture file as an array; ConfigError (one line) for an unreadable file or one whose
    header claims more than limits.MAX_PICTURE_PIXELS pixels (checked before any pixel is decoded)."""
    from PIL import Image as PILImage

    path = Path(path)
    try:
        with PILImage.open(path) as picture:
            limits.check_product(f"{what} {path}", {"width": picture.width, "height": picture.height},
                                 limits.MAX_PICTURE_PIXELS, "pixels")
            return np.array(picture)
    except FileNotFoundError:
        raise ConfigError(f"{what} {path}: no such file") from None
    except (OSError, ValueError, SyntaxError, EOFError, PILImage.DecompressionBombError) as exc:
        if isinstance(exc, ConfigError):
            raise
        raise ConfigError(f"{what} {path}: not a readable picture ({type(exc).__name__}: {exc})") from None


def read_oxford_polar(path: str | Path, resolution: float | None = None):
    """(counts (A, B) uint8, azimuth_rad (A,) counter-clockwise from +x, timestamps_us (A,), flags (A,),
    resolution) of an Oxford/Boreas polar PNG. The resolution comes from the argument, else PATH.yaml
    written beside it, else the file cannot say (ConfigError)."""
    path = Path(path)
    raw = read_picture(path, "radar PNG")
    if raw.dtype != np.uint8 or raw.ndim != 2 or raw.shape[1] < 12:
        raise ConfigError(f"radar PNG {path}: expected an 8-bit grey Oxford/Boreas polar image (11 header columns "
                          f"and the range bins), got {raw.dtype} {raw.shape}")
    if resolution is None:
        sidecar = Path(str(path) + ".yaml")
        if not sidecar.is_file():
            raise ConfigError(f"radar PNG {path}: the range resolution is not in the file and there is no "
                              f"{sidecar.name} beside it: give it (e.g. --resolution 0.0438)")
        from ..config_file import read_yaml

        meta = read_yaml(sidecar, "radar PNG sidecar")
        if not isinstance(meta, dict):
            raise ConfigError(f"radar PNG sidecar {sidecar}: expected a mapping with range_resolution_m, "
                              f"got {type(meta).__name__}")
        resolution = meta.get("range_resolution_m")
    # below a micrometre per bin no radar exists, and 1e-300 m made the range axis overflow downstream
    if isinstance(resolution, bool) or not isinstance(resolution, (int, float)) or not 1e-6 <= float(resolution) < 100:
        raise ConfigError(f"radar PNG {path}: range resolution {plain(resolution)}: must be a number in [1e-06, 100) m")
    stamps = raw[:, :8].copy().view("<i8").ravel()
    encoder = raw[:, 8:10].copy().view("<u2").ravel().astype(np.float64)
    azimuth = -encoder / OXFORD_ENCODER_SIZE * 2 * np.pi
    return raw[:, 11:].copy(), azimuth, stamps, raw[:, 10].copy(), float(resolution)


# -- pictures people read --------------------------------------------------------------------------
def cartesian_lookup(azimuth_rad: np.ndarray, resolution: float, max_range: float, n_bins: int,
                     size_px: int = 801) -> tuple[np.ndarray, np.ndarray]:
    """(flat pixel indices inside the scan, flat (column, bin) indices into an (A, n_bins) image) of a
    (size_px, size_px) grid, +x (forward) up and +y (left) to the left: nearest azimuth column and range
    bin of every pixel (bin k covers [k, k + 1) x resolution)."""
    half = size_px // 2
    m_per_px = max_range / max(half, 1)
    rows, cols = np.mgrid[0:size_px, 0:size_px]
    x = (half - rows) * m_per_px
    y = (half - cols) * m_per_px
    r = np.hypot(x, y)
    az = np.mod(np.asarray(azimuth_rad, np.float64), 2 * np.pi)
    order = np.argsort(az)
    sorted_az = az[order]
    angle = np.mod(np.arctan2(y, x), 2 * np.pi)
    pos = np.searchsorted(sorted_az, angle) % len(az)
    prev = (pos - 1) % len(az)
    d_pos = np.abs((angle - sorted_az[pos] + np.pi) % (2 * np.pi) - np.pi)
    d_prev = np.abs((angle - sorted_az[prev] + np.pi) % (2 * np.pi) - np.pi)
    column = order[np.where(d_pos < d_prev, pos, prev)]
    bin_idx = np.floor(r / resolution).astype(np.int64)
    inside = np.flatnonzero((bin_idx < n_bins) & (r <= max_range))
    return inside, column.ravel()[inside] * n_bins + bin_idx.ravel()[inside]


def polar_to_cartesian(counts: np.ndarray, azimuth_rad: np.ndarray, resolution: float, max_range: float,
                       size_px: int = 801, lookup=None) -> np.ndarray:
    """(size_px, size_px) float grid, +x (forward) up and +y (left) to the left, NaN outside the scan
    (cartesian_lookup; pass its result as lookup to reuse it)."""
    counts = np.asarray(counts)
    pixels, cells = lookup or cartesian_lookup(azimuth_rad, resolution, max_range, counts.shape[1], size_px)
    out = np.full(size_px * size_px, np.nan)
    out[pixels] = counts.ravel()[cells]
    return out.reshape(size_px, size_px)


def _nice_step(max_range: float) -> float:
    raw = max_range / 4.0
    base = 10.0 ** np.floor(np.log10(raw))
    return float(min((m * base for m in (1, 2, 5, 10)), key=lambda s: abs(s - raw)))


def _cartesian_axes(ax, values: np.ndarray, max_range: float, vmax: float, cmap: str = "gray"):
    """A bird's-eye image with range rings labelled in metres; returns the image artist."""
    shown = ax.imshow(values, extent=(max_range, -max_range, -max_range, max_range), origin="upper",
                      cmap=cmap, vmin=0, vmax=vmax, interpolation="nearest")
    from matplotlib.patches import Circle

    step = _nice_step(max_range)
    for radius in np.arange(step, max_range + 1e-9, step):
        ax.add_patch(Circle((0, 0), radius, fill=False, color="tab:orange", lw=0.6, alpha=0.8))
        ax.text(-radius * 0.7071, radius * 0.7071, f"{radius:g} m", color="tab:orange", fontsize=7)
    ax.set_xlim(max_range, -max_range)
    ax.set_ylim(-max_range, max_range)
    ax.set_xlabel("y (m, left +)")
    ax.set_ylabel("x (m, forward +)")
    ax.set_aspect("equal")
    return shown


def level_label(img) -> str:
    if _is_physical(img):
        return f"received level (Navtech counts, {img.config.receiver.db_per_count:g} dB per count)"
    return "image value (RadaRays scale, 8 bit)"


class RadarFigure:
    """The Cartesian picture people read, kept open to draw frame after frame: range rings labelled in
    metres, a colour bar with units, a title (sensor, stamp). A run's pictures reuse one per sensor:
    only the image and the title change, so a frame costs one render (a new figure costs ~3x that)."""

    def __init__(self, img, max_range: float | None = None, dpi: int = 110):
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        self.max_range = float(max_range or (img.range_m[-1] + img.resolution))
        self.figure, self._axes = plt.subplots(figsize=(7.2, 6.2), dpi=dpi)
        self._image = _cartesian_axes(self._axes, np.full((2, 2), np.nan), self.max_range, 255.0)
        self.figure.colorbar(self._image, ax=self._axes, label=level_label(img), shrink=0.85)
        self._title = self._axes.set_title(" ")
        self._lookup = None

    def save(self, img, path: str | Path, title: str | None = None, sensor: str | None = None, tight: bool = True,
             png: dict | None = None) -> Path:
        """Draw img and write the PNG (tight: crop the margins, which costs a second render; png: Pillow
        options, e.g. {"compress_level": 1})."""
        key = (np.asarray(img.azimuth_rad).tobytes(), img.resolution, img.image.shape)
        if self._lookup is None or self._lookup[0] != key:  # the same sweep geometry frame after frame
            self._lookup = key, cartesian_lookup(img.azimuth_rad, img.resolution, self.max_range, img.image.shape[1])
        self._image.set_data(polar_to_cartesian(img.image, img.azimuth_rad, img.resolution, self.max_range,
                                                lookup=self._lookup[1]))
        name = sensor or Path(str(getattr(img.config, "origin", "radar"))).stem
        self._title.set_text(title or f"{name}  -  t = {img.t0_ns * 1e-9:.3f} s  ({img.n_azimuths} az x {img.n_bins} bins)")
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        self.figure.savefig(path, bbox_inches="tight" if tight else None, pil_kwargs=png)
        return path

    def close(self) -> None:
        import matplotlib.pyplot as plt

        plt.close(self.figure)


def radar_figure(img, path: str | Path, title: str | None = None, max_range: float | None = None,
                 sensor: str | None = None, dpi: int = 110) -> Path:
    """A Cartesian picture people read (RadarFigure), written as PNG."""
    figure = RadarFigure(img, max_range, dpi)
    try:
        return figure.save(img, path, title, sensor)
    finally:
        figure.close()


def comparison_figure(items, names, path: str | Path, max_range: float | None = None, dpi: int = 100) -> Path:
    """Polar (top) and Cartesian (bottom) pictures of several polar images side by side on one scale.
    items: (counts (A, B), azimuth_rad (A,), resolution m)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    import textwrap

    fig, axes = plt.subplots(2, len(items), figsize=(6.0 * len(items), 10.5), dpi=dpi, squeeze=False)
    for k, ((counts, azimuth, res), name) in enumerate(zip(items, names)):
        name = "\n".join(textwrap.fill(line, 52) for line in str(name).splitlines())  # titles that fit their column
        reach = float(max_range or counts.shape[1] * res)
        n_bins = min(counts.shape[1], int(np.ceil(reach / res)))
        polar = axes[0, k].imshow(np.asarray(counts)[:, :n_bins].T, aspect="auto", origin="upper", cmap="gray",
                                  vmin=0, vmax=255, extent=(0, len(counts), n_bins * res, 0), interpolation="nearest")
        axes[0, k].set_title(f"{name}\npolar (rows: range)", fontsize=10)
        axes[0, k].set_xlabel("azimuth index")
        axes[0, k].set_ylabel("range (m)")
        _cartesian_axes(axes[1, k], polar_to_cartesian(counts, azimuth, res, reach), reach, 255.0)
        axes[1, k].set_title("Cartesian (sensor at the centre, forward up)", fontsize=10)
    fig.colorbar(polar, ax=axes.ravel().tolist(), label="level (counts; Navtech: 0.5 dB per count)", shrink=0.6)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, bbox_inches="tight")
    plt.close(fig)
    return path
