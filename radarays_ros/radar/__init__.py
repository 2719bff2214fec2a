"""The RadaRays rotating FMCW radar model (radar_model.md): configuration, materials, simulator, image."""
from .config import RadarConfig
from .image import RadarImage
from .materials import RadarMaterials
from .simulator import RadarSimulator

__all__ = ["RadarConfig", "RadarImage", "RadarMaterials", "RadarSimulator"]
