"""radarays_ros: rotating FMCW radar and lidar simulation by ray tracing a mesh mirror of the world."""

__version__ = "0.1.0"
