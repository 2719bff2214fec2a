"""The compiled per-ray loops of the lidar frame against the numpy passes they replace: the same bits."""
import math

import numpy as np
import pytest

from lidar_ros.physics.edge_dropout import echo_coverage, echo_coverage_numpy


@pytest.mark.parametrize("k", [1, 2, 4, 7, 12])
def test_echo_coverage_loop_gives_numpys_bits(k):
    rng = np.random.default_rng(k)
    n = 20000
    ranges = rng.uniform(1.0, 30.0, (n, k)).astype(np.float32)
    # depth edges: sub-rays on a near and a far surface, misses (inf), and echoes that are absent (inf)
    ranges[rng.random((n, k)) < 0.3] = np.inf
    echo = ranges[:, 0] + rng.normal(0.0, 0.6, n).astype(np.float32)
    echo[rng.random(n) < 0.1] = np.inf
    weights = rng.dirichlet(np.ones(k)).astype(np.float32)
    expected = echo_coverage_numpy(ranges, weights, echo, 0.5)
    got = echo_coverage(ranges, weights, echo, 0.5)
    assert got.dtype == np.float32
    assert got.tobytes() == expected.tobytes()
    assert 0.1 < np.mean(got > 0) < 0.95  # both kinds of beams were there


def test_poisson_means_loop_gives_numpys_bits_and_the_same_counts():
    from lidar_ros.physics.photons import photon_counts, poisson_means, poisson_means_numpy

    rng = np.random.default_rng(7)
    n = 50000
    mean = rng.uniform(0.0, 3000.0, n)
    mean[rng.random(n) < 0.1] = np.nan
    mean[rng.random(n) < 0.02] = np.inf
    mean[rng.random(n) < 0.02] = -np.inf
    mean[rng.random(n) < 0.02] = -5.0
    mean[:3] = [-0.0, 0.0, 1e-300]
    returned = rng.random(n) < 0.7
    for floor in (0.0, 2.0):
        assert poisson_means(mean, returned, floor).tobytes() == poisson_means_numpy(mean, returned, floor).tobytes()
    # the counts: poisson_counts' draws on those means (test_lidar_poisson_counts checks their statistics)
    from lidar_ros.physics.poisson_counts import poisson_counts

    reference = poisson_counts(poisson_means_numpy(mean, returned, 2.0), np.random.default_rng(1), 900)
    counts = photon_counts(mean, returned, 2.0, 900, np.random.default_rng(1))
    assert counts.dtype == np.uint16
    assert counts.tobytes() == reference.tobytes()
    assert counts.max() == 900  # saturated means were there


def _returns(n, seed):
    """Ranges (finite, inf, NaN), ρ, incidence cosines (NaN, 0, -0.0 among them) and unit normals of n pixels."""
    rng = np.random.default_rng(seed)
    ranges = rng.uniform(0.0, 80.0, n).astype(np.float32)
    ranges[rng.random(n) < 0.2] = np.inf
    ranges[rng.random(n) < 0.1] = np.nan
    ranges[:4] = [-np.inf, 0.05, -0.0, 0.1]
    rho = rng.uniform(-0.1, 2.5, n).astype(np.float32)
    rho[rng.random(n) < 0.1] = 0.0
    cos = rng.uniform(-0.1, 1.0, n).astype(np.float32)
    cos[4:10] = [np.nan, 0.0, -0.0, 1e-4, 1e-3, 1.0]
    ranges[4:10], rho[4:10] = 5.0, 0.5  # those pixels see a surface
    normal = rng.standard_normal((n, 3)).astype(np.float32)
    normal /= np.linalg.norm(normal, axis=1, keepdims=True)
    return ranges, rho, cos, normal, rng.random(n) < 0.7


