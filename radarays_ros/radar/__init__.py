"""The RadaRays rotating FMCW radar model (Mock et al., RadaRays, RA-L 2025): configuration, materials, simulator, image."""
from .config import RadarConfig
from .image import RadarImage
from .materials import RadarMaterials
from .simulator import RadarSimulator

__all__ = ["RadarConfig", "RadarImage", "RadarMaterials", "RadarSimulator"]
