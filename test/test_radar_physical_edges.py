"""Edge geometry of the physical radar's tracing: a sensor resting on a surface (z = 0 on a floor)."""
from __future__ import annotations

import warnings

import numpy as np

from radarays_ros.radar import RadarSimulator
from support.radar_physical import ground, physical, scene

from radarays_ros.world.transforms import pose_to_matrix


def test_a_sensor_resting_on_the_floor_simulates_cleanly_and_the_floor_under_it_returns_nothing_at_zero_range():
    cfg = physical(scatter={"speckle": False})
    sim = RadarSimulator(cfg, scene(ground()))
    on_floor = pose_to_matrix(0.0, 0.0, -1.5, 0, 0, 0)  # the ground's top face is z = -1.5
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # before: "invalid value encountered in divide" (sigma / R^4 = 0 / 0)
        img = sim.simulate(on_floor)
    power = np.asarray(img.image_f32, np.float64)
    assert np.isfinite(power).all()
    # only the noise is left: nothing of the floor at 0 m (the rays that start on it) reaches the image
    above = RadarSimulator(cfg, scene(ground())).simulate(pose_to_matrix(0.0, 0.0, -1.4, 0, 0, 0))
    assert power.max() < np.asarray(above.image_f32).max()
