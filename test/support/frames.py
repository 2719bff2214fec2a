"""Comparing two paths' frames: lidar scans pixel by pixel, radar images column by column, every output as bytes."""
from __future__ import annotations

import numpy as np

from radarays_ros.io.lidar_clouds import pointcloud_array
from support.warp import GRAZER_FRACTION


def assert_same_lidar_frames(a, b, diverging: int = 0):
    """Hit masks identical and ranges within 1 mm, except at most `diverging` pixels (rays whose trace
    met an edge or a tie of coincident faces, counted by CrossChecked) and the grazer allowance."""
    both = a.hit & b.hit
    off = np.zeros(a.hit.shape, bool)
    off[both] = np.abs(a.clean_range[both] - b.clean_range[both]) > 1e-3
    off |= a.hit != b.hit
    off[both] |= a.material[both] != b.material[both]
    allowed = diverging + int(GRAZER_FRACTION * a.hit.size)
    assert off.sum() <= allowed, f"{int(off.sum())} pixels differ, {diverging} rays diverged"
    same = both & ~off
    assert same.sum() > 0.3 * a.hit.size
    np.testing.assert_allclose(a.range[same], b.range[same], atol=1e-3)
    np.testing.assert_allclose(a.xyz[same], b.xyz[same], atol=1e-3)
    np.testing.assert_allclose(a.intensity[same], b.intensity[same], rtol=1e-3, atol=1.0)  # 1 count: drivers round


def column_correlations(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pearson correlation of each azimuth column (rows of the package's [azimuth, range] arrays)
    that has signal in either image."""
    a, b = a.astype(np.float64), b.astype(np.float64)
    live = (a.std(axis=1) > 0) | (b.std(axis=1) > 0)
    a, b = a[live], b[live]
    a = a - a.mean(axis=1, keepdims=True)
    b = b - b.mean(axis=1, keepdims=True)
    denom = np.sqrt((a * a).sum(axis=1) * (b * b).sum(axis=1))
    return np.where(denom > 0, (a * b).sum(axis=1) / np.where(denom > 0, denom, 1), 0.0)


def every_output(scan) -> dict:
    """Every output of a scan as bytes: ranges, hits, points, intensity fields, ground truth, the driver
    cloud (with and without ground-truth fields) and the scan's own cloud buffer."""
    names = ("range", "hit", "xyz", "intensity", "clean_range", "entity", "material", "normal_world", "normal",
             "cos_incidence", "incidence_rad")
    out = {name: np.ascontiguousarray(getattr(scan, name)).tobytes() for name in names}
    out.update({f"field {name}": np.asarray(scan.fields[name]).tobytes() for name in scan.fields})
    out["cloud"] = pointcloud_array(scan).tobytes()
    out["cloud with truth"] = pointcloud_array(
        scan, ground_truth=("clean_range", "entity", "material", "normal", "incidence_rad")).tobytes()
    out["own cloud"] = None if scan.cloud is None else scan.cloud.tobytes()
    return out
