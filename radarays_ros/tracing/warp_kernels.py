"""The first-hit kernel of the Warp backend (one kernel: Warp compiles a module's kernels together,
and the first CPU compile of a module takes tens of seconds, so this module holds only the trace).

Kept to the API that Warp 1.0.x already has (`mesh_query_ray` returning a struct, `wp.transpose`), so
that a small old wheel runs it on a machine without network.

One thread per ray: the static world's mesh BVH first (a masked static entity has its triangles
collapsed to a point there, and a degenerate triangle is never hit), then every instance whose world
box the remaining segment [0, best] meets, by a loop over the boxes. Rays are moved into an instance's
own frame (x_local = R^T (x - p)); a rotation keeps lengths, so t is the same in both frames.

The instances' world boxes are found through a `wp.Bvh` over them (`bvh_query_ray`, the top level), or,
on Warp releases before 1.3.2, by a loop over all boxes: there `bvh_query_ray` tests boxes with the
ray's direction where its reciprocal is meant (NVIDIA/warp issue 288, fixed in 1.3.2), so it misses
instances (warp.py decides; test_warp_backend.py checks hundreds of movers against Embree either way).
The loop is one slab test per instance, fine for tens of movers; the BVH keeps hundreds cheap.

Rays with times (`first_hits`' `timed`): an instance whose twist moves it (`inst_sweeps`) is met where its
screw motion takes it by the ray's time (`pose_after`, the device form of world/twist_pose.py's formula, in
float32; test_warp_backend.py holds it to the host's), inside the world box it stays in over the trace's
times (warp.py makes those boxes with twist_pose.swept_boxes).
"""

try:
    import warp as wp
except ImportError:  # warp.py reports the missing package; this module stays importable without it
    wp = None

