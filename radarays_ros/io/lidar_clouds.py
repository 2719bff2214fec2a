"""Lidar scans as the point clouds real drivers publish, byte for byte, and as LaserScan.

Layouts (numpy structured dtypes; a PointCloud2 is the same bytes with the same offsets):

velodyne  velodyne_pointcloud XYZIRT: x,y,z,intensity float32 @0/4/8/12, ring uint16 @16, time float32
          @18, point_step 22. `time` = seconds relative to the header stamp; the stamp is the LAST
          firing by default (times <= 0), the first with time_reference 'first'. Organized like the
          driver's organize_cloud: width = lasers (ring 0 = lowest), height = firings (columns).
ouster    ouster-ros `original` point (ouster_ros::Point, PCL_ADD_POINT4D + EIGEN_ALIGN16): x,y,z float32
          @0/4/8 (+4 pad), intensity float32 @16 (= signal), t uint32 ns since scan start @20,
          reflectivity uint16 @24, ring uint16 @26, ambient uint16 @28, range uint32 mm @32,
          point_step 48. Organized: rows = beams (ring 0 = top beam), columns destaggered. Header
          stamp = scan start.
gazebo    Gazebo gpu_lidar through ros_gz_bridge: x,y,z,intensity float32, ring uint16. gz-sensors'
          GpuLidarSensor builds its PointCloudPacked with gz-msgs InitPointCloudPacked(memory aligned):
          each field group (xyz, intensity, ring) starts on an 8-byte boundary, so x,y,z @0/4/8,
          intensity @16, ring @24, point_step 32. Organized height = vertical rows (ring 0 = lowest),
          width = horizontal samples. No time.
gazebo_cpu  gz-sensors CpuLidarSensor (packed, not aligned): x,y,z,intensity @0/4/8/12, ring @16,
          point_step 18.
livox     livox_ros_driver2 PointCloud2 (xfer_format 0, packed LivoxPointXyzrtlt): x,y,z,intensity
          float32 @0/4/8/12, tag uint8 @16 (0), line uint8 @17 (emitter = scan row), timestamp
          float64 @18 (absolute ns of the point), point_step 26. The driver sends only returns
          (unorganized, stamped at the first point).
livox_xyzrtl  livox_ros_driver (ROS 1 / livox_ros2_driver, Mid-40/Mid-70/Avia, xfer_format 0,
          LivoxPointXyzrtl): x,y,z float32 @0/4/8, reflectivity as intensity float32 @12, tag uint8
          @16, line uint8 @17, point_step 18; no per-point time; returns only.
ouster_native, ouster_xyz, ouster_xyzi, ouster_xyzir  the other ouster-ros point types (ouster-ros
          sensor_point_types.h / common_point_types.h, PCL_ADD_POINT4D + EIGEN_ALIGN16):
          native = Point_RNG19_RFL8_SIG16_NIR16: x,y,z @0/4/8, t uint32 @16, ring uint16 @20, range uint32
          mm @24, signal uint16 @28, reflectivity uint16 @30, near_ir uint16 @32, point_step 48;
          xyz = pcl::PointXYZ @0/4/8, step 16; xyzi: x,y,z,intensity(=signal) @0/4/8/12, step 16;
          xyzir: x,y,z @0/4/8, intensity(=signal) @16, ring uint16 @20, step 32. Organized like `ouster`.
xyzi      x,y,z,intensity float32, point_step 16, rows as in the scan.

Misses: organized clouds keep them as NaN points (intensity 0, range 0); unorganized clouds drop them.
Ground truth (opt-in, appended after the driver fields): clean_range float32, entity_id int32,
material_id int32, normal_x/y/z float32 (sensor frame), incidence_angle float32 (rad).
"""
from __future__ import annotations

import threading
import weakref

import numpy as np

from lidar_ros.sink import LAYOUTS, RANGE_MM, TOP_RING_FIRST

from ..compiled import kernel
from ..errors import ConfigError
from . import messages

F4, F8, U1, U2, U4 = "<f4", "<f8", "u1", "<u2", "<u4"
XYZ = {"x": (F4, 0), "y": (F4, 4), "z": (F4, 8)}


def point_layout(itemsize: int, **fields: tuple[str, int]) -> np.dtype:
    """A driver's point as a numpy dtype: field name -> (format, byte offset), `itemsize` bytes a point."""
    fields = {**XYZ, **fields}
    return np.dtype({"names": list(fields), "formats": [f for f, _ in fields.values()],
                     "offsets": [o for _, o in fields.values()], "itemsize": itemsize})


VELODYNE_DTYPE = point_layout(22, intensity=(F4, 12), ring=(U2, 16), time=(F4, 18))
OUSTER_DTYPE = point_layout(48, intensity=(F4, 16), t=(U4, 20), reflectivity=(U2, 24), ring=(U2, 26),
                            ambient=(U2, 28), range=(U4, 32))
