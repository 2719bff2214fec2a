"""The counter draws of radarays_ros/counter_random.py as the host makes them (a numba loop), for the tests."""
import numpy as np

from radarays_ros.compiled import kernel
from radarays_ros.counter_random import (cosine_inlined, radius_inlined, random_bits_inlined, second_uniform_inlined,
                                         uniform_inlined)


@kernel
def _draws(key, first, n, word, bits, u, v, z, z_sine):
    for i in range(n):
        b = random_bits_inlined(key, first + np.uint64(i), word)
        bits[i], u[i], v[i] = b, uniform_inlined(b), second_uniform_inlined(b)
        z[i] = radius_inlined(b) * cosine_inlined(b, np.uint64(0))
        z_sine[i] = radius_inlined(b) * cosine_inlined(b, np.uint64(1))


def host_draws(key, n: int, word: int = 0, first: int = 0):
    """(bits uint64, uniform, second_uniform, Box-Muller cosine and sine Gaussians float32) of counters
    first..first+n-1 of one word (one per ray, or per ray pair for the Gaussians)."""
    out = (np.empty(n, np.uint64), *(np.empty(n, np.float32) for _ in range(4)))
    _draws(np.uint64(key), np.uint64(first), n, np.uint64(word), *out)
    return out
