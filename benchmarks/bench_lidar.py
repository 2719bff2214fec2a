"""Lidar benchmark: full scans on a 1M-triangle world vs the bare Embree cost of the same rays.

Everything on: material reflectivity and all intensity fields, ring, per-point time, noise (per-laser
bias, per-ray Gaussian, dust, quantisation), the range-reflectivity detection limit, and the
driver-layout point array. Each figure is printed with its ratio to raw embreex calls on the same
rays through the same BVH, measured in the same run: `ratio to bare` is best time over best bare time,
`median_round_ratio` the median over rounds of each round's time over that round's bare time (robust
to load from other processes, which shifts both), `vs_bare_in_backend_spans` the same against raw
embreex calls cut into the backend's own spans (`bare_same_spans_seconds`), and `cpu_ratio` the process CPU time (all threads)
over the CPU time of the bare rays traced on one thread: the work our layers add, which other
processes on a shared machine cannot change. The indented lines split the cost by layer:
the tracing interface alone (checked rays and eager normals, as a generic caller gets it; then the
fast path the lidar uses for rays rotated from its validated table: `Rays.trusted`,
`want=FIRST_TRACE_WANTS`, normals on access), then with the lidar material classes; `scan` adds world rays, the surface
model (detection limit, noise, intensities) and the scan arrays. For the velodyne and ouster
layouts the scan arrays live in the driver cloud itself (radarays_ros.io.lidar_clouds.FrameCloud),
so `scan + cloud` only adds the lookup; `<layout> cloud alone` times that cloud of one frame already
simulated (for dual returns the Velodyne layout interleaves both echoes' clouds: its own cost).

The `+effects` sensors add 4 sub-rays over each beam's footprint, dual returns, fog, the detection curve,
dropouts and photon noise (lidar_ros/physics/effects_config.py); their bare reference traces the same
4 sub-rays per beam, the rays the simulator actually traces.

The `+realistic` sensors run the whole `--realistic` profile (texture, edge dropouts, sun ambient with row gains,
SNR range noise, Ouster column-time jitter, ...) with dual returns and fog.

Run: .venv/bin/python -m benchmarks.bench_lidar [--triangles 1000000] [--repeats 5] [--sensors VLP-16+effects ...]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from lidar_ros import LidarSimulator, load_sensor
from lidar_ros.physics import trace_lidar
from lidar_ros.physics.interaction import FIRST_TRACE_WANTS
from radarays_ros.io.lidar_clouds import FrameCloud, pointcloud_array
from radarays_ros.tracing import Rays, make_backend
from radarays_ros.world.transforms import pose_to_matrix

from .common import bare_trace_seconds, make_big_world, peak_rss_mb, report

EVERYTHING_ON = {
    "noise": {"bias_distribution": "gaussian", "bias_sigma": 0.02, "sigma": 0.02, "dust_probability": 0.001,
              "resolution": 0.002},
    "surface": {"model": "blensor", "limits": [[0.10, 50.0], [0.80, 120.0]]},
}
# divergence with 4 sub-rays, dual returns and fog on top (lidar_ros/physics/effects_config.py); its
# bare reference traces the 4 sub-rays of every beam, the rays the simulator actually traces
EFFECTS = {"beam": {"divergence_mrad": 3.0, "sub_rays": 4, "return_mode": "dual"},
           "weather": {"fog_visibility_km": 0.5}, "detection": {"model": "snr", "dropout_probability": 0.001},
           "signal": {"poisson": True, "noise_floor": 2.0}}
# `+realistic`: the whole --realistic profile (lidar_ros/config.py REALISTIC: sub-rays, edge dropouts, SNR detection,
# photon counts and SNR range noise, sun ambient with row gains, texture, Ouster column-time jitter) with dual
# returns and fog on top: every effect a frame can have on the host
REALISTIC_ON = {"beam.return_mode": "dual", "weather.fog_visibility_km": 0.5}
SENSORS = {"VLP-16": ("VLP-16", {}), "OS1-128": ("OS1-128", {"columns": 1024, "rate_hz": 10}),
           "VLP-16+effects": ("VLP-16", EFFECTS), "OS1-128+effects": ("OS1-128", {"columns": 1024, "rate_hz": 10, **EFFECTS}),
           "VLP-16+realistic": ("VLP-16", REALISTIC_ON),
           "OS1-128+realistic": ("OS1-128", {"columns": 1024, "rate_hz": 10, **REALISTIC_ON})}


def bare_same_spans_seconds(backend, o32, d32, repeats: int = 2) -> float:
    """Best time of raw embreex calls on the backend's static BVH, cut into the spans the backend
    itself uses (`embree.chunk_bounds`: a multiple of the thread count) on a pool of as many threads.
    common.bare_trace_seconds cuts n // 8192 spans (3 for a VLP-16 frame, so one thread traces two
    thirds); this is the bare cost of the backend's own split, to compare the per-ray work alone."""
    from concurrent.futures import ThreadPoolExecutor

    from radarays_ros.tracing.embree import chunk_bounds

    layer = backend._static
    bounds = chunk_bounds(len(o32), backend.threads)
    spans = list(zip(bounds[:-1], bounds[1:]))
    best = np.inf
    with ThreadPoolExecutor(backend.threads) as pool:
        for _ in range(repeats):
            tfar = np.full(len(o32), 1e30, np.float32)  # fresh: embreex overwrites it (common.bare_trace_seconds)
            start = time.perf_counter()
            list(pool.map(lambda ab: layer.scene.run(o32[ab[0]:ab[1]], d32[ab[0]:ab[1]], dists=tfar[ab[0]:ab[1]],
                                                     output=1), spans))
            best = min(best, time.perf_counter() - start)
    return best


