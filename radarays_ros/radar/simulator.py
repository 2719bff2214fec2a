"""RadarSimulator: a rotating FMCW radar (the RadaRays model) over a Scene and a ray-tracing backend.

    sim = RadarSimulator(RadarConfig.from_yaml("config/examples/radarays_compat.yaml"), scene)
    img = sim.simulate(pose_4x4)               # or a Trajectory: one pose per azimuth firing time

One frame: the beam cone (sampling.py) is turned into every azimuth's column frame, all waves of the
frame are traced pass by pass in one backend call each (waves.py), the returns are binned and spread
(draw.py), then normalised with noise (normalise.py) and converted to 8 bit.
"""
from __future__ import annotations

import numpy as np

from ..errors import ConfigError
from ..tracing import Backend, make_backend
from ..world.trajectory import Trajectory
from ..world.transforms import check_transform
from .config import RadarConfig
from .draw import draw_returns
from .image import RETURN_DTYPE, RadarImage
from .materials import RadarMaterials
from .noise import system_noise
from .normalise import normalise, to_uint8
from .sampling import cone_directions, gain_weights, sample_cone
from .waves import trace_frame


class RadarSimulator:
    """Simulates polar radar images; fully seeded by config.seed (same seed and frame number, same image)."""

    def __init__(self, config: RadarConfig, scene, backend: str | Backend = "embree", materials: RadarMaterials | None = None):
        self.scene = scene
        self.backend = make_backend(backend, scene) if isinstance(backend, str) else backend
        self._fixed_materials = materials
        self._materials: RadarMaterials | None = materials
        self._materials_len = None  # (library id, version, size) the parsed table belongs to
        self._cone = None
        self.config = config
        self.frame = 0  # frames simulated since construction or the last seed change
        self.ray_log: list | None = None  # set to [] to record (origins, directions) of every pass
        self.reconfigure(config)

    # -- configuration --------------------------------------------------------------------------
    def reconfigure(self, config: RadarConfig) -> None:
        """Switch to a new config; the cached cone is kept when beam and seed are unchanged."""
        if not isinstance(config, RadarConfig):
            raise ConfigError(f"RadarSimulator needs a RadarConfig, got {type(config).__name__}")
        if self._cone is not None and (config.beam != self.config.beam or config.seed != self.config.seed):
            self._cone = None
        if config.seed != self.config.seed:
            self.frame = 0
        self.config = config

    @property
    def materials(self) -> RadarMaterials:
        """The scene library's radar materials, re-parsed when a material is added or replaced."""
        if self._fixed_materials is not None:
            return self._fixed_materials
        library = self.scene.materials
        stamp = (id(library), getattr(library, "version", None), len(library))
        if self._materials is None or self._materials_len != stamp:
            self._materials = RadarMaterials.from_library(library)
            self._materials_len = stamp
        return self._materials

    def cone(self, rng: np.random.Generator | None = None):
        """(directions (S,3), weights (S,) or None, alpha, beta) of the beam samples in the column frame."""
        beam = self.config.beam
        if beam.redraw == "cached" and self._cone is not None:
            return self._cone
        if rng is None or beam.redraw == "cached":
            rng = np.random.default_rng([self.config.seed, 0xC0E])
        wh, wv = beam.widths_rad
        alpha, beta = sample_cone(rng, beam.samples, beam.distribution, beam.p_in_cone, wh, wv)
        weights = gain_weights(alpha, beta, wh, wv) if beam.gain_weighting else None
        cone = (cone_directions(alpha, beta), weights, alpha, beta)
        if beam.redraw == "cached":
            self._cone = cone
        return cone

    # -- geometry -------------------------------------------------------------------------------
    def azimuths(self) -> np.ndarray:
        """Azimuth of firing index k (radians, counter-clockwise from sensor +x)."""
        az = self.config.azimuth
        return np.radians(az.start_deg + az.step_deg * np.arange(az.count))

    def firing_times(self, t0_ns: int) -> np.ndarray:
        az = self.config.azimuth
        period_ns = 1e9 / az.rate_hz
        return int(t0_ns) + np.round(np.arange(az.count) * period_ns / az.count).astype(np.int64)

    def _sensor_poses(self, pose, times: np.ndarray) -> np.ndarray:
        if isinstance(pose, Trajectory):
            return pose.at(times)
        matrix = check_transform(np.asarray(pose, dtype=np.float64), what="radar pose")
        return np.broadcast_to(matrix, (len(times), 4, 4))

    def horizon_m(self) -> float | None:
        """Apparent range from which no return can be drawn (one bin of margin past the last bin), or
        None when the raw returns are kept (then every return is recorded, drawn or not)."""
        rng = self.config.range
        if self.config.returns.keep:
            return None
        return rng.offset + (rng.n_bins + 1) * rng.resolution

    # -- simulation -----------------------------------------------------------------------------
    def column_frames(self, pose, t0_ns: int):
        """Each azimuth's firing time, sensor pose, angle and world <- column rotation (sensor pose · Rz(azimuth))."""
        times = self.firing_times(t0_ns)
        theta = self.azimuths()
        az = self.config.azimuth
        if az.time_jitter_s > 0 and self.config.sensor.model == "physical":
            # firing times wobble about the nominal ones; the antenna keeps turning, so each azimuth fires
            # where it is at its own time (the encoder reads that angle)
            jitter = np.random.default_rng([self.config.seed, 0x717, self.frame]).normal(0.0, az.time_jitter_s, len(times))
            times = times + np.round(jitter * 1e9).astype(np.int64)
            theta = theta + np.sign(az.step_deg) * 2.0 * np.pi * az.rate_hz * (times - self.firing_times(t0_ns)) * 1e-9
        poses = self._sensor_poses(pose, times)
        c, s = np.cos(theta), np.sin(theta)
        rz = np.zeros((len(theta), 3, 3))
        rz[:, 0, 0], rz[:, 0, 1], rz[:, 1, 0], rz[:, 1, 1], rz[:, 2, 2] = c, -s, s, c, 1.0
        return times, poses, theta, np.einsum("kij,kjl->kil", poses[:, :3, :3], rz)

    def simulate(self, pose, t0_ns: int = 0) -> RadarImage:
        """One sweep from a 4x4 world <- sensor pose, or a Trajectory sampled at each azimuth's firing time."""
        cfg = self.config
        rng = np.random.default_rng([cfg.seed, 1, self.frame])
        self.frame += 1
        times, poses, theta, column_rot = self.column_frames(pose, t0_ns)
        if cfg.sensor.model == "physical":  # the physical sensor stage (radar/physical/); below: RadaRays
            from .physical.simulate import simulate_physical
            return simulate_physical(self, poses, pose, times, theta, column_rot, rng, t0_ns, _scrolled)
        origins = np.ascontiguousarray(poses[:, :3, 3])
        directions, weights, _, _ = self.cone(rng)

        found = trace_frame(self.backend, origins, column_rot, directions, weights, self.materials,
                            cfg.tracing, cfg.returns, self.ray_log, self.horizon_m())
        energy = draw_returns(found.azimuth, found.range_m, found.energy, cfg.azimuth.count, cfg.range, cfg.kernel, cfg.output)
        values = normalise(energy, cfg.output, cfg.noise, cfg.range.resolution, rng)
        if cfg.noise.system_std > 0:
            values = np.maximum(values + system_noise(values.shape, cfg.noise.system_std, rng), 0.0)

        shift = cfg.azimuth.scroll % cfg.azimuth.count  # output column of azimuth k is (scroll + k) % count
        returns = None
        if cfg.returns.keep:
            returns = np.zeros(len(found.energy), RETURN_DTYPE)
            returns["azimuth"] = (found.azimuth + shift) % cfg.azimuth.count
            returns["range"] = found.range_m
            returns["energy"] = found.energy
            returns["bounce"] = found.bounce
        image_f32 = _scrolled(values, shift).astype(np.float32)
        return RadarImage(
            image_f32=image_f32,
            image=to_uint8(image_f32),
            azimuth_rad=_scrolled(theta, shift),
            range_m=cfg.range.offset + np.arange(cfg.range.n_bins) * cfg.range.resolution,
            azimuth_time_ns=_scrolled(times, shift),
            t0_ns=int(t0_ns),
            config=cfg,
            returns=returns,
            energy=_scrolled(energy, shift),
        )

    def close(self) -> None:
        self.backend.close()


def _scrolled(array: np.ndarray, shift: int) -> np.ndarray:
    """Rows (azimuths) rolled by shift; the array itself when there is nothing to roll (no 11 MB copy)."""
    return np.roll(array, shift, axis=0) if shift else array


__all__ = ["RadarSimulator"]
