"""The RadaRays rotating FMCW radar model (Mock et al., RadaRays, RA-L 2025): configuration, materials, simulator, image."""
from .config import RadarConfig
from .image import RadarImage
from .materials import RadarMaterials

__all__ = ["RadarConfig", "RadarImage", "RadarMaterials", "RadarSimulator"]


def __getattr__(name: str):  # the simulator pulls in the tracing layer, numba and scipy: import it on first use
    if name == "RadarSimulator":
        from .simulator import RadarSimulator

        return RadarSimulator
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
