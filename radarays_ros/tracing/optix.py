"""OptiX (NVIDIA GPU) backend: selected by name where CUDA, CuPy and pyoptix-contrib are installed.

The GPU implementation is not part of this release (see README, "Backends"). Asking for it gives one
clear error saying what is missing, so that sensor configurations can name the backend today and
fall back to "embree" on machines without an NVIDIA GPU.
"""
from __future__ import annotations

from ..errors import TracingError


def _missing_gpu_parts() -> list[str]:
    missing = []
    try:
        import cupy  # noqa: F401

        if cupy.cuda.runtime.getDeviceCount() < 1:
            missing.append("an NVIDIA GPU visible to CUDA")
    except Exception:  # ImportError, or CUDA driver errors raised by cupy at query time
        missing.append("cupy with a working CUDA driver (pip install radarays_ros[gpu])")
    try:
        import optix  # noqa: F401  (pyoptix-contrib)
    except Exception:
        missing.append("pyoptix-contrib (the OptiX Python bindings)")
    return missing


def make_optix_backend(scene, **options):
    missing = _missing_gpu_parts()
    reason = "missing " + ", ".join(missing) if missing else "the GPU tracer is not implemented in this release"
    raise TracingError(f"backend 'optix' is not available: {reason}; use backend 'embree' (CPU)")
