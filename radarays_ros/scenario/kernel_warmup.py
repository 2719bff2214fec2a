"""Loads the compiled per-ray loops once in the batch's fork server, so that every run starts with them.

The local engine's fork server imports this module (engines.RUN_MODULES) for its effect: a compiled loop
(radarays_ros.compiled) is loaded from numba's disk cache, or compiled, at its first call in a process —
about 0.3 s for the loops of a lidar frame — and a forked process inherits what its parent loaded. So
the fork server simulates small lidar frames that run every loop, on one thread: a process forked
from one with thread pools would inherit the pools without their threads.
"""
from __future__ import annotations

import numpy as np


def warm_up() -> None:
    """Lidar frames in a closed box: a VLP-16 with every effect on, and a small Ouster (OS1-128) with the
    realistic profile and without it, whose layout, photon counts and edge dropouts run loops of their
    own (test_batch checks that no lidar frame loads a loop the warm-up did not)."""
    import trimesh

    from lidar_ros import LidarSimulator, load_sensor
    from radarays_ros.tracing import make_backend
    from radarays_ros.world.mesh import TriMesh
    from radarays_ros.world.scene import Scene

    box = trimesh.creation.box((20.0, 20.0, 6.0))
    scene = Scene()
    scene.add_entity("room", TriMesh(box.vertices, box.faces))
    every_effect = load_sensor("VLP-16", {
        "noise": {"bias_sigma": 0.02, "sigma": 0.02, "dust_probability": 0.001, "resolution": 0.002},
        "surface": {"model": "blensor", "limits": [[0.10, 50.0], [0.80, 120.0]]},
        "beam": {"divergence_mrad": 3.0, "sub_rays": 4, "return_mode": "dual"},
        "weather": {"fog_visibility_km": 0.5}, "detection": {"model": "snr", "dropout_probability": 0.001},
        "signal": {"poisson": True, "noise_floor": 2.0}})
    ouster = [load_sensor("OS1-128", {"columns": 512}, realistic=realistic) for realistic in (True, False)]
    backend = make_backend("embree", scene, threads=1)
    try:
        for config in [every_effect, *ouster]:
            LidarSimulator(config, scene, backend, seed=0).simulate(np.eye(4))
    finally:
        backend.close()


try:
    warm_up()
except Exception:  # noqa: BLE001 - a warm-up only saves time: each run loads what it needs itself
    pass
