"""The one way our per-ray loops are compiled: numba, with the options every kernel needs.

Why compiled loops at all: a frame's post-processing is dozens of numpy passes over the same rays, and
the tracing threads run it side by side. Each numpy call takes the GIL, so two threads doing numpy
mostly wait for each other (measured: two lidar pieces took 6.3 ms side by side against 4.3 ms alone).
A compiled loop does all passes for a ray at once and holds no GIL while it runs.

The options, and why:
- nogil: the threads of a frame run their kernels truly in parallel;
- cache: compiled once per machine (next to the module, or numba's user cache when the install is
  read-only), so a new process loads the kernel instead of compiling it again;
- error_model="numpy": IEEE float semantics (x / 0 = inf), as the numpy code they replace, with no
  hidden zero test before each division;
- no fastmath: the same float32 operations in the same order give the same bits as numpy (no fused
  multiply-adds, no reassociation), so a kernel can replace numpy passes byte for byte.
"""
from __future__ import annotations

import warnings

try:
    import numba
except ModuleNotFoundError as exc:  # Ubuntu 24.04 has no python3-numba, so rosdep cannot install it
    raise ModuleNotFoundError("radarays_ros needs numba for its per-ray loops: pip install numba "
                              "(Ubuntu 24.04 has no python3-numba package)", name="numba") from exc

_OPTIONS = {"nogil": True, "error_model": "numpy"}


def kernel(function, **options):
    """`function` compiled on its first call (for the argument types of that call), cached on disk where
    numba finds a writable place for it, else compiled anew in every process (with one warning)."""
    try:
        return numba.njit(cache=True, **_OPTIONS, **options)(function)
    except RuntimeError as exc:  # numba: "cannot cache function ...: no locator available"
        warnings.warn(f"compiled loops are not cached ({exc}); set NUMBA_CACHE_DIR to a writable folder",
                      RuntimeWarning, stacklevel=2)
        return numba.njit(**_OPTIONS, **options)(function)


def inlined(function):
    """A kernel helper compiled into each kernel that calls it: no call in the caller's loop, so the
    compiler keeps the loop's values in registers (measured: echo forming 1.3x faster).

    Prefer scalars (or tuples of scalars) to arrays as its arguments when it is called per element: numba may
    count an array argument's reference up and down around each inlined call, two atomic operations per array
    per call, where its pruning does not remove them (measured: a branching helper of 6 arrays in a loop of 10^6
    took 5 -> 53 ms; the echoes' depth-edge helper of 10 arrays cost ~150 ns a beam; the slab test of embree.py
    showed no such cost). Time the loop both ways, or call array-taking helpers once per run, as texture.py does."""
    return kernel(function, inline="always")
