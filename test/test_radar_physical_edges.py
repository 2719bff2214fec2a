"""Edge geometry of the physical radar's tracing: a sensor resting on a surface (z = 0 on a floor); where its
geometry blocks trace (on their own threads, where they fill the frame's pool)."""
from __future__ import annotations

import warnings
from types import SimpleNamespace

import numpy as np

from radarays_ros import threads
from radarays_ros.radar import RadarSimulator
from radarays_ros.radar.physical import geometry
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


def test_a_physical_frame_traces_its_geometry_blocks_inline_where_they_fill_the_threads(monkeypatch):
    """Its four geometry blocks and the glints run on the frame pool of 2 threads: each traces on its own thread
    (threads.spans_inline); a backend of more threads than tasks still splits each trace."""
    seen = []

    class Backend:
        def __init__(self, n):
            self.threads = n

    def block(frame, tubes):
        seen.append(threads.span_threads(frame.backend.threads))
        return {}, {}, {}

    monkeypatch.setattr(geometry, "_trace_block", block)
    monkeypatch.setattr(geometry, "_tubes", lambda frame, k0, k1: None)
    monkeypatch.setattr(geometry, "sample_beam", lambda rng, a, antenna: None)
    monkeypatch.setattr(geometry, "_glints", lambda frame, scatterers: seen.append(threads.span_threads(2)))
    for n, want in ((2, [1] * 5), (8, [2] + [8] * 4)):
        seen.clear()
        geometry.trace_physical(Backend(n), np.zeros((40, 3)), None, None, SimpleNamespace(antenna=None), None,
                                None, 1.0,
                                parallel=lambda task, items: threads.run_all("frame", task, items, 2))
        assert sorted(seen) == sorted(want)