def consume(scan, layout: str) -> np.ndarray:
    """What a publisher does: read the driver cloud, then give its buffer back (explicit ownership)."""
    points = pointcloud_array(scan, layout)
    scan.release()
    return points


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--triangles", type=int, default=1_000_000)
    p.add_argument("--repeats", type=int, default=15, help="interleaved rounds; the best of each stage is reported")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--sensors", nargs="+", choices=list(SENSORS), default=list(SENSORS))
    p.add_argument("--breakdown", action="store_true",
                   help="also: where a frame's CPU goes on one thread (cProfile), and a piece's time alone and beside another")
    p.add_argument("--one-thread-cpu", action="store_true",
                   help="only: each sensor's frame CPU over the CPU of the bare embreex trace of its rays, one thread, "
                        "interleaved rounds (min over rounds of each; the figure other jobs on the machine move least)")
    args = p.parse_args(argv)
    if args.one_thread_cpu:
        return one_thread_cpu(args)

    rss0 = peak_rss_mb()
    scene = make_big_world(args.triangles)
    backend = make_backend("embree", scene, threads=args.threads)
    pose = pose_to_matrix(0.0, 0.0, 1.8, 0.0, 0.0, 0.3)
    backend.trace(np.zeros((1, 3)), np.array([[1.0, 0.0, 0.0]]))  # build the BVH before timing
    print(f"world: {scene.triangle_count} triangles, {len(scene)} entities; {args.threads} threads; "
          f"peak RSS after world + BVH {peak_rss_mb():.0f} MiB")

    for label_name in args.sensors:
        cfg = _config(label_name)
        sim = LidarSimulator(cfg, scene, backend, seed=0, sink=FrameCloud.of)
        rays = len(sim._dirs)  # the rays traced: every beam's sub-rays
        o = sim._origins @ pose[:3, :3].T.astype(np.float32) + pose[:3, 3].astype(np.float32)
        d = sim._dirs @ pose[:3, :3].T.astype(np.float32)
        o32, d32 = np.ascontiguousarray(o, np.float32), np.ascontiguousarray(d, np.float32)
        stages = {
            "backend.trace": lambda: backend.trace(o, d, cfg.range_min, cfg.range_max),
            "backend.trace_rays (trusted rays, lidar wants)": lambda: backend.trace_rays(
                Rays.trusted(o32, d32), cfg.range_min, cfg.range_max, want=FIRST_TRACE_WANTS),
            "+ material classes (trace_lidar)": lambda: trace_lidar(backend, o, d, sim.materials, cfg.range_min,
                                                                    cfg.range_max),
            "scan": lambda: sim.simulate(pose).release(),
            "scan (buffer kept, never released)": lambda: sim.simulate(pose),
            f"scan + {cfg.layout} cloud": lambda: consume(sim.simulate(pose), cfg.layout),
            f"{cfg.layout} cloud alone (of a kept scan)": lambda: pointcloud_array(kept, cfg.layout),
        }
        kept = sim.simulate(pose)  # one frame held for the cloud-alone stage (never released)
        tfar = np.full(rays, 1e30, np.float32)
        for fn in stages.values():  # warm-up
            fn()
        best = dict.fromkeys(["bare", "bare_spans", *stages], np.inf)
        ratios = {key: [] for key in stages}
        span_ratios = {key: [] for key in stages}
        cpu = {key: [] for key in ["bare", *stages]}
        for _ in range(args.repeats):  # interleaved, so every stage sees the same machine load
            bare = bare_trace_seconds(backend, o, d, repeats=2)  # 2: its pool spawns threads on the first
            best["bare"] = min(best["bare"], bare)
            spans = bare_same_spans_seconds(backend, o32, d32, repeats=2)
            best["bare_spans"] = min(best["bare_spans"], spans)
            start = time.process_time()  # the bare work on one thread: embreex's own cost, no pool
            backend._static.scene.run(o32, d32, dists=tfar.copy(), output=1)
            cpu["bare"].append(time.process_time() - start)
            for key, fn in stages.items():
                start, start_cpu = time.perf_counter(), time.process_time()
                fn()
                seconds = time.perf_counter() - start
                cpu[key].append(time.process_time() - start_cpu)
                best[key] = min(best[key], seconds)
                ratios[key].append(seconds / bare)  # paired with the bare time of the same round
                span_ratios[key].append(seconds / spans)
        label = f"{label_name} {cfg.rows}x{cfg.cols} ({rays} rays)"
        report(f"{label} bare embree", best["bare"], cpu_ms=f"{np.median(cpu['bare']) * 1e3:.2f}",
               bare_in_backend_spans_ms=f"{best['bare_spans'] * 1e3:.2f}")
        for key in stages:
            extra = {"returns": int(sim.simulate(pose).hit.sum())} if key == "scan" else {}
            report(f"{label} {'  ' if key.startswith(('backend', '+')) else ''}{key}", best[key], best["bare"],
                   median_round_ratio=f"{np.median(ratios[key]):.2f}x",
                   vs_bare_in_backend_spans=f"{np.median(span_ratios[key]):.2f}x",
                   cpu_ratio=f"{np.median(cpu[key]) / np.median(cpu['bare']):.2f}x", **extra)

        if args.breakdown:
            print_breakdown(label_name, cfg, scene, pose)

    print(f"peak RSS {peak_rss_mb():.0f} MiB (at process start {rss0:.0f} MiB)")