@pytest.mark.parametrize("overlap_range", [0.0, 10.1])
def test_signal_means_loop_gives_numpys_bits(overlap_range):
    from lidar_ros.physics.intensity import measured_reflectivity
    from lidar_ros.physics.overlap import range_overlap
    from lidar_ros.physics.photons import signal_means, signal_means_numpy

    ranges, rho, _, _, returned = _returns(40000, 3)
    rho = np.abs(rho)  # ρ ≥ 0 (validated materials; numpy's maximum(-0.0, 0.0) gives either zero)
    rho[10:14] = [np.inf, np.nan, 1e30, 0.0]
    for scale, floor in ((3.3e4, 0.0), (1e5, 3.0), (7e7, 2.0)):
        got = signal_means(ranges, rho, returned, scale, overlap_range, floor)
        assert got.dtype == np.float64
        assert got.tobytes() == signal_means_numpy(ranges, rho, returned, scale, overlap_range, floor).tobytes()
        assert np.all(got >= 0) and np.isfinite(got).all()
        if overlap_range > 0:  # the overlap the frame computes once for the signal and the measured reflectivity
            shared = range_overlap(ranges, overlap_range)
            assert signal_means(ranges, rho, returned, scale, overlap_range, floor, shared).tobytes() == got.tobytes()
            counts = np.arange(len(ranges), dtype=np.uint16)
            assert measured_reflectivity(counts, ranges, returned, scale, overlap_range, shared).tobytes() == \
                measured_reflectivity(counts, ranges, returned, scale, overlap_range).tobytes()


@pytest.mark.parametrize("day", [True, False])
def test_sun_ambient_means_loop_gives_numpys_bits(day):
    from lidar_ros.physics.ambient import pixel_means, pixel_means_numpy, sun_direction

    ranges, rho, cos, normal, _ = _returns(40000, 4)
    sun = sun_direction(40.0 if day else -5.0, 30.0)
    gain = np.random.default_rng(5).lognormal(0.0, 0.3, len(ranges)).astype(np.float32)
    for g in (None, gain, gain[::-1]):  # a strided gain too
        got = pixel_means(ranges, rho, cos, normal[::1], 200.0, 40.0, sun, day, g)
        expected = pixel_means_numpy(ranges, rho, cos, normal, 200.0, 40.0, sun, day, g)
        assert got.tobytes() == expected.tobytes()
        assert np.isnan(got).sum() == 1  # the NaN incidence cosine of a pixel in view: NaN, as numpy's
    strided = np.ascontiguousarray(np.hstack([normal, normal]))[:, ::2]  # a non-contiguous normal array
    assert pixel_means(ranges, rho, cos, strided, 200.0, 40.0, sun, day, None).tobytes() == \
        pixel_means_numpy(ranges, rho, cos, strided, 200.0, 40.0, sun, day, None).tobytes()


@pytest.mark.parametrize("sub_rays", [1, 4])
def test_textured_reflectivity_loop_gives_numpys_bits(sub_rays):
    from lidar_ros.physics.texture import textured_reflectivity, textured_reflectivity_numpy

    rng = np.random.default_rng(sub_rays)
    n = 30000
    origins = np.tile(np.float32([1.5, -2.0, 1.8]), (n * sub_rays, 1)) + rng.normal(0, 0.01, (n * sub_rays, 3)).astype(np.float32)
    directions = rng.normal(size=(n * sub_rays, 3)).astype(np.float32)
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    o, d = origins[::sub_rays], directions[::sub_rays]  # strided views, as the frame passes the beams' rays
    ranges = rng.uniform(0.5, 80.0, n).astype(np.float32)
    ranges[rng.random(n) < 0.2] = np.inf  # misses keep their reflectivity (0)
    rho = np.where(np.isfinite(ranges), rng.uniform(0.05, 1.2, n), 0).astype(np.float32)
    for rays in (None, np.sort(rng.choice(n, 500, replace=False))):
        r, p = (ranges, rho) if rays is None else (ranges[rays], rho[rays])
        expected = textured_reflectivity_numpy(o, d, r, p, 0.35, 0.4, 11, rays)
        got = textured_reflectivity(o, d, r, p, 0.35, 0.4, 11, rays)
        assert got.dtype == np.float32 and got.tobytes() == expected.tobytes()
        assert np.std(got[np.isfinite(r)] / p[np.isfinite(r)]) > 0.1  # textured


