"""Edge geometry of the physical radar's tracing: a sensor resting on a surface (z = 0 on a floor); where its
geometry blocks trace (on their own threads, where they fill the frame's pool)."""
from __future__ import annotations

import warnings
from types import SimpleNamespace

import numpy as np
import pytest

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


def _street_frames(monkeypatch, single_glint_task: bool):
    from radarays_ros.radar import RadarConfig
    from radarays_ros.tracing import make_backend
    from radarays_ros.world.loader import load_world

    if single_glint_task:  # the glints as one task, facet_glints computing every kind itself
        monkeypatch.setattr(geometry, "_glint_tasks", lambda frame, sc: [lambda: geometry._glints(frame, sc)])
    world = load_world("radarays_ros/data/worlds/street.sdf")
    cfg = RadarConfig.from_yaml("radarays_ros/data/radar/navtech_ras6.yaml")
    sim = RadarSimulator(cfg, world, backend=make_backend("embree", world, threads=2))
    return [sim.simulate(pose_to_matrix(0.0, 0.0, 0.8, 0, 0, yaw)) for yaw in (0.0, 0.7)]


def test_glints_in_two_tasks_give_the_bytes_of_one(monkeypatch):
    """The curved plates' glints in a task of their own, joined by the task of the other kinds (geometry._glint_tasks):
    the frames of the glints computed in one task, bit for bit (the street's lamp posts and cars are curved)."""
    split = []
    tasks = geometry._glint_tasks
    monkeypatch.setattr(geometry, "_glint_tasks", lambda frame, sc: (lambda made: split.append(len(made)) or made)(
        tasks(frame, sc)))
    two = _street_frames(monkeypatch, False)
    assert split == [2, 2]
    with monkeypatch.context() as m:
        one = _street_frames(m, True)
    for a, b in zip(one, two):
        assert a.image.tobytes() == b.image.tobytes() and a.energy.tobytes() == b.energy.tobytes()


def test_a_failing_curved_glint_task_fails_the_frame_without_a_hang(monkeypatch):
    from radarays_ros.radar.physical import facet_glints

    parts = facet_glints.static_parts

    def failing(kinds, *args):
        if kinds == ("curved",):
            raise ValueError("curved plates failed")
        return parts(kinds, *args)
    monkeypatch.setattr(facet_glints, "static_parts", failing)
    with pytest.raises((ValueError, RuntimeError), match="curved"):
        _street_frames(monkeypatch, False)
