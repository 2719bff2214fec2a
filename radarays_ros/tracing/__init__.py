"""Ray tracing: one Backend interface (`make_backend(name, scene)`), Embree on the CPU; Rays in, Hits out."""
from .backend import (ALL, ATTRIBUTES, Backend, Hits, Rays, available_backends, check_rays, make_backend,
                      register_backend)

__all__ = ["ALL", "ATTRIBUTES", "Backend", "Hits", "Rays", "available_backends", "check_rays", "make_backend",
           "register_backend"]