def _corner_value(i: int, j: int, k: int, seed: int) -> float:
    """A lattice corner's value written out per corner in Python integers: SplitMix64 of the seed xor the three axes'
    21 low bits times their multipliers (texture.py's docstring), the top 53 bits as u in [0, 1), (u - 0.5)·√12."""
    mask = 2**64 - 1
    z = seed ^ ((i & 0x1FFFFF) * 0x9E3779B97F4A7C15 & mask) ^ ((j & 0x1FFFFF) * 0xC2B2AE3D27D4EB4F & mask) \
        ^ ((k & 0x1FFFFF) * 0x165667B19E3779F9 & mask)
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9 & mask
    z = (z ^ (z >> 27)) * 0x94D049BB133111EB & mask
    z ^= z >> 31
    return ((z >> 11) * (1.0 / 2.0**53) - 0.5) * 3.4641016151377544


def test_texture_field_gives_the_bits_of_each_corner_hashed_whole():
    """The compiled field hashes each axis's two lattice values once and combines them per corner: its bits equal
    the smoothstep blend of the 8 corners each hashed on its own (corner order di, dj, dk, as the loop sums)."""
    from lidar_ros.physics.texture import FIELD_SCALE, field

    p = np.random.default_rng(5).uniform(-30, 30, (300, 3))
    p[:5] = [[0.0, 0.0, 0.0], [-0.2, 0.7, -1e-9], [1e6, -1e6, 3.0], [0.4, 0.4, 0.4], [-5.0, 2.0, 9.0]]
    length, seed = 0.4, 2**63 + 11
    got = field(p, length, seed)
    smooth = lambda u: u * u * (3.0 - 2.0 * u)
    for n, point in enumerate(p):
        x, y, z = (float(c) * (1.0 / length) for c in point)
        i, j, k = math.floor(x), math.floor(y), math.floor(z)
        sx, sy, sz = smooth(x - i), smooth(y - j), smooth(z - k)
        total = 0.0
        for di in range(2):
            for dj in range(2):
                for dk in range(2):
                    total += ((sx if di else 1.0 - sx) * (sy if dj else 1.0 - sy) * (sz if dk else 1.0 - sz)
                              * _corner_value(i + di, j + dj, k + dk, seed))
        assert got[n] == total * FIELD_SCALE, (n, point)


def test_a_pose_is_validated_again_when_its_values_change():
    """The simulator keeps the last validated pose: the same values skip the check, changed values (also
    in the same array) are checked and used."""
    from lidar_ros import LidarSimulator, load_sensor
    from radarays_ros.errors import ConfigError
    from radarays_ros.tracing import make_backend
    from radarays_ros.world.transforms import pose_to_matrix
    scene = _yard()
    backend = make_backend("embree", scene)
    kept, fresh = (LidarSimulator(load_sensor("VLP-16"), scene, backend, seed=0) for _ in range(2))
    pose = pose_to_matrix(0.0, 0.0, 1.0, 0.0, 0.0, 0.0)
    frames = [kept.simulate(pose), kept.simulate(pose)]
    pose[0, 3] = 0.5  # the same array, moved: checked again, a frame from there
    frames.append(kept.simulate(pose))
    expected = [fresh.simulate(pose_to_matrix(x, 0.0, 1.0, 0.0, 0.0, 0.0)) for x in (0.0, 0.0, 0.5)]
    for got, want in zip(frames, expected):
        assert got.range.tobytes() == want.range.tobytes() and got.xyz.tobytes() == want.xyz.tobytes()
    assert not np.array_equal(frames[1].xyz, frames[2].xyz, equal_nan=True)
    pose[:3, :3] *= 2.0  # no longer a rotation
    with pytest.raises(ConfigError, match="rotation"):
        kept.simulate(pose)


def test_echo_normals_loops_give_numpys_bits():
    from lidar_ros.physics.beam_returns import picked_normals, zeroed_normals

    rng = np.random.default_rng(5)
    normal = rng.normal(size=(4000, 3)).astype(np.float32)
    normal[::7] = -0.0  # signed zeros are copied as they are
    pick = rng.integers(0, 4000, 1000)
    present = rng.random(1000) < 0.8
    expected = np.where(present[:, None], normal[pick], np.float32(0.0))
    assert picked_normals(normal, pick, present).tobytes() == expected.tobytes()
    mask = rng.random(4000) < 0.1
    assert zeroed_normals(normal, mask).tobytes() == np.where(mask[:, None], np.float32(0.0), normal).tobytes()