def _config(label_name: str):
    name, overrides = SENSORS[label_name]
    if label_name.endswith("+realistic"):
        return load_sensor(name, overrides, realistic=True)
    return load_sensor(name, {**overrides, **EVERYTHING_ON})


def one_thread_cpu(args) -> None:
    """Per sensor, on one thread: `rounds` rounds of (the bare embreex trace of the frame's world rays, the frame),
    each timed by process CPU; prints min frame / min bare, the median of the rounds' ratios and the difference
    (the CPU our layers add to a frame)."""
    import os

    scene = make_big_world(args.triangles)
    pose = pose_to_matrix(0.0, 0.0, 1.8, 0.0, 0.0, 0.3)
    backend = make_backend("embree", scene, threads=1)
    for label_name in args.sensors:
        sim = LidarSimulator(_config(label_name), scene, backend, seed=0, sink=FrameCloud.of)
        sim.simulate(pose).release()
        o32, d32 = sim._world_o.copy(), sim._world_d.copy()  # the frame's own world rays
        reps = 2 if len(o32) > 200_000 else 8
        bare, frame = [], []
        for _ in range(args.repeats):
            start = time.process_time()
            for _ in range(reps):
                backend._static.scene.run(o32, d32, dists=np.full(len(o32), 1e30, np.float32), output=1)
            bare.append((time.process_time() - start) / reps)
            start = time.process_time()
            for _ in range(reps):
                sim.simulate(pose).release()
            frame.append((time.process_time() - start) / reps)
        bare, frame = np.array(bare), np.array(frame)
        print(f"{label_name:18s} one thread: bare {bare.min() * 1e3:7.2f} ms CPU, frame {frame.min() * 1e3:7.2f} ms CPU: "
              f"{frame.min() / bare.min():.3f}x (median of rounds {np.median(frame / bare):.3f}x), "
              f"frame - bare {1e3 * (frame.min() - bare.min()):.2f} ms", flush=True)
    print(f"load average {os.getloadavg()[0]:.2f}")


