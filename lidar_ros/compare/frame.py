"""One lidar frame as the comparison reads it: a range image and its channels, real or simulated alike.

Arrays are [row, column] with rows = beams ordered by elevation as the driver orders them and columns =
azimuth directions (destaggered for Ouster), so that neighbouring pixels look at neighbouring directions.
Misses are NaN in `range_m` (and `range2_m`). A channel the sensor does not output is None.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from radarays_ros.errors import ConfigError


@dataclass(frozen=True)
class LidarFrame:
    name: str                      # what the tables and pictures call it (file name)
    sensor: str                    # model name where the file says it ("OS-2-128", "VLP-16"), else ""
    range_m: np.ndarray            # (H, W) float64, NaN = no return
    xyz_m: np.ndarray              # (H, W, 3) float64 sensor frame; NaN (or anything) where no return
    reflectivity: np.ndarray | None = None   # (H, W) calibrated reflectivity (Ouster/Velodyne 0-100 diffuse %, 101-255 retro)
    signal: np.ndarray | None = None         # (H, W) signal photons (Ouster SIGNAL)
    near_ir: np.ndarray | None = None        # (H, W) ambient (Ouster NEAR_IR), every pixel
    range2_m: np.ndarray | None = None       # (H, W) second return, NaN = none
    signal2: np.ndarray | None = None
    time_s: np.ndarray | None = None         # (H, W) firing time of each pixel from the frame start
    column_time_s: np.ndarray | None = None  # (B,) measurement-block (column firing) times in firing order
    dual: bool = False                       # the recording mode has a second return (even where none came)
    reflectivity_label: str = "reflectivity"

    def __post_init__(self):
        r = np.asarray(self.range_m)
        if r.ndim != 2 or min(r.shape) < 3:
            raise ConfigError(f"lidar frame {self.name}: range must be a (rows, columns) image of at least 3 x 3, "
                              f"got shape {r.shape}")
        if np.asarray(self.xyz_m).shape != r.shape + (3,):
            raise ConfigError(f"lidar frame {self.name}: xyz has shape {np.asarray(self.xyz_m).shape}, "
                              f"expected {r.shape + (3,)}")
        for key in ("reflectivity", "signal", "near_ir", "range2_m", "signal2", "time_s"):
            value = getattr(self, key)
            if value is not None and np.asarray(value).shape != r.shape:
                raise ConfigError(f"lidar frame {self.name}: {key} has shape {np.asarray(value).shape}, "
                                  f"expected {r.shape} as range")
        self._check_values(r)

    def _check_values(self, r: np.ndarray) -> None:
        """Ranges positive or NaN (no return), every other channel finite where it is read (a file's nan, inf or
        1e308 would make the statistics NaN or overflow without a word)."""
        with np.errstate(all="ignore"):
            valid = np.isfinite(r)
            if np.isinf(r).any() or (r[valid] <= 0).any() or (r[valid] > 1e6).any():
                raise ConfigError(f"lidar frame {self.name}: range holds values outside (0, 1e6] m that are not NaN "
                                  "(no return)")
            if not np.isfinite(np.asarray(self.xyz_m)[valid]).all():
                raise ConfigError(f"lidar frame {self.name}: xyz is not finite where range has a return")
            for key in ("reflectivity", "signal", "near_ir", "signal2", "time_s", "column_time_s", "range2_m"):
                value = getattr(self, key)
                if value is None:
                    continue
                v = np.asarray(value, np.float64)
                bad = ~np.isfinite(v) if key != "range2_m" else np.isinf(v)
                if bad.any() or (np.abs(v[np.isfinite(v)]) > 1e12).any() or (key == "range2_m" and (v <= 0).any()):
                    raise ConfigError(f"lidar frame {self.name}: {key} holds values that are not finite numbers "
                                      "within 1e12 (range2: positive or NaN)")

    @property
    def shape(self) -> tuple[int, int]:
        return tuple(np.asarray(self.range_m).shape)

    @property
    def valid(self) -> np.ndarray:
        return np.isfinite(self.range_m) & (np.asarray(self.range_m) > 0)


def check_same_sensor(real: LidarFrame, sim: LidarFrame, column_tolerance: float = 0.02) -> None:
    """Raise one line when the two frames cannot be of the same sensor (beams, columns, model name)."""
    (hr, wr), (hs, ws) = real.shape, sim.shape
    what = f"REAL {real.name} is {hr} x {wr}{_of(real)}, SIM {sim.name} is {hs} x {ws}{_of(sim)}"
    if hr != hs:
        raise ConfigError(f"{what}: not the same sensor (beam counts differ); simulate REAL's sensor "
                          "(e.g. `radarays lidar WORLD --sensor REAL.json`)")
    if abs(wr - ws) > column_tolerance * max(wr, ws):
        raise ConfigError(f"{what}: columns differ by more than {column_tolerance:.0%}; simulate the same mode "
                          "(columns, rate)")
    a, b = _family(real.sensor), _family(sim.sensor)
    if a and b and a != b:
        raise ConfigError(f"{what}: not the same sensor model")


def _of(frame: LidarFrame) -> str:
    return f" ({frame.sensor})" if frame.sensor else ""


def _family(sensor: str) -> str:
    """'OS-2-128 v2.3.0' and 'OS2-128' -> 'os2-128'; '' where unknown."""
    word = sensor.split()[0].split(",")[0].lower().replace("os-", "os") if sensor else ""
    return word