def _yard():
    """Ground, a wall and a pole (depth edges for the echoes and edge dropouts)."""
    import trimesh

    from radarays_ros.world.mesh import TriMesh
    from radarays_ros.world.scene import Scene
    from radarays_ros.world.transforms import pose_to_matrix

    scene = Scene()
    for name, size, pose, material in [("ground", [60, 60, 1], (0, 0, -0.5), "asphalt"),
                                       ("box", [4, 6, 8], (8, 2, 4), "concrete"),
                                       ("pole", [0.2, 0.2, 4], (4, -1, 2), "metal")]:
        mesh = trimesh.creation.box(size)
        scene.add_entity(f"{name}::link::visual", TriMesh(mesh.vertices, mesh.faces), pose_to_matrix(*pose),
                         material=material)
    return scene


@pytest.mark.parametrize("sensor, overrides", [
    ("VLP-16", {"beam.return_mode": "dual", "weather.fog_visibility_km": 0.5}),
    ("OS1-64", {"columns": 512, "rate_hz": 10, "beam.return_mode": "dual"}),
])
def test_realistic_frames_are_the_same_bytes_on_one_and_two_threads(sensor, overrides):
    """The compiled loops run inside the frame's pieces on every thread: a frame (every .npz channel, second
    echoes included, and the driver cloud) does not depend on the thread count."""
    from lidar_ros import LidarSimulator, load_sensor
    from radarays_ros.io.lidar_clouds import FrameCloud, pointcloud_array
    from radarays_ros.tracing import make_backend
    from radarays_ros.world.transforms import pose_to_matrix

    scene = _yard()
    cfg = load_sensor(sensor, overrides, realistic=True)
    frames = []
    for threads in (1, 2):
        sim = LidarSimulator(cfg, scene, make_backend("embree", scene, threads=threads), seed=4, sink=FrameCloud.of)
        scans = [sim.simulate(pose_to_matrix(x, 0.0, 1.5, 0.0, 0.0, 0.2), t0_ns=k * 10**8) for k, x in enumerate((0, 1))]
        frames.append([{**scan.arrays(), "cloud": pointcloud_array(scan, cfg.layout)} for scan in scans])
    for one, two in zip(*frames):
        assert one.keys() == two.keys() and "range2" in one
        for key in one:
            assert np.ascontiguousarray(one[key]).tobytes() == np.ascontiguousarray(two[key]).tobytes(), key
    assert np.isfinite(frames[0][0]["range"]).mean() > 0.3


def test_flat_ambient_loop_gives_numpys_bits():
    from lidar_ros.physics.intensity import ouster_ambient, ouster_ambient_numpy

    ranges, rho, _, _, _ = _returns(40000, 6)
    rho = np.abs(rho)  # ρ ≥ 0 (validated materials)
    rho[10:13] = [np.inf, np.nan, 1e30]
    for level, sky in ((120.0, 40.0), (3000.0, 0.0), (0.0, 65000.0), (0.5, 0.25)):
        got = ouster_ambient(ranges, rho, level, sky, np.random.default_rng(9))
        expected = ouster_ambient_numpy(ranges, rho, level, sky, np.random.default_rng(9))
        assert got.dtype == np.uint16
        assert got.tobytes() == expected.tobytes()
    assert not ouster_ambient(ranges, rho, 0.0, 0.0, np.random.default_rng(9)).any()


