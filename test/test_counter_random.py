"""Counter-based draws (radarays_ros/counter_random.py) and the lidar noise made from them (physics/noise.py,
detection_probability.dropouts): the generator against SplitMix64's published first output and a plain
reference, the Gaussian against the float64 Box-Muller of the same bits, the configured statistics, and the
draws' independence of the piece split. Host against device bytes: test_warp_formulas.py, test_warp_lidar_frames.py.
"""
import numpy as np
import pytest
from scipy import stats

from lidar_ros.physics.config import NoiseConfig
from lidar_ros.physics.detection_probability import dropouts
from lidar_ros.physics.noise import jitter_directions, noisy_ranges
from radarays_ros.compiled import kernel
from radarays_ros.counter_random import (WORDS_PER_RAY, RayDraws, _cosine_halves, _radius_by_leading_zeros,
                                         cosine_inlined, frame_key64, gaussians, radius_inlined)
from support.draws import host_draws

MASK = 2**64 - 1


def splitmix64(seed: int, n: int) -> list[int]:
    """The first n outputs of SplitMix64 seeded with `seed` (Vigna's splitmix64.c), in Python integers."""
    out = []
    for _ in range(n):
        seed = (seed + 0x9E3779B97F4A7C15) & MASK
        z = seed
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        out.append(z ^ (z >> 31))
    return out


def test_the_bits_are_splitmix64_outputs_counted_by_ray_and_word():
    assert int(host_draws(0, 1)[0][0]) == 0xE220A8397B1DCDAF  # splitmix64.c, seed 0: its first output
    key = 0x0123456789ABCDEF
    reference = splitmix64(key, 3 * WORDS_PER_RAY)
    for ray in range(3):
        for word in range(WORDS_PER_RAY):
            assert int(host_draws(key, 1, word, ray)[0][0]) == reference[ray * WORDS_PER_RAY + word]


def test_uniforms_and_gaussians_are_exact_functions_of_the_bits():
    bits, u, v, z, z_sine = host_draws(frame_key64([3, 1, 0]), 1 << 18)
    np.testing.assert_array_equal(u, (bits >> np.uint64(40)).astype(np.float64) / 2**24)
    np.testing.assert_array_equal(v, (bits & np.uint64(0xFFFFFF)).astype(np.float64) / 2**24)
    u1 = ((bits >> np.uint64(40)).astype(np.float64) + 1) / 2**24
    radius, angle = np.sqrt(-2 * np.log(u1)), 2 * np.pi * v.astype(np.float64)
    # ln, cos and sin in float32 steps: a few float32 ULPs of the radius (|z| <= 5.77)
    assert np.abs(z - radius * np.cos(angle)).max() < 1e-6 * 5.8
    assert np.abs(z_sine - radius * np.sin(angle)).max() < 1e-6 * 5.8
    assert np.abs(z).max() <= np.sqrt(2 * np.log(2**24)) + 1e-5


@kernel
def _both_ways(fast, radius, cos0, cos1):
    """For every 24-bit k: the radius of the top 24 bits k and the two cosines of the low 24 bits k, by the formulas
    (fast False) or by the host loops' equivalents (fast True)."""
    for k in range(radius.shape[0]):
        top, low = np.uint64(k) << np.uint64(40), np.uint64(k)
        if fast:
            radius[k] = _radius_by_leading_zeros(top)
            cos0[k], cos1[k] = _cosine_halves(low)
        else:
            radius[k] = radius_inlined(top)
            cos0[k], cos1[k] = cosine_inlined(low, np.uint64(0)), cosine_inlined(low, np.uint64(1))


def test_the_host_loops_equivalents_give_the_formulas_bits_for_every_input():
    # the radius reads only the top 24 bits and the cosines only the low 24: 2^24 inputs each, all of them
    formula, fast = ([np.empty(1 << 24, np.float32) for _ in range(3)] for _ in range(2))
    _both_ways(False, *formula)
    _both_ways(True, *fast)
    for a, b in zip(formula, fast):
        np.testing.assert_array_equal(a.view(np.uint32), b.view(np.uint32))


