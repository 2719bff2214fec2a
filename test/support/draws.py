"""The counter draws of radarays_ros/counter_random.py as the host makes them (a numba loop), for the tests."""
import numpy as np

from radarays_ros.compiled import kernel
from radarays_ros.counter_random import gaussian_inlined, random_bits_inlined, second_uniform_inlined, uniform_inlined


@kernel
def _draws(key, first, n, word, bits, u, v, z):
    for i in range(n):
        b = random_bits_inlined(key, first + np.uint64(i), word)
        bits[i], u[i], v[i], z[i] = b, uniform_inlined(b), second_uniform_inlined(b), gaussian_inlined(b)


def host_draws(key, n: int, word: int = 0, first: int = 0):
    """(bits uint64, uniform, second_uniform, gaussian float32) of rays first..first+n-1, one word."""
    out = np.empty(n, np.uint64), np.empty(n, np.float32), np.empty(n, np.float32), np.empty(n, np.float32)
    _draws(np.uint64(key), np.uint64(first), n, np.uint64(word), *out)
    return out