def test_cloud_millimetres_in_the_window_pass_give_numpys_bits():
    """The range in mm that the simulator's window pass writes into a sink's strided RANGE_MM view
    (lidar_ros/sink.py range_millimetres) against io's numpy `_millimetres` of the pass's ranges: the same uint32
    bytes for ranges, misses (NaN), returns pushed out of the window (0), halves that round to even, zero and
    negatives."""
    from lidar_ros.simulator import _NO_COUNTS, _NONE_2D, _NONE_3D, _points_in_window
    from radarays_ros.io.lidar_clouds import _millimetres

    rng = np.random.default_rng(11)
    rows, cols = 16, 2048
    ranges = rng.uniform(0.0, 300.0, rows * cols).astype(np.float32)
    ranges[rng.random(len(ranges)) < 0.2] = np.nan
    ranges[:8] = np.float32([0.0, -0.0, -1.0, 0.0005, 0.0015, 0.0025, 250.0, 4294967.0])  # frames hold no inf
    ranges[8:40] = (np.arange(32, dtype=np.float32) + np.float32(0.5)) / np.float32(1000.0)  # x.5 mm: ties
    returned = np.isfinite(ranges)
    cloud = np.zeros((cols, rows), np.dtype([("x", np.float32), ("range", np.uint32)]))  # column-major pixels
    view = cloud["range"].T
    window = ranges.copy()
    grid = (rows, cols)
    pushed = _points_in_window(window.reshape(grid), returned.reshape(grid), np.float32(-2.0), np.float32(280.0),
                               _NONE_2D, np.ones((3, rows, cols), np.float32), _NONE_3D, np.empty(grid, bool),
                               np.empty(grid, np.float32), np.empty((rows, cols, 3), np.float32), view, *_NO_COUNTS)
    expected = _millimetres(window).reshape(rows, cols)
    assert view.tobytes() == expected.tobytes()
    assert pushed > 1000 and np.isnan(window[ranges > 280]).all()  # returns past the window's end read 0
    assert (expected == 0).mean() > 0.15 and expected.max() > 250_000  # misses and far ranges were there
    assert expected[0, :3].tolist() == [0, 0, 0] and expected[0, 3:6].tolist() == [0, 2, 2]  # ties to even
    assert expected[0, 8:12].tolist() == [0, 2, 2, 4]


def test_cloud_nanoseconds_loop_gives_numpys_bits():
    """io/lidar_clouds.py's one-pass pixel-time writer (FrameCloud.stamp) into a strided cloud view against the
    numpy passes it replaces: the same uint32 bytes for jittered times, ties at half a nanosecond and times
    before the frame's start (negative, wrapped as numpy's cast wraps them)."""
    from radarays_ros.io.lidar_clouds import _write_nanoseconds

    rng = np.random.default_rng(13)
    rows, cols = 16, 1024
    time = np.linspace(0.0, 0.1, cols)[None, :] + rng.normal(0.0, 2e-6, (rows, cols))
    time[0, :6] = [-3e-6, -1e-9, 0.0, 2.5e-9, 3.5e-9, 0.0999999995]
    expected = np.rint(time * 1e9).astype(np.uint32)
    cloud = np.zeros((cols, rows), np.dtype([("x", np.float32), ("t", np.uint32)]))  # column-major pixels
    view = cloud["t"].T
    _write_nanoseconds(time, view)
    assert view.tobytes() == expected.tobytes()
    assert expected[0, 0] > 2**31 and np.unique(expected).size > rows * cols // 2  # wrapped and jittered times


def test_cloud_velodyne_intensity_loop_gives_numpys_bits():
    """The one-pass velodyne intensity writer (NaN on misses) against the np.where it replaces: the same bytes."""
    from radarays_ros.io.lidar_clouds import _write_velodyne_intensity

    rng = np.random.default_rng(12)
    rows, cols = 16, 1800
    ranges = rng.uniform(0.5, 100.0, rows * cols).astype(np.float32)
    ranges[rng.random(len(ranges)) < 0.3] = np.nan
    intensity = rng.uniform(0.0, 255.0, rows * cols).astype(np.float32)
    expected = np.where(np.isnan(ranges), np.float32(np.nan), intensity).reshape(rows, cols)
    cloud = np.zeros((rows, cols), np.dtype([("x", np.float32), ("intensity", np.float32), ("ring", np.uint16)]))
    _write_velodyne_intensity(ranges, intensity, cloud["intensity"])
    assert cloud["intensity"].tobytes() == expected.tobytes()
    assert 0.2 < np.isnan(expected).mean() < 0.4


def _dual_blocks_numpy(strongest, other):
    """The velodyne dual blocks as numpy arrays them (the form the compiled pass replaced): swap where the other
    echo's squared range is finite and greater, then interleave the firings' two rows."""
    far = [c["x"] ** 2 + c["y"] ** 2 + c["z"] ** 2 for c in (strongest, other)]
    swap = np.isfinite(far[1]) & (far[1] > far[0])
    first, second = strongest.copy(), other.copy()
    first[swap], second[swap] = other[swap], strongest[swap]
    return np.stack([first, second], axis=1).reshape(-1, strongest.shape[1])