# the parts of a frame's CPU: (file, function) pairs whose own time (cProfile tottime) they sum
_PARTS = {
    "tracing (embreex)": [("tracing/embree.py", "run")],
    "tracing post-processing": [("tracing/embree.py", n) for n in ("_finish_span", "_shift_kernel", "_trace_span")],
    "ray rotation": [("lidar_ros/simulator.py", n) for n in ("_world_rays_kernel", "_world_rays")],
    "echo forming": [("physics/echoes.py", n) for n in ("_echo_kernel", "form_echoes")],
    "detection and noise draws": [("physics/detection_probability.py", n) for n in (
        "_probability_kernel", "detection_probability", "detected", "dropouts", "detected_returns", "_kept_returns")]
    + [("physics/noise.py", n) for n in ("noisy_ranges", "standard_normal", "_add_noise")],
    "particle echoes (fog)": [("physics/weather.py", "backscatter_returns"), ("physics/beam_returns.py", "add_backscatter"),
                              ("physics/beam_returns.py", "_particle_wins")],
    "Poisson draws (signal, near_ir)": [("physics/poisson_counts.py", n) for n in ("poisson_counts", "_count_small",
                                                                                  "_counts_kernel")],
    "Poisson means (signal)": [("physics/photons.py", n) for n in ("signal_means", "_signal_kernel")],
    "ambient means (near_ir)": [("physics/ambient.py", n) for n in ("pixel_means", "_means_kernel")]
    + [("physics/model.py", "ouster_ambient"), ("physics/intensity.py", "ouster_ambient"),
       ("physics/intensity.py", "_flat_ambient_kernel")],
    "texture": [("physics/texture.py", n) for n in ("textured_reflectivity", "_textured_kernel")],
    "edge dropouts": [("physics/edge_dropout.py", n) for n in ("echo_coverage", "_coverage_kernel", "edge_dropped")],
    "writing the frame": [("lidar_ros/simulator.py", n) for n in ("_write_returns", "_points_in_window")]
    + [("io/lidar_clouds.py", "fill")],
}


def print_breakdown(label: str, cfg, scene, pose, frames: int = 10) -> None:
    """One-thread cProfile of `frames` frames split into _PARTS (numpy's own calls are counted under
    "everything else"), then one surface-model piece's wall and thread CPU time on one thread and on two
    (beside the frame's other piece: the difference is waiting and sharing the core's resources)."""
    import cProfile
    import pstats

    backend = make_backend("embree", scene, threads=1)
    sim = LidarSimulator(cfg, scene, backend, seed=0, sink=FrameCloud.of)
    sim.simulate(pose).release()
    profile = cProfile.Profile()
    start = time.process_time()
    profile.enable()
    for _ in range(frames):
        sim.simulate(pose).release()
    profile.disable()
    total = (time.process_time() - start) / frames
    rows = pstats.Stats(profile).stats
    parts = {part: sum(v[2] for (file, _, name), v in rows.items() if any(f in file and name == n for f, n in keys))
             / frames for part, keys in _PARTS.items()}
    trace = parts["tracing (embreex)"]
    print(f"  {label}: CPU of one frame on one thread (cProfile, so a little above the timings above):")
    for part, seconds in [*parts.items(), ("everything else", total - sum(parts.values())), ("frame", total)]:
        print(f"    {part:<28s} {seconds * 1e3:7.2f} ms  {seconds / trace:5.2f}x the tracing")
    backend.close()
    for threads in (1, 2):
        backend = make_backend("embree", scene, threads=threads)
        sim = LidarSimulator(cfg, scene, backend, seed=0, sink=FrameCloud.of)
        wall, cpu = _piece_times(sim, pose, frames)
        print(f"    a surface-model piece with {threads} thread(s): {wall * 1e3:.2f} ms wall, {cpu * 1e3:.2f} ms thread CPU (medians)")
        backend.close()


def _piece_times(sim, pose, frames: int) -> tuple[float, float]:
    """Medians of each surface-model piece's wall and thread CPU time over `frames` frames."""
    log = []
    piece = sim._surface_piece

    def timed(*args):
        wall, cpu = time.perf_counter(), time.thread_time()
        out = piece(*args)
        log.append((time.perf_counter() - wall, time.thread_time() - cpu))
        return out

    sim._surface_piece = timed
    sim.simulate(pose).release()
    log.clear()
    for _ in range(frames):
        sim.simulate(pose).release()
    wall, cpu = np.median(np.array(log), axis=0)
    return float(wall), float(cpu)


if __name__ == "__main__":
    main()
