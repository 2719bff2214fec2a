"""The name 'optix' is reserved: asking for it gives one clear error saying why, and what to use.

The GPU backend is 'warp' (NVIDIA Warp, warp.py): the same kernels run on CUDA and on the CPU, so CI
checks them without a GPU. OptiX is not used now, for reasons that are facts about its packaging:
pyoptix is a source package that fetches the OptiX SDK headers while it builds, and those headers may
not be redistributed, so no wheel can ship it; current OptiX releases need newer drivers than common
test GPUs have; and OptiX's advantage, the RT cores, is absent on data-centre GPUs (A100, H100).
"""
from __future__ import annotations

from ..errors import TracingError

RESERVED_REASON = ("a reserved name, not implemented: pyoptix builds from source and fetches OptiX headers that "
                   "may not be redistributed, and data-centre GPUs have no RT cores")


def make_optix_backend(scene, **options):
    raise TracingError(f"backend 'optix' is not available: {RESERVED_REASON}; use backend 'warp' on NVIDIA GPUs "
                       "or use backend 'embree' (CPU)")
