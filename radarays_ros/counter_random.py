"""Counter-based random draws: a draw is a pure function of (frame key, ray, word), not of a stream's state.

So a ray's draws are the same whichever thread, piece or kernel launch computes them, on the host (numba loops)
and on the device (Warp compiles the same source, radarays_ros/twin.py): host and device frames draw the same
numbers, and a frame does not depend on the thread count or on how it is cut into pieces.

- key: 64 bits per frame (`frame_key64`: numpy's SeedSequence of the frame's entropy, e.g. (seed, frame, t0)).
- word: which draw of a ray, one of WORDS_PER_RAY (the lidar's words: lidar_ros/physics/noise.py).
- bits = SplitMix64's output function of key + c * gamma with the counter c = ray * WORDS_PER_RAY + word + 1
  (Steele, Lea & Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014; the constants of
  Vigna's splitmix64.c): random_bits(key, ray, word) is the c-th output of SplitMix64 seeded with key, a
  generator that passes BigCrush. Two multiplications per 64 bits.
- uniform: the top 24 bits times 2^-24, in [0, 1) exactly in float32; second_uniform: the low 24 bits.
- Gaussians: the Box-Muller transform of a word's two 24-bit halves, z = sqrt(-2 ln u1) cos(2 pi u2) and
  z' = sqrt(-2 ln u1) sin(2 pi u2), u1 in (0, 1] (|z| <= sqrt(2 ln 2^24) = 5.77): the two draws of a pair of rays
  (`gaussians`); ln, cos and sin computed here with + - * / and integer steps only: IEEE rounds those exactly
  in float32, so numba and Warp's CPU build give the same bits (libm's logf and cosf would too, but a loop
  calling them does not vectorise: measured 21 ns a draw, against 7 ns for numpy's SIMD Box-Muller of Generator
  uniforms and 5 ns for this one, vectorised). CUDA contracts a * b + c into one rounding (FMA): a device
  frame on CUDA draws the same uniforms, and Gaussians within a few float32 ULPs (not measured here).

The formulas are scalar (numba loops call them per ray, Warp kernels per thread; not numpy arrays): ASCII only
in their lines (Warp copies them into C++); integers as uint64 (numba widens mixed signed and unsigned integers
to float64), floats as float32 with float32 constants.
"""
from __future__ import annotations

import numpy as np
import numpy as xm  # the formulas' vocabulary (radarays_ros/twin.py)

from numba.cpython.unsafe.numbers import leading_zeros

from .compiled import inlined, kernel
from .twin import uint64

WORDS_PER_RAY = 8
GAMMA = 0x9E3779B97F4A7C15  # SplitMix64's increment: 2^64 / golden ratio, odd
MIX1 = 0xBF58476D1CE4E5B9
MIX2 = 0x94D049BB133111EB
LOW24 = 0xFFFFFF
TO_UNIT = 5.9604645e-08  # 2^-24: float32 of a 24-bit integer times this is exact
LN2 = 0.6931472  # ln 2 in float32
QUARTER = 4194304  # 2^22: a quarter turn of the 24-bit angle
EIGHTH = 2097152  # 2^21: half a quarter turn
TURN = 16777216  # 2^24: a whole turn
TURN_TO_RAD = 3.7450702e-07  # 2 pi / 2^24 in float32


def frame_key64(entropy) -> np.uint64:
    """The 64-bit key of a frame's draws from its entropy (ints, as numpy.random.SeedSequence takes them)."""
    return np.random.SeedSequence(entropy).generate_state(1, np.uint64)[0]


def random_bits(key: uint64, ray: uint64, word: uint64) -> uint64:
    """64 random bits of (key, ray, word): SplitMix64's output function of key + (ray WORDS_PER_RAY + word + 1) gamma."""
    z = key + (ray * xm.uint64(WORDS_PER_RAY) + word + xm.uint64(1)) * xm.uint64(GAMMA)
    z = (z ^ (z >> xm.uint64(30))) * xm.uint64(MIX1)
    z = (z ^ (z >> xm.uint64(27))) * xm.uint64(MIX2)
    return z ^ (z >> xm.uint64(31))


def uniform(bits: uint64) -> float:
    """A uniform draw in [0, 1) from the top 24 bits (every value a multiple of 2^-24)."""
    return xm.float32(xm.int32(bits >> xm.uint64(40))) * xm.float32(TO_UNIT)


