"""Radar benchmark: 400 azimuths x 50 samples x 4 passes on the 1M-triangle world (2 cores).

Prints images/s, the ratio of the frame time to the bare embreex time of the same rays (every pass's
rays are recorded and re-traced raw through the same BVH, each ray's first hit with no far limit), for the
physical presets also `cpu_ratio_same_queries`: against the bare cost of the same questions (the occlusion
rays, which the frame asks with `Backend.blocked`, as Embree's occlusion query within their reach), the ratio to the bare time of the unpruned
workload (every wave traced, as RadaRays does; the simulator skips waves that cannot reach the image),
the paper's sweep Ns = 200..1000 at 4 passes (Table III) and the peak memory (the process's peak RSS, in MiB and MB). Run: PYTHONPATH=$PWD .venv/bin/python benchmarks/bench_radar.py [--quick]

`--breakdown` adds, for each physical preset, where one frame's CPU goes on one thread (cProfile, the least
CPU of --repeats frames, all parts from that frame and one clock: process time): the tracing itself (embreex
calls) against the rest, with the FFTs and the random draws named, and the ratio a frame could reach if all
of that rest but the FFTs and draws cost nothing.
"""
from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script or with -m
from benchmarks.common import bare_occluded_seconds, bare_trace_seconds, make_big_world, peak_rss_mb, report  # noqa: E402

from radarays_ros.radar import RadarConfig, RadarSimulator  # noqa: E402
from radarays_ros.tracing import make_backend  # noqa: E402
from radarays_ros.world import primitives  # noqa: E402
from radarays_ros.world.transforms import pose_to_matrix  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PHYSICAL_PRESETS = ("navtech_ras6", "navtech_cts350x", "navtech_cir204_realistic")


def peak_memory() -> str:
    """The process's peak resident set so far (getrusage ru_maxrss: KiB on Linux, common.peak_rss_mb), in MiB
    (2^20 bytes) and in MB (10^6 bytes: the unit of a "<= 1 GB" target)."""
    mib = peak_rss_mb()
    return f"{mib:.0f} MiB = {mib * 2**20 / 1e6:.0f} MB (peak RSS, ru_maxrss)"


def recorded_rays(sim, pose):
    """The rays of every pass of one frame (origins, directions), as traced; an occlusion pass with its reach."""
    sim.ray_log = []
    sim.simulate(pose)
    rays, sim.ray_log = sim.ray_log, None
    return rays


def bare_seconds(backend, rays, same_queries: bool = False, threads: int | None = None) -> float:
    """The bare Embree time of a frame's recorded rays: each ray's first hit with no far limit (the reference of
    every figure so far), or with same_queries the question each pass asks (an occlusion pass (origins,
    directions, reach): Embree's occlusion query within the reach, as Backend.blocked asks it)."""
    return sum(bare_occluded_seconds(backend, *entry, repeats=1, threads=threads) if same_queries and len(entry) == 3
               else bare_trace_seconds(backend, entry[0], entry[1], repeats=1, threads=threads) for entry in rays)


def measure(sim, pose, repeats, unpruned: bool = True):
    """(best frame s, best bare s, median of paired frame/bare ratios, rays per pass, best bare s of
    the unpruned workload, its rays per pass, median of paired frame/bare CPU-time ratios, the same against the
    bare cost of the same queries (bare_seconds' same_queries)).
    unpruned=False: no unpruned workload (None, []): the physical presets report none, and its second
    simulator's frame would only raise the peak memory.

    Frame and bare timings alternate so that both see the same machine load (other processes share
    the cores); the median of the paired ratios is the robust figure. The CPU-time ratio (this process's
    CPU seconds, all threads) says what the frame costs beyond tracing whatever the load: on a busy machine
    wall times follow the share of the cores the process gets. The simulator does not trace
    waves that can no longer reach the image (past its last range bin); the unpruned workload is what
    it traces with returns.keep on (every wave, as RadaRays does): the fair base for "x rays per frame".
    """
    sim.simulate(pose)  # warm-up (cone, materials, dynamic layer)
    rays = recorded_rays(sim, pose)
    all_rays = []
    if unpruned:
        everything = RadarSimulator(sim.config.with_overrides({"returns.keep": True}), sim.scene, backend=sim.backend)
        all_rays = recorded_rays(everything, pose)
    frames, bares, bares_all, cpu_frames, cpu_bares, cpu_same = [], [], [], [], [], []
    for _ in range(repeats):
        cpu, start = time.process_time(), time.perf_counter()
        sim.simulate(pose)
        frames.append(time.perf_counter() - start)
        cpu_frames.append(time.process_time() - cpu)
        cpu = time.process_time()
        bares.append(bare_seconds(sim.backend, rays))
        cpu_bares.append(time.process_time() - cpu)
        cpu = time.process_time()
        bare_seconds(sim.backend, rays, same_queries=True)
        cpu_same.append(time.process_time() - cpu)
    for _ in range(min(repeats, 2) if unpruned else 0):
        bares_all.append(bare_seconds(sim.backend, all_rays))
    ratios = np.array(frames) / np.array(bares)
    cpu_ratio = float(np.median(np.array(cpu_frames) / np.array(cpu_bares)))
    same_ratio = float(np.median(np.array(cpu_frames) / np.array(cpu_same)))
    return (min(frames), min(bares), float(np.median(ratios)), [len(e[0]) for e in rays], min(bares_all, default=None),
            [len(e[0]) for e in all_rays], cpu_ratio, same_ratio)