GAZEBO_DTYPE = point_layout(32, intensity=(F4, 16), ring=(U2, 24))
GAZEBO_CPU_DTYPE = point_layout(18, intensity=(F4, 12), ring=(U2, 16))
LIVOX_DTYPE = point_layout(26, intensity=(F4, 12), tag=(U1, 16), line=(U1, 17), timestamp=(F8, 18))
LIVOX_XYZRTL_DTYPE = point_layout(18, intensity=(F4, 12), tag=(U1, 16), line=(U1, 17))
# ouster-ros point_type native (ouster_ros::Point_RNG19_RFL8_SIG16_NIR16, PCL_ADD_POINT4D + EIGEN_ALIGN16)
OUSTER_NATIVE_DTYPE = point_layout(48, t=(U4, 16), ring=(U2, 20), range=(U4, 24), signal=(U2, 28),
                                   reflectivity=(U2, 30), near_ir=(U2, 32))
OUSTER_XYZ_DTYPE = point_layout(16)
OUSTER_XYZI_DTYPE = point_layout(16, intensity=(F4, 12))
OUSTER_XYZIR_DTYPE = point_layout(32, intensity=(F4, 16), ring=(U2, 20))
XYZI_DTYPE = point_layout(16, intensity=(F4, 12))
LAYOUT_DTYPES = {"velodyne": VELODYNE_DTYPE, "ouster": OUSTER_DTYPE, "ouster_native": OUSTER_NATIVE_DTYPE,
                 "ouster_xyz": OUSTER_XYZ_DTYPE, "ouster_xyzi": OUSTER_XYZI_DTYPE, "ouster_xyzir": OUSTER_XYZIR_DTYPE, "gazebo": GAZEBO_DTYPE,
                 "gazebo_cpu": GAZEBO_CPU_DTYPE, "livox": LIVOX_DTYPE, "livox_xyzrtl": LIVOX_XYZRTL_DTYPE,
                 "xyzi": XYZI_DTYPE}
assert set(LAYOUT_DTYPES) == set(LAYOUTS)  # the one list (lidar_ros.sink) and its implementations

GROUND_TRUTH_FIELDS = {  # scan attribute -> (field names, dtype)
    "clean_range": (("clean_range",), "<f4"),
    "entity": (("entity_id",), "<i4"),
    "material": (("material_id",), "<i4"),
    "normal": (("normal_x", "normal_y", "normal_z"), "<f4"),
    "incidence_rad": (("incidence_angle",), "<f4"),
}


def cloud_dtype(layout: str, ground_truth=()) -> np.dtype:
    """The driver's point dtype, with the requested ground-truth fields appended (packed)."""
    base = LAYOUT_DTYPES[_check_layout(layout)]
    names, formats, offsets = list(base.names), [base.fields[n][0] for n in base.names], [base.fields[n][1] for n in base.names]
    size = base.itemsize
    for key in _check_ground_truth(ground_truth):
        field_names, fmt = GROUND_TRUTH_FIELDS[key]
        for name in field_names:
            names.append(name)
            formats.append(np.dtype(fmt))
            offsets.append(size)
            size += 4
    return np.dtype({"names": names, "formats": formats, "offsets": offsets, "itemsize": size})


def row_order(scan, layout: str) -> np.ndarray:
    """Scan rows in the layout's ring order (ring 0 = lowest or top beam); index i -> scan row."""
    top_first = TOP_RING_FIRST[_check_layout(layout)]
    rows = scan.range.shape[0]
    if top_first is None or rows == 1:
        return np.arange(rows)
    elevation = scan.elevation_rad.mean(axis=1)
    return np.argsort(-elevation if top_first else elevation, kind="stable")