def second_uniform(bits: uint64) -> float:
    """Another uniform draw in [0, 1) from the same bits: the low 24 bits."""
    return xm.float32(xm.int32(bits & xm.uint64(LOW24))) * xm.float32(TO_UNIT)


def gaussian_radius(bits: uint64) -> float:
    """Box-Muller's radius sqrt(-2 ln u1), u1 = (top 24 bits + 1) 2^-24 in (0, 1]; ln to about 1 float32 ULP in
    exactly rounded operations (see the module)."""
    # ln u1 = ln k - 24 ln 2 for the integer k in [1, 2^24]: k = 2^e f with f in [sqrt(1/2), sqrt(2)), e found
    # bit by bit; without branches (random branches cost a misprediction each), so a host loop vectorises
    k = (bits >> xm.uint64(40)) + xm.uint64(1)
    e = xm.uint64(0)
    for step in range(5):
        width = xm.uint64(16 >> step)
        e = e + width * xm.minimum(k >> (e + width), xm.uint64(1))  # 2^(e + width) <= k: e += width
    e = e + xm.minimum((k * k) >> (e + e + xm.uint64(1)), xm.uint64(1))  # k > sqrt(2) 2^e: one more
    scale = xm.float32(xm.int32(xm.uint64(1) << (xm.uint64(24) - e)))  # 2^(24 - e)
    f = xm.float32(xm.int32(k)) * scale * xm.float32(TO_UNIT)  # k 2^-e: products with powers of 2, exact
    exponent = xm.float32(xm.int32(e)) - xm.float32(24.0)
    # ln f = 2 atanh(s), s = (f - 1)/(f + 1), |s| <= 0.1716: the odd series to s^11
    s = (f - xm.float32(1.0)) / (f + xm.float32(1.0))
    s2 = s * s
    series = xm.float32(0.09090909) * s2 + xm.float32(0.11111111)
    series = series * s2 + xm.float32(0.14285715)
    series = series * s2 + xm.float32(0.2)
    series = series * s2 + xm.float32(0.33333334)
    series = series * s2 + xm.float32(1.0)
    log_u1 = exponent * xm.float32(LN2) + xm.float32(2.0) * s * series
    return xm.sqrt(xm.float32(-2.0) * log_u1)


def box_muller_cosine(bits: uint64, half: uint64) -> float:
    """Box-Muller's cos(2 pi u2 - half pi/2), u2 = low 24 bits 2^-24: the cosine (half 0) or the sine (half 1) of
    the angle, whose products with gaussian_radius are two independent standard normal draws of one word."""
    # cos(2 pi m / 2^24) for the integer m = the low 24 bits: the nearest quarter turn q, x = the rest in radians
    m = (bits + xm.uint64(TURN) - half * xm.uint64(QUARTER)) & xm.uint64(LOW24)  # sin a = cos(a - pi/2)
    q = (m + xm.uint64(EIGHTH)) >> xm.uint64(22)  # the nearest quarter turn, 0..4
    x = xm.float32(xm.int32(m) - xm.int32(q) * xm.int32(QUARTER)) * xm.float32(TURN_TO_RAD)  # |x| <= pi/4
    x2 = x * x
    cos_x = xm.float32(-2.7557319e-07) * x2 + xm.float32(2.4801587e-05)  # Taylor to x^10: error < 2e-10
    cos_x = cos_x * x2 + xm.float32(-0.0013888889)
    cos_x = cos_x * x2 + xm.float32(0.041666668)
    cos_x = cos_x * x2 + xm.float32(-0.5)
    cos_x = cos_x * x2 + xm.float32(1.0)
    sin_x = xm.float32(2.7557319e-06) * x2 + xm.float32(-0.0001984127)  # Taylor to x^9: error < 2e-9
    sin_x = sin_x * x2 + xm.float32(0.008333334)
    sin_x = sin_x * x2 + xm.float32(-0.16666667)
    sin_x = (sin_x * x2) * x + x
    # cos(x + q pi/2) = cos x, -sin x, -cos x, sin x: swap for odd q, negate for q = 1, 2 (exact selections)
    swap = xm.float32(xm.int32(q & xm.uint64(1)))
    negate = xm.float32(xm.int32(((q >> xm.uint64(1)) ^ q) & xm.uint64(1)))
    turned = (cos_x * (xm.float32(1.0) - swap) + sin_x * swap) * (xm.float32(1.0) - xm.float32(2.0) * negate)
    return turned