# cProfile rows (file fragment, function name) of each named part of a physical frame's CPU
# (the tracing: the layers' traces and their occlusion queries, Backend.blocked)
_PARTS = {"tracing (embreex)": [("tracing/embree.py", "run"), ("tracing/embree.py", "occluded")],
          "range FFTs": [("", "r2c"), ("", "c2r")],
          "speckle and noise draws": [("speckle.py", "unit_parts")]}
# parts counted with what they call (cumulative CPU): unit_parts hands its draws to one compiled pass
# (counter_random.circular_gaussians), whose CPU cProfile does not put in the caller's own time
_CUMULATIVE = {"speckle and noise draws"}


# the frame's top-level steps (cumulative CPU, their own tracing included): they add up to the frame
_STEPS = {"geometry passes": [("physical/geometry.py", "_trace_block")],
          # (the curved plates' part and the other kinds' are computed apart, joined by frame_glints: geometry.py)
          "glints": [("physical/facet_glints.py", "frame_glints"), ("physical/facet_glints.py", "static_parts")],
          "sensor stage": [("physical/stage.py", "run_stage")]}


def cpu_breakdown(cfg, scene, pose, repeats: int = 1) -> dict[str, float]:
    """{part: CPU ms} of one frame traced and processed on one thread (the stage's pool run inline): of the
    least disturbed of `repeats` profiled frames (the smallest CPU total; on a shared machine contention
    for caches and cores only ever adds CPU time), every part from that same frame and one clock."""
    from radarays_ros.radar.physical import stage

    backend = make_backend("embree", scene, threads=1)
    sim = RadarSimulator(cfg, scene, backend=backend)
    inline = stage._parallel
    stage._parallel = lambda task, items, workers=None: [task(item) for item in items]
    best = None
    try:
        sim.simulate(pose)  # warm-up
        for _ in range(max(1, repeats)):
            profile = cProfile.Profile(time.process_time)  # one clock: the parts and the frame in CPU seconds
            cpu = time.process_time()
            profile.enable()
            sim.simulate(pose)
            profile.disable()
            total = time.process_time() - cpu
            if best is None or total < best[0]:
                best = (total, profile)
    finally:
        stage._parallel = inline
        backend.close()
    total, profile = best
    rows = pstats.Stats(profile).stats  # {(file, line, name): (calls, prim calls, tottime, cumtime, callers)}
    parts = {part: 1e3 * sum(v[3 if part in _CUMULATIVE else 2] for (file, _, name), v in rows.items()
                             if any(f in file and name in (n, f"<built-in method {n}>") or
                                    f in file and name.endswith(f".{n}>") for f, n in keys))
             for part, keys in _PARTS.items()}
    parts["everything else"] = 1e3 * total - sum(parts.values())
    parts["frame"] = 1e3 * total
    for step, keys in _STEPS.items():  # cumulative: each step with the tracing it does
        parts[step] = 1e3 * sum(v[3] for (file, _, n), v in rows.items()
                                if any(f in file and n == name for f, name in keys))
    return parts