@pytest.mark.parametrize("ground_truth", [(), ("entity",), ("entity", "material")])  # records of 22, 26, 30 bytes
def test_velodyne_dual_blocks_in_one_pass_give_numpys_records(ground_truth):
    """Both echoes' organized clouds (firings x lasers) with NaN points, equal ranges and far second echoes,
    into the driver's blocks by the compiled pass: the same bytes as the numpy swap and interleave."""
    from radarays_ros.io.lidar_clouds import cloud_dtype, dual_blocks

    rng = np.random.default_rng(21)
    firings, lasers = 1800, 16
    dtype = cloud_dtype("velodyne", ground_truth)
    clouds = []
    for _ in range(2):
        cloud = np.zeros((firings, lasers), dtype)
        raw = cloud.view(np.uint8).reshape(firings, lasers, -1)
        raw[...] = rng.integers(0, 256, raw.shape, dtype=np.uint8)  # every other field: arbitrary bytes
        for axis in "xyz":
            cloud[axis] = rng.uniform(-60.0, 60.0, (firings, lasers)).astype(np.float32)
        clouds.append(cloud)
    strongest, other = clouds
    gone = rng.random((firings, lasers)) < 0.3
    for axis in "xyz":
        other[axis][gone] = np.nan  # no second echo
        strongest[axis][rng.random((firings, lasers)) < 0.05] = np.nan
    tie = rng.random((firings, lasers)) < 0.05
    for axis in "xyz":
        other[axis][tie] = strongest[axis][tie]  # the same range: no swap
    other["x"][rng.random((firings, lasers)) < 0.02] = np.inf  # an infinite range is not farther: no swap
    expected = _dual_blocks_numpy(strongest, other)
    out = dual_blocks(strongest, other)
    assert out.dtype == dtype and out.shape == (2 * firings, lasers)
    assert out.tobytes() == expected.tobytes()
    as_bytes = lambda c: c.view(np.uint8).reshape(firings, lasers, -1)
    swapped = ~np.all(as_bytes(np.ascontiguousarray(out[0::2])) == as_bytes(strongest), axis=2)
    assert 0.2 < swapped.mean() < 0.6  # both orders were there


@pytest.mark.parametrize("overlap_range", [0.0, 10.1])
def test_measured_calibrated_reflectivity_loop_gives_numpys_bits(overlap_range):
    """The REFLECTIVITY channel of counts in one pass against calibrated_reflectivity(measured_reflectivity(...)):
    misses, NaN ranges, ranges inside 0.1 m, saturated counts and retroreflectors (ρ̂ > 1) included."""
    from lidar_ros.physics.intensity import (calibrated_reflectivity, measured_calibrated_reflectivity,
                                             measured_reflectivity)
    from lidar_ros.physics.overlap import range_overlap

    ranges, _, _, _, returned = _returns(40000, 5)
    ranges[20:24] = [np.nan, 0.0, 0.05, np.inf]
    counts = np.random.default_rng(6).integers(0, 65536, len(ranges)).astype(np.uint16)
    counts[30:34] = [0, 1, 65535, 65535]
    for scale, full in ((3.3e4, 20.0), (2.31e5, 4.0), (1e9, 1e3)):
        reference = calibrated_reflectivity(measured_reflectivity(counts, ranges, returned, scale, overlap_range),
                                            full).astype(np.uint16)
        got = measured_calibrated_reflectivity(counts, ranges, returned, scale, full, overlap_range)
        assert got.dtype == np.uint16 and got.tobytes() == reference.tobytes()
        assert np.any(got > 100) and np.any((got > 0) & (got <= 100))  # retroreflectors and diffuse returns both
        if overlap_range > 0:  # the overlap the frame computes once for the signal and this channel
            shared = range_overlap(ranges, overlap_range)
            assert measured_calibrated_reflectivity(counts, ranges, returned, scale, full, overlap_range,
                                                    shared).tobytes() == got.tobytes()