if wp is not None:
    @wp.func
    def segment_meets_box(o: wp.vec3, inv: wp.vec3, far: float, lower: wp.vec3, upper: wp.vec3):
        """Slab test of the segment o + t d, t in [0, far], against a box (inv = 1 / d componentwise).

        A NaN from 0 * inf (a ray in a slab's plane) is dropped by the comparisons below (NaN < x is false),
        so such an axis imposes no constraint: a spare candidate, never a lost hit."""
        near = float(0.0)
        stop = far
        for k in range(3):
            a = (lower[k] - o[k]) * inv[k]
            b = (upper[k] - o[k]) * inv[k]
            lo = wp.min(a, b)
            hi = wp.max(a, b)
            if lo > near:
                near = lo
            if hi < stop:
                stop = hi
        return near <= stop


    @wp.struct
    class SceneArrays:
        """The backend's device state for one trace: the static mesh and the instances (warp.py)."""

        static_mesh: wp.uint64
        has_static: int
        static_entity: wp.array(dtype=wp.int32)
        static_face: wp.array(dtype=wp.int32)
        static_material: wp.array(dtype=wp.int32)
        inst_mesh: wp.array(dtype=wp.uint64)
        inst_rot: wp.array(dtype=wp.mat33)
        inst_pos: wp.array(dtype=wp.vec3)
        inst_lower: wp.array(dtype=wp.vec3)
        inst_upper: wp.array(dtype=wp.vec3)
        inst_entity: wp.array(dtype=wp.int32)
        inst_offset: wp.array(dtype=wp.int32)
        n_inst: int
        inst_bvh: wp.uint64  # top level over inst_lower/inst_upper (used when use_bvh != 0)
        use_bvh: int
        dyn_face: wp.array(dtype=wp.int32)
        dyn_material: wp.array(dtype=wp.int32)
        inst_sweeps: wp.array(dtype=wp.int32)  # 1: its twist moves it (rays with times meet it at their time)
        inst_velocity: wp.array(dtype=wp.vec3)  # of its origin, world frame, m/s
        inst_angular: wp.array(dtype=wp.vec3)  # world frame, rad/s


    @wp.struct
    class Posed:
        """A rigid pose: x_world = rot x_local + pos."""

        rot: wp.mat33
        pos: wp.vec3


    @wp.func
    def pose_after(rot: wp.mat33, pos: wp.vec3, v: wp.vec3, w: wp.vec3, t: float):
        """The pose t seconds after (rot, pos) of a body with the constant twist (v, w): world/twist_pose.py's
        screw motion, R(t) = exp([w] t) R0 and the origin on its helix, term by term as there (Rodrigues'
        exp([u] a) = I + sin(a) [u] + (1 - cos(a)) [u]^2, no division by |w| where it is 0)."""
        p = Posed()
        speed = wp.length(w)
        if speed == 0.0:
            p.rot = rot
            p.pos = pos + v * t
            return p
        u = w / speed
        h = wp.dot(u, v)
        across = v - u * h  # v_perp
        a = speed * t
        s = wp.sin(a)
        half = wp.sin(0.5 * a)
        p.pos = pos + across * (s / speed) + wp.cross(u, across) * (2.0 * half * half / speed) + u * (h * t)
        c = 1.0 - wp.cos(a)
        turn = wp.mat33(1.0 + c * (u[0] * u[0] - 1.0), -s * u[2] + c * u[0] * u[1], s * u[1] + c * u[0] * u[2],
                        s * u[2] + c * u[1] * u[0], 1.0 + c * (u[1] * u[1] - 1.0), -s * u[0] + c * u[1] * u[2],
                        -s * u[1] + c * u[2] * u[0], s * u[0] + c * u[2] * u[1], 1.0 + c * (u[2] * u[2] - 1.0))
        p.rot = turn * rot
        return p


    @wp.struct
    class Hit:
        """A first hit: t along the unit direction (inf = miss), unit normal facing the ray, cos of
        incidence, ids (-1 = miss)."""

        t: float
        normal: wp.vec3
        cos_incidence: float
        entity: int
        face: int
        material: int


    @wp.struct
    class Candidate:
        """An instance's hit nearer than the best so far (layer -1: none)."""

        t: float
        layer: int
        face: int
        normal: wp.vec3

    @wp.func
    def instance_hit(scene: SceneArrays, k: int, o: wp.vec3, d: wp.vec3, inv: wp.vec3, best: float, when: float):
        """Instance k's hit of the ray o + t d with t < best, in world terms (the ray moved into its frame; into
        its frame at `when` seconds after its pose where its twist moves it and the ray has a time)."""
        c = Candidate()
        c.t = best
        c.layer = -1
        c.face = -1
        c.normal = wp.vec3(0.0, 0.0, 0.0)
        if segment_meets_box(o, inv, best, scene.inst_lower[k], scene.inst_upper[k]):
            r = scene.inst_rot[k]
            at = scene.inst_pos[k]
            if when != 0.0:
                if scene.inst_sweeps[k] != 0:
                    moved = pose_after(r, at, scene.inst_velocity[k], scene.inst_angular[k], when)
                    r = moved.rot
                    at = moved.pos
            rt = wp.transpose(r)
            q = wp.mesh_query_ray(scene.inst_mesh[k], rt * (o - at), rt * d, best)
            if q.result and q.t < best:
                c.t = q.t
                c.layer = k + 1
                c.face = q.face
                c.normal = r * q.normal
        return c

    @wp.func
    def first_hit(scene: SceneArrays, o: wp.vec3, d: wp.vec3, far: float):
        """The closest hit with 0 <= t < far of the ray o + t d (d unit), in any kernel."""
        return first_hit_at(scene, o, d, far, 0.0)

    @wp.func
    def first_hit_at(scene: SceneArrays, o: wp.vec3, d: wp.vec3, far: float, when: float):
        """first_hit of a ray fired `when` seconds after the scene's poses (entities whose twist moves them are
        met where they are then)."""
        best = far
        layer = int(-1)
        prim = int(-1)
        n = wp.vec3(0.0, 0.0, 0.0)
        if scene.has_static != 0:
            q = wp.mesh_query_ray(scene.static_mesh, o, d, far)
            if q.result:
                best = q.t
                layer = 0
                prim = q.face
                n = q.normal
        if scene.n_inst > 0:
            inv = wp.vec3(1.0 / d[0], 1.0 / d[1], 1.0 / d[2])
            if scene.use_bvh != 0:
                query = wp.bvh_query_ray(scene.inst_bvh, o, d)
                k = int(0)
                while wp.bvh_query_next(query, k):
                    c = instance_hit(scene, k, o, d, inv, best, when)
                    if c.layer >= 0:
                        best = c.t
                        layer = c.layer
                        prim = c.face
                        n = c.normal
            else:
                for k in range(scene.n_inst):
                    c = instance_hit(scene, k, o, d, inv, best, when)
                    if c.layer >= 0:
                        best = c.t
                        layer = c.layer
                        prim = c.face
                        n = c.normal
        h = Hit()
        h.t = wp.inf
        h.normal = wp.vec3(0.0, 0.0, 0.0)
        h.cos_incidence = 0.0
        h.entity = -1
        h.face = -1
        h.material = -1
        if layer >= 0:
            unit = wp.normalize(n)
            facing = wp.dot(unit, d)
            if facing > 0.0:  # turn the normal to face the ray
                unit = -unit
                facing = -facing
            h.t = best
            h.normal = unit
            h.cos_incidence = -facing
            if layer == 0:
                h.entity = scene.static_entity[prim]
                h.face = scene.static_face[prim]
                h.material = scene.static_material[prim]
            else:
                k = layer - 1
                h.entity = scene.inst_entity[k]
                h.face = scene.dyn_face[scene.inst_offset[k] + prim]
                h.material = scene.dyn_material[scene.inst_offset[k] + prim]
        return h


    @wp.kernel
    def first_hits(
        scene: SceneArrays,
        origins: wp.array(dtype=wp.vec3),
        directions: wp.array(dtype=wp.vec3),
        tmin: float,
        far: float,
        out_distance: wp.array(dtype=float),
        out_normal: wp.array(dtype=wp.vec3),
        out_cos: wp.array(dtype=float),
        out_entity: wp.array(dtype=wp.int32),
        out_face: wp.array(dtype=wp.int32),
        out_material: wp.array(dtype=wp.int32),
        times: wp.array(dtype=float),
        timed: int,
    ):
        i = wp.tid()
        d = directions[i]
        when = float(0.0)
        if timed != 0:
            when = times[i]
        h = first_hit_at(scene, origins[i] + d * tmin, d, far, when)  # rays start at tmin, as in the Embree backend
        out_distance[i] = h.t + tmin
        out_normal[i] = h.normal
        out_cos[i] = h.cos_incidence
        out_entity[i] = h.entity
        out_face[i] = h.face
        out_material[i] = h.material