def one_thread_cpu(cfg, scene, pose, repeats: int) -> tuple[float, float, float, float]:
    """(least frame CPU ms, least bare CPU ms of its rays, median of the paired ratios, the same against the bare
    cost of the same queries) on one thread (the stage's pool run inline), unprofiled, frame and bare alternately."""
    from radarays_ros.radar.physical import stage

    backend = make_backend("embree", scene, threads=1)
    sim = RadarSimulator(cfg, scene, backend=backend)
    inline = stage._parallel
    stage._parallel = lambda task, items, workers=None: [task(item) for item in items]
    frames, bares, same = [], [], []
    try:
        sim.simulate(pose)  # warm-up
        rays = recorded_rays(sim, pose)
        for _ in range(max(1, repeats)):
            cpu = time.process_time()
            sim.simulate(pose)
            frames.append(time.process_time() - cpu)
            cpu = time.process_time()
            bare_seconds(backend, rays)
            bares.append(time.process_time() - cpu)
            cpu = time.process_time()
            bare_seconds(backend, rays, same_queries=True)
            same.append(time.process_time() - cpu)
    finally:
        stage._parallel = inline
        backend.close()
    frames = np.array(frames)
    return (1e3 * frames.min(), 1e3 * min(bares), float(np.median(frames / np.array(bares))),
            float(np.median(frames / np.array(same))))


def print_breakdown(preset: str, parts: dict[str, float], unprofiled: tuple[float, float, float, float]) -> None:
    frame, bare, ratio, same_ratio = unprofiled
    trace = parts["tracing (embreex)"]
    print(f"  {preset}: one thread, unprofiled: frame {frame:.1f} ms CPU, bare tracing of its rays {bare:.1f} ms CPU "
          f"(least of the frames), median paired CPU ratio {ratio:.2f}x ({same_ratio:.2f}x against the bare cost of "
          f"the same queries: its occlusion rays as occlusion queries)")
    print(f"  {preset}: CPU of one frame on one thread (cProfile, the least of the frames; a little above unprofiled):")
    for part, ms in parts.items():
        if part == next(iter(_STEPS)):
            print("    by step (each with its own tracing):")
        print(f"    {part:<26s} {ms:7.1f} ms  {ms / trace:5.2f}x the tracing")
    floor = trace + parts["range FFTs"] + parts["speckle and noise draws"]
    print(f"    floor if everything else cost nothing: {floor / trace:.2f}x the tracing (target 1.5x)")


