"""Livox HAP and Mid-360 presets: datasheet numbers, non-repetition, and their clouds decoded with
livox_ros_driver2's PointCloud2 definition (Lddc::InitPointcloud2MsgHeader, packed LivoxPointXyzrtlt:
x, y, z, intensity float32 @ 0/4/8/12, tag uint8 @ 16, line uint8 @ 17, timestamp float64 @ 18, 26 bytes;
timestamp = the point's absolute time in ns; header stamp = the frame's first point)."""
from __future__ import annotations

import numpy as np
import pytest

from lidar_ros import LidarSimulator, load_sensor

from support.lidar_bags import T0, bag_cloud, points_of, room  # noqa: F401 (room is a fixture)

# name -> (lines, point rate /s, azimuth range deg, elevation range deg, min range m): datasheet figures
DATASHEET = {
    "Mid-360": (4, 200_000, (-180.0, 180.0), (-7.0, 52.0), 0.1),
    "HAP": (6, 452_000, (-60.0, 60.0), (-12.5, 12.5), 0.5),
}
LIVOX2_FIELDS = {"x": (0, 7), "y": (4, 7), "z": (8, 7), "intensity": (12, 7), "tag": (16, 2), "line": (17, 2),
                 "timestamp": (18, 8)}  # name -> (offset, sensor_msgs/PointField datatype)


@pytest.mark.parametrize("name", list(DATASHEET))
def test_presets_match_the_datasheet_and_never_repeat(name):
    lines, point_rate, (az_lo, az_hi), (el_lo, el_hi), range_min = DATASHEET[name]
    cfg = load_sensor(name)
    assert cfg.rows == lines and cfg.range_min == range_min and cfg.layout == "livox" and not cfg.organized
    assert cfg.rows * cfg.cols * cfg.rate_hz == pytest.approx(point_rate, rel=0.001)
    frames = [cfg.retime(k * cfg.period).reshape(cfg.rows, cfg.cols, 3) for k in range(10)]
    d = np.concatenate(frames, axis=1)
    az, el = np.degrees(np.arctan2(d[..., 1], d[..., 0])), np.degrees(np.arcsin(d[..., 2]))
    for values, lo, hi in ((az, az_lo, az_hi), (el, el_lo, el_hi)):  # the field of view, filled to its edges
        assert values.min() >= lo - 1e-6 and values.max() <= hi + 1e-6
        assert values.min() < lo + 0.5 and values.max() > hi - 0.5
    assert np.abs(frames[0] - frames[1]).max() > 0.01  # each frame has rays of its own

    def covered(dirs):  # 0.2-degree cells hit (finer than a frame fills)
        cells = np.floor(np.stack([az[:, :dirs], el[:, :dirs]], -1).reshape(-1, 2) / 0.2).astype(int)
        return len({tuple(c) for c in cells})

    one, three, ten = covered(cfg.cols), covered(3 * cfg.cols), covered(10 * cfg.cols)
    assert one < three < ten and ten > 1.5 * one  # non-repetitive: coverage grows with integration time


@pytest.mark.parametrize("name", list(DATASHEET))
def test_clouds_decode_with_the_driver2_point_definition(tmp_path, room, name):  # noqa: F811
    scene, backend = room
    scan = LidarSimulator(load_sensor(name, {"noise": {}, "surface": {}}), scene, backend).simulate(np.eye(4), T0)
    msg = bag_cloud(tmp_path, scan)
    assert {f.name: (f.offset, f.datatype) for f in msg.fields} == LIVOX2_FIELDS
    assert msg.point_step == 26 and msg.height == 1 and msg.is_dense
    pts = points_of(msg)[0]
    lines, _, _, (el_lo, el_hi), _ = DATASHEET[name]
    assert msg.width == scan.hit.sum() > 1000 and not pts["tag"].any()
    # line = emitter; each emitter scans its own band of the vertical field (the room's walls end at
    # 18 deg up: the Mid-360's upper lines see nothing)
    band = (el_hi - el_lo) / lines
    el = np.degrees(np.arctan2(pts["z"], np.hypot(pts["x"], pts["y"])))
    assert (pts["line"] < lines).all() and len(np.unique(pts["line"])) >= 2
    np.testing.assert_array_less(el_lo + pts["line"] * band - 1e-3, el)
    np.testing.assert_array_less(el, el_lo + (pts["line"] + 1) * band + 1e-3)
    stamp = msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec
    assert stamp == T0 and pts["timestamp"].min() == pytest.approx(T0, abs=1e4)  # ns: the frame's first point
    assert pts["timestamp"].max() - T0 < 0.1e9  # one 10 Hz frame
    # points in firing order lie on the room's walls and floor (planes |x| = 3, |y| = 3, z = -1)
    x, y, z = (pts[a].astype(np.float64) for a in "xyz")
    on_plane = np.minimum.reduce([np.abs(np.abs(x) - 3.0), np.abs(np.abs(y) - 3.0), np.abs(z + 1.0)])
    assert on_plane.max() < 2e-3
    # intensity: the calibrated reflectivity 0..255 the driver reports (concrete is diffuse: at most 100)
    assert pts["intensity"].min() >= 0 and pts["intensity"].max() <= 100
    np.testing.assert_array_equal(pts["intensity"], np.rint(pts["intensity"]))
