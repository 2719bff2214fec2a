"""Calibration of the radar model against real frames (`radarays fit radar`, issue #24).

    params.py      the registry of fittable config keys (bounds from the config validator, transforms)
    statistics.py  scene-free statistics of a polar frame's quiet part (floor over range, spread, correlations)
    sensor.py      the receiver chain of the physical stage fitted to those statistics (no scene)
    similarity.py  MIS and SSIM of two polar images
    materials.py   RadaRays' per-material (v, A, B, C) fitted by MIS (+ SSIM) with a scene and poses
    cli.py         the command (top layer; `radarays fit` is radarays_ros/fit_cli.py)
"""
