"""GPU benchmark: the warp backend on CUDA (and on Warp's CPU device) against Embree on this machine's CPU.

Figures, each for every backend in the same run: Mrays/s for coherent (lidar-like) and incoherent
(random) rays, through `trace()` (numpy in, numpy out) and, for Warp, kernel only (rays already on the
device, `trace_on_device`: the bare figure the interface is compared with); VLP-16 and OS1-128 x 1024
frame times, with the lidar model on the host over the backend and, for Warp, as whole device frames
(lidar_ros/warp_frame.py); radar 400 x 200 x 4 and the paper's sweep Ns = 200..1000 at 4 passes, with
the radar model on the host (every pass one `trace()`) and, for Warp, as whole device frames
(radar/warp_frame.py); moving 50 entities (pose update + the sync of the next trace: no static rebuild).
Frame times are also given as a ratio to the bare trace time of the same rays.

Runs from a checkout without installing: needs numpy, pyyaml and warp-lang; embreex for the Embree
column and scipy for the radar rows are optional (a row says why it is missing). No network, no
trimesh: the 1 M-triangle city is generated here with numpy.

    python benchmarks/bench_gpu.py                  # cuda if present, Embree; the CPU device with --cpu
    python benchmarks/bench_gpu.py --quick --cpu    # small sizes: a check on a machine without a GPU

Targets (issue #16, H100): OS1-128 x 1024 <= 1 ms, radar 400 x 200 x 4 <= 5 ms, >= 10x Embree on the
same machine. Host-path frame times include host work and transfers; the device-frame rows are the
figures the targets are about (a device lidar frame still copies its outputs to the host and fills the
driver cloud there).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # a checkout is enough: no install needed

from benchmarks.rays import best_of, incoherent_rays, lidar_like_rays  # noqa: E402
from radarays_ros.errors import RadaraysError  # noqa: E402
from radarays_ros.resources import shipped  # noqa: E402
from radarays_ros.tracing import make_backend  # noqa: E402
from radarays_ros.tracing.backend import ALL, Rays  # noqa: E402
from radarays_ros.world.mesh import TriMesh  # noqa: E402
from radarays_ros.world.scene import Scene  # noqa: E402
from radarays_ros.world.transforms import pose_to_matrix  # noqa: E402

PAPER_SWEEP = (200, 400, 600, 800, 1000)  # RadaRays Table III: Ns at 4 passes


# -- world ------------------------------------------------------------------------------------------
def terrain(n_triangles: int, size: float, rng) -> TriMesh:
    cells = max(2, int(np.sqrt(n_triangles / 2)))
    xs = np.linspace(-size / 2, size / 2, cells + 1)
    gx, gy = np.meshgrid(xs, xs, indexing="ij")
    phase = rng.uniform(0, 2 * np.pi, 3)
    gz = 0.4 * np.sin(gx / 7 + phase[0]) * np.cos(gy / 9 + phase[1]) + 0.1 * np.sin(gx / 1.3 + gy / 1.7 + phase[2])
    idx = np.arange((cells + 1) ** 2).reshape(cells + 1, cells + 1)
    a, b, c, d = idx[:-1, :-1].ravel(), idx[1:, :-1].ravel(), idx[1:, 1:].ravel(), idx[:-1, 1:].ravel()
    faces = np.concatenate([np.stack([a, b, c], 1), np.stack([a, c, d], 1)])
    return TriMesh(np.stack([gx, gy, gz], -1).reshape(-1, 3), faces)


def grid_box(k: int) -> TriMesh:
    """A unit cube centred at the origin, each side a k x k grid of quads (12 k^2 triangles)."""
    u = np.linspace(-0.5, 0.5, k + 1)
    gu, gv = np.meshgrid(u, u, indexing="ij")
    idx = np.arange((k + 1) ** 2).reshape(k + 1, k + 1)
    a, b, c, d = idx[:-1, :-1].ravel(), idx[1:, :-1].ravel(), idx[1:, 1:].ravel(), idx[:-1, 1:].ravel()
    quad = np.concatenate([np.stack([a, b, c], 1), np.stack([a, c, d], 1)])
    verts, faces = [], []
    for axis in range(3):
        for side in (-0.5, 0.5):
            p = np.zeros((len(gu.ravel()), 3))
            p[:, axis] = side
            p[:, (axis + 1) % 3], p[:, (axis + 2) % 3] = gu.ravel(), gv.ravel()
            faces.append(quad + sum(len(v) for v in verts) if side > 0 else quad[:, ::-1] + sum(len(v) for v in verts))
            verts.append(p)
    return TriMesh(np.concatenate(verts), np.concatenate(faces))


def city(n_triangles: int, movers: int, seed: int = 0, size: float = 200.0) -> Scene:
    """Rolling terrain (85 % of the triangles) with box buildings, plus `movers` small moving boxes."""
    rng = np.random.default_rng(seed)
    scene = Scene(source=f"generated city ({n_triangles} triangles)")
    scene.add_entity("terrain", terrain(int(n_triangles * 0.85), size, rng), material="asphalt")
    building = grid_box(8)  # 768 triangles
    for i in range(int(n_triangles * 0.15 / building.n_faces)):
        x, y = rng.uniform(-size / 2 + 10, size / 2 - 10, 2)
        if abs(x) < 8 and abs(y) < 8:  # keep the sensor's spot free
            x += 20
        s = np.array([rng.uniform(4, 15), rng.uniform(4, 15), rng.uniform(5, 30)])
        mesh = TriMesh(building.vertices * s + [0, 0, s[2] / 2], building.faces)
        scene.add_entity(f"building_{i}", mesh, pose_to_matrix(x, y, 0, 0, 0, rng.uniform(0, np.pi)), material="concrete")
    box = grid_box(1)
    for i in range(movers):
        x, y = rng.uniform(-20, 20, 2)
        scene.add_entity(f"mover_{i}", TriMesh(box.vertices * 0.5, box.faces), pose_to_matrix(x, y, 1), static=False,
                         material="metal")
    return scene


def kernel_only(backend, o, d, repeats: int) -> float:
    """Warp: the trace kernel on rays already on the device, synchronised (the bare figure)."""
    wp = backend.wp
    ro = wp.array(o, dtype=wp.vec3, device=backend.device)
    rd = wp.array(d, dtype=wp.vec3, device=backend.device)

    def run():
        backend.trace_on_device(ro, rd)
        wp.synchronize_device(backend.device)
    return best_of(run, repeats)


class Recorder:
    """Wraps a backend and keeps the rays of every trace() (the bare workload of a sensor frame)."""

    def __init__(self, backend):
        self.backend, self.rays = backend, []

    def trace(self, origins, directions, tmin=0.0, tmax=np.inf, *, want=ALL):
        return self.trace_rays(Rays(origins, directions), tmin, tmax, want=want)

    def trace_rays(self, rays, tmin=0.0, tmax=np.inf, *, want=ALL):
        self.rays.append((rays, tmin, tmax, want))
        return self.backend.trace_rays(rays, tmin, tmax, want=want)

    def __getattr__(self, name):
        return getattr(self.backend, name)


def bare_seconds(backend, rays, repeats: int) -> float:
    def run():
        for r, tmin, tmax, want in rays:
            backend.trace_rays(r, tmin, tmax, want=want)
    return best_of(run, repeats)


# -- figures ----------------------------------------------------------------------------------------
def rays_figures(backend, rays: dict, repeats: int, rows: dict, label: str) -> None:
    for kind, (o, d) in rays.items():
        t = best_of(lambda: backend.trace(o, d), repeats)
        rows.setdefault(f"Mrays/s {kind}, trace()", {})[label] = len(o) / t / 1e6
        rows.setdefault(f"Mrays/s {kind}, kernel only", {})
        if backend.name == "warp":
            k = kernel_only(backend, o, d, repeats)
            rows.setdefault(f"Mrays/s {kind}, kernel only", {})[label] = len(o) / k / 1e6


def lidar_figures(backend, scene, repeats: int, rows: dict, label: str) -> None:
    from lidar_ros import LidarSimulator, load_sensor

    pose = pose_to_matrix(0, 0, 1.8)
    for sensor in ("VLP-16", "OS1-128"):
        rec = Recorder(backend)
        sim = LidarSimulator(load_sensor(sensor), scene, rec, seed=0)
        sim.simulate(pose)
        rays, rec.rays = rec.rays, []
        frame = best_of(lambda: sim.simulate(pose), repeats)
        bare = bare_seconds(backend, rays, repeats)
        rows.setdefault(f"ms {sensor} frame", {})[label] = frame * 1e3
        rows.setdefault(f"   ratio to its bare trace() ({sensor})", {})[label] = frame / bare
        rows.setdefault(f"ms {sensor} device frame", {})
        if backend.name == "warp":  # the surface model in the kernel too (lidar_ros/warp_frame.py)
            from lidar_ros.warp_frame import WarpLidarSimulator, device_refusals

            if device_refusals(load_sensor(sensor)):
                rows[f"ms {sensor} device frame"][label] = "n/a (host-only effects)"
            else:
                on_device = WarpLidarSimulator(load_sensor(sensor), scene, backend, seed=0)
                rows[f"ms {sensor} device frame"][label] = best_of(lambda: on_device.simulate(pose), repeats) * 1e3
                kernel_end, copies, cloud = device_frame_split(on_device, backend, pose, repeats)
                rows.setdefault(f"   of which until its kernel's end ({sensor})", {})[label] = kernel_end * 1e3
                rows.setdefault(f"   of which the copies to the host ({sensor})", {})[label] = copies * 1e3
                rows.setdefault(f"   of which points + fields on the host ({sensor})", {})[label] = cloud * 1e3


def device_frame_split(sim, backend, pose, repeats: int) -> tuple[float, float, float]:
    """The best over `repeats` device lidar frames of each of: the time from the frame's start to the
    end of its kernel (a device synchronize before the host copies), the copies of its outputs to the
    host (WarpLidarSimulator._fetch_returns: one copy of the beam rows), and the points and fields
    written on the host (_write_returns; also the driver cloud where the simulator has a sink, none
    here). The rest of a frame (making its scan) is in none of them."""
    wp, marks = backend.wp, {}
    fetch, write = sim._fetch_returns, sim._write_returns

    def timed_fetch(*args, **kw):
        wp.synchronize_device(backend.device)
        marks["kernel"] = time.perf_counter()
        returns = fetch(*args, **kw)
        marks["fetched"] = time.perf_counter()
        return returns

    def timed_write(*args, **kw):
        part = write(*args, **kw)
        marks["written"] = time.perf_counter()
        return part

    sim._fetch_returns, sim._write_returns = timed_fetch, timed_write
    try:
        times = []
        for _ in range(repeats):
            wp.synchronize_device(backend.device)
            start = time.perf_counter()
            sim.simulate(pose)
            kernel, fetched, written = marks["kernel"], marks["fetched"], marks["written"]
            times.append((kernel - start, fetched - kernel, written - fetched))
        return tuple(min(column) for column in zip(*times))
    finally:
        del sim._fetch_returns, sim._write_returns


def radar_figures(backend, scene, repeats: int, sweep, rows: dict, label: str) -> None:
    try:
        from radarays_ros.radar import RadarConfig, RadarSimulator
    except ImportError as exc:  # scipy (erfinv of the beam sampling) missing on a bare GPU machine
        rows.setdefault("ms radar 400x200x4", {})[label] = f"n/a ({exc.name} missing)"
        return
    base = RadarConfig.from_yaml(shipped("example", "radarays_compat")).with_overrides(
        {"azimuth.count": 400, "tracing.passes": 4})
    pose = pose_to_matrix(0, 0, 2.0)
    for ns in (200, *[n for n in sweep if n != 200]):
        rec = Recorder(backend)
        sim = RadarSimulator(base.with_overrides({"beam.samples": ns}), scene, backend=rec)
        sim.ray_log = None
        sim.simulate(pose)
        rays, rec.rays = rec.rays, []
        frame = best_of(lambda: sim.simulate(pose), repeats)
        name = "ms radar 400x200x4" if ns == 200 else f"ms radar sweep Ns={ns} (4 passes)"
        rows.setdefault(name, {})[label] = frame * 1e3
        if ns == 200:
            rows.setdefault("   ratio to its bare trace() (radar 400x200x4)", {})[label] = frame / bare_seconds(backend, rays, repeats)
        device_name = name.replace("ms radar", "ms radar device frame")
        rows.setdefault(device_name, {})
        if backend.name == "warp":  # the whole frame in kernels (radar/warp_frame.py)
            from radarays_ros.radar.warp_frame import WarpRadarSimulator

            on_device = WarpRadarSimulator(base.with_overrides({"beam.samples": ns}), scene, backend)
            rows[device_name][label] = best_of(lambda: on_device.simulate(pose), repeats) * 1e3


def pose_update_figure(backend, scene, repeats: int, rows: dict, label: str) -> None:
    """Moving 50 entities: set_poses_array plus the sync a trace does, minus a trace alone."""
    movers = [e.id for e in scene.entities if e.name.startswith("mover_")]
    one_o, one_d = np.zeros((1, 3), np.float32), np.array([[1, 0, 0]], np.float32)
    rng = np.random.default_rng(1)
    poses = [np.stack([pose_to_matrix(*rng.uniform(-20, 20, 2), 1, 0, 0, rng.uniform(-3, 3)) for _ in movers])
             for _ in range(repeats + 1)]
    alone = best_of(lambda: backend.trace(one_o, one_d), repeats)
    step = iter(poses * 2)

    def move_and_trace():
        scene.set_poses_array(movers, next(step))
        backend.trace(one_o, one_d)
    moved = best_of(move_and_trace, repeats)
    rows.setdefault(f"ms moving {len(movers)} entities (pose update + sync)", {})[label] = max(moved - alone, 0.0) * 1e3


def movers_sweep(args, chosen) -> None:
    """Trace time of the coherent batch against the number of moving entities: the cost of the warp
    backend's top level (a wp.Bvh over the movers' boxes; the loop over them on Warp < 1.3.2, also
    measured here as 'loop')."""
    o, d = lidar_like_rays(args.rays)
    print("\ncoherent trace() vs moving entities (ms):")
    for movers in (0, 10, 50, 200, 500):
        scene = city(args.triangles, movers=movers)
        cells = []
        for label, factory in chosen:
            try:
                backend = factory(scene)
            except RadaraysError:
                continue
            cells.append(f"{label} {best_of(lambda: backend.trace(o, d), args.repeats) * 1e3:8.2f}")
            backend.close()
        print(f"  {movers:4d} movers: " + "   ".join(cells))


# -- main -------------------------------------------------------------------------------------------
def backends_to_run(args):
    """(label, factory) of every backend of this run; a missing one is reported, not fatal."""
    from radarays_ros.tracing.warp import cuda_devices

    chosen = []
    if not args.no_embree:
        chosen.append((f"embree ({os.cpu_count()} CPU threads)", lambda s: make_backend("embree", s)))
    if cuda_devices() > 0:
        chosen.append(("warp cuda", lambda s: make_backend("warp", s, device="cuda")))
    else:
        print("warp cuda: not measured here (no CUDA device visible to Warp)")
    if args.cpu:
        chosen.append(("warp cpu (1 thread)", lambda s: make_backend("warp", s, device="cpu")))
    return chosen


def with_loop_top_level(chosen):
    """The chosen backends, plus each warp one with the top-level loop of old Warp releases."""
    out = list(chosen)
    for label, factory in chosen:
        if label.startswith("warp"):
            device = "cuda" if "cuda" in label else "cpu"
            out.append((f"{label.split(' (')[0]} loop", lambda s, d=device: make_backend("warp", s, device=d,
                                                                                      top_level="loop")))
    return out


def print_table(rows: dict, labels: list[str]) -> None:
    width = max(len(r) for r in rows) + 2
    print("\n" + "figure".ljust(width) + "".join(f"{label:>26s}" for label in labels))
    for name, values in rows.items():
        cells = []
        for label in labels:
            v = values.get(label)
            cells.append(f"{'-' if v is None else (v if isinstance(v, str) else f'{v:.3f}'):>26}")
        print(name.ljust(width) + "".join(cells))
    embree = next((label for label in labels if label.startswith("embree")), None)
    if embree and "warp cuda" in labels:
        print("\nwarp cuda vs embree on this machine (target >= 10x; frames: OS1-128 <= 1 ms, radar <= 5 ms):")
        for name, values in rows.items():
            a, b = values.get(embree), values.get("warp cuda")
            if isinstance(a, float) and isinstance(b, float) and a > 0 and b > 0 and not name.startswith("   "):
                speedup = b / a if name.startswith("Mrays") else a / b
                print(f"  {name:<{width}s} {speedup:8.1f}x")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--triangles", type=int, default=1_000_000)
    parser.add_argument("--rays", type=int, default=262_144, help="rays per throughput batch")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--cpu", action="store_true", help="also measure Warp's CPU device (slow: one thread)")
    parser.add_argument("--no-embree", action="store_true", help="skip the Embree column")
    parser.add_argument("--quick", action="store_true", help="small world and batches, 2 repeats, short sweep")
    parser.add_argument("--movers-sweep", action="store_true", help="also: trace time with 0/10/50/200 moving entities")
    args = parser.parse_args(argv)
    if args.quick:
        args.triangles, args.rays, args.repeats = min(args.triangles, 100_000), min(args.rays, 32_768), 2
    sweep = (200, 600, 1000) if args.quick else PAPER_SWEEP

    start = time.perf_counter()
    scene = city(args.triangles, movers=50)
    print(f"world: {scene.triangle_count} triangles, {len(scene)} entities (50 moving), generated in "
          f"{time.perf_counter() - start:.1f} s")
    try:
        import warp

        print(f"warp-lang {warp.config.version}")
    except ImportError:
        print("warp-lang: not installed (pip install warp-lang, or a wheel brought along)")
    rng = np.random.default_rng(0)
    rays = {"coherent": lidar_like_rays(args.rays), "incoherent": incoherent_rays(args.rays, rng)}
    rows: dict = {}
    labels = []
    for label, factory in backends_to_run(args):
        try:
            start = time.perf_counter()
            backend = factory(scene)
            backend.trace(np.zeros((1, 3)), np.array([[1.0, 0, 0]]))  # builds and compiles before timing
        except RadaraysError as exc:
            print(f"{label}: not measured ({exc})")
            continue
        labels.append(label)
        rows.setdefault("s build + first trace (compile or kernel cache)", {})[label] = time.perf_counter() - start
        print(f"measuring {label} ...", flush=True)
        rays_figures(backend, rays, args.repeats, rows, label)
        pose_update_figure(backend, scene, args.repeats, rows, label)
        lidar_figures(backend, scene, args.repeats, rows, label)
        radar_figures(backend, scene, max(1, args.repeats // 2), sweep, rows, label)
        backend.close()
    print_table(rows, labels)
    if args.movers_sweep:
        movers_sweep(args, with_loop_top_level(backends_to_run(args)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
