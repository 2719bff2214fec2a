"""The compiled per-ray loops of the lidar frame against the numpy passes they replace: the same bits."""
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