# the formulas as the host's numba loops call them (compiled into each loop that calls them)
random_bits_inlined, uniform_inlined, second_uniform_inlined, radius_inlined, cosine_inlined = (
    inlined(f) for f in (random_bits, uniform, second_uniform, gaussian_radius, box_muller_cosine))


# The host's loops draw with two equivalents of the formulas above, the same operations on the same values (so the same
# bits; test_counter_random checks every one of the 2^24 inputs of each): gaussian_radius with its exponent e from
# the leading-zero count (one instruction for the five steps of the bit search), and box_muller_cosine's two halves at
# once (they share the rest x: measured 5.3 -> 3.8 ns a cell of circular_gaussians, one core). Warp has no
# leading-zero count under numpy's names: the device twins compile the formulas above.

@inlined
def _radius_by_leading_zeros(bits):
    """gaussian_radius(bits), its e = floor(log2 k) as 63 - the leading zeros of k (then the same steps)."""
    k = (bits >> np.uint64(40)) + np.uint64(1)
    e = np.uint64(63) - np.uint64(leading_zeros(k))
    e = e + min((k * k) >> (e + e + np.uint64(1)), np.uint64(1))  # k > sqrt(2) 2^e: one more
    scale = np.float32(np.int32(np.uint64(1) << (np.uint64(24) - e)))
    f = np.float32(np.int32(k)) * scale * np.float32(TO_UNIT)
    exponent = np.float32(np.int32(e)) - np.float32(24.0)
    s = (f - np.float32(1.0)) / (f + np.float32(1.0))
    s2 = s * s
    series = np.float32(0.09090909) * s2 + np.float32(0.11111111)
    series = series * s2 + np.float32(0.14285715)
    series = series * s2 + np.float32(0.2)
    series = series * s2 + np.float32(0.33333334)
    series = series * s2 + np.float32(1.0)
    log_u1 = exponent * np.float32(LN2) + np.float32(2.0) * s * series
    return np.sqrt(np.float32(-2.0) * log_u1)


@inlined
def _quarter_turned(cos_x, sin_x, q):
    """box_muller_cosine's last step: cos(x + q pi/2) from cos x and sin x (the same selections)."""
    swap = np.float32(np.int32(q & np.uint64(1)))
    negate = np.float32(np.int32(((q >> np.uint64(1)) ^ q) & np.uint64(1)))
    return (cos_x * (np.float32(1.0) - swap) + sin_x * swap) * (np.float32(1.0) - np.float32(2.0) * negate)


@inlined
def _cosine_halves(bits):
    """(box_muller_cosine(bits, 0), box_muller_cosine(bits, 1)) with one cos x and sin x: the sine half's angle
    m - 2^22 (mod 2^24) has the same rest x as m, and the quarter turn q - 1 (mod 4)."""
    m = bits & np.uint64(LOW24)
    q = (m + np.uint64(EIGHTH)) >> np.uint64(22)
    x = np.float32(np.int32(m) - np.int32(q) * np.int32(QUARTER)) * np.float32(TURN_TO_RAD)
    x2 = x * x
    cos_x = np.float32(-2.7557319e-07) * x2 + np.float32(2.4801587e-05)
    cos_x = cos_x * x2 + np.float32(-0.0013888889)
    cos_x = cos_x * x2 + np.float32(0.041666668)
    cos_x = cos_x * x2 + np.float32(-0.5)
    cos_x = cos_x * x2 + np.float32(1.0)
    sin_x = np.float32(2.7557319e-06) * x2 + np.float32(-0.0001984127)
    sin_x = sin_x * x2 + np.float32(0.008333334)
    sin_x = sin_x * x2 + np.float32(-0.16666667)
    sin_x = (sin_x * x2) * x + x
    return _quarter_turned(cos_x, sin_x, q), _quarter_turned(cos_x, sin_x, (q + np.uint64(3)) & np.uint64(3))


