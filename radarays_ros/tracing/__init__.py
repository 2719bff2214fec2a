"""Ray tracing: one Backend interface (`make_backend(name, scene)`), Embree on the CPU; Rays in, Hits out.

The names below load backend.py (and with it numba, through compiled.py) on first use, so a module that only
needs tracing/cli.py's argument helpers (`radarays --help`) does not pay for the compiler.
"""
from __future__ import annotations

__all__ = ["ALL", "ATTRIBUTES", "Backend", "Hits", "Rays", "available_backends", "check_rays", "make_backend",
           "register_backend"]


def __getattr__(name: str):
    if name in __all__:
        from . import backend

        return getattr(backend, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
