"""Pictures of a run's frames: the labelled radar figure (io.radar_image.RadarFigure: range rings in
metres, colour bar in the sensor's units, title with sensor and stamp) and the lidar top view on a
metric grid (io.lidar_files.TopViewFigure), one figure per sensor reused from frame to frame."""
from __future__ import annotations

from pathlib import Path

from ..output_files import replacing

FAST_PNG = {"compress_level": 1}  # zlib level 1: a third of the encoding time of the default 6, files ~1.5x

class RunPictures:
    """Writes one PNG per frame; close() (or leave the with block) when the run ends."""

    def __init__(self):
        self._figures: dict[str, object] = {}

    def write(self, name: str, unit, result, path: Path) -> Path:
        """The picture of sensor `name`'s frame `result` (unit: its SensorUnit), written under a temporary
        name and renamed when complete (output_files.py; a picture of an earlier run is replaced)."""
        with replacing(path, overwrite=True) as tmp:
            self._draw(name, unit, result, tmp)
        return Path(path)

    def _draw(self, name: str, unit, result, path: Path) -> None:
        figure = self._figures.get(name)
        if unit.kind == "radar":
            from ..io.radar_image import RadarFigure

            reach = unit.output.get("cartesian_max_range") or None
            if figure is None:
                figure = self._figures[name] = RadarFigure(result, reach)
            figure.save(result, path, sensor=name, tight=False, png=FAST_PNG)
            return
        from ..io.lidar_files import TopViewFigure

        if figure is None:
            figure = self._figures[name] = TopViewFigure()
        figure.save(path, result, png=FAST_PNG)

    def __enter__(self) -> "RunPictures":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        for figure in self._figures.values():
            figure.close()
        self._figures.clear()


def safe_file_name(name: str) -> str:
    """A sensor name as a file name inside the pictures folder: never a path (`../../x` -> `x`)."""
    import re

    cleaned = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._") or "sensor"
    return cleaned[:100]
