"""poisson_counts (lidar_ros/physics/poisson_counts.py): Poisson photon counts, exact inversion below λ = 10 and
the Sheppard-corrected Cornish-Fisher normal from 10 on, against scipy's exact Poisson distribution."""
import threading

import numpy as np
import pytest
from scipy import stats

from lidar_ros.physics.poisson_counts import SWITCH, _counts_kernel, poisson_counts

# the largest CDF difference to exact Poisson the module's docstring states, per λ (to 2 digits)
STATED_DISTANCE = {10.0: 2.6e-4, 30.0: 4.9e-5, 100.0: 7.9e-6, 1000.0: 2.5e-7}


def _corrected_normal(lam, z):
    """The docstring's formula in numpy, before rounding (the operations in the loop's order)."""
    return lam + np.sqrt(lam - 1.0 / 12.0) * z + (z * z - 1.0) / 6.0 + (z - z * z * z) / (72.0 * np.sqrt(lam))


def test_the_loop_rounds_the_corrected_normal():
    rng = np.random.default_rng(0)
    lam = rng.uniform(SWITCH, 5000.0, 100_000)
    lam[:3] = [SWITCH, 1e6, 70000.0]
    z = rng.standard_normal(len(lam))
    z[3:6] = [-9.0, 0.0, 9.0]
    counts = np.empty(len(lam), np.uint16)
    _counts_kernel(lam, np.exp(-lam), np.empty(0), z, SWITCH, np.int64(65535), counts)
    expected = np.minimum(np.maximum(np.floor(_corrected_normal(lam, z) + 0.5), 0.0), 65535.0)
    np.testing.assert_array_equal(counts, expected.astype(np.uint16))


@pytest.mark.parametrize("lam", sorted(STATED_DISTANCE))
def test_corrected_normal_counts_are_within_the_stated_distance_of_poisson(lam):
    """P(count ≤ k) = Φ(z_k) with z_k solving x(z) = k + 1/2 (x increasing where the normal has its mass:
    |z| < 7 at λ = 10), against scipy's exact Poisson CDF: the Kolmogorov-Smirnov distance, no sampling noise."""
    k = np.arange(int(lam + 12 * np.sqrt(lam) + 20))
    lo, hi = np.full(len(k), -9.0), np.full(len(k), 9.0)
    for _ in range(80):  # bisection for z_k
        mid = 0.5 * (lo + hi)
        below = _corrected_normal(lam, mid) < k + 0.5
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    cdf = stats.norm.cdf(0.5 * (lo + hi))
    distance = np.abs(cdf - stats.poisson.cdf(k, lam)).max()
    assert STATED_DISTANCE[lam] * 0.95 <= distance <= STATED_DISTANCE[lam] * 1.05  # the stated figure is the real one
    mass = np.diff(cdf, prepend=0.0)
    mean = (mass * k).sum()
    assert mean == pytest.approx(lam, rel=1e-6)
    assert (mass * k * k).sum() - mean**2 == pytest.approx(lam, rel=1e-4)  # Sheppard: rounding adds no variance
    plain = stats.norm.cdf((k + 0.5 - lam) / np.sqrt(lam))  # the uncorrected rounded normal is far worse
    assert np.abs(plain - stats.poisson.cdf(k, lam)).max() > 20 * distance


def _chi_square_p(draws, lam):
    """χ² p-value of draws against Poisson(λ): cells with expected count ≥ 20, both tails pooled."""
    k = np.arange(int(lam + 15 * np.sqrt(lam) + 30))
    expected = stats.poisson.pmf(k, lam) * len(draws)
    keep = expected >= 20
    lo, hi = k[keep][0], k[keep][-1]
    observed = np.bincount(np.clip(draws, lo - 1, hi + 1) - (lo - 1), minlength=hi - lo + 3).astype(float)
    cells = np.concatenate([[stats.poisson.cdf(lo - 1, lam)], stats.poisson.pmf(np.arange(lo, hi + 1), lam),
                            [stats.poisson.sf(hi, lam)]]) * len(draws)
    used = cells > 0
    return stats.chisquare(observed[used], cells[used] * observed.sum() / cells[used].sum()).pvalue


@pytest.mark.parametrize("lam", [0.05, 0.7, 3.0, 9.99, 10.0, 30.0, 300.0, 4000.0])
def test_counts_have_poisson_mean_variance_and_distribution(lam):
    n = 200_000
    draws = poisson_counts(np.full(n, lam), np.random.default_rng(12345)).astype(np.int64)
    assert abs(draws.mean() - lam) < 5 * np.sqrt(lam / n)
    # var/mean of Poisson is 1; its estimate's spread is ≈ sqrt(2/n) (+ 1/λ-order terms at small λ)
    assert abs(draws.var() / lam - 1) < 5 * np.sqrt(2 / n + 1 / (n * lam))
    assert _chi_square_p(draws, lam) > 1e-3