def moving_cars(scene, backend, pose, presets, count: int, repeats: int) -> int:
    """Frame time with `count` 4 x 1.8 x 1.5 m boxes within +-40 m, moved 0.1 m and given a 10 m/s twist before
    every frame, with the preset's scatter.moving_entities frame and sweep in turn (the best of the rounds)."""
    rng = np.random.default_rng(0)
    ids = np.array([scene.add_entity(f"car{i}", primitives.box((4.0, 1.8, 1.5)),
                                     pose_to_matrix(*rng.uniform(-40, 40, 2), 0.75), static=False)
                    for i in range(count)])
    poses = np.stack([scene.entity(int(i)).pose for i in ids])
    velocity = np.tile([10.0, 0.0, 0.0], (count, 1))
    for preset in presets:
        cfg = RadarConfig.from_yaml(ROOT / f"radarays_ros/data/radar/{preset}.yaml")
        sims = {mode: RadarSimulator(cfg.with_overrides({"scatter.moving_entities": mode}), scene, backend=backend)
                for mode in ("frame", "sweep")}
        best = {mode: np.inf for mode in sims}
        for round_ in range(max(1, repeats) + 1):  # round 0 warms up
            for mode, sim in sims.items():
                poses[:, 0, 3] += 0.1
                scene.set_poses_array(ids, poses)
                scene.set_twists(ids, velocity, np.zeros((count, 3)))
                start = time.perf_counter()
                sim.simulate(pose)
                if round_:
                    best[mode] = min(best[mode], time.perf_counter() - start)
        print(f"radar {preset}, {count} moving cars: moving_entities frame {1e3 * best['frame']:.1f} ms, "
              f"sweep {1e3 * best['sweep']:.1f} ms a frame ({backend.threads} threads)")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--triangles", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="fewer repeats and a shorter sweep")
    parser.add_argument("--realistic-only", action="store_true", help="only the physical (realistic) presets")
    parser.add_argument("--presets", nargs="+", default=list(PHYSICAL_PRESETS), choices=PHYSICAL_PRESETS,
                        help="physical presets to measure (default: all)")
    parser.add_argument("--breakdown", action="store_true",
                        help="also: where a physical frame's CPU goes, on one thread (cProfile)")
    parser.add_argument("--movers", type=int, default=0,
                        help="only: each preset's frame with this many car-sized boxes driving at 10 m/s (given their "
                             "twist), scatter.moving_entities frame and sweep alternated")
    args = parser.parse_args(argv)
    repeats = 2 if args.quick else args.repeats

    t = time.perf_counter()
    scene = make_big_world(args.triangles)
    backend = make_backend("embree", scene)
    print(f"world: {scene.triangle_count} triangles, built in {time.perf_counter() - t:.1f} s, {backend.threads} threads")
    pose = pose_to_matrix(0.0, 0.0, 2.0)
    if args.movers:
        return moving_cars(scene, backend, pose, args.presets, args.movers, repeats)

    configs = {
        "compat (400 bins, no noise)": RadarConfig.from_yaml(ROOT / "radarays_ros/data/examples/radarays_compat.yaml"),
        "mulran (3424 bins, Perlin noise)": RadarConfig.from_yaml(ROOT / "radarays_ros/data/radar/mulran.yaml"),
    }
    for name, cfg in ({} if args.realistic_only else configs).items():
        sim = RadarSimulator(cfg, scene, backend=backend)
        seconds, bare, ratio, counts, bare_all, counts_all, cpu_ratio, _ = measure(sim, pose, repeats)
        report(f"radar 400x{cfg.beam.samples}x{cfg.tracing.passes} {name}", seconds, bare,
               median_paired_ratio=f"{ratio:.2f}x", cpu_ratio=f"{cpu_ratio:.2f}x", rays_per_pass=counts,
               vs_bare_unpruned=f"{seconds / bare_all:.2f}x", unpruned_rays_per_pass=counts_all)
    print(f"peak memory after the 50-sample frames: {peak_memory()}")

    # realistic presets (physical sensor stage): the sensor stage still transforms and logs every pixel of
    # 400 x 6848 (noise drawn on the window's band only, clutter only as far as it reaches), so the frame
    # costs more than tracing its few rays; the targets are the sensor's rate (4 Hz) and 1.5x the bare tracing.
    # Geometry blocks and stage row blocks share one thread pool: wall time gains where a core is free.
    for preset in args.presets:
        cfg = RadarConfig.from_yaml(ROOT / f"radarays_ros/data/radar/{preset}.yaml")
        sim = RadarSimulator(cfg, scene, backend=backend)
        seconds, bare, ratio, counts, _, _, cpu_ratio, same_ratio = measure(sim, pose, repeats, unpruned=False)
        report(f"radar {preset} {cfg.azimuth.count}x{cfg.range.n_bins} (physical)", seconds, bare,
               median_paired_ratio=f"{ratio:.2f}x", cpu_ratio=f"{cpu_ratio:.2f}x",
               cpu_ratio_same_queries=f"{same_ratio:.2f}x", rays_per_pass=counts, frames_per_s=f"{1.0 / seconds:.1f} Hz",
               sensor_rate=f"{cfg.azimuth.rate_hz:g} Hz")
        print(f"peak memory after {preset}: {peak_memory()}")
        if args.breakdown:
            print_breakdown(preset, cpu_breakdown(cfg, scene, pose, repeats), one_thread_cpu(cfg, scene, pose, repeats))

    if args.realistic_only:
        return 0
    print("paper sweep (Table III: Ryzen 7 3800X, 8 cores, Embree, 12.4 M triangles: 25.8 39.3 53.5 66.0 78.5 ms)")
    base = configs["compat (400 bins, no noise)"]
    sweep = (200, 600, 1000) if args.quick else (200, 400, 600, 800, 1000)
    for ns in sweep:
        cfg = base.with_overrides({"beam.samples": ns})
        sim = RadarSimulator(cfg, scene, backend=backend)
        seconds, bare, ratio, counts, bare_all, counts_all, _, _ = measure(sim, pose, max(2, repeats // 2))
        report(f"radar sweep Ns={ns} (4 passes)", seconds, bare, median_paired_ratio=f"{ratio:.2f}x",
               primary_rays=400 * ns, total_rays=sum(counts), vs_bare_unpruned=f"{seconds / bare_all:.2f}x",
               unpruned_rays=sum(counts_all))
    print(f"peak memory (whole run): {peak_memory()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