@pytest.mark.parametrize("overlap_range", [0.0, 10.1])
def test_ouster_signal_loop_gives_numpys_bits(overlap_range):
    """The SIGNAL channel without photon noise in one pass against its numpy passes: misses (ρ 0, range inf or
    NaN), ranges inside 0.1 m, saturated counts (bright near returns) and every count between."""
    from lidar_ros.physics.intensity import ouster_signal, ouster_signal_numpy

    rng = np.random.default_rng(9)
    n = 40000
    ranges = rng.uniform(0.0, 150.0, n).astype(np.float32)
    rho = rng.uniform(0.0, 1.5, n).astype(np.float32)
    ranges[:6] = [np.nan, np.inf, 0.0, 0.05, 0.1, 0.3]
    rho[6:12] = [0.0, 1e-7, 50.0, 1.0, 255.0, 0.5]
    ranges[12], rho[12] = 20.0, 1e6  # saturates past the overlap range too
    rho[ranges > 140] = 0.0  # misses read ρ 0
    for scale in (3.3e4, 2.31e5, 1e9):
        got = ouster_signal(rho, ranges, scale, overlap_range)
        want = ouster_signal_numpy(rho, ranges, scale, overlap_range)
        assert got.dtype == np.uint16 and got.tobytes() == want.tobytes()
        assert np.any(got == 65535) and np.any((got > 0) & (got < 65535)) and np.any(got == 0)


@pytest.mark.parametrize("k, dual", [(4, True), (4, False), (1, True), (12, True)])
def test_split_echoes_dropped_in_one_pass_give_the_numpy_masks(k, dual):
    """drop_split_echoes against edge_dropped and the numpy masks (drop_split_echoes_numpy): the same draws, the
    same echoes after, with beams whose first echo is lost and a second moved up, lost without a second,
    kept, and absent (inf); wide rows (k >= 8: glass columns) through numpy's coverage."""
    from lidar_ros.physics.echoes import Echo
    from lidar_ros.physics.edge_dropout import drop_split_echoes, drop_split_echoes_numpy

    rng = np.random.default_rng(10 + k)
    n = 20000
    ranges = rng.uniform(1.0, 30.0, (n, k)).astype(np.float32)
    ranges[rng.random((n, k)) < 0.3] = np.inf
    weights = rng.dirichlet(np.ones(k)).astype(np.float32)
    first_range = ranges[:, 0] + rng.normal(0.0, 0.6, n).astype(np.float32)
    first_range[rng.random(n) < 0.1] = np.inf
    second_range = np.where(rng.random(n) < 0.4, first_range + np.float32(3.0), np.float32(np.inf)).astype(np.float32)

    def echoes():
        first = Echo(first_range.copy(), rng_rho.copy(), np.arange(n, dtype=np.intp) * k)
        second = Echo(second_range.copy(), rng_rho[::-1].copy(), np.arange(n, dtype=np.intp) * k + k - 1)
        return first, second if dual else None

    rng_rho = rng.uniform(0.0, 1.0, n).astype(np.float32)
    got, want = echoes(), echoes()
    fused_draws, numpy_draws = np.random.default_rng(5), np.random.default_rng(5)
    drop_split_echoes(ranges, weights, *got, 0.5, fused_draws)
    drop_split_echoes_numpy(ranges, weights, *want, 0.5, numpy_draws)
    for a, b in zip(got, want):
        if a is not None:
            for name in ("range", "reflectivity", "dominant"):
                assert getattr(a, name).tobytes() == getattr(b, name).tobytes(), name
    assert fused_draws.random() == numpy_draws.random()  # as many draws
    lost = np.isfinite(first_range) & (~np.isfinite(got[0].range) | (got[0].range != first_range))
    moved = lost & np.isfinite(got[0].range)
    assert lost.any() and (~lost & np.isfinite(first_range)).any() and moved.any() == dual


def _kept_returns_numpy(ranges, rho, keep, limit, snr_at_limit, dropout_probability, rng):
    """SurfaceModel.apply's numpy passes before detected_returns: the reference."""
    from lidar_ros.physics.detection_probability import detected, dropouts

    keep = detected(ranges, rho, limit, snr_at_limit, rng) if keep is None else keep.copy()
    if dropout_probability > 0:
        keep &= ~dropouts(len(ranges), dropout_probability, rng)
    clean = np.where(keep, ranges, np.float32(np.nan)).astype(np.float32, copy=False)
    kept_rho = np.where(keep, rho, np.float32(0.0)).astype(np.float32, copy=False)
    return keep, clean, kept_rho


