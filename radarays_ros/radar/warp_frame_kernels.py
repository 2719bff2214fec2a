"""Kernels of a whole radar frame on the Warp device (warp_frame.py says what runs where).

The same steps as waves.py, draw.py and normalise.py, per wave instead of per batch. The per-hit formulas
are not written here: each is a function of the file that names it, whose own source Warp compiles
(radarays_ros/twin.py): fresnel.py (incidence cosine, Snell's velocity ratio and cosine, the Fresnel
reflectance, reflection and refraction directions), brdf.py (the built-in BRDFs), waves.py (the lossy
medium's T^d, the multipath range), draw.py (the range gain), noise.py (ambient level, range floor),
normalise.py (column scale, dB grey); kernels.py's range-spread weights are computed on the host once.
What is left here is the frame's plumbing (which wave, which cell, atomics, the RNG). Geometry, energy and
time are float32 here (float64 for energy and time on the host path): the twins' tests state the bounds.
"""

try:
    import warp as wp
except ImportError:  # warp_frame.py reports the missing package; this module stays importable without it
    wp = None

if wp is not None:
    from ..tracing.warp_kernels import SceneArrays, first_hit
    from ..twin import device_twin
    from . import brdf, draw, fresnel, normalise, waves
    from . import noise as radar_noise

    # brdf.py's formulas, compiled from their own source
    radarays_brdf = device_twin(brdf.radarays_brdf)
    paper_brdf = device_twin(brdf.paper_brdf)
    cook_torrance_brdf = device_twin(brdf.cook_torrance_brdf)
    fresnel_reflectance = device_twin(fresnel.fresnel_reflectance)
    range_gain = device_twin(draw.range_gain)
    range_cell = device_twin(draw.range_cell)
    db_grey = device_twin(normalise.db_grey)
    ambient_level = device_twin(radar_noise.ambient_level)
    range_floor = device_twin(radar_noise.range_floor)
    incidence_cosine_of = device_twin(fresnel.incidence_cosine_of)
    velocity_ratio = device_twin(fresnel.velocity_ratio)
    refraction_cosine_squared = device_twin(fresnel.refraction_cosine_squared)
    fresnel_defined = device_twin(fresnel.fresnel_defined)
    reflection_direction = device_twin(fresnel.reflection_direction)
    multipath_range = device_twin(waves.multipath_range)
    path_transmittance = device_twin(waves.path_transmittance)
    column_scale = device_twin(normalise.column_scale)
    refraction_direction = device_twin(fresnel.refraction_direction)

    @wp.struct
    class Waves:
        """Live waves of one pass: where they start, where they go, what they carry."""

        origin: wp.array(dtype=wp.vec3)
        direction: wp.array(dtype=wp.vec3)
        energy: wp.array(dtype=float)
        time: wp.array(dtype=float)  # ns since emission
        medium: wp.array(dtype=wp.int32)  # material id, air = n_materials
        azimuth: wp.array(dtype=wp.int32)
        count: wp.array(dtype=wp.int32)  # [0]: waves written (atomic), [1]: children dropped (no room)

    @wp.struct
    class Materials:
        """Radar materials by id (air last): velocity (m/ns), transmittance per metre, BRDF kind
        (0 radarays, 1 paper, 2 cook_torrance) and its parameters."""

        velocity: wp.array(dtype=float)
        transmittance: wp.array(dtype=float)
        brdf: wp.array(dtype=wp.int32)
        a: wp.array(dtype=float)
        b: wp.array(dtype=float)
        c: wp.array(dtype=float)
        diffuse: wp.array(dtype=float)
        roughness: wp.array(dtype=float)
        n: wp.array(dtype=float)

    @wp.struct
    class FrameSettings:
        """The configuration numbers the bounce kernel reads."""

        air: int
        threshold: float
        skip: float
        max_distance: float
        polarization: float
        light_speed: float  # m/ns: apparent range = light_speed * time
        multi_reflection: int
        multipath: int
        multipath_threshold: float
        occlusion_test: int
        horizon: float  # apparent range past which nothing is drawn (inf: none)
        wave_horizon: float
        lossy: int
        n_bins: int
        resolution: float
        offset: float
        keep_max: int  # kernel 'none': a bin keeps its largest return
        radar_equation: int
        reference_range: float

    @wp.func
    def brdf_factor(m: Materials, id: int, theta: float):
        """brdf.py's built-ins for material `id` at angle theta (radians), >= 0."""
        kind = m.brdf[id]
        value = float(0.0)
        if kind == 0:
            value = radarays_brdf(theta, m.a[id], m.b[id], m.c[id])
        elif kind == 1:
            value = paper_brdf(theta, m.a[id], m.b[id], m.c[id])
        else:
            value = cook_torrance_brdf(theta, m.diffuse[id], m.roughness[id], m.n[id])
        if not (value >= 0.0):  # NaN or negative: as RadarMaterials.evaluate (nan_to_num, then >= 0)
            value = 0.0
        return value

    @wp.func
    def draw(image: wp.array(dtype=float), s: FrameSettings, az: int, range_m: float, strength: float):
        """Adds a return to its (azimuth, bin) cell: a sum, or the maximum for kernel 'none' (draw.py)."""
        e = strength
        if s.radar_equation != 0:
            e = e * range_gain(range_m, s.offset, s.resolution, s.reference_range)
        cell = range_cell(range_m, s.offset, s.resolution)
        if e > 0.0 and cell >= 0.0 and cell < float(s.n_bins):
            index = az * s.n_bins + int(cell)
            if s.keep_max != 0:
                wp.atomic_max(image, index, e)
            else:
                wp.atomic_add(image, index, e)

    @wp.kernel
    def primary_waves(origins: wp.array(dtype=wp.vec3), column_rot: wp.array(dtype=wp.mat33),
                      cone: wp.array(dtype=wp.vec3), weights: wp.array(dtype=float), weighted: int,
                      air: int, out: Waves):
        """Wave a * S + s: sample s of the cone turned into azimuth a's column frame (waves.primary_rays)."""
        i = wp.tid()
        n_samples = cone.shape[0]
        a = i // n_samples
        s = i - a * n_samples
        d = column_rot[a] * cone[s]
        out.origin[i] = origins[a]
        out.direction[i] = d / wp.length(d)
        out.energy[i] = 1.0
        if weighted != 0:
            out.energy[i] = weights[s]
        out.time[i] = 0.0
        out.medium[i] = air
        out.azimuth[i] = a

    @wp.func
    def spawn(out: Waves, capacity: int, o: wp.vec3, d: wp.vec3, energy: float, time: float, medium: int, az: int):
        slot = wp.atomic_add(out.count, 0, 1)
        if slot < capacity:
            out.origin[slot] = o
            out.direction[slot] = d
            out.energy[slot] = energy
            out.time[slot] = time
            out.medium[slot] = medium
            out.azimuth[slot] = az
        else:
            wp.atomic_add(out.count, 1, 1)

    @wp.kernel
    def bounce(scene: SceneArrays, m: Materials, s: FrameSettings, waves: Waves, pass_id: int, last: int,
               sensor: wp.array(dtype=wp.vec3), image: wp.array(dtype=float), out: Waves, capacity: int):
        """One pass for one wave (waves.trace_frame's loop body): trace, returns, children."""
        i = wp.tid()
        if i >= waves.count[0] or i >= waves.origin.shape[0]:
            return
        medium = waves.medium[i]
        if last != 0 and medium != s.air:  # only waves in air can make a return, and none outlives this pass
            return
        o = waves.origin[i]
        d = waves.direction[i]
        h = first_hit(scene, o, d, s.max_distance)
        if h.entity < 0:
            return
        az = waves.azimuth[i]
        surface = h.material
        v1 = m.velocity[medium]
        pos = o + d * h.t
        time = waves.time[i] + h.t / v1
        energy = waves.energy[i]
        if s.lossy != 0:
            energy = energy * path_transmittance(m.transmittance[medium], h.t)
        in_air = medium == s.air
        behind = s.air
        if in_air:
            behind = surface
        v2 = m.velocity[behind]
        cos_i = incidence_cosine_of(wp.dot(d, h.normal))
        # Fresnel split with wave velocities (fresnel.fresnel_coefficients, its formulas)
        eta = velocity_ratio(v1, v2)
        k = refraction_cosine_squared(cos_i, eta)
        refracts = v2 > 0.0 and v1 > 0.0 and k >= 0.0
        cos_t = wp.sqrt(wp.max(k, 0.0))
        r_eff = float(1.0)
        if refracts and fresnel_defined(cos_i, cos_t, v1, v2):
            r_eff = fresnel_reflectance(cos_i, cos_t, v1, v2, s.polarization)
        e_refl = r_eff * energy
        e_trans = energy - e_refl
        reflects = e_refl > s.threshold
        if in_air and reflects:
            if pass_id == 0 or s.multi_reflection != 0:  # back along the path: range c t
                if s.light_speed * time < s.horizon:
                    strength = brdf_factor(m, surface, wp.acos(cos_i)) * e_refl
                    draw(image, s, az, s.light_speed * time, strength)
            if pass_id > 0 and s.multipath != 0:  # straight back to the sensor through air
                hv = pos - sensor[az]
                h_len = wp.length(hv)
                h_hat = hv / wp.max(h_len, 1.0e-12)
                range_m = multipath_range(time, h_len, v1, s.light_speed)
                if wp.dot(d, h_hat) > s.multipath_threshold and range_m < s.horizon:
                    free = int(1)
                    if s.occlusion_test != 0:
                        reach = wp.max(h_len - 2.0 * s.skip, 0.0)
                        if reach > 0.0:
                            blocker = first_hit(scene, pos - h_hat * s.skip, -h_hat, reach)
                            if blocker.t < reach:
                                free = 0
                    if free != 0:
                        r_dir = reflection_direction(d, h.normal, cos_i)
                        cos_dev = wp.clamp(-wp.dot(r_dir, h_hat), -1.0, 1.0)
                        strength = brdf_factor(m, surface, wp.acos(cos_dev)) * e_refl
                        draw(image, s, az, range_m, strength)
        if last != 0:
            return
        near = s.light_speed * time <= s.wave_horizon
        if reflects and near:  # reflection: stays in its medium
            r = reflection_direction(d, h.normal, cos_i)
            r = r / wp.length(r)  # the device traces unit directions (the host's tracer normalises what is not unit)
            e = e_refl
            if s.lossy != 0:
                e = e * path_transmittance(m.transmittance[medium], s.skip)
            spawn(out, capacity, pos + r * s.skip, r, e, time + s.skip / m.velocity[medium], medium, az)
        if refracts and e_trans > s.threshold and near:  # refraction: enters the medium behind
            t = refraction_direction(d, h.normal, eta, cos_i, cos_t)
            t = t / wp.length(t)
            e = e_trans
            if s.lossy != 0:
                e = e * path_transmittance(m.transmittance[behind], s.skip)
            spawn(out, capacity, pos + t * s.skip, t, e, time + s.skip / m.velocity[behind], behind, az)

    @wp.kernel
    def spread(delta: wp.array(dtype=float), weights: wp.array(dtype=float), peak: int, n_bins: int,
               write_bin_zero: int, image: wp.array(dtype=float)):
        """Bin j of a column gathers every return at bin j + peak - i times weight i (draw.py)."""
        index = wp.tid()
        a = index // n_bins
        j = index - a * n_bins
        total = float(0.0)
        if j > 0 or write_bin_zero != 0:
            for i in range(weights.shape[0]):
                src = j + peak - i
                if src >= 0 and src < n_bins:
                    total = total + delta[a * n_bins + src] * weights[i]
        image[index] = total

    @wp.kernel
    def column_max(image: wp.array(dtype=float), n_bins: int, out: wp.array(dtype=float)):
        a = wp.tid()
        best = float(0.0)
        for j in range(n_bins):
            best = wp.max(best, image[a * n_bins + j])
        out[a] = best

    @wp.kernel
    def normalise(image: wp.array(dtype=float), colmax: wp.array(dtype=float), n_bins: int, mode: int,
                  energy_max: float, signal_max: float, db_reference: float, db_range: float, ambient: int,
                  at_signal_step: float, at_signal_1: float, floor_max: float, floor_min: float, floor_loss: float,
                  resolution: float, system_std: float, seed: int, out: wp.array(dtype=float)):
        """normalise.py and noise.py per pixel. mode 0 radarays/global (colmax holds the column's or the
        frame's maximum), 1 gazebo, 2 db; ambient 0 none, 1 uniform. Warp's counter-based RNG, keyed by
        the frame seed and the pixel, gives the same draws on every device."""
        index = wp.tid()
        a = index // n_bins
        j = index - a * n_bins
        e = image[index]
        m = colmax[a]
        if mode == 1 and ambient != 0:
            m = wp.max(floor_max, m)
        state = wp.rand_init(seed, index)
        signal = e
        if mode == 0:
            signal = energy_max * e
        noise = float(0.0)
        if ambient != 0:
            inv_m = float(0.0)
            if m > 0.0:
                inv_m = 1.0 / m
            p = wp.randf(state)
            floor = range_floor((float(j) + 0.5) * resolution, floor_max, floor_min, floor_loss)
            noise = m * ambient_level(signal, inv_m, p, at_signal_step, at_signal_1, floor)
        value = float(0.0)
        if mode == 2:
            value = db_grey(wp.max(e + noise, 1.0e-30), db_reference, db_range)
        elif m > 0.0:
            value = (signal + noise) * column_scale(signal_max, m)
        if system_std > 0.0:
            value = wp.max(value + system_std * wp.randn(state), 0.0)
        out[index] = value
