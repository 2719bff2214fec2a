"""The node's decisions as pure functions (radarays_ros.sensors): sweep schedule, status, pose sources."""
import math

import numpy as np
import pytest

from radarays_ros.errors import ConfigError
from radarays_ros.sensors.diagnostics import ERROR, OK, WARN, Stats, sensor_status
from radarays_ros.sensors.poses import fixed_pose, mounted_sweep, tf_sweep
from radarays_ros.sensors.schedule import Sweep, next_sweep
from radarays_ros.sensors.tf_buffer import TransformBuffer, TransformLookupError
from radarays_ros.world.transforms import pose_to_matrix

P = 100_000_000  # a 10 Hz sensor


def test_the_first_sweep_is_the_last_complete_slot():
    assert next_sweep(0, P, None) is None  # no clock yet (use_sim_time before /clock)
    assert next_sweep(5 * P + 3, P, None) == Sweep(slot=5, t0_ns=4 * P)


def test_two_ticks_per_period_run_each_sweep_once():
    ticks = [k * P // 2 + 7 for k in range(2, 12)]  # timer at twice the rate, with an offset
    last, sweeps = None, []
    for now in ticks:
        sweep = next_sweep(now, P, last)
        if sweep is not None:
            last = sweep.slot
            sweeps.append(sweep.t0_ns)
    assert sweeps == [k * P for k in range(0, 5)]  # every slot once, none repeated, none skipped


def test_slow_frames_count_dropped_slots_and_time_going_back_restarts():
    assert next_sweep(9 * P, P, 5) == Sweep(slot=9, t0_ns=8 * P, dropped=3)
    assert next_sweep(2 * P, P, 9) == Sweep(slot=2, t0_ns=P, time_went_back=True)


def test_status_levels_follow_what_the_sensor_can_do():
    stats = Stats()
    assert sensor_status(stats, started=False, rate_hz=None).level == ERROR
    no_world = sensor_status(stats, started=True, rate_hz=10.0, world_error="world 'x' not loaded")
    assert (no_world.level, no_world.message) == (ERROR, "world 'x' not loaded")
    stats.add_time(0.02, 0.001, 28800)
    good = sensor_status(stats, started=True, rate_hz=10.0)
    assert good.level == OK and good.values["frame_time_ms"] == "20.00" and good.values["rays_per_second"] == "1440000"
    away = sensor_status(stats, started=True, rate_hz=10.0, gazebo="demo", gazebo_alive=False)
    assert away.level == WARN and "demo" in away.message and away.values["gazebo_alive"] == "false"
    stats.dropped = 2
    assert sensor_status(stats, started=True, rate_hz=10.0).message == "2 frames dropped (simulation slower than the rate)"


def test_fixed_pose_is_checked():
    np.testing.assert_allclose(fixed_pose([1, 2, 3, 0, 0, math.pi / 2]), pose_to_matrix(1, 2, 3, 0, 0, math.pi / 2))
    with pytest.raises(ConfigError, match=r"fixed_pose.z = 1e\+39: out of range"):
        fixed_pose([0, 0, 1e39, 0, 0, 0])
    with pytest.raises(ConfigError, match="expected six numbers"):
        fixed_pose([0, 0])


def test_tf_and_mounted_sweeps_interpolate_across_the_sweep():
    buffer = TransformBuffer()
    buffer.set_transform("map", "base", 0, (0, 0, 0), (0, 0, 0, 1))
    buffer.set_transform("map", "base", 2 * P, (2, 0, 0), (0, 0, 0, 1))  # 10 m/s along x
    sweep = tf_sweep(buffer, "map", "base", P // 2, P, 0, 200.0)
    assert sweep.poses[0][0, 3] == pytest.approx(0.5) and sweep.poses[-1][0, 3] == pytest.approx(1.5)
    mount = pose_to_matrix(0.5, 0, 1, 0, 0, 0)
    mounted = mounted_sweep(buffer, "map", "base", mount, P // 2, P, 0, 200.0)
    np.testing.assert_allclose(mounted.poses[0][:3, 3], [1.0, 0, 1])
    with pytest.raises(TransformLookupError):
        tf_sweep(buffer, "map", "base", 3 * P, P, 0, 200.0)  # beyond the samples, no tolerance


def test_throttled_log_says_each_trouble_once_per_period(monkeypatch):
    from radarays_ros import throttled_log

    clock = [100.0]
    monkeypatch.setattr(throttled_log.time, "monotonic", lambda: clock[0])
    lines = []
    logger = type("L", (), {"warning": lambda self, t: lines.append(("W", t)), "error": lambda self, t: lines.append(("E", t))})()
    log = throttled_log.ThrottledLog(logger, period_s=5.0)
    for _ in range(3):  # a missing tf at the sensor rate: one line
        log.warning("no tf at 1.0 s", key="frame:radar")
        log.warning("no tf at 1.1 s", key="frame:radar")
    log.error("world not loaded")  # keyed by its text
    log.error("world not loaded")
    clock[0] += 5.0  # the period has passed: said again, with the count since the last line
    log.warning("no tf at 6.0 s", key="frame:radar")
    assert lines == [("W", "no tf at 1.0 s"), ("E", "world not loaded"),
                     ("W", "no tf at 6.0 s (6 times in the last 5 s)")]
