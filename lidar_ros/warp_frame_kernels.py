"""The kernel of a whole lidar frame on the Warp device (warp_frame.py says what runs where).

One thread per beam: its world ray (the frame pose, or its measurement column's pose), angular
jitter, the material classes (physics/interaction.py: transparent crossings, mirror reflections,
absorbent ends, the returning surface), rho(theta) (physics/reflectivity.py), the detection limit r_L(rho)
(physics/detection.py), dropouts, range noise (physics/noise.py), the intensity fields
(physics/intensity.py) and the range window [range_min, range_max] (simulator.py). The per-hit formulas
are not written here: each is a function of the file that names it (detection.py's limit and decision,
reflectivity.py's rho(theta) and table, intensity.py's calibrated reflectivity, signal and ambient,
noise.py's dust range and quantisation, overlap.py's O(r), interaction.py's mirror and skip), whose own
source Warp compiles (radarays_ros/twin.py); this kernel runs them per ray in float32.

Plain ASCII only in this file: Warp 1.0.x copies kernel source lines into the generated C++ as strings,
and a non-ASCII character there fails the CPU build ("hex escape sequence out of range").

Random numbers: the counter-based draws of radarays_ros/counter_random.py, a pure function of (the frame's
key, the beam's index, the term's word of physics/noise.py), compiled from the same source as the host's
loops: a beam draws what the host path draws for it, on any device and for any launch layout.
"""

try:
    import warp as wp
except ImportError:  # warp_frame.py reports the missing package; this module stays importable without it
    wp = None

