"""Ray tracing: one Backend interface (`make_backend(name, scene)`), Embree on the CPU."""
from .backend import Backend, Hits, available_backends, check_rays, make_backend, register_backend

__all__ = ["Backend", "Hits", "available_backends", "check_rays", "make_backend", "register_backend"]