@pytest.mark.parametrize("drawn", [True, False])
@pytest.mark.parametrize("dropout_probability", [0.0, 0.05])
def test_detected_returns_in_one_pass_give_the_numpy_arrays_and_draws(drawn, dropout_probability):
    from lidar_ros.physics.config import SurfaceConfig
    from lidar_ros.physics.detection import DetectionLimit
    from lidar_ros.physics.detection_probability import detected_returns

    rng = np.random.default_rng(23)
    n = 40000
    ranges = rng.uniform(0.0, 160.0, n).astype(np.float32)  # inside, around and past the limit
    ranges[rng.random(n) < 0.15] = np.inf
    ranges[rng.random(n) < 0.02] = np.nan
    ranges[:2] = [0.0, -0.0]
    rho = rng.uniform(-0.1, 1.2, n).astype(np.float32)  # black (ρ ≤ 0) and retroreflecting ones too
    rho[rng.random(n) < 0.01] = np.nan
    limit = DetectionLimit(SurfaceConfig(model="linear", limits=((0.1, 50.0), (0.8, 120.0))))
    given = None if drawn else limit.keep(ranges, rho)
    draws = {}
    for name, fn in (("numpy", _kept_returns_numpy), ("loop", detected_returns)):
        stream = np.random.default_rng(5)
        keep_in = None if given is None else given.copy()
        draws[name] = (*fn(ranges, rho, keep_in, limit, 4.0, dropout_probability, stream), stream.random())
    (keep, clean, kept_rho, after), (keep_e, clean_e, rho_e, after_e) = draws["loop"], draws["numpy"]
    assert keep.dtype == bool and clean.dtype == kept_rho.dtype == np.float32
    assert keep.tobytes() == keep_e.tobytes()
    assert clean.tobytes() == clean_e.tobytes()
    assert kept_rho.tobytes() == rho_e.tobytes()
    assert after == after_e  # the same number of draws taken from the stream
    assert 0.2 < keep.mean() < 0.8 and np.isnan(clean[~keep]).all()  # both kinds of rays were there


def test_stamped_times_in_one_pass_give_numpys_bits():
    from lidar_ros.physics.column_stamps import stamped_times
    from lidar_ros.physics.column_timing import column_time_offsets

    rows, columns = 16, 1024
    nominal = np.arange(columns) * 1e-4 + np.linspace(0.0, 3e-6, rows)[:, None]  # (R, C) as LidarConfig.time
    pixel_column = np.broadcast_to((np.arange(columns) * 7) % columns, (rows, columns)).copy()  # not the identity
    offsets = column_time_offsets(columns, 1.36e-6, 0.77e-6, np.random.default_rng(11))
    got = stamped_times(nominal, offsets, pixel_column)
    want = nominal + offsets[pixel_column]
    assert got.shape == want.shape and got.dtype == want.dtype
    assert got.tobytes() == want.tobytes()
    assert np.any(got != nominal)


@pytest.mark.parametrize("rounds", [1, 3])
def test_patched_rows_overlaid_in_one_pass_give_the_numpy_rows(rounds):
    """interaction._Patched.at (the later rounds' rows over the first trace's, read for a beam's dominant sub-rays)
    against its numpy form, for normals (N, 3) and a per-ray field, with rows read twice, unread and out of span."""
    from lidar_ros.physics.interaction import _Patched

    rng = np.random.default_rng(41 + rounds)
    n = 50000
    base_normals = rng.normal(size=(n, 3)).astype(np.float32)
    base_ids = rng.integers(0, 1000, n).astype(np.int32)
    put = rng.permutation(np.arange(1000, n - 1000))[:6000]  # each ray put at most once, not at either end
    normals = _Patched(lambda: base_normals.copy(), lambda rows: base_normals[rows])
    ids = _Patched(lambda: base_ids.copy(), lambda rows: base_ids[rows])
    for part in np.array_split(put, rounds):
        normals.put(part, rng.normal(size=(len(part), 3)))  # float64 values into float32 rows, as leaf normals
        ids.put(part, rng.integers(-1, 1000, len(part)).astype(np.int32))
    rows = np.concatenate([rng.integers(0, n, 20000), put[:50], put[:50], [0, n - 1, put.min(), put.max()]])
    for patched in (normals, ids):
        got, want = patched.at(rows), patched._at_numpy(rows)
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes()
        assert got.tobytes() == patched()[rows].tobytes()  # as the whole array with the rows put in
    assert np.isin(rows, put).sum() > 100  # rows that were put are read