def pointcloud_array(scan, layout: str | None = None, organized: bool | None = None, ground_truth=(),
                     stamp_ns: int | None = None, time_reference: str | None = None) -> np.ndarray:
    """Structured array of a scan in a driver layout; shape (height, width) organized, else (N,) returns only.

    stamp_ns: header stamp the velodyne `time` field is relative to (default: last or first firing).
    """
    cfg = scan.config
    cloud = getattr(scan, "cloud", None)  # built with the frame (FrameCloud): nothing left to do
    second = getattr(scan, "second", None)
    # a dual-return frame's first echoes are that cloud too, except for velodyne (its cloud holds both)
    first_only = second is None or (layout or cfg.layout) != "velodyne"
    if cloud is not None and first_only and scan.cloud_writer.matches(scan, layout, organized, ground_truth,
                                                                      stamp_ns, time_reference):
        return cloud
    layout = _check_layout(layout or cfg.layout)
    organized = cfg.organized if organized is None else bool(organized)
    if layout == "velodyne" and second is not None:  # dual return: the driver's points of both returns
        return _velodyne_dual(scan, organized, ground_truth, stamp_ns, time_reference)
    dtype = cloud_dtype(layout, ground_truth)
    rows, cols = scan.range.shape
    driver = cfg.driver if layout == "velodyne" else None  # velodyne driver-exact (lidar_ros/patterns/velodyne.py)
    # velodyne_pointcloud's unorganized cloud lists a block's points in laser order, the organized one by ring
    order = np.argsort(cfg.laser_index, kind="stable") if driver is not None and not organized else \
        row_order(scan, layout)
    same_rows = bool(np.array_equal(order, np.arange(rows)))
    transpose = layout == "velodyne"  # the driver's organization: one row per firing, one column per laser

    def place(a: np.ndarray) -> np.ndarray:
        """A per-pixel array (rows, cols, ...) in the layout's row order and orientation."""
        a = a if same_rows else a[order]
        return a.swapaxes(0, 1) if transpose else a

    hit = place(scan.hit)
    picked = None if organized else np.flatnonzero(hit.reshape(-1))

    def field(a: np.ndarray) -> np.ndarray:
        a = place(a)
        return a if picked is None else a.reshape(-1, *a.shape[2:])[picked]

    def per_row(values: np.ndarray) -> np.ndarray:
        return field(np.broadcast_to(values[:, None], (rows, cols)))

    shape = hit.shape if picked is None else (len(picked),)
    # padding bytes must read 0 (byte-exact clouds); a packed layout has none, and every field is written below
    out = np.empty(shape, dtype) if _packed(dtype) else np.zeros(shape, dtype)
    xyz = field(scan.xyz)  # NaN where there is no return
    if layout in ("gazebo", "gazebo_cpu") and picked is None:  # gz-sensors: a miss is range +inf times the ray
        with np.errstate(invalid="ignore"):
            xyz = np.where(hit[..., None], xyz, np.float32(np.inf) * place(_unit_rays(scan)))
    out["x"], out["y"], out["z"] = xyz[..., 0], xyz[..., 1], xyz[..., 2]
    if layout in ("ouster_xyzi", "ouster_xyzir"):  # ouster-ros: intensity = signal photons
        out["intensity"] = field(scan.fields["ouster_signal"])
    elif "intensity" in dtype.names:
        out["intensity"] = field(scan.intensity)  # 0 where there is no return
    if layout == "velodyne" and picked is None:  # velodyne_pointcloud: NaN intensity for organized misses
        out["intensity"] = np.where(hit, out["intensity"], np.float32(np.nan))
    if "ring" in dtype.names:
        ring = np.arange(rows, dtype=np.uint16) if TOP_RING_FIRST[layout] is not None else scan.ring[order]
        out["ring"] = per_row(ring if driver is None else scan.ring)  # per_row puts rows in `order`
    if layout == "velodyne":
        stamp = scan.stamp_ns(time_reference) if stamp_ns is None else int(stamp_ns)
        offset_s = (scan.t0_ns - stamp) * 1e-9
        if driver is not None and driver.time is None:  # no timing table for the model: the driver writes 0
            out["time"] = 0.0
        else:
            times = scan.time if driver is None else driver.time
            out["time"] = field(_derived(scan, ("velodyne_time", offset_s, driver is None),
                                         lambda: (times + offset_s).astype(np.float32)))
    elif layout == "ouster":
        out["t"] = field(_derived(scan, ("ouster_t",), lambda: np.rint(scan.time * 1e9).astype(np.uint32)))
        out["reflectivity"] = field(scan.fields["ouster_reflectivity"])
        out["ambient"] = field(scan.fields["ouster_ambient"])
        out["range"] = field(_millimetres(scan.range))
    elif layout == "ouster_native":
        out["t"] = field(_derived(scan, ("ouster_t",), lambda: np.rint(scan.time * 1e9).astype(np.uint32)))
        out["range"] = field(_millimetres(scan.range))
        out["signal"] = field(scan.fields["ouster_signal"])
        out["reflectivity"] = field(scan.fields["ouster_reflectivity"])
        out["near_ir"] = field(scan.fields["ouster_ambient"])
    elif layout in ("livox", "livox_xyzrtl"):
        out["tag"] = 0
        out["line"] = per_row(np.arange(rows, dtype=np.uint8))
        if layout == "livox":
            out["timestamp"] = field(scan.t0_ns + scan.time * 1e9)
    for key in _check_ground_truth(ground_truth):
        names, _ = GROUND_TRUTH_FIELDS[key]
        value = field(getattr(scan, key))
        if len(names) == 1:
            out[names[0]] = value
        else:
            for i, name in enumerate(names):
                out[name] = value[..., i]
    if driver is not None and driver.bank_of_row is not None and picked is None:
        out = _bank_rows(out, driver.bank_of_row[order])
    return out


def _bank_rows(cloud: np.ndarray, bank_of_slot: np.ndarray) -> np.ndarray:
    """velodyne_pointcloud's organized HDL-64E cloud: one row per block, upper bank then lower bank of each
    firing, each row as wide as all lasers; a block writes its own lasers' ring slots, the other bank's
    slots keep the zero bytes the driver clears the cloud with."""
    firings, width = cloud.shape
    out = np.zeros((2 * firings, width), cloud.dtype)
    for bank in (0, 1):
        slots = np.flatnonzero(bank_of_slot == bank)
        out[bank::2, slots] = cloud[:, slots]
    return out