def test_kolmogorov_smirnov_at_the_switch_over_mean():
    """At λ = 10, where the corrected normal takes over, one million draws against exact Poisson: the sample CDF
    within the K-S band (for a discrete distribution the test is conservative)."""
    n = 1_000_000
    draws = poisson_counts(np.full(n, SWITCH), np.random.default_rng(99)).astype(np.int64)
    k = np.arange(60)
    sample_cdf = np.searchsorted(np.sort(draws), k, side="right") / n
    assert np.abs(sample_cdf - stats.poisson.cdf(k, SWITCH)).max() < 1.63 / np.sqrt(n)  # p = 0.01
    below = poisson_counts(np.full(n, np.nextafter(SWITCH, 0)), np.random.default_rng(98)).astype(np.int64)
    assert np.abs(np.searchsorted(np.sort(below), k, side="right") / n - stats.poisson.cdf(k, SWITCH)).max() \
        < 1.63 / np.sqrt(n)  # the exact side of the switch agrees too


def test_mixed_means_per_pixel_and_saturation():
    rng = np.random.default_rng(4)
    lam = rng.choice([0.0, 2.0, 50.0, 500.0, 70000.0], 100_000)
    counts = poisson_counts(lam, np.random.default_rng(5), 1000)
    assert counts.dtype == np.uint16
    assert np.all(counts[lam == 0] == 0)
    assert np.all(counts[lam == 70000.0] == 1000)  # capped at the ceiling
    for value in (2.0, 50.0, 500.0):
        got = counts[lam == value].astype(float)
        assert abs(got.mean() - value) < 5 * np.sqrt(value / len(got))
        assert abs(got.var() / value - 1) < 0.05
    assert poisson_counts(np.full(10, 1e6), np.random.default_rng(1)).max() == 65535


def test_same_seed_same_counts_on_any_thread():
    lam = np.random.default_rng(2).exponential(40.0, 50_000)
    alone = poisson_counts(lam, np.random.default_rng(7)).tobytes()
    results = [None, None]

    def draw(i):
        results[i] = poisson_counts(lam, np.random.default_rng(7)).tobytes()

    threads = [threading.Thread(target=draw, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [alone, alone]
    assert poisson_counts(lam, np.random.default_rng(8)).tobytes() != alone


@pytest.mark.parametrize("bad", [np.nan, -1.0, np.inf, 2e15])
def test_bad_means_are_refused_with_the_allowed_range(bad):
    lam = np.array([1.0, bad, 3.0])
    with pytest.raises(ValueError, match=r"Poisson mean: .*; allowed: finite, 0\.\.1e\+15"):
        poisson_counts(lam, np.random.default_rng(0))
    with pytest.raises(ValueError, match="ceiling"):
        poisson_counts(np.ones(3), np.random.default_rng(0), 70000)


def test_mixed_means_give_the_inversion_and_the_corrected_normal_in_pixel_order():
    """Means on both sides of the switch, interleaved: each small one is the inversion of its own uniform (e^-λ of
    that mean), each large one the corrected normal of its own normal; uniforms and normals in pixel order."""
    from lidar_ros.physics.noise import standard_normal

    lam = np.random.default_rng(1).choice([0.0, 0.5, 3.0, 9.99, SWITCH, 40.0, 300.0], 20001)
    counts = poisson_counts(lam, np.random.default_rng(5))
    draws = np.random.default_rng(5)
    small = lam < SWITCH
    u = draws.random(np.count_nonzero(small))
    z = standard_normal(draws, np.count_nonzero(~small)).astype(np.float64)
    ls = lam[small]
    p = np.exp(-ls)
    cdf, k = p.copy(), np.zeros(len(ls))
    for step in range(1, 201):  # the inversion, all means at once: the smallest k with F(k) >= u
        going = (u > cdf) & (p > 0.0)
        if not going.any():
            break
        k[going] = step
        p = np.where(going, p * (ls * (1.0 / step)), p)
        cdf = np.where(going, cdf + p, cdf)
    expected = np.empty(len(lam))
    expected[small] = k
    expected[~small] = np.maximum(np.floor(_corrected_normal(lam[~small], z) + 0.5), 0.0)
    np.testing.assert_array_equal(counts, expected.astype(np.uint16))
    assert 0 < np.count_nonzero(small) < len(lam)