if wp is not None:
    from radarays_ros.tracing.warp_kernels import SceneArrays, first_hit_at

    from radarays_ros import counter_random
    from radarays_ros.twin import device_twin

    from .physics import detection, intensity, interaction, materials, noise, overlap, reflectivity

    # the detection limit's form codes: physics/detection.py's (DetectionLimit.code)
    CURVE_NONE = wp.constant(detection.CURVE_NONE)
    CURVE_ROOT = wp.constant(detection.CURVE_ROOT)
    CURVE_LOG = wp.constant(detection.CURVE_LOG)

    MIN_SIGNAL_RANGE = wp.constant(overlap.MIN_SIGNAL_RANGE)  # physics/overlap.py: keeps 1/r^2 finite

    # material class codes of physics/materials.py
    GENERAL = wp.constant(materials.GENERAL)
    TRANSPARENT = wp.constant(materials.TRANSPARENT)
    ABSORBENT = wp.constant(materials.ABSORBENT)
    RETROREFLECTIVE = wp.constant(materials.RETROREFLECTIVE)
    MIRROR = wp.constant(materials.MIRROR)

    @wp.struct
    class LidarMaterialTable:
        """physics/materials.py's LidarMaterials by material id: class, rho(theta) terms, table, pass factor."""

        klass: wp.array(dtype=wp.int32)
        lambertian: wp.array(dtype=float)  # rho(0) of lambertian rows, else 0
        constant: wp.array(dtype=float)  # rho(0) of constant rows, else 0
        tabled: wp.array(dtype=wp.int32)  # 1: rho(theta) from the row's table
        table: wp.array(dtype=float)  # (M * 10): rho at 0, 10, ..., 90 deg
        pass_factor: wp.array(dtype=float)

    @wp.struct
    class SurfaceSettings:
        """The numbers of the sensor config the kernel reads (warp_frame.py fills them)."""

        tmin: float
        tmax: float
        range_min: float
        range_max: float
        max_bounces: int
        max_crossings: int
        skip_abs: float
        skip_rel: float
        limit_model: int  # DetectionLimit.code: CURVE_NONE, CURVE_ROOT (linear, rootN), CURVE_LOG, blensor
        limit_root: int  # DetectionLimit.root: N of rootN (1 = linear)
        limit_a: float
        limit_b: float
        limit_rho1: float
        limit_d1: float
        limit_slope: float
        dropout: float
        angular_sigma: float
        sigma: float
        relative_sigma: float
        relative_exponent: float
        dust_probability: float
        dust_min_range: float
        resolution: float
        use_bias: int
        ln_retro_full_scale: float
        signal_scale: float
        overlap_range: float  # r0 of physics/overlap.py; 0 = off
        ambient_level: float
        ambient_sky: float
        per_column: int  # 1: each beam's pose is its measurement column's (motion distortion)
        sweep: int  # 1: every segment of a beam meets moving entities where they are at its firing time (ray_times)
        key: wp.uint64  # the frame's counter key (radarays_ros/counter_random.py frame_key64)
        missing: float  # NaN, set by the host (a NaN constant inside kernels varies across Warp releases)

    # rows of FrameOut.beam: what a driver cloud reads, copied to the host with every frame in one copy
    BEAM_RANGE = wp.constant(0)  # noisy range, NaN = no return (hit = range is a number)
    BEAM_REFLECTIVITY = wp.constant(1)
    BEAM_VELODYNE = wp.constant(2)  # calibrated reflectivity
    BEAM_SIGNAL = wp.constant(3)  # Ouster signal
    BEAM_AMBIENT = wp.constant(4)  # Ouster ambient
    # rows of FrameOut.truth (float) and FrameOut.truth_ids (int): ground truth, copied only when read
    TRUTH_CLEAN_RANGE = wp.constant(0)
    TRUTH_COS_INCIDENCE = wp.constant(1)
    TRUTH_NORMAL = wp.constant(2)  # rows 2, 3, 4: x, y, z
    IDS_DUST = wp.constant(0)
    IDS_ENTITY = wp.constant(1)
    IDS_MATERIAL = wp.constant(2)
    IDS_FIRST_ENTITY = wp.constant(3)

    @wp.struct
    class FrameOut:
        """Per beam (column i of each array): what the sensor reports (warp_frame.DeviceReturns reads it)."""

        beam: wp.array2d(dtype=float)  # (5, N): the BEAM_ rows
        truth: wp.array2d(dtype=float)  # (5, N): the TRUTH_ rows
        truth_ids: wp.array2d(dtype=wp.int32)  # (4, N): the IDS_ rows

    # the formulas of physics/detection.py, overlap.py, reflectivity.py, intensity.py and noise.py, compiled from
    # their own source (radarays_ros/twin.py)
    detection_limit32 = device_twin(detection.detection_limit32)
    detected = device_twin(detection.detected)
    overlap_factor = device_twin(overlap.overlap_factor)
    lambertian_reflectivity = device_twin(reflectivity.lambertian_reflectivity)
    incidence_degrees = device_twin(reflectivity.incidence_degrees)
    table_position = device_twin(reflectivity.table_position)
    table_interpolation = device_twin(reflectivity.table_interpolation)
    diffuse_percent = device_twin(intensity.diffuse_percent)
    retro_percent = device_twin(intensity.retro_percent)
    signal_count = device_twin(intensity.signal_count)
    flat_ambient_mean = device_twin(intensity.flat_ambient_mean)
    shot_noise_count = device_twin(intensity.shot_noise_count)
    dust_range = device_twin(noise.dust_range)
    skip_distance = device_twin(interaction.skip_distance)
    mirror_direction = device_twin(interaction.mirror_direction)
    quantised = device_twin(noise.quantised)
    jittered_direction = device_twin(noise.jittered_direction)
    random_bits = device_twin(counter_random.random_bits)
    uniform = device_twin(counter_random.uniform)
    second_uniform = device_twin(counter_random.second_uniform)
    gaussian_radius = device_twin(counter_random.gaussian_radius)
    box_muller_cosine = device_twin(counter_random.box_muller_cosine)

    @wp.func
    def ray_gaussian(key: wp.uint64, ray: wp.uint64, word: wp.uint64):
        """counter_random.gaussians' draw of one ray: one half of its ray pair's Box-Muller pair."""
        bits = random_bits(key, ray >> wp.uint64(1), word)
        return gaussian_radius(bits) * box_muller_cosine(bits, ray & wp.uint64(1))

    # the counter words of physics/noise.py
    JITTER_X = wp.constant(wp.uint64(noise.JITTER_WORDS[0]))
    JITTER_Y = wp.constant(wp.uint64(noise.JITTER_WORDS[1]))
    JITTER_Z = wp.constant(wp.uint64(noise.JITTER_WORDS[2]))
    DROPOUT_WORD = wp.constant(wp.uint64(noise.DROPOUT_WORD))
    DUST_WORD = wp.constant(wp.uint64(noise.DUST_WORD))
    RANGE_WORD = wp.constant(wp.uint64(noise.RANGE_WORD))
    RELATIVE_WORD = wp.constant(wp.uint64(noise.RELATIVE_WORD))
    AMBIENT_WORD = wp.constant(wp.uint64(noise.AMBIENT_WORD))

    @wp.func
    def reflectivity_of(m: LidarMaterialTable, id: int, cos_theta: float):
        """physics/reflectivity.py: rho = lambertian * cos(theta) + constant, or the row's table interpolated."""
        if m.tabled[id] != 0:
            position = table_position(incidence_degrees(cos_theta))
            low = wp.min(int(position), 8)
            frac = position - float(low)
            return table_interpolation(m.table[id * 10 + low], m.table[id * 10 + low + 1], frac)
        return lambertian_reflectivity(m.lambertian[id], cos_theta, m.constant[id])

    @wp.kernel
    def lidar_frame(
        scene: SceneArrays,
        materials: LidarMaterialTable,
        s: SurfaceSettings,
        local_origins: wp.array(dtype=wp.vec3),
        local_directions: wp.array(dtype=wp.vec3),
        pixel_column: wp.array(dtype=wp.int32),
        rotations: wp.array(dtype=wp.mat33),
        shifts: wp.array(dtype=wp.vec3),
        range_offset: wp.array(dtype=float),
        ray_bias: wp.array(dtype=float),
        ray_times: wp.array(dtype=float),
        out: FrameOut,
    ):
        i = wp.tid()
        when = float(0.0)  # seconds after the frame's start the beam fires: entities whose twist moves them met then
        if s.sweep != 0:
            when = ray_times[i]
        column = int(0)
        if s.per_column != 0:
            column = pixel_column[i]
        r = rotations[column]
        o = r * local_origins[i] + shifts[column]
        d = r * local_directions[i]
        ray = wp.uint64(i)
        if s.angular_sigma > 0.0:  # noise.py jitter_directions: a Gaussian tilt perpendicular to the ray
            jx, jy, jz = jittered_direction(d[0], d[1], d[2], ray_gaussian(s.key, ray, JITTER_X),
                                            ray_gaussian(s.key, ray, JITTER_Y),
                                            ray_gaussian(s.key, ray, JITTER_Z), s.angular_sigma)
            d = wp.vec3(jx, jy, jz)

        # interaction.py: follow the ray past transparent surfaces and mirrors to the surface that returns it
        total_range = float(wp.inf)
        entity = int(-1)
        material = int(-1)
        normal = wp.vec3(0.0, 0.0, 0.0)
        cos_inc = float(0.0)
        rho = float(0.0)
        first_entity = int(-1)
        seg_o = o
        seg_d = d
        start = s.tmin  # the first segment starts at tmin, later ones at their origin
        travelled = float(0.0)
        factor = float(1.0)
        crossings = int(0)
        bounces = int(0)
        for segment in range(s.max_crossings + s.max_bounces + 1):
            reach = s.tmax - travelled - start
            if reach <= 0.0:
                break
            h = first_hit_at(scene, seg_o + seg_d * start, seg_d, reach, when)
            if h.entity < 0:
                break
            dist = h.t + start
            total = travelled + dist
            if segment == 0:
                first_entity = h.entity
            klass = materials.klass[h.material]
            if klass == GENERAL or klass == RETROREFLECTIVE:
                total_range = total
                entity = h.entity
                material = h.material
                normal = h.normal
                cos_inc = h.cos_incidence
                rho = reflectivity_of(materials, h.material, h.cos_incidence) * factor
                break
            if klass == ABSORBENT:
                break
            skip = skip_distance(total, s.skip_abs, s.skip_rel)
            if klass == TRANSPARENT:
                crossings += 1
                seg_o = seg_o + seg_d * (dist + skip)
                travelled = total + skip
                if crossings > s.max_crossings:
                    break
            else:  # mirror: r = d - 2(d.n)n from a point lifted off the mirror
                bounces += 1
                seg_o = seg_o + seg_d * dist + h.normal * skip
                seg_d = mirror_direction(seg_d, h.normal, wp.dot(seg_d, h.normal))
                travelled = total
                if bounces > s.max_bounces:
                    break
            factor = factor * materials.pass_factor[h.material]
            start = 0.0

        # model.py SurfaceModel.apply: detection limit, dropouts, noise along the ray
        ranged = total_range + range_offset[i]  # Ouster ranges count from the lidar origin
        found = entity >= 0
        keep = found
        if found and s.limit_model != CURVE_NONE:
            keep = detected(ranged, rho, detection_limit32(rho, s.limit_model, s.limit_root, s.limit_a, s.limit_b,
                                                           s.limit_rho1, s.limit_d1, s.limit_slope))
        if s.dropout > 0.0:  # detection_probability.py dropouts
            if uniform(random_bits(s.key, ray, DROPOUT_WORD)) < s.dropout:
                keep = False
        nan = s.missing
        clean = nan
        noisy = nan
        dust = int(0)
        if keep:
            clean = ranged
            noisy = ranged
            if s.dust_probability > 0.0:  # noise.py _add_noise, the same terms in the same order
                dust_bits = random_bits(s.key, ray, DUST_WORD)
                if uniform(dust_bits) < s.dust_probability:  # an early return from a particle
                    noisy = dust_range(noisy, s.dust_min_range, second_uniform(dust_bits))
                    dust = 1
            if s.use_bias != 0:
                noisy = noisy + ray_bias[i]
            if s.sigma > 0.0:
                noisy = noisy + s.sigma * ray_gaussian(s.key, ray, RANGE_WORD)
            if s.relative_sigma > 0.0:
                noisy = noisy + s.relative_sigma * wp.pow(clean, s.relative_exponent) * ray_gaussian(
                    s.key, ray, RELATIVE_WORD)
            if s.resolution > 0.0:
                noisy = quantised(noisy, s.resolution)
            noisy = wp.max(noisy, 0.0)

        # intensity.py: calibrated reflectivity, Ouster signal, flat ambient (every ray)
        reported = float(0.0)
        if keep:
            reported = rho
        calibrated = diffuse_percent(reported)
        if reported > 1.0:
            calibrated = retro_percent(reported, s.ln_retro_full_scale)
        signal = float(0.0)
        if keep:
            rr = wp.max(clean, MIN_SIGNAL_RANGE)
            received = float(1.0)
            if s.overlap_range > 0.0:  # overlap.py: O(r) = 1 - exp(-(r/r0)^2)
                received = overlap_factor(rr, s.overlap_range)
            signal = signal_count(reported, rr, s.signal_scale, received)
        ambient = float(0.0)
        if s.ambient_level > 0.0 or s.ambient_sky > 0.0:
            # passive light: the surface in view, detected or not (model.py)
            mean = flat_ambient_mean(rho, found and rho > 0.0, s.ambient_level, s.ambient_sky)
            ambient = shot_noise_count(mean, ray_gaussian(s.key, ray, AMBIENT_WORD))

        # simulator.py: returns that noise pushed outside [range_min, range_max] read as misses
        inside = keep and noisy >= s.range_min and noisy <= s.range_max
        if not inside:
            noisy = nan
            clean = nan
            reported = 0.0
            calibrated = 0.0
            signal = 0.0
            entity = -1
            material = -1
            normal = wp.vec3(0.0, 0.0, 0.0)
            cos_inc = 0.0
        out.beam[BEAM_RANGE, i] = noisy
        out.beam[BEAM_REFLECTIVITY, i] = reported
        out.beam[BEAM_VELODYNE, i] = calibrated
        out.beam[BEAM_SIGNAL, i] = signal
        out.beam[BEAM_AMBIENT, i] = ambient
        out.truth[TRUTH_CLEAN_RANGE, i] = clean
        out.truth[TRUTH_COS_INCIDENCE, i] = cos_inc
        out.truth[TRUTH_NORMAL, i] = normal[0]
        out.truth[TRUTH_NORMAL + 1, i] = normal[1]
        out.truth[TRUTH_NORMAL + 2, i] = normal[2]
        out.truth_ids[IDS_DUST, i] = dust
        out.truth_ids[IDS_ENTITY, i] = entity
        out.truth_ids[IDS_MATERIAL, i] = material
        out.truth_ids[IDS_FIRST_ENTITY, i] = first_entity
