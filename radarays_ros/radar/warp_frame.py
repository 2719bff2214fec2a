"""A whole radar frame on the Warp device: the simulator of simulator.py with its frame in kernels.

    sim = WarpRadarSimulator(config, scene, make_backend("warp", scene, device="cuda"))
    img = sim.simulate(pose)          # a RadarImage, as RadarSimulator.simulate

What stays on the host: the beam cone (S directions, drawn once with numpy, as the host path) and the
azimuths' column frames (A rotation matrices, each an upload of a few kB). On the device, with no
transfer between the steps: the primary waves of all azimuths, every pass (trace inside the kernel,
Fresnel/Snell split, BRDF, back-path and multipath returns with the occlusion test, energy threshold,
horizon pruning; children appended with an atomic counter), binning with atomics, the range-spread
kernel, the column maxima, normalisation and noise (Warp's counter-based RNG keyed by seed, frame and
pixel: the same draws on CPU and CUDA). The image and the drawn energies come back once per frame.

Differences to the host path, by design: energy and time are float32 (float64 there); float sums by
atomics are in thread order, so on CUDA an image may differ from the CPU device's in the last bits;
the ambient noise draws come from Warp's RNG, not numpy's (same statistics, other values). What the
device implements is declared per config field (DEVICE_SUPPORT below): a config with any other setting
(the physical sensor stage, Perlin ambient noise, returns.keep) is refused with one ConfigError naming
the keys, as are BRDF plugins (use RadarSimulator: frames host).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..device_support import DEVICE, HOST, Support, refuse, values
from ..errors import ConfigError
from ..tracing.warp import WarpBackend, require_device_backend
from .config import SECTIONS
from .image import RadarImage
from .kernels import kernel_weights
from .materials import AIR_VELOCITY
from .normalise import to_uint8
from .simulator import RadarSimulator, _scrolled

BRDF_CODES = {"radarays": 0, "paper": 1, "cook_torrance": 2}
NORMALISATION_CODES = {"radarays": 0, "global": 0, "gazebo": 1, "db": 2}
AMBIENT_CODES = {"none": 0, "uniform": 1}
MAX_WAVES = 1 << 24  # per pass; children beyond it are counted and reported (lower tracing.passes)



def _physical(c) -> bool:  # the physical sensor stage reads these sections (radar/physical/)
    return c.sensor.model == "physical"


# Which radar config fields device frames implement (radarays_ros/device_support.py), every key of every
# section. The RadaRays stage runs on the device; the physical stage (sensor.model: physical) does not
# (use host frames for it): its sections are read only under it. A field missing here is refused once set.
_HOST_CODE = "host code both paths share (column_frames, cone, kernel_weights)"
DEVICE_SUPPORT = {
    **{f"azimuth.{k}": Support(why=_HOST_CODE) for k in ("count", "start_deg", "step_deg", "scroll", "rate_hz")},
    "azimuth.time_jitter_s": HOST.unless_read(_physical, "read by the physical stage only"),
    **{f"range.{k}": DEVICE for k in ("resolution", "bins", "max_range", "offset", "write_bin_zero")},
    **{f"beam.{k}": Support(why=_HOST_CODE) for k in (
        "width_deg", "width_h_deg", "width_v_deg", "samples", "distribution", "p_in_cone", "gain_weighting", "redraw")},
    **{f"tracing.{k}": DEVICE for k in ("passes", "energy_threshold", "skip_distance", "max_distance", "polarization")},
    **{f"returns.{k}": DEVICE for k in ("multi_reflection", "multipath", "multipath_threshold", "occlusion_test")},
    "returns.keep": values(False).because("the raw returns are a host-path feature"),
    **{f"kernel.{k}": DEVICE for k in ("type", "width", "mode", "gaussian_sigma")},
    "noise.ambient": values(*AMBIENT_CODES),
    **{f"noise.{k}": DEVICE for k in ("at_signal_0", "at_signal_1", "energy_max", "energy_min", "energy_loss",
                                      "system_std")},
    **{f"noise.{k}": HOST.unless_read(lambda c: c.noise.ambient == "perlin", "read with noise.ambient perlin only")
       for k in ("perlin_scale_low", "perlin_scale_high", "perlin_p_low", "perlin_coherent")},
    **{f"output.{k}": DEVICE for k in ("normalisation", "energy_max", "signal_max", "db_reference", "db_range",
                                       "radar_equation", "reference_range")},
    "sensor.model": values("radarays").because("the physical stage runs in host frames only"),
    **{f"{section}.{f.name}": HOST.unless_read(_physical, "read by the physical stage only")
       for section in ("antenna", "fmcw", "receiver", "scatter", "interference") for f in dataclasses.fields(SECTIONS[section])},
    "seed": DEVICE,
    "origin": Support(why="the file's name"),
}


class WarpRadarSimulator(RadarSimulator):
    """RadarSimulator whose frames run in Warp kernels on the backend's device."""

    def __init__(self, config, scene, backend: WarpBackend, materials=None):
        require_device_backend(backend, "WarpRadarSimulator")
        super().__init__(config, scene, backend=backend, materials=materials)
        from . import warp_frame_kernels

        self._k = warp_frame_kernels
        self._materials_dev = None  # (RadarMaterials it was made from, device struct)

    def reconfigure(self, config) -> None:
        """Refuses (ConfigError naming the keys) a config with a setting DEVICE_SUPPORT does not implement."""
        if dataclasses.is_dataclass(config):  # anything else: RadarSimulator.reconfigure's error
            refuse(config, DEVICE_SUPPORT, config.origin)
        super().reconfigure(config)

    # -- device tables ----------------------------------------------------------------------------
    def _device_materials(self):
        table = self.materials
        if self._materials_dev is not None and self._materials_dev[0] is table:
            return self._materials_dev[1]
        unknown = sorted(set(table.brdf) - set(BRDF_CODES))
        if unknown:
            raise ConfigError(f"BRDF(s) {', '.join(unknown)} are not available in device frames "
                              f"(allowed: {', '.join(BRDF_CODES)}); use host frames (RadarSimulator; --frames host)")
        wp, dev = self.backend.wp, self.backend.device

        def column(key, default=0.0):
            return wp.array(np.array([float(p.get(key, default)) for p in table.params] + [default], np.float32),
                            dtype=float, device=dev)
        m = self._k.Materials()
        m.velocity = wp.array(table.velocity.astype(np.float32), dtype=float, device=dev)
        m.transmittance = wp.array(table.transmittance.astype(np.float32), dtype=float, device=dev)
        m.brdf = wp.array(np.array([BRDF_CODES[b] for b in table.brdf] + [0], np.int32), dtype=wp.int32, device=dev)
        m.a, m.b, m.c = column("A"), column("B"), column("C")
        m.diffuse, m.roughness, m.n = column("diffuse"), column("roughness", 1.0), column("n", 1.0)
        self._materials_dev = (table, m)
        return m

    def _settings(self):
        cfg = self.config
        s = self._k.FrameSettings()
        s.air = self.materials.air
        s.threshold = cfg.tracing.energy_threshold
        s.skip = cfg.tracing.skip_distance
        s.max_distance = cfg.tracing.max_distance
        s.polarization = cfg.tracing.polarization
        s.light_speed = AIR_VELOCITY
        s.multi_reflection = int(cfg.returns.multi_reflection)
        s.multipath = int(cfg.returns.multipath)
        s.multipath_threshold = cfg.returns.multipath_threshold
        s.occlusion_test = int(cfg.returns.occlusion_test)
        horizon = self.horizon_m()
        s.horizon = np.inf if horizon is None else horizon
        s.wave_horizon = np.inf if horizon is None else horizon * (2.0 if cfg.returns.multipath else 1.0)
        s.lossy = int(np.any(self.materials.transmittance < 1.0))
        s.n_bins = cfg.range.n_bins
        s.resolution = cfg.range.resolution
        s.offset = cfg.range.offset
        s.keep_max = int(cfg.kernel.type == "none")
        s.radar_equation = int(cfg.output.radar_equation)
        s.reference_range = cfg.output.reference_range
        return s

    def _waves(self, capacity: int):
        wp, dev, k = self.backend.wp, self.backend.device, self._k
        w = k.Waves()
        w.origin = wp.empty(capacity, dtype=wp.vec3, device=dev)
        w.direction = wp.empty(capacity, dtype=wp.vec3, device=dev)
        w.energy = wp.empty(capacity, dtype=float, device=dev)
        w.time = wp.empty(capacity, dtype=float, device=dev)
        w.medium = wp.empty(capacity, dtype=wp.int32, device=dev)
        w.azimuth = wp.empty(capacity, dtype=wp.int32, device=dev)
        w.count = wp.zeros(2, dtype=wp.int32, device=dev)
        return w

    # -- one frame ----------------------------------------------------------------------------------
    def simulate(self, pose, t0_ns: int = 0) -> RadarImage:
        cfg = self.config
        wp, dev, k = self.backend.wp, self.backend.device, self._k
        rng = np.random.default_rng([cfg.seed, 1, self.frame])  # the cone of redraw: per_frame, as the host path
        frame_seed = int(np.random.default_rng([cfg.seed, 2, self.frame]).integers(0, 2**31 - 1))
        self.frame += 1
        times, poses, theta, column_rot = self.column_frames(pose, t0_ns)
        column_rot = column_rot.astype(np.float32)
        origins = np.ascontiguousarray(poses[:, :3, 3], np.float32)
        directions, weights, _, _ = self.cone(rng)

        n_az, n_bins = cfg.azimuth.count, cfg.range.n_bins
        n0 = n_az * len(directions)
        scene = self.backend.synced_scene_arrays()
        materials, settings = self._device_materials(), self._settings()
        sensor = wp.array(origins, dtype=wp.vec3, device=dev)
        cone = wp.array(np.ascontiguousarray(directions, np.float32), dtype=wp.vec3, device=dev)
        gain = wp.array(np.asarray(weights if weights is not None else [1.0], np.float32), dtype=float, device=dev)
        waves = self._waves(n0)
        waves.count.assign(wp.array(np.array([n0, 0], np.int32), dtype=wp.int32, device=dev))
        wp.launch(k.primary_waves, dim=n0, device=dev,
                  inputs=[sensor, wp.array(column_rot, dtype=wp.mat33, device=dev), cone, gain,
                          int(weights is not None), settings.air, waves])
        delta = wp.zeros(n_az * n_bins, dtype=float, device=dev)
        capacity, dropped = n0, []
        for pass_id in range(cfg.tracing.passes):
            if pass_id > 0 and not (cfg.returns.multi_reflection or cfg.returns.multipath):
                break  # later passes could only feed returns that are not recorded
            last = pass_id == cfg.tracing.passes - 1
            next_capacity = 0 if last else min(2 * capacity, MAX_WAVES)
            children = self._waves(max(next_capacity, 1))
            wp.launch(k.bounce, dim=capacity, device=dev,
                      inputs=[scene, materials, settings, waves, pass_id, int(last), sensor, delta, children,
                              next_capacity])
            dropped.append(children.count)
            waves, capacity = children, next_capacity
            if last:
                break

        image = delta
        if cfg.kernel.type != "none":
            w, peak = kernel_weights(cfg.kernel.type, cfg.kernel.width, cfg.kernel.mode, cfg.kernel.gaussian_sigma)
            image = wp.empty(n_az * n_bins, dtype=float, device=dev)
            wp.launch(k.spread, dim=n_az * n_bins, device=dev,
                      inputs=[delta, wp.array(w.astype(np.float32), dtype=float, device=dev), int(peak), n_bins,
                              int(cfg.range.write_bin_zero), image])
        colmax = wp.empty(n_az, dtype=float, device=dev)
        wp.launch(k.column_max, dim=n_az, device=dev, inputs=[image, n_bins, colmax])
        mode = NORMALISATION_CODES[cfg.output.normalisation]
        if cfg.output.normalisation in ("global", "db"):  # one maximum for the frame
            colmax = wp.array(np.full(n_az, colmax.numpy().max(initial=0.0), np.float32), dtype=float, device=dev)
        out = wp.empty(n_az * n_bins, dtype=float, device=dev)
        noise, output = cfg.noise, cfg.output
        wp.launch(k.normalise, dim=n_az * n_bins, device=dev,
                  inputs=[image, colmax, n_bins, mode, output.energy_max, output.signal_max, output.db_reference,
                          output.db_range, AMBIENT_CODES[noise.ambient], noise.at_signal_0 - noise.at_signal_1,
                          noise.at_signal_1,
                          noise.energy_max, noise.energy_min, noise.energy_loss, cfg.range.resolution,
                          noise.system_std, frame_seed, out])
        lost = sum(int(c.numpy()[1]) for c in dropped)
        if lost:
            raise ConfigError(f"{cfg.origin}: {lost} waves found no room on the device (more than {MAX_WAVES} "
                              "per pass): lower tracing.passes or beam.samples")

        shift = cfg.azimuth.scroll % n_az
        image_f32 = _scrolled(out.numpy().reshape(n_az, n_bins), shift).astype(np.float32)
        return RadarImage(
            image_f32=image_f32,
            image=to_uint8(image_f32),
            azimuth_rad=_scrolled(theta, shift),
            range_m=cfg.range.offset + np.arange(n_bins) * cfg.range.resolution,
            azimuth_time_ns=_scrolled(times, shift),
            t0_ns=int(t0_ns),
            config=cfg,
            returns=None,
            energy=_scrolled(image.numpy().reshape(n_az, n_bins).astype(np.float64), shift),
        )
