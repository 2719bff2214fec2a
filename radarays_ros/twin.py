"""One formula, two compilers: a per-hit formula is written once and runs on both frame paths.

A formula module imports numpy as `xm` and writes its formula with `xm.` functions, arithmetic and branches on
scalar settings only (no branch on an array: a per-element choice is `xm.where(condition, a, b)`, which numpy
and Warp both evaluate as a select). The host calls it with numpy arrays (numpy runs it elementwise);
`device_twin(formula)` hands the same source to Warp with `xm` bound to Warp's builtins, for the device kernels.
So the host and the device evaluate the same operations in the same order; they differ only where numpy
computes in float64 and the kernel in float32 (the parity tests state that ULP bound).

Rules for a formula: arguments annotated `float`, `int`, `bool` or `vec3` (Warp needs the types; numpy ignores
them; a `vec3` is an (N, 3) array on the host, whose scalar partners the caller passes as (N, 1) columns); powers
with float exponents (`c ** 4.0`: numpy gives the same bits as `c ** 4`, Warp has no float**int); constants as
module-level Python numbers; ASCII only in the function's lines (Warp 1.0.x copies them into C++ strings).
"""
from __future__ import annotations

import functools
import types

# numpy name -> Warp builtin of the same meaning (numpy's names are the formulas' vocabulary)
_DEVICE_NAMES = {"cos": "cos", "sin": "sin", "acos": "acos", "arccos": "acos", "sqrt": "sqrt", "cbrt": "cbrt",
                 "exp": "exp", "log": "log", "log10": "log10", "maximum": "max", "minimum": "min", "clip": "clamp",
                 "float32": "float32", "abs": "abs", "rint": "rint", "degrees": "degrees", "where": "where",
                 "floor": "floor", "int32": "int32", "uint64": "uint64"}


_ANNOTATION_TYPES = {"float": float, "int": int, "bool": bool}
vec3 = "vec3"  # the annotation of a 3-vector argument (formulas import it: `from radarays_ros.twin import vec3`)
uint64 = "uint64"  # the annotation of an unsigned 64-bit integer argument (radarays_ros/counter_random.py)


@functools.cache
def device_math() -> types.ModuleType:
    """The `xm` a formula sees inside a Warp kernel: a module of Warp builtins under numpy's names."""
    import warp as wp

    namespace = types.ModuleType("radarays_ros.twin.device_math")
    for numpy_name, warp_name in _DEVICE_NAMES.items():
        setattr(namespace, numpy_name, getattr(wp, warp_name))
    namespace.pi = 3.141592653589793
    namespace.logical_and = _logical_and()
    return namespace


def _logical_and():
    """numpy's logical_and for two booleans on the device (Warp has `and`, not the function; numpy's `and` does
    not take arrays, and np.where(a, b, False) costs the host two passes more)."""
    import warp as wp

    @wp.func
    def logical_and(a: bool, b: bool):
        return a and b

    return logical_and


@functools.cache
def device_twin(formula):
    """The Warp function (`wp.func`) compiled from `formula`'s own source, with `xm` bound to device_math()."""
    import warp as wp

    scope = dict(formula.__globals__, xm=device_math())
    twin = types.FunctionType(formula.__code__, scope, formula.__name__, formula.__defaults__, formula.__closure__)
    # `from __future__ import annotations` leaves the names as strings: Warp wants the types
    # vec3: a (..., 3) array on the host, a Warp vec3 on the device
    kinds = {**_ANNOTATION_TYPES, "vec3": wp.vec3, "uint64": wp.uint64}
    twin.__annotations__ = {name: kinds.get(kind, kind) for name, kind in formula.__annotations__.items()}
    twin.__module__, twin.__qualname__, twin.__doc__ = formula.__module__, formula.__qualname__, formula.__doc__
    return wp.func(twin)