def _unit_rays(scan) -> np.ndarray:
    """(rows, cols, 3) float32 nominal unit ray of each pixel (sensor frame)."""
    el, az = scan.elevation_rad.astype(np.float64), scan.azimuth_rad.astype(np.float64)
    return np.stack([np.cos(el) * np.cos(az), np.cos(el) * np.sin(az), np.sin(el)], axis=-1).astype(np.float32)


def _velodyne_dual(scan, organized, ground_truth, stamp_ns, time_reference) -> np.ndarray:
    """velodyne_pointcloud in dual-return mode: every firing gives two rows, in the packet's block order:
    the even block holds the last (farthest) return, the odd block the strongest, or the second strongest
    when the last is the strongest (VLP-16 manual, dual return mode). A firing with a single echo repeats it
    in both blocks and the driver skips the odd block's copy: its second row is a NaN point (organized) or
    absent. Checked on the shared real VLP-16 frame (nebula): of 188 firings with two different echoes,
    the even block's is the farther in all."""
    import dataclasses

    first = dataclasses.replace(scan, second=None)  # its cloud written with the frame is used as is where it matches
    if stamp_ns is None:
        stamp_ns = scan.stamp_ns(time_reference)
    out = dual_blocks(*(pointcloud_array(s, "velodyne", True, ground_truth, stamp_ns, time_reference)
                        for s in (first, scan.second)))
    if organized:
        return out
    return out.reshape(-1)[np.isfinite(out["x"].reshape(-1))]