@pytest.mark.parametrize("seed", [1, 2])
def test_draws_have_their_distributions(seed):
    n = 200_000
    _, u, v, z, z_sine = host_draws(frame_key64([seed]), n, word=5)
    alpha = 1e-3  # a fixed seed: deterministic; a wrong distribution fails at once at this n
    assert stats.kstest(z.astype(np.float64), "norm").pvalue > alpha
    assert stats.kstest(z_sine.astype(np.float64), "norm").pvalue > alpha
    assert abs(np.corrcoef(z, z_sine)[0, 1]) < 5 / np.sqrt(n)  # a pair's two halves are independent
    assert stats.kstest(u.astype(np.float64), "uniform").pvalue > alpha
    assert stats.kstest(v.astype(np.float64), "uniform").pvalue > alpha
    assert abs(np.corrcoef(u, v)[0, 1]) < 5 / np.sqrt(n)  # the halves are independent
    # other rays, other words: uncorrelated
    _, u2, _, z2, _ = host_draws(frame_key64([seed]), n, word=6)
    assert abs(np.corrcoef(z, z2)[0, 1]) < 5 / np.sqrt(n) and abs(np.corrcoef(u[:-1], u[1:])[0, 1]) < 5 / np.sqrt(n)


def test_range_noise_dust_and_dropouts_have_the_configured_statistics():
    n, r = 400_000, np.float32(20.0)
    ranges = np.full(n, r, np.float32)
    ranges[::7] = np.nan  # misses stay misses
    rng = RayDraws(np.random.PCG64(5), frame_key64([5, 0, 0]))
    config = NoiseConfig(sigma=0.03, resolution=0.0, relative_sigma=0.0, dust_probability=0.0)
    noisy, dust = noisy_ranges(ranges, None, config, rng)
    hit = np.isfinite(ranges)
    assert np.array_equal(np.isfinite(noisy), hit) and not dust.any()
    assert stats.kstest((noisy[hit] - r) / 0.03, "norm").pvalue > 1e-3
    relative = NoiseConfig(sigma=0.0, resolution=0.0, relative_sigma=0.002, relative_exponent=1.5, dust_probability=0.0)
    noisy, _ = noisy_ranges(ranges, None, relative, rng)
    assert stats.kstest((noisy[hit] - r) / (0.002 * 20.0**1.5), "norm").pvalue > 1e-3
    dusty = NoiseConfig(sigma=0.0, resolution=0.0, dust_probability=0.1, dust_min_range=2.0)
    noisy, dust = noisy_ranges(ranges, None, dusty, rng)
    m = int(hit.sum())
    assert not dust[~hit].any()
    assert stats.binomtest(int(dust.sum()), m, 0.1).pvalue > 1e-3
    assert stats.kstest((noisy[dust] - 2.0) / (r - 2.0), "uniform").pvalue > 1e-3
    lost = dropouts(n, 0.05, rng)
    assert stats.binomtest(int(lost.sum()), n, 0.05).pvalue > 1e-3


def test_a_rays_draws_do_not_depend_on_the_piece_split():
    n = 10_001
    ranges = np.random.default_rng(0).uniform(1, 50, n).astype(np.float32)
    ranges[::5] = np.nan
    config = NoiseConfig(sigma=0.02, resolution=0.002, relative_sigma=0.001, dust_probability=0.05)
    key = frame_key64([9, 4, 0])
    whole = noisy_ranges(ranges, None, config, RayDraws(np.random.PCG64(0), key, 0))
    cut = 3_333
    parts = [noisy_ranges(ranges[a:b], None, config, RayDraws(np.random.PCG64(k), key, a))
             for k, (a, b) in enumerate([(0, cut), (cut, n)])]
    assert gaussians(key, 7, 5, 10).tobytes() == gaussians(key, 6, 5, 11)[1:].tobytes()  # odd and even starts
    pairs = gaussians(key, 0, 5, 8)
    _, _, _, z, z_sine = host_draws(key, 4, word=5)
    assert pairs.tobytes() == np.stack([z, z_sine], axis=1).reshape(-1).tobytes()  # ray 2j: cosine, 2j + 1: sine
    for got, want in zip((np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])), whole):
        assert got.tobytes() == want.tobytes()
    lost = dropouts(n, 0.3, RayDraws(np.random.PCG64(0), key, 0))
    assert np.array_equal(lost[cut:], dropouts(n - cut, 0.3, RayDraws(np.random.PCG64(1), key, cut)))
    dirs = np.random.default_rng(1).normal(size=(n, 3)).astype(np.float32)
    dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
    jittered = jitter_directions(dirs, 0.01, RayDraws(np.random.PCG64(0), key, 0))
    assert jittered[cut:].tobytes() == jitter_directions(dirs[cut:], 0.01, RayDraws(np.random.PCG64(0), key, cut)).tobytes()
    # the tilt: |step| Rayleigh with scale sigma (small sigma)
    tilt = np.arccos(np.clip(np.einsum("ij,ij->i", jittered.astype(np.float64), dirs), -1, 1))
    assert stats.kstest(tilt / 0.01, "rayleigh").pvalue > 1e-3
