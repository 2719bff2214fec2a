"""A car passing a spinning lidar, its points with the car where it stands at the frame's start (`frame`) and
where it is at each firing (`sweep`), seen from above: the picture in the README (docs/lidar_sweep_motion.png).

    PYTHONPATH=$PWD python scripts/sweep_motion_picture.py [--speed 15] [--out docs/lidar_sweep_motion.png]

A VLP-16 (10 Hz, turning clockwise from +x: its first and last firings look along +x) 1 m above the ground at the
origin; a 4.5 x 1.8 x 1.5 m box car 8 m ahead, across the line of sight, driving along +y at --speed m/s (its twist
given with its pose, as a scenario or Gazebo gives it). Its -y half is seen at the sweep's start, its +y half at its
end, 100 ms later. Outlines: the car at the frame's start and at its end. Prints how long the car reads in each mode
beside its true length.
"""
from __future__ import annotations

import argparse

import numpy as np

from lidar_ros import LidarSimulator, load_sensor
from radarays_ros.tracing import make_backend
from radarays_ros.world import primitives
from radarays_ros.world.scene import Scene
from radarays_ros.world.transforms import pose_to_matrix

CAR = (4.5, 1.8, 1.5)  # m
AHEAD_M = 8.0


def scene_with_car(speed: float) -> tuple[Scene, int]:
    scene = Scene()
    scene.add_entity("ground", primitives.box((80.0, 80.0, 0.1)), pose_to_matrix(0, 0, -1.05), material="asphalt")
    start = pose_to_matrix(AHEAD_M, 0.0, -1.0 + CAR[2] / 2, 0.0, 0.0, np.pi / 2)  # its length along y
    car = scene.add_entity("car", primitives.box(CAR), start, static=False, material="metal")
    scene.set_poses([(car, start)], twists=[((0.0, speed, 0.0), (0.0, 0.0, 0.0))])
    return scene, car


def car_points(mode: str, speed: float):
    """(x, y of the returns on the car, their firing times) of one frame."""
    scene, car = scene_with_car(speed)
    cfg = load_sensor("VLP-16", {"timing.moving_entities": mode, "noise.sigma": 0.0})
    scan = LidarSimulator(cfg, scene, make_backend("embree", scene, threads=2), seed=1).simulate(np.eye(4))
    on_car = scan.hit & (scan.entity == car)
    times = np.broadcast_to(np.asarray(cfg.column_times)[cfg.pixel_column], on_car.shape)
    xyz = scan.xyz[on_car]
    return xyz[:, 0], xyz[:, 1], times[on_car]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--speed", type=float, default=15.0, help="the car's speed along +x, m/s")
    p.add_argument("--out", default="docs/lidar_sweep_motion.png")
    args = p.parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    fig, axes = plt.subplots(1, 2, figsize=(10, 5.2), sharey=True, constrained_layout=True)
    for ax, mode in zip(axes, ("frame", "sweep")):
        x, y, t = car_points(mode, args.speed)
        dots = ax.scatter(x, y, c=1e3 * t, s=5, cmap="viridis", vmin=0, vmax=100)
        for when, style in ((0.0, "--"), (0.1, ":")) if mode == "sweep" else ((0.0, "--"),):
            ax.add_patch(Rectangle((AHEAD_M - CAR[1] / 2, -CAR[0] / 2 + args.speed * when), CAR[1], CAR[0], fill=False,
                                   linestyle=style, edgecolor="tab:red", label=f"the car at {1e3 * when:.0f} ms"))
        length = np.ptp(y)
        print(f"{mode}: the car's near side reads {length:.2f} m long (true {CAR[0]} m), {len(x)} points")
        ax.set_title(f"moving_entities: {mode}\nthe car reads {length:.1f} m long (true {CAR[0]} m)")
        ax.set_xlabel("x (m)")
        ax.set_aspect("equal")
        ax.set_xlim(AHEAD_M - 3.5, AHEAD_M + 3.5)
        ax.set_ylim(-4.0, 5.5)
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right", fontsize=8)
    axes[0].set_ylabel("y (m)")
    fig.colorbar(dots, ax=axes, label="firing time after the frame's start (ms)")
    fig.suptitle(f"VLP-16 at the origin (its sweep starts and ends along +x), a car 8 m ahead driving +y at "
                 f"{args.speed:g} m/s (top view)")
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