def dual_blocks(strongest: np.ndarray, other: np.ndarray) -> np.ndarray:
    """(2 F, L) organized velodyne cloud of a dual-return frame from its two echoes' (F, L) clouds: the scan's
    echoes are (strongest, other), the driver's blocks (last, other). One compiled pass puts the farther record
    first, copying raw words (numpy copies packed records field by field: its copies and masks took 2.3 ms of
    a VLP-16 dual frame's 2.7 ms cloud, the pass 0.4 ms)."""
    strongest, other = np.ascontiguousarray(strongest), np.ascontiguousarray(other)
    firings, lasers = strongest.shape
    out = np.empty((firings, 2, lasers), strongest.dtype)
    size = strongest.dtype.itemsize
    word = np.uint16 if size % 2 == 0 else np.uint8  # velodyne records are 22 bytes + 4 per ground-truth field
    as_words = lambda c, *shape: c.view(word).reshape(*shape, size // np.dtype(word).itemsize)
    _last_block_first(as_words(strongest, firings, lasers), as_words(other, firings, lasers),
                      strongest["x"], strongest["y"], strongest["z"], other["x"], other["y"], other["z"],
                      as_words(out, firings, 2, lasers))
    return out.reshape(2 * firings, lasers)


class FrameCloud:
    """Writes a sensor's organized driver-layout cloud while its frame is simulated (no second pass).

    For layouts whose cloud rows are the scan's rows in the same order, or its columns (velodyne:
    one cloud row per firing), a frame's per-pixel outputs can live in the cloud itself: `views`
    gives the frame's xyz and intensity arrays (and the intensity fields the layout carries) as
    strided (rows, cols) views into it, and `fill` writes the fields that follow from a piece's
    ranges and the firing table. The result equals `pointcloud_array(scan)` byte for byte
    (tested), so `pointcloud_array` returns it as is. `FrameCloud.of(config)` is None for every
    other sensor.
    """

    LAYOUTS = ("ouster", "velodyne", "xyzi")  # gazebo layouts mark misses ±inf: not the scan's NaN xyz
    MAX_FREE = 2  # released clouds kept for reuse (double buffering when a consumer releases each frame)
    FIELDS = {"ouster": {"reflectivity": "ouster_reflectivity", "ambient": "ouster_ambient"}}

    def __init__(self, config, dtype: np.dtype):
        self.layout, self.dtype = config.layout, dtype
        self.rows, self.cols = config.rows, config.cols
        self.transposed = self.layout == "velodyne"
        self._time_reference = config.time_reference
        self._free: list[np.ndarray] = []  # complete clouds their consumers gave back (release)
        self._lock = threading.Lock()  # a consumer may release on another thread than the simulator's
        # handed-out clouds whose frames completed, by id (weak: a dropped cloud leaves, its id with it)
        self._complete: weakref.WeakValueDictionary[int, np.ndarray] = weakref.WeakValueDictionary()
        # the firing-table fields per pixel (rows, cols), the same for every frame
        self._constant = {}
        if "ring" in dtype.names:
            self._constant["ring"] = np.broadcast_to(np.arange(self.rows, dtype=np.uint16)[:, None], (self.rows, self.cols))
        time = np.asarray(config.time)
        if self.layout == "ouster":
            self._constant["t"] = np.rint(time * 1e9).astype(np.uint32)
        elif self.layout == "velodyne":  # seconds from the default header stamp (last or first firing)
            offset = time.max() if self._time_reference == "last" else time.min()
            self._constant["time"] = (time + (-int(round(float(offset) * 1e9))) * 1e-9).astype(np.float32)

    @classmethod
    def of(cls, config, piece_bounds=()) -> "FrameCloud | None":
        """The writer of a config's own cloud, or None where its cloud is not in the scan's pixel order
        or a piece boundary (`piece_bounds`, pixel indices) falls inside a row."""
        layout = config.layout
        if not config.organized or layout not in cls.LAYOUTS or any(b % config.cols for b in piece_bounds):
            return None
        if config.driver is not None:  # a driver's own times and rows: written after the frame
            return None
        if TOP_RING_FIRST[layout] is not None and config.rows > 1:
            elevation = np.asarray(config.elevation).mean(axis=1)
            order = np.argsort(-elevation if TOP_RING_FIRST[layout] else elevation, kind="stable")
            if not np.array_equal(order, np.arange(config.rows)):
                return None
        return cls(config, cloud_dtype(layout))

    def new(self) -> tuple[np.ndarray, bool]:
        """(cloud, fresh): the cloud of one frame, (rows, cols) or (cols, rows) for velodyne, padding
        bytes 0. A cloud given back with `release` is handed out again (fresh False: its padding and
        firing-table fields are in place); otherwise a new one. Nothing else is ever reused, so a
        consumer that keeps a scan keeps its cloud intact."""
        with self._lock:
            if self._free:
                return self._free.pop(), False
        shape = (self.cols, self.rows) if self.transposed else (self.rows, self.cols)
        cloud = np.empty(shape, self.dtype) if _packed(self.dtype) else np.zeros(shape, self.dtype)
        return cloud, True

    def stamp(self, cloud: np.ndarray, time: np.ndarray) -> None:
        """A frame with its own pixel times (column-time jitter, lidar_ros/physics/column_timing.py): the ouster
        `t` from them instead of the firing table's (a velodyne cloud of such a frame is rebuilt by
        pointcloud_array: `matches` says no)."""
        if "t" in self._constant:
            out, time = self._pixels(cloud, "t"), np.asarray(time)
            if time.dtype == np.float64 and time.shape == out.shape:
                _write_nanoseconds(time, out)  # one pass into the cloud, not four
            else:
                out[...] = np.rint(time * 1e9).astype(np.uint32)

    def done(self, cloud: np.ndarray) -> None:
        """Every field of `cloud` is written (its frame succeeded): it may be released for reuse."""
        with self._lock:
            self._complete[id(cloud)] = cloud

    def release(self, cloud: np.ndarray) -> None:
        """The caller's promise that nothing reads `cloud` any more: a later frame may write into it.
        Only complete clouds of this writer are kept (at most MAX_FREE); others are left to the GC."""
        with self._lock:
            if self._complete.get(id(cloud)) is not cloud:
                return
            del self._complete[id(cloud)]
            if len(self._free) < self.MAX_FREE:
                self._free.append(cloud)

    def _pixels(self, cloud: np.ndarray, name: str) -> np.ndarray:
        view = cloud[name]
        return view.T if self.transposed else view

    def views(self, cloud: np.ndarray) -> dict[str, np.ndarray]:
        """(rows, cols[, 3]) views into `cloud` in the scan's pixel order: xyz float32, intensity
        float32, the physics intensity fields the layout carries (by their physics name), and the range in
        millimetres (RANGE_MM, uint32) where the layout has one (lidar_ros/sink.py: the simulator writes it)."""
        item = self.dtype.itemsize
        strides = (item, self.rows * item, 4) if self.transposed else (self.cols * item, item, 4)
        xyz = np.ndarray((self.rows, self.cols, 3), np.float32, buffer=cloud, strides=strides)
        out = {"xyz": xyz}
        if self.layout != "velodyne":  # velodyne: NaN intensity on misses, written by fill
            out["intensity"] = self._pixels(cloud, "intensity")
        for name, physics in self.FIELDS.get(self.layout, {}).items():
            out[physics] = self._pixels(cloud, name)
        if "range" in self.dtype.names:
            out[RANGE_MM] = self._pixels(cloud, "range")
        return out

    def fill(self, cloud: np.ndarray, r0: int, r1: int, range_m: np.ndarray, fresh: bool = True,
             intensity: np.ndarray | None = None) -> None:
        """The fields of scan rows r0..r1 that are not views: firing-table constants (only in a
        fresh cloud), velodyne intensity (NaN on misses). range_m, intensity: those rows' values,
        (r1 - r0) * cols in pixel order. (The range in mm is a view, RANGE_MM: written with xyz.)"""
        if self.layout == "velodyne":
            shape = (r1 - r0, self.cols)
            out = self._pixels(cloud, "intensity")[r0:r1]
            if _flat_float32(range_m, out.size) and _flat_float32(intensity, out.size):
                _write_velodyne_intensity(range_m.reshape(-1), intensity.reshape(-1), out)  # one pass, not three
            else:
                out[...] = np.where(np.isnan(range_m.reshape(shape)), np.float32(np.nan), intensity.reshape(shape))
        for name, values in self._constant.items() if fresh else ():
            self._pixels(cloud, name)[r0:r1] = values[r0:r1]

    def matches(self, scan, layout, organized, ground_truth, stamp_ns=None, time_reference=None) -> bool:
        """Whether `pointcloud_array(scan, layout, organized, ground_truth, stamp_ns, time_reference)`
        is this frame's cloud."""
        if (layout or scan.config.layout) != self.layout or organized not in (None, True) or ground_truth:
            return False
        if self.layout != "velodyne":
            return True
        if scan.time is not scan.config.time:
            return False
        reference = time_reference or scan.config.time_reference
        if stamp_ns is None:
            return reference == self._time_reference
        return int(stamp_ns) == scan.stamp_ns(self._time_reference)


def _packed(dtype: np.dtype) -> bool:
    """True when the fields of a structured dtype cover every byte of its items (no padding)."""
    return sum(dtype.fields[name][0].itemsize for name in dtype.names) == dtype.itemsize


def _millimetres(range_m: np.ndarray) -> np.ndarray:
    """uint32 millimetres, 0 for no return (NaN): lidar_ros/sink.py range_millimetres in numpy passes."""
    mm = range_m * np.float32(1000.0)
    np.fmax(mm, np.float32(0.0), out=mm)  # fmax: NaN (no return) -> 0; ranges are never negative
    np.rint(mm, out=mm)
    return mm.astype(np.uint32)


def _flat_float32(values: np.ndarray, size: int) -> bool:
    """Whether `values` can go to the one-pass writers below: C-contiguous float32 of `size` pixels."""
    return values.dtype == np.float32 and values.flags.c_contiguous and values.size == size


@kernel
def _last_block_first(strongest, other, sx, sy, sz, ox, oy, oz, out):
    """out[f, 0, l] the record (raw words) of the farther echo of firing f, laser l, out[f, 1, l] the other's:
    the other echo goes first where its squared range x^2 + y^2 + z^2 (float32, summed in that order) is
    finite and greater than the strongest's (a NaN point, no echo, stays in the odd block)."""
    firings, lasers, size = strongest.shape
    for f in range(firings):
        for l in range(lasers):
            near = sx[f, l] * sx[f, l] + sy[f, l] * sy[f, l] + sz[f, l] * sz[f, l]
            far = ox[f, l] * ox[f, l] + oy[f, l] * oy[f, l] + oz[f, l] * oz[f, l]
            swap = np.isfinite(far) and far > near
            for k in range(size):
                a, b = strongest[f, l, k], other[f, l, k]
                out[f, 0, l, k] = b if swap else a
                out[f, 1, l, k] = a if swap else b


@kernel
def _write_velodyne_intensity(range_m, intensity, out):
    """out[row, col] = intensity, NaN where the range is NaN (no return), in pixel order: the velodyne
    driver's intensity in one compiled pass into the cloud's strided view (test_lidar_perf_loops: the same bytes)."""
    cols = out.shape[1]
    nan = np.float32(np.nan)
    for row in range(out.shape[0]):
        for col in range(cols):
            i = row * cols + col
            out[row, col] = nan if range_m[i] != range_m[i] else intensity[i]


def _derived(scan, key: tuple, compute):
    """Per-pixel arrays that depend only on the sensor's firing table, computed once per config."""
    cache = scan.config.derived
    if scan.time is not scan.config.time:  # a scan with its own times: nothing to share
        return compute()
    if key not in cache:
        if len(cache) > 16:
            cache.clear()
        cache[key] = compute()
    return cache[key]


def pointcloud_msg(scan, t_ns: int | None = None, frame_id: str | None = None, layout: str | None = None,
                   organized: bool | None = None, ground_truth=(), time_reference: str | None = None,
                   clock_shift_ns: int = 0):
    """sensor_msgs/PointCloud2 (rosbags object) of a scan in a driver layout.

    t_ns: header stamp; default the layout's own (velodyne: last/first firing, others: scan start).
    clock_shift_ns: the message clock minus the scan's (a bag that starts at another time than the
    simulation): added to the header stamp and to livox's absolute per-point `timestamp`; the relative
    per-point times (velodyne `time`, ouster `t`) stay as they are."""
    cfg = scan.config
    layout = _check_layout(layout or cfg.layout)
    if t_ns is None:
        t_ns = scan.stamp_ns(time_reference) if layout == "velodyne" else scan.t0_ns
    points = pointcloud_array(scan, layout, organized, ground_truth, stamp_ns=t_ns, time_reference=time_reference)
    if clock_shift_ns:
        t_ns = int(t_ns) + int(clock_shift_ns)
        if points.dtype.names and "timestamp" in points.dtype.names:  # livox: absolute ns (float64 as the driver)
            points = points.copy()
            points["timestamp"] += float(clock_shift_ns)
    height = points.shape[0] if points.ndim == 2 else 1
    # organized: a point is NaN exactly where the scan has no return; velodyne_pointcloud marks every
    # organized cloud not dense, gz-sensors' ±inf misses are not dense either
    dense = points.ndim == 1 or (layout != "velodyne" and bool(points.size and scan.hit.all()))
    return messages.pointcloud2(points, t_ns, frame_id or cfg.frame_id, height=height, is_dense=dense)


def laserscan_msg(scan, t_ns: int | None = None, frame_id: str | None = None):
    """sensor_msgs/LaserScan of a 2D scan; no return = +inf (REP-117). Stamp: the first beam."""
    cfg = scan.config
    if not cfg.planar:
        raise ConfigError(f"sensor {cfg.name}: LaserScan needs a 2D (type: planar) sensor, this one is {cfg.kind}")
    info = cfg.planar_info
    ranges = np.where(scan.hit[0], scan.range[0], np.float32(np.inf)).astype(np.float32)
    return messages.laserscan(
        ranges, scan.t0_ns if t_ns is None else t_ns, frame_id or cfg.frame_id,
        angle_min=info["angle_min"], angle_increment=info["angle_increment"],
        range_min=cfg.range_min, range_max=cfg.range_max, intensities=np.ascontiguousarray(scan.intensity[0]),
        time_increment=info["time_increment"], scan_time=info["scan_time"],
    )


def _check_layout(layout: str) -> str:
    if layout not in LAYOUTS:
        raise ConfigError(f"point cloud layout '{layout}'; allowed: {', '.join(LAYOUTS)}")
    return layout


def _check_ground_truth(fields) -> tuple[str, ...]:
    fields = tuple(fields or ())
    for f in fields:
        if f not in GROUND_TRUTH_FIELDS:
            raise ConfigError(f"ground-truth field '{f}'; allowed: {', '.join(GROUND_TRUTH_FIELDS)}")
    return fields


# -- range sensors and depth cameras (lidar_ros/patterns/cone.py, depth_camera.py) --------------------
RADIATION_TYPES = {"ultrasound": 0, "infrared": 1}  # sensor_msgs/Range constants


def cone_reading(scan) -> tuple[float, float, float]:
    """(range m, azimuth rad, elevation rad) of the nearest return in a cone sensor's scan (Kallin 2018:
    α = atan(y/x), e = atan(z/x) of the nearest point); (+inf, 0, 0) when nothing is in the cone."""
    if not scan.hit.any():
        return float("inf"), 0.0, 0.0
    r = np.where(scan.hit, scan.range, np.inf)
    at = np.unravel_index(int(np.argmin(r)), r.shape)
    x, y, z = (float(v) for v in scan.xyz[at])
    return float(r[at]), float(np.arctan2(y, x)), float(np.arctan2(z, x))


def range_msg(scan, t_ns: int | None = None, frame_id: str | None = None):
    """sensor_msgs/Range of a cone sensor: the nearest return, +inf when none (the message's convention
    for 'nothing detected'); field_of_view = the cone's horizontal opening."""
    cfg = scan.config
    if cfg.kind != "cone":
        raise ConfigError(f"sensor {cfg.name}: a Range message needs a cone sensor (type: cone), this one is {cfg.kind}")
    reading, _, _ = cone_reading(scan)
    rng_type = _T("sensor_msgs/msg/Range")
    return rng_type(header=messages.header(scan.t0_ns if t_ns is None else t_ns, frame_id or cfg.frame_id),
                    radiation_type=RADIATION_TYPES[cfg.spec.get("radiation", "ultrasound")],
                    field_of_view=float(cfg.planar_info["fov_h"]), min_range=float(cfg.range_min),
                    max_range=float(cfg.range_max), range=reading, variance=0.0)


def depth_image(scan, encoding: str | None = None) -> np.ndarray:
    """(height, width) depth of a depth camera's scan: the optical z of each return (range · d_x along the
    nominal ray). 32FC1: metres, +inf where there is no return (REP-118: too far); 16UC1: millimetres, 0."""
    cfg = scan.config
    if cfg.kind != "depth_camera":
        raise ConfigError(f"sensor {cfg.name}: a depth image needs a depth camera (type: depth_camera), this one is {cfg.kind}")
    encoding = encoding or cfg.spec.get("encoding", "32FC1")
    depth = np.where(scan.hit, scan.range * cfg.directions[..., 0], np.float32(np.inf)).astype(np.float32)
    if encoding == "16UC1":
        mm = np.where(np.isfinite(depth), np.rint(depth * 1000.0), 0.0)
        return np.clip(mm, 0, 65535).astype(np.uint16)
    return depth


def depth_msgs(scan, t_ns: int | None = None, frame_id: str | None = None) -> tuple:
    """(sensor_msgs/Image depth, sensor_msgs/CameraInfo) of a depth camera, in its optical frame."""
    cfg = scan.config
    depth = depth_image(scan)
    t_ns = scan.t0_ns if t_ns is None else t_ns
    frame = frame_id or cfg.frame_id
    a = np.ascontiguousarray(depth).astype(depth.dtype.newbyteorder("<"), copy=False)
    image = messages.Image(header=messages.header(t_ns, frame), height=a.shape[0], width=a.shape[1],
                           encoding="16UC1" if a.dtype == np.uint16 else "32FC1", is_bigendian=0,
                           step=a.shape[1] * a.itemsize, data=a.reshape(-1).view(np.uint8))
    i = cfg.planar_info
    k = np.array([i["fx"], 0, i["cx"], 0, i["fy"], i["cy"], 0, 0, 1], np.float64)
    p = np.array([i["fx"], 0, i["cx"], 0, 0, i["fy"], i["cy"], 0, 0, 0, 1, 0], np.float64)
    info = _T("sensor_msgs/msg/CameraInfo")(
        header=messages.header(t_ns, frame), height=a.shape[0], width=a.shape[1], distortion_model="plumb_bob",
        d=np.zeros(5), k=k, r=np.eye(3).reshape(-1), p=p, binning_x=0, binning_y=0,
        roi=_T("sensor_msgs/msg/RegionOfInterest")(x_offset=0, y_offset=0, height=0, width=0, do_rectify=False))
    return image, info


def _T(name: str):
    return messages.TYPESTORE.types[name]


# -- livox_ros_driver CustomMsg (FAST-LIO's input: per-point offset time) ---------------------------------
# livox_ros_driver/msg/CustomMsg.msg and CustomPoint.msg as the driver (and FAST-LIO's copy) define them
LIVOX_CUSTOM_MSGS = {
    "livox_ros_driver/msg/CustomPoint": "uint32 offset_time\nfloat32 x\nfloat32 y\nfloat32 z\n"
                                        "uint8 reflectivity\nuint8 tag\nuint8 line\n",
    "livox_ros_driver/msg/CustomMsg": "std_msgs/Header header\nuint64 timebase\nuint32 point_num\nuint8 lidar_id\n"
                                      "uint8[3] rsvd\nlivox_ros_driver/CustomPoint[] points\n",
}


LIVOX_PACKAGES = ("livox_ros_driver", "livox_ros_driver2")  # driver2 (HAP, Mid-360) defines the same messages


def _livox_types(package: str = "livox_ros_driver"):
    from rosbags.typesys import get_types_from_msg

    if package not in LIVOX_PACKAGES:
        raise ConfigError(f"livox custom message package '{package}'; allowed: {', '.join(LIVOX_PACKAGES)}")
    store = messages.TYPESTORE
    if f"{package}/msg/CustomMsg" not in store.types:
        types = {}
        for name, text in LIVOX_CUSTOM_MSGS.items():
            types.update(get_types_from_msg(text.replace("livox_ros_driver/", f"{package}/"),
                                            name.replace("livox_ros_driver/", f"{package}/")))
        store.register(types)
    return store.types


def livox_custom_msg(scan, frame_id: str | None = None, lidar_id: int = 0, package: str = "livox_ros_driver"):
    """livox_ros_driver/CustomMsg of a scan's returns in firing order: timebase = the first point's time (ns),
    offset_time = each point's ns after it, reflectivity 0-255 (calibrated scale), tag 0, line = emitter
    (scan row). The header is stamped at the timebase, as the driver does."""
    types = _livox_types(package)
    rows, cols = np.nonzero(scan.hit)
    t = scan.t0_ns + np.rint(scan.time[rows, cols] * 1e9).astype(np.int64)
    order = np.argsort(t, kind="stable")
    rows, cols, t = rows[order], cols[order], t[order]
    timebase = int(t[0]) if len(t) else int(scan.t0_ns)
    refl = np.clip(np.asarray(scan.fields["velodyne_intensity"])[rows, cols], 0, 255).astype(np.uint8)
    point = types[f"{package}/msg/CustomPoint"]
    xyz = scan.xyz[rows, cols]
    points = [point(offset_time=int(dt), x=float(p[0]), y=float(p[1]), z=float(p[2]), reflectivity=int(r), tag=0,
                    line=int(line)) for dt, p, r, line in zip(t - timebase, xyz, refl, rows)]
    return types[f"{package}/msg/CustomMsg"](
        header=messages.header(timebase, frame_id or scan.config.frame_id), timebase=timebase,
        point_num=len(points), lidar_id=int(lidar_id), rsvd=np.zeros(3, np.uint8), points=points)


@kernel
def _write_nanoseconds(time, out):
    """out[row, col] = np.rint(time · 1e9).astype(np.uint32) (time: float64 seconds, (rows, cols)) in one compiled
    pass into the cloud's strided view. Through int64 as numpy's cast goes on x86-64 (a time before the frame's
    start wraps modulo 2^32 there too), so the same bytes (test_lidar_perf_loops)."""
    for row in range(out.shape[0]):
        for col in range(out.shape[1]):
            out[row, col] = np.uint32(np.int64(np.rint(time[row, col] * 1e9)) & 0xFFFFFFFF)
