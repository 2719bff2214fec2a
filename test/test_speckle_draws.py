"""The speckle's unit circular Gaussian draws (radar/physical/speckle.unit_parts, counter_random.circular_gaussians):
the Box-Muller pair of each cell's counter word, bit for bit; |z|^2 exponential, arg z uniform, the two parts
uncorrelated normals of variance 1/2; the same bytes for the same seed whatever the threads."""
import threading

import numpy as np
import pytest
from scipy import stats

from radarays_ros.compiled import kernel
from radarays_ros.counter_random import (HALF_POWER, circular_gaussians, cosine_inlined, frame_key64, radius_inlined,
                                         random_bits_inlined)
from radarays_ros.radar.config import resolve_radar_config
from radarays_ros.radar.fit.sensor import quiet_frame
from radarays_ros.radar.physical import speckle


@kernel
def _reference(key, n, radius, cosine, sine):
    """The lidar's Box-Muller helpers, one call each, for the cells 0..n-1 (word 0)."""
    for i in range(n):
        b = random_bits_inlined(key, np.uint64(i), np.uint64(0))
        radius[i] = radius_inlined(b)
        cosine[i] = cosine_inlined(b, np.uint64(0))
        sine[i] = cosine_inlined(b, np.uint64(1))


def test_cells_are_the_box_muller_pairs_of_their_counter_words():
    key = frame_key64([7, 1])
    re, im = circular_gaussians(key, (64, 1024))
    n = re.size
    radius, cosine, sine = (np.empty(n, np.float32) for _ in range(3))
    _reference(np.uint64(key), n, radius, cosine, sine)
    scaled = radius * np.float32(HALF_POWER)
    # each cell is the scaled pair of its counter word, in row-major order (the lidar helpers, called one by one)
    assert re.ravel().tobytes() == (scaled * cosine).tobytes()
    assert im.ravel().tobytes() == (scaled * sine).tobytes()


@pytest.mark.parametrize("seed", [1, 2])
def test_intensity_is_exponential_and_phase_uniform(seed):
    n_rows, n_cols = 400, 500  # 2e5 cells
    re, im = speckle.unit_parts(np.random.default_rng(seed), (n_rows, n_cols))
    re, im = re.ravel().astype(np.float64), im.ravel().astype(np.float64)
    n = re.size
    intensity, phase = re * re + im * im, np.arctan2(im, re)
    # a fixed seed: deterministic; a wrong distribution (e.g. E|z|^2 = 2, or |z| ~ Exp) fails at once at this n
    alpha = 1e-3
    assert stats.kstest(intensity, "expon").pvalue > alpha
    assert stats.kstest(phase, "uniform", args=(-np.pi, 2 * np.pi)).pvalue > alpha
    assert stats.kstest(re, "norm", args=(0, np.sqrt(0.5))).pvalue > alpha
    assert stats.kstest(im, "norm", args=(0, np.sqrt(0.5))).pvalue > alpha
    # Exp(1) has standard deviation 1: the mean of n within 5 / sqrt(n) of 1; parts uncorrelated, also in the
    # neighbours along a row and a column (cells are independent counters)
    assert abs(intensity.mean() - 1.0) < 5 / np.sqrt(n)
    assert abs(np.corrcoef(re, im)[0, 1]) < 5 / np.sqrt(n)
    grid = intensity.reshape(n_rows, n_cols)
    assert abs(np.corrcoef(grid[:, 1:].ravel(), grid[:, :-1].ravel())[0, 1]) < 5 / np.sqrt(n)
    assert abs(np.corrcoef(grid[1:].ravel(), grid[:-1].ravel())[0, 1]) < 5 / np.sqrt(n)


def test_the_same_seed_gives_the_same_bytes_on_one_or_two_threads():
    alone = speckle.unit_parts(np.random.default_rng(5), (300, 2000))
    side_by_side = [None, None]

    def draw(i):
        side_by_side[i] = speckle.unit_parts(np.random.default_rng(5), (300, 2000))

    threads = [threading.Thread(target=draw, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for got in side_by_side:
        assert got[0].tobytes() == alone[0].tobytes() and got[1].tobytes() == alone[1].tobytes()
    other = speckle.unit_parts(np.random.default_rng(6), (300, 2000))
    assert other[0].tobytes() != alone[0].tobytes()
    # a whole physical frame: its row blocks on one thread or on two, the same counts
    cfg = resolve_radar_config("navtech_ras6")
    one = quiet_frame(cfg, seed=3, azimuths=48, workers=1)
    assert one.tobytes() == quiet_frame(cfg, seed=3, azimuths=48, workers=2).tobytes()