def gaussians(key, first_ray: int, word: int, n: int) -> np.ndarray:
    """(n,) float32 standard normal draws of rays first_ray .. first_ray + n - 1 of one word. Ray i's draw is one half
    of the Box-Muller pair of its ray pair's word: gaussian_radius(b) box_muller_cosine(b, i & 1) with
    b = random_bits(key, i >> 1, word) (lidar_ros/warp_frame_kernels.py ray_gaussian: the same product). Here
    both halves of a word at once, in a loop without branches, which the compiler vectorises: 131072 draws in
    0.6-0.7 ms CPU against 0.9-1.1 ms for numpy's Box-Muller of Generator uniforms (noise.standard_normal; one
    draw per word inside a loop with branches: 2.6 ms; 2026-11-28, 2 shared cores)."""
    out = np.empty(n, np.float32)
    _fill_gaussians(np.uint64(key), np.int64(first_ray), np.uint64(word), out)
    return out


@kernel
def _fill_gaussians(key, first, word, out):
    n = out.shape[0]
    start = 0
    if first % 2 == 1 and n > 0:  # the first ray is the sine half of the pair before
        bits = random_bits_inlined(key, np.uint64(first // 2), word)
        out[0] = radius_inlined(bits) * cosine_inlined(bits, np.uint64(1))
        start = 1
    pair0 = (first + start) // 2
    for p in range((n - start) // 2):
        bits = random_bits_inlined(key, np.uint64(pair0 + p), word)
        radius = _radius_by_leading_zeros(bits)
        cos0, cos1 = _cosine_halves(bits)
        out[start + 2 * p] = radius * cos0
        out[start + 2 * p + 1] = radius * cos1
    if (n - start) % 2 == 1:  # the last ray is the cosine half of its pair
        bits = random_bits_inlined(key, np.uint64((first + n - 1) // 2), word)
        out[n - 1] = radius_inlined(bits) * cosine_inlined(bits, np.uint64(0))


HALF_POWER = 0.70710677  # sqrt(1/2) in float32: a Box-Muller pair scaled to E|z|^2 = 1


def circular_gaussians(key, shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """(re, im) float32 planes of unit circular complex Gaussians (E|z|^2 = 1): cell i (row-major) is the
    Box-Muller pair of random_bits(key, i, 0) times sqrt(1/2), so |z|^2 = -ln u1 is exponential (to the 24-bit
    grid: u1 >= 2^-24, |z|^2 <= 16.6) and arg z = 2 pi u2 uniform, independent. A pure function of (key, cell):
    the same bytes however a caller cuts or threads the planes."""
    re = np.empty(shape, np.float32)
    im = np.empty(shape, np.float32)
    _fill_circular(np.uint64(key), re.reshape(-1), im.reshape(-1))
    return re, im


@kernel
def _fill_circular(key, re, im):
    word = np.uint64(0)
    for i in range(re.shape[0]):
        bits = random_bits_inlined(key, np.uint64(i), word)
        radius = _radius_by_leading_zeros(bits) * np.float32(HALF_POWER)
        cos0, cos1 = _cosine_halves(bits)
        re[i] = radius * cos0  # the two halves, as _fill_gaussians takes them
        im[i] = radius * cos1


class RayDraws(np.random.Generator):
    """A numpy Generator (for the draws only the host makes, in stream order) that also names the counter draws
    of a run of rays: the frame's key and the index of the run's first ray. Functions that draw per ray take
    it where they took a Generator (`ray_draws`), so a frame's pieces and threads all draw by ray index."""

    def __init__(self, bit_generator: np.random.BitGenerator, key, first_ray: int = 0):
        super().__init__(bit_generator)
        self.key = np.uint64(key)
        self.first_ray = int(first_ray)

    def at(self, first_ray: int, key=None) -> "RayDraws":
        """The same Generator stream, counter draws from ray `first_ray` on (and of another key, if given)."""
        return RayDraws(self.bit_generator, self.key if key is None else key, first_ray)


def ray_draws(rng: np.random.Generator) -> tuple[np.uint64, np.uint64]:
    """(key, first ray) of the counter draws of `rng`'s rays: a RayDraws's own; for a plain Generator a key drawn
    from it (one draw) and rays counted from 0."""
    if isinstance(rng, RayDraws):
        return rng.key, np.uint64(rng.first_ray)
    return rng.integers(0, 2**64, dtype=np.uint64, endpoint=False), np.uint64(0)
