"""Mutual interference of another FMCW radar (issue #22, item 2's option): its chirps crossing ours give a floor
over the whole azimuth line (the radial spoke) at the level of Friis' one-way equation spread over the beat band,
equal slopes a ghost tone at the range of the chirps' offset, a wall between the radars none (physical/interference.py)."""
from __future__ import annotations

import math
import os

import numpy as np
import pytest
import yaml

from radarays_ros.errors import ConfigError
from radarays_ros.radar import RadarConfig, RadarSimulator
from radarays_ros.radar.physical import interference, interferers, thermal_noise
from radarays_ros.radar.physical.geometry import Clutter, Glints
from radarays_ros.radar.physical.stage import run_stage
from radarays_ros.tracing import make_backend
from radarays_ros.world import primitives
from radarays_ros.world.scene import Scene
from radarays_ros.world.transforms import pose_to_matrix

C = 299_792_458.0
T = 6e-4  # both chirps' duration, and each radar's time per azimuth
B = 1e9
D = 30.0  # m between the antennas
BIN, BINS = 0.04381, 2000
P_T_DBM, G_DBI = 15.0, 30.0


def other_radar(path, bandwidth_hz=B, chirp_time_s=T):
    """A radar that does not turn (two columns, both at its azimuth 0) and chirps up every T."""
    path.write_text(yaml.safe_dump({
        "sensor": {"model": "physical"}, "azimuth": {"count": 2, "start_deg": 0.0, "step_deg": 0.0, "rate_hz": 1 / (2 * T)},
        "range": {"resolution": BIN, "bins": BINS},
        "fmcw": {"bandwidth_hz": bandwidth_hz, "chirp_time_s": chirp_time_s, "chirp": "up"},
        "antenna": {"gain_dbi": G_DBI}, "receiver": {"transmit_power_dbm": P_T_DBM}}))
    return path


@pytest.fixture
def other_yaml(tmp_path):
    return other_radar(tmp_path / "other.yaml")


def victim(other_yaml, chirp="down", shift_s=0.0, count=4, step_deg=0.0, **extra) -> RadarConfig:
    """Our radar at the origin, every column toward +x (step 0) where the other stands, D away, facing us
    (heading 180). The clock offset makes its chirp j start, as heard here, shift_s after our chirp."""
    return RadarConfig.from_dict({
        "sensor": {"model": "physical"},
        "azimuth": {"count": count, "start_deg": 0.0, "step_deg": step_deg, "rate_hz": 1 / (count * T), "time_jitter_s": 0.0},
        "range": {"resolution": BIN, "bins": BINS}, "antenna": {"gain_dbi": G_DBI},
        "fmcw": {"bandwidth_hz": B, "chirp_time_s": T, "chirp": chirp, "window": "hann"},
        "receiver": {"stc_range_m": 0.0, "leakage_dbm": None, "system_loss_db": 3.0},
        "scatter": {"speckle": False},
        "interference": {"preset": str(other_yaml), "x_m": D, "heading_deg": 180.0,
                         "clock_offset_s": 2 * T - D / C + shift_s, **extra},
        "seed": 4}, origin="test")


def friis() -> float:
    """P_i between two boresights D apart: P_t G^2 lambda^2 / ((4 pi)^2 D^2 L), written out."""
    lam = C / 76.5e9
    return 10 ** ((P_T_DBM - 30) / 10) * 10 ** (2 * G_DBI / 10) * lam ** 2 / ((4 * math.pi) ** 2 * D ** 2 * 10 ** 0.3)


def heard(cfg, clear=True, scene=None, motion=None, pose=None):
    """returns() of the section's radar for our radar standing at `pose` (4x4; the origin) through the frame, every
    column along the pose's x; `clear`: what the line of sight answers."""
    a = cfg.azimuth.count
    poses = np.broadcast_to(np.eye(4) if pose is None else pose, (a, 4, 4))
    return interference.returns(cfg, interferers.interferers_of(cfg, scene, motion, poses)[0], poses[:, :3, 3],
                                poses[:, :3, :3], np.arange(a, dtype=np.int64) * round(T * 1e9), 0,
                                lambda o, d, r: np.full(len(o), clear))


def test_opposite_chirps_cross_mid_chirp_and_fill_every_bin_at_the_burst_level(other_yaml):
    """Down against up, started together: they meet at f_c half-way, |ds| = 2 B / T; each bin reads
    2 P_i / (|ds| T^2) / <w^2> (Hann: w = 1 at the middle, <w^2> = 3/8), 34 dB over k T F / T here."""
    cfg = victim(other_yaml)
    clutter, glints = heard(cfg)
    p_bin = 2 * friis() / (2 * B / T * T ** 2) / 0.375
    assert clutter.azimuth.tolist() == [0, 1, 2, 3] and len(glints.azimuth) == 0
    assert np.all(clutter.near_m == 0.0) and np.allclose(clutter.far_m, BINS * BIN, rtol=1e-12, atol=0.0)
    out = run_stage(clutter, glints, cfg, np.random.default_rng(0))  # expected power (no speckle): its bins read P_bin
    noise = thermal_noise.noise_power_w(cfg.receiver, cfg.fmcw)
    middle = out.power_w[:, 200:1800].astype(np.float64)
    assert np.allclose(middle.mean(axis=1) - noise, p_bin, rtol=0.01, atol=0.0), (middle.mean(axis=1) - noise, p_bin)
    assert p_bin / noise > 10 ** 3.3
    quiet = run_stage(*heard(cfg, clear=False), cfg, np.random.default_rng(0))
    assert np.allclose(quiet.power_w[:, 200:1800], noise, rtol=1e-5, atol=0.0)  # a wall between: nothing


def test_a_burst_late_in_the_chirp_is_weighted_by_the_window_there(other_yaml):
    """Its chirps heard T/2 off ours: each of our chirps meets the one heard T/2 later at u = 3T/4 and the one
    heard T/2 earlier at u = T/4, where the Hann window is 1/2: two bursts, each a quarter of the middle one."""
    mid = heard(victim(other_yaml))[0].power_w
    late = heard(victim(other_yaml, shift_s=T / 2))[0]
    assert late.azimuth.tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    assert np.allclose(late.power_w / mid[0], 0.25, rtol=1e-6, atol=0.0)


@pytest.mark.parametrize("shift, bursts", [(0.0, 0), (0.6 * T, 4)])
def test_a_crossing_counts_only_while_its_chirp_lasts(tmp_path, shift, bursts):
    """Its chirp sweeps the band's lowest quarter in T/4 (our slope), heard `shift` after ours: the lines cross at
    u = (T + shift) / 2, inside its chirp only when shift >= T/2 (started together, it has ended long before)."""
    cfg = victim(other_radar(tmp_path / "short.yaml", B / 4, T / 4), shift_s=shift)
    assert len(heard(cfg)[0].azimuth) == bursts


def test_equal_slopes_give_a_ghost_tone_at_the_range_of_their_offset(other_yaml):
    """Both up, its chirp heard 200 ns after ours: a constant beat s x 200 ns, the range c x 200 ns / 2 = 29.98 m,
    of power P_i ((T - 200 ns) / T)^2 (the part of our chirp it overlaps); no burst."""
    delay = 200e-9
    clutter, glints = heard(victim(other_yaml, chirp="up", shift_s=delay))
    assert len(clutter.azimuth) == 0 and glints.azimuth.tolist() == [0, 1, 2, 3]
    assert np.allclose(glints.range_m, C * delay / 2, atol=0.08)  # the clock offset is kept in whole ns: c x 0.5 ns / 2
    assert np.allclose(np.abs(glints.amplitude) ** 2, friis() * ((T - delay) / T) ** 2, rtol=1e-6, atol=0.0)


def test_closing_on_each_other_moves_the_tone_by_the_one_way_doppler_shift(other_yaml):
    """fmcw.doppler: we drive at 20 m/s toward the other radar (D away along +x) and it at 5 m/s toward us: we close
    at 25 m/s, its signal arrives f_d = 25 f_a / c higher, the beat is s x 200 ns - f_d, and the tone moves
    c f_d / (2 s) = 25 f_a T / (2 B) = 0.574 m nearer (written out by hand); the burst of opposite slopes moves by
    f_d / |ds| in time. Without fmcw.doppler, or with the two standing still, nothing moves; a radar of our own rig
    moves with us: no shift."""
    import dataclasses

    delay, f_a = 200e-9, 76.5e9
    ours = np.tile([20.0, 0.0, 0.0], (4, 1))

    def tone(cfg, velocities, its=(0.0, 0.0, 0.0), rig=False):
        poses = np.broadcast_to(np.eye(4), (4, 4, 4))
        other = interferers.interferers_of(cfg, None, None, poses)[0]
        other = dataclasses.replace(other, velocity=np.array(its)) if not rig else dataclasses.replace(
            other, position=np.broadcast_to(other.position, (4, 3)), rotation=np.broadcast_to(other.rotation, (4, 3, 3)))
        return interference.returns(cfg, other, poses[:, :3, 3], poses[:, :3, :3], np.arange(4, dtype=np.int64)
                                    * round(T * 1e9), 0, lambda o, d, r: np.full(len(o), True), velocities)

    cfg = victim(other_yaml, chirp="up", shift_s=delay).with_overrides({"fmcw.doppler": True})
    still = tone(cfg, None)[1].range_m
    moved = tone(cfg, ours, its=(-5.0, 0.0, 0.0))[1].range_m
    nearer = 5.0 * np.arange(4) * T / 2  # and it comes 5 m/s x t_k nearer: heard earlier, c x (5 t_k / c) / 2
    assert np.allclose(still - moved, 25.0 * f_a * T / (2 * B) + nearer, rtol=1e-9, atol=0.0)
    assert np.array_equal(tone(cfg, np.zeros((4, 3)))[1].range_m, still)
    assert np.array_equal(tone(cfg, ours, rig=True)[1].range_m, still)
    plain = cfg.with_overrides({"fmcw.doppler": False})
    assert np.array_equal(tone(plain, ours, its=(-5.0, 0.0, 0.0))[1].range_m, tone(plain, None, its=(-5.0, 0.0, 0.0))[1].range_m)
    assert np.allclose(still - tone(plain, None, its=(-5.0, 0.0, 0.0))[1].range_m, nearer, rtol=0.0, atol=1e-9)
    # opposite slopes: the crossing t* = -alpha / ds moves by f_d / |ds|, so the window weighs the burst elsewhere
    down = victim(other_yaml).with_overrides({"fmcw.doppler": True})
    assert np.array_equal(tone(down, None)[0].power_w, heard(down)[0].power_w)
    assert not np.array_equal(tone(down, ours * 100)[0].power_w, tone(down, None)[0].power_w)


def test_the_interferer_must_be_a_loadable_radar_for_the_physical_stage(other_yaml):
    with pytest.raises(ConfigError, match="interference.preset = 'nope'"):
        victim("nope")
    with pytest.raises(ConfigError, match="needs sensor.model: physical"):
        RadarConfig.from_dict({"interference": {"preset": str(other_yaml)}}, origin="test")


def _frame(cfg, walls=()):
    scene = Scene()
    scene.add_entity("block", primitives.box((4.0, 4.0, 4.0)), pose_to_matrix(-40.0, 0.0, -5.0))  # behind us, below
    for i, x in enumerate(walls):
        scene.add_entity(f"wall{i}", primitives.box((0.3, 10.0, 10.0)), pose_to_matrix(x, 0.0, 0.0))
    return _frame_in(scene, cfg)


def test_a_whole_frame_shows_the_spoke_toward_the_other_radar_and_a_wall_hides_it(other_yaml):
    """40 azimuths over the full turn (speckle on): the column that looks at it reads ~30 dB over the frame
    without it, every column off it less; behind a wall the frame is byte for byte the frame without it."""
    cfg = victim(other_yaml, count=40, step_deg=9.0).with_overrides({"scatter.speckle": "true"})
    alone = _frame(cfg.with_overrides({"interference.preset": ""}))
    spoke = _frame(cfg)
    gain_db = 10 * np.log10(spoke.energy.astype(np.float64).mean(axis=1) / alone.energy.astype(np.float64).mean(axis=1))
    assert int(np.argmax(gain_db)) == 0 and gain_db[0] > 25.0, gain_db
    assert np.all(gain_db[1:] < gain_db[0] - 10.0), gain_db
    again = _frame(cfg)
    assert np.array_equal(spoke.image, again.image)  # seeded: the same bytes
    behind = _frame(cfg, walls=(15.0,))
    assert np.array_equal(behind.image, _frame(cfg.with_overrides({"interference.preset": ""}), walls=(15.0,)).image)


def test_radars_that_name_each_other_or_themselves_load(tmp_path, other_yaml):
    """The other radar's own interference section is never followed: files naming each other (or themselves)
    load instead of recursing."""
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    for path, other in ((a, b), (b, a)):
        path.write_text(yaml.safe_dump({"sensor": {"model": "physical"}, "interference": {"preset": str(other), "x_m": 5.0}}))
    assert RadarConfig.from_yaml(a).interference.preset == str(b)
    a.write_text(yaml.safe_dump({"sensor": {"model": "physical"}, "interference": {"preset": str(a)}}))
    cfg = RadarConfig.from_yaml(a)
    assert interferers.interferers_of(cfg)[0].config.interference.preset == str(a)


def test_an_edited_interferer_file_is_read_again(tmp_path, other_yaml):
    cfg = victim(other_yaml)
    assert interferers.interferers_of(cfg)[0].config.receiver.transmit_power_dbm == P_T_DBM
    data = yaml.safe_load(other_yaml.read_text())
    data["receiver"]["transmit_power_dbm"] = 20.0
    other_yaml.write_text(yaml.safe_dump(data))
    stat = other_yaml.stat()
    os.utime(other_yaml, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))  # a later version, whatever the clock's grain
    assert interferers.interferers_of(cfg)[0].config.receiver.transmit_power_dbm == 20.0


# --- the other radar on a scene entity (a scenario's mover, a Gazebo model) --------------------------------------

def _car_scene(pose, size=(2.0, 1.0, 1.0), name="car"):
    scene = Scene()
    scene.add_entity(name, primitives.box(size), pose, static=False)
    return scene


def test_a_radar_on_an_entity_is_the_fixed_radar_at_its_mount(other_yaml):
    """The car stands at (D - 2, 0) turned 90 degrees: its mount (0, -2, 0) heading 90 is the world's (D, 0, 0)
    heading 180, where the fixed radar of the other tests stands; the same bursts and tones to 1e-12."""
    scene = _car_scene(pose_to_matrix(D - 2.0, 0.0, 0.0, yaw=math.pi / 2))
    for chirp, shift, counts in (("down", 0.0, [4, 0]), ("up", 200e-9, [0, 4])):  # bursts, then tones
        fixed = victim(other_yaml, chirp=chirp, shift_s=shift)
        riding = fixed.with_overrides({"interference.entity": "car", "interference.x_m": 0.0, "interference.y_m": -2.0,
                                       "interference.heading_deg": 90.0})
        other = interferers.interferers_of(riding, scene)[0]
        assert np.allclose(other.position, [D, 0.0, 0.0], rtol=0, atol=1e-12)
        assert other.carrier == frozenset({scene.find("car")})
        assert interferers.carrier_of(scene, "car::link::visual") is None  # a scoped name must name an entity
        want, got = heard(fixed), heard(riding, scene=scene)
        assert [len(part.azimuth) for part in got] == counts
        for a, b in zip(want, got):
            assert np.array_equal(a.azimuth, b.azimuth)
        assert np.allclose(got[0].power_w, want[0].power_w, rtol=1e-12, atol=0.0)
        assert np.allclose(got[1].amplitude, want[1].amplitude, rtol=1e-12, atol=0.0)


@pytest.mark.parametrize("velocity, angular, mount_y", [((-2000.0, 0.0, 0.0), (0.0, 0.0, 0.0), 0.0),
                                                        ((0.0, 0.0, 0.0), (0.0, 0.0, 1000.0), 2.0)])
def test_a_moving_carrier_carries_the_radar_on_while_our_antenna_turns(other_yaml, velocity, angular, mount_y):
    """The carrier comes at us at 2 km/s (by translation, or turning at 1000 rad/s about its origin with the mount 2 m
    to its side: w x r the same): at our chirp k, t_k = k T after the frame's start, the radar stands D - 2000 t_k
    away, and its burst (both boresights kept) reads (D / (D - 2000 t_k))^2 of the first."""
    from radarays_ros.radar.physical.motion import EntityMotion

    scene = _car_scene(pose_to_matrix(D, -mount_y, 0.0))
    cfg = victim(other_yaml).with_overrides({"interference.entity": "car", "interference.x_m": 0.0,
                                             "interference.y_m": mount_y})
    motion = EntityMotion(np.array([velocity]), np.array([angular]), np.array([[D, -mount_y, 0.0]]))
    main = _strongest_burst(heard(cfg, scene=scene, motion=motion)[0])  # (its chirps now come a few ns early: the
    t = np.arange(4) * T                                                 # next one's edge meets our chirp's end, faint)
    # (to 2e-4: the burst's place in our chirp moves by ns, one step of the window's table, 7.5e-5 lower)
    assert np.allclose(main / main[0], (D / (D - 2000.0 * t)) ** 2, rtol=2e-4, atol=0.0)
    still = heard(cfg, scene=scene)[0]
    assert still.azimuth.tolist() == [0, 1, 2, 3] and np.allclose(still.power_w, still.power_w[0], rtol=1e-9, atol=0.0)


def _strongest_burst(bursts, count=4):
    out = np.zeros(count)
    np.maximum.at(out, bursts.azimuth, bursts.power_w)
    return out


def _frame_in(scene, cfg, t0_ns=0, pose=None):
    backend = make_backend("embree", scene)
    try:
        return RadarSimulator(cfg, scene, backend=backend).simulate(np.eye(4) if pose is None else pose, t0_ns=t0_ns)
    finally:
        backend.close()


def test_a_frame_driving_toward_the_other_radar_shows_its_tone_doppler_shifted(other_yaml):
    """A whole frame, our radar on a trajectory toward the other at 20 m/s: with fmcw.doppler the tone's peak lies
    20 f_a T / (2 B) = 0.459 m (10.5 bins) nearer than without it, in every row (the simulator hands the sensor's
    velocity to the interference)."""
    from radarays_ros.world.trajectory import Trajectory

    cfg = victim(other_yaml, chirp="up", shift_s=200e-9)
    track = Trajectory(np.array([0, 10**9], np.int64), np.stack([pose_to_matrix(0.0, 0.0, 0.0), pose_to_matrix(20.0, 0.0, 0.0)]))
    scene = Scene()
    scene.add_entity("block", primitives.box((4.0, 4.0, 4.0)), pose_to_matrix(-40.0, 0.0, -5.0))
    peaks = [np.argmax(_frame_in(scene, cfg.with_overrides({"fmcw.doppler": on}), pose=track).energy, axis=1)
             for on in (False, True)]
    assert np.allclose((peaks[0] - peaks[1]) * BIN, 20.0 * 76.5e9 * T / (2 * B), atol=BIN), peaks


def test_its_carrier_never_blocks_it_and_the_spoke_follows_the_carrier(other_yaml):
    """A van (3 m box) with the radar inside it, 1 m behind its front face: on the van, the spoke shows in the
    column that looks at the van; the same radar fixed in the world is walled in by the van (the frame without it,
    byte for byte). The van moved to 90 degrees: the spoke moves to the column that looks there (column 10 of 40).
    (The rise is read past the van, 53-88 m, where its own echo and shadow leave only the floor.)"""
    cfg = victim(other_yaml, count=40, step_deg=9.0).with_overrides({"scatter.speckle": "true"})
    riding = cfg.with_overrides({"interference.entity": "van", "interference.x_m": 0.5, "interference.y_m": 0.0,
                                 "interference.heading_deg": 0.0})
    van_at = lambda x, y, yaw: _car_scene(pose_to_matrix(x, y, 0.0, yaw=yaw), size=(3.0, 3.0, 3.0), name="van")
    facing_us = van_at(D - 0.5, 0.0, math.pi)  # the radar 0.5 m from the centre toward us, heading back at us
    alone = _frame_in(facing_us, cfg.with_overrides({"interference.preset": ""}))
    spoke = _frame_in(facing_us, riding)
    gain_db = _rise_db(spoke, alone)
    assert int(np.argmax(gain_db)) == 0 and gain_db[0] > 25.0, gain_db
    walled = _frame_in(facing_us, cfg)  # fixed at (D, 0, 0): inside the van, 1 m behind its face
    assert np.array_equal(walled.image, alone.image)
    turned = van_at(0.0, D - 0.5, -math.pi / 2)
    moved = _frame_in(turned, riding)
    moved_alone = _frame_in(turned, cfg.with_overrides({"interference.preset": ""}))
    gain_db = _rise_db(moved, moved_alone)
    assert int(np.argmax(gain_db)) == 10 and gain_db[10] > 25.0, gain_db


def _rise_db(frame, without, far_bins=slice(1200, BINS)):
    power = lambda f: f.energy[:, far_bins].astype(np.float64).mean(axis=1)
    return 10 * np.log10(power(frame) / power(without))


def test_a_carrier_missing_from_the_scene_gives_no_interference_and_one_warning(other_yaml, caplog):
    cfg = victim(other_yaml, count=40, step_deg=9.0).with_overrides({"interference.entity": "ghost_car_7"})
    scene = _car_scene(pose_to_matrix(D, 0.0, 0.0))
    with caplog.at_level("WARNING", logger="radarays_ros.radar"):
        frames = [_frame_in(scene, cfg, t0_ns=k * 250_000_000) for k in range(2)]
    alone = _frame_in(scene, cfg.with_overrides({"interference.preset": "", "interference.entity": ""}))
    assert np.array_equal(frames[0].image, alone.image)
    lines = [r.getMessage() for r in caplog.records if "ghost_car_7" in r.getMessage()]
    assert len(lines) == 1 and "not in the scene" in lines[0], lines


def test_the_carrier_name_is_checked(other_yaml):
    with pytest.raises(ConfigError, match=r"interference.entity = 'car' places another radar, but interference.preset"):
        RadarConfig.from_dict({"sensor": {"model": "physical"}, "interference": {"entity": "car"}}, origin="test")
    with pytest.raises(ConfigError, match=r"interference.on_sensor = True places another radar, but interference.preset"):
        RadarConfig.from_dict({"sensor": {"model": "physical"}, "interference": {"on_sensor": True}}, origin="test")
    with pytest.raises(ConfigError, match=r"rides on that entity or on our platform, not both"):
        victim(other_yaml, entity="car", on_sensor=True)
    with pytest.raises(ConfigError, match=r"interference.entity = .*not an entity name"):
        victim(other_yaml, entity="car\x1b[2J")
    with pytest.raises(ConfigError, match=r"not an entity name \(printable text of at most 512"):
        victim(other_yaml, entity="c" * 513)


def test_a_scenario_mover_carrying_a_radar_sweeps_its_spoke_across_our_image(tmp_path):
    """`radarays run`: the room's crate drives from (5, -6) along +y at 10 m/s with a wide-beam radar on its roof
    (heading 180: back at us), ours stands still at (0.5, 0, 1); in every image of the bag (decoded by rosbags) the
    azimuth whose line rises most (median over range) is the one that looks at the crate when it fires (a sector
    of 100 azimuths 0.9 degrees apart, the real step: our beam's sidelobes are narrower than coarser steps)."""
    from rosbags.highlevel import AnyReader
    from rosbags.typesys import Stores, get_typestore

    from radarays_ros.scenario.runner import run_scenario
    from support.scenario import scenario_file

    chirp = 2.5e-4  # a quarter of our time per azimuth: its chirps, clocks set equal, cross ours mid-chirp in every column
    other = tmp_path / "wide.yaml"  # a wide-beam radar that does not turn, its chirps back to back
    other.write_text(yaml.safe_dump({
        "sensor": {"model": "physical"}, "azimuth": {"count": 4, "start_deg": 0.0, "step_deg": 0.0, "rate_hz": 1 / (4 * chirp)},
        "range": {"resolution": 0.05, "bins": 300}, "fmcw": {"bandwidth_hz": B, "chirp_time_s": chirp, "chirp": "up"},
        "antenna": {"gain_dbi": 12.0, "azimuth_pattern": "gaussian", "azimuth_width_deg": 90.0}}))
    ours = tmp_path / "ours.yaml"
    ours.write_text(yaml.safe_dump({
        "sensor": {"model": "physical"}, "azimuth": {"count": 100, "start_deg": 0.0, "step_deg": -0.9, "rate_hz": 10.0},
        "range": {"resolution": 0.05, "bins": 300}, "antenna": {"gain_dbi": G_DBI},
        "fmcw": {"bandwidth_hz": B, "chirp_time_s": chirp, "chirp": "down"}, "receiver": {"leakage_dbm": None},
        "interference": {"preset": str(other), "entity": "crate", "z_m": 0.6, "heading_deg": 180.0, "clock_offset_s": 0.0}}))
    path = scenario_file(tmp_path, sensors={"radar": {"type": "radar", "config": str(ours), "mount": [0.5, 0, 1.0, 0, 0, 0]}},
                         entities=[{"name": "crate", "trajectory": {"waypoints": [[5.0, -6.0, 0.5], [5.0, 6.0, 0.5]],
                                                                    "speed": 10.0}}],
                         trajectory={"waypoints": [[0.0, 0.0], [0.001, 0.0]], "speed": 0.0001})
    run_scenario(path, tmp_path / "run.mcap", quiet=True)
    with AnyReader([tmp_path / "run.mcap"], default_typestore=get_typestore(Stores.ROS2_JAZZY)) as reader:
        images = [reader.deserialize(raw, c.msgtype) for c, _, raw in reader.messages() if c.topic == "/radar/image"]
    assert len(images) == 5
    for k, m in enumerate(images):
        counts = np.frombuffer(bytes(m.data), np.uint8).reshape(m.height, m.width).astype(np.float64)
        rise = np.median(counts, axis=0)
        column = int(np.argmax(rise))
        # that azimuth's firing time (a sector of 100 azimuths every 0.1 s); the crate moves on through every frame,
        # the first included (the scenario gives its velocity with its pose: Entity.twist)
        fired = k * 0.1 + column / 1000.0
        bearing = math.degrees(math.atan2(-6.0 + 10.0 * fired, 5.0 - 0.5))
        assert abs(column * -0.9 - bearing) <= 1.0, (k, column, bearing, rise)  # within our beam (1.8 degrees)
        assert rise[column] > np.median(rise) + 20, rise  # 10 dB (0.5 dB a count) over the typical line


# --- another radar of our own rig (interference.on_sensor) --------------------------------------------------------

def test_a_radar_of_our_rig_is_where_our_pose_puts_it(other_yaml):
    """On our platform at (D, 0, 0) heading 180 in our sensor's frame: with our radar at the origin, the bursts and
    tones of the radar fixed in the world there; with our radar anywhere else (moved, turned, tilted), the same."""
    for chirp, shift in (("down", 0.0), ("up", 200e-9)):
        fixed = victim(other_yaml, chirp=chirp, shift_s=shift)
        rig = fixed.with_overrides({"interference.on_sensor": True})
        want = heard(fixed)
        for pose in (np.eye(4), pose_to_matrix(120.0, -35.0, 2.0, roll=0.1, pitch=-0.05, yaw=2.3)):
            got = heard(rig, pose=pose)
            for a, b in zip(want, got):
                assert np.array_equal(a.azimuth, b.azimuth)
            assert np.allclose(got[0].power_w, want[0].power_w, rtol=1e-9, atol=0.0)
            assert np.allclose(np.abs(got[1].amplitude), np.abs(want[1].amplitude), rtol=1e-9, atol=0.0)
            assert np.allclose(got[1].range_m, want[1].range_m, rtol=0.0, atol=1e-6)


def test_a_radar_of_our_rig_shows_its_spoke_wherever_we_drive(other_yaml):
    """A whole 40-azimuth frame with the rig's other radar 30 m along our sensor's +x: the column that looks along
    +x (column 0) rises most, at the world's origin and with our radar moved and turned 2 rad."""
    cfg = victim(other_yaml, count=40, step_deg=9.0).with_overrides({"scatter.speckle": "true",
                                                                    "interference.on_sensor": True})
    alone = cfg.with_overrides({"interference.preset": "", "interference.on_sensor": False})
    for pose in (pose_to_matrix(0.0, 0.0, 0.0), pose_to_matrix(-20.0, 60.0, 0.0, yaw=2.0)):
        scene = Scene()
        scene.add_entity("block", primitives.box((4.0, 4.0, 4.0)), pose @ pose_to_matrix(-40.0, 0.0, -5.0))
        gain_db = _rise_db(*(_frame_in(scene, c, pose=pose) for c in (cfg, alone)))
        assert int(np.argmax(gain_db)) == 0 and gain_db[0] > 25.0, gain_db


# --- more radars: interference.others ---------------------------------------------------------------------------

def _others_file(tmp_path, other_yaml, entries):
    path = tmp_path / "others.yaml"
    path.write_text(yaml.safe_dump([{"preset": str(other_yaml), **e} for e in entries]))
    return str(path)


def test_each_listed_radar_is_heard_as_if_it_were_the_only_one(tmp_path, other_yaml):
    """Two more radars from a file (30 m along +x facing us; 30 m along +y facing us), none in the section: each
    one's bursts are, bit for bit, those of the section naming that radar alone."""
    clock = 2 * T - D / C
    entries = [{"x_m": D, "heading_deg": 180.0, "clock_offset_s": clock},
               {"y_m": D, "heading_deg": -90.0, "clock_offset_s": clock}]
    single = victim(other_yaml)
    listed = single.with_overrides({"interference.preset": "", "interference.x_m": 0.0, "interference.heading_deg": 0.0,
                                    "interference.clock_offset_s": None,
                                    "interference.others": _others_file(tmp_path, other_yaml, entries)})
    others = interferers.interferers_of(listed)
    assert [o.index for o in others] == [1, 2]
    a = listed.azimuth.count
    for other, entry in zip(others, entries):
        alone = single.with_overrides({f"interference.{k}": v for k, v in {"x_m": 0.0, "y_m": 0.0, **entry}.items()})
        args = (np.zeros((a, 3)), np.broadcast_to(np.eye(3), (a, 3, 3)), np.arange(a, dtype=np.int64) * round(T * 1e9), 0,
                lambda o, d, r: np.full(len(o), True))
        got = interference.returns(listed, other, *args)[0]
        want = interference.returns(alone, interferers.interferers_of(alone)[0], *args)[0]
        assert got.azimuth.tolist() == want.azimuth.tolist() and len(got.azimuth)
        assert got.power_w.tobytes() == want.power_w.tobytes()


def test_a_frame_with_two_listed_radars_shows_both_spokes(tmp_path, other_yaml):
    """40 azimuths 9 degrees apart: the section's radar along +x (column 0 looks there) and a listed one along -y
    (column 30): with both, both columns rise > 25 dB and no column far from them > 15 dB; the section's alone, one."""
    cfg = victim(other_yaml, count=40, step_deg=9.0).with_overrides({"scatter.speckle": "true"})
    clock = 2 * T - D / C
    both = cfg.with_overrides({"interference.others": _others_file(tmp_path, other_yaml, [
        {"y_m": -D, "heading_deg": 90.0, "clock_offset_s": clock}])})
    alone = _frame(cfg.with_overrides({"interference.preset": ""}))
    one = _rise_db(_frame(cfg), alone)
    two = _rise_db(_frame(both), alone)
    assert one[0] > 25.0 and one[30] < 10.0, one
    assert two[0] > 25.0 and two[30] > 25.0, two
    assert set(np.flatnonzero(two > 15.0)) <= {39, 0, 1, 29, 30, 31}, two


@pytest.mark.parametrize("content, message", [
    (None, "file not found"),
    ("{preset: navtech_ras6}", "expected a list of 1 to 16 radars"),
    ([{"preset": "navtech_ras6"}] * 17, "expected a list of 1 to 16 radars"),
    ([{"preset": "navtech_ras6", "colour": 3}], r"radar 0: unknown key\(s\) \['interference.colour'\]"),
    ([{"preset": "navtech_ras6"}, {"x_m": 3.0}], r"radar 1: preset: required"),
    ([{"preset": "navtech_ras6"}, {"preset": "nope"}], r"radar 1: preset = 'nope'"),
    ([{"preset": "navtech_ras6", "others": "x.yaml"}], r"radar 0: expected a mapping of the interference keys but others"),
    ([{"preset": "navtech_ras6", "entity": "car", "on_sensor": True}], r"radar 0: entity = 'car' and on_sensor = true"),
    ([{"preset": "navtech_ras6", "x_m": "far"}], r"radar 0: interference.x_m = 'far': not a number"),
])
def test_a_bad_others_file_is_one_error_naming_the_file_and_the_radar(tmp_path, content, message):
    path = tmp_path / "others.yaml"
    if content is not None:
        path.write_text(content if isinstance(content, str) else yaml.safe_dump(content))
    with pytest.raises(ConfigError, match=message) as caught:
        RadarConfig.from_dict({"sensor": {"model": "physical"}, "interference": {"others": str(path)}}, origin="test")
    assert "\n" not in str(caught.value) and str(path) in str(caught.value)


def test_an_edited_others_file_is_read_again(tmp_path, other_yaml):
    path = _others_file(tmp_path, other_yaml, [{"x_m": 5.0}])
    cfg = RadarConfig.from_dict({"sensor": {"model": "physical"}, "interference": {"others": path}}, origin="test")
    assert [o.position[0] for o in interferers.interferers_of(cfg)] == [5.0]
    _others_file(tmp_path, other_yaml, [{"x_m": 6.0}, {"x_m": 7.0}])
    stat = os.stat(path)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert [o.position[0] for o in interferers.interferers_of(cfg)] == [6.0, 7.0]


def test_the_carrier_is_a_model_or_one_of_its_entities_and_the_whole_model_passes():
    scene = Scene()
    ids = [scene.add_entity(name, primitives.box((1.0, 1.0, 1.0)), pose_to_matrix(float(k), 0.0, 0.0), static=False)
           for k, name in enumerate(["truck::body::v", "truck::cab::v", "van::body::v"])]
    entity, carrier = interferers.carrier_of(scene, "truck")
    assert entity.id == ids[0] and carrier == {ids[0], ids[1]}  # the model's first entity; its whole model passes
    entity, carrier = interferers.carrier_of(scene, "truck::cab::v")
    assert entity.id == ids[1] and carrier == {ids[0], ids[1]}
    assert interferers.carrier_of(scene, "truck::roof::v") is None and interferers.carrier_of(scene, "bus") is None
    # the scene's model index follows removals and additions: the model's first entity is then the next one
    scene.remove_entity(ids[0])
    later = scene.add_entity("truck::trailer::v", primitives.box((1.0, 1.0, 1.0)), static=False)
    entity, carrier = interferers.carrier_of(scene, "truck")
    assert entity.id == ids[1] and carrier == {ids[1], later}
    assert [e.id for e in scene.model_entities("truck")] == [ids[1], later] and scene.model_entities("truckx") == []
    scene.remove_entity(ids[1])
    scene.remove_entity(later)
    assert interferers.carrier_of(scene, "truck") is None and [e.id for e in scene.model_entities("van")] == [ids[2]]


def test_a_plate_moving_off_the_line_of_sight_lets_the_spoke_through_from_its_azimuth_time_on(other_yaml):
    """scatter.moving_entities sweep: a 0.2 m plate on the line between the radars at the frame's start, moving
    across it at 30 m/s, clears it after 0.1 / 30 s = 3.3 ms: the columns (0.6 ms apart, all toward the other
    radar) from the sixth on hear it ~30 dB over the frame without it past both radars, the first five none; in
    frame mode none."""
    def frame(mode, preset=True):
        scene = Scene()
        scene.add_entity("block", primitives.box((4.0, 4.0, 4.0)), pose_to_matrix(-40.0, 0.0, -5.0))
        plate = scene.add_entity("plate", primitives.box((0.3, 0.2, 10.0)), pose_to_matrix(15.0, 0.0, 0.0), static=False)
        scene.set_poses([(plate, pose_to_matrix(15.0, 0.0, 0.0))], twists=[((0.0, 30.0, 0.0), (0.0, 0.0, 0.0))])
        cfg = victim(other_yaml, count=12).with_overrides({"scatter.moving_entities": mode})
        return _frame_in(scene, cfg if preset else cfg.with_overrides({"interference.preset": ""}))

    alone = frame("sweep", preset=False)  # the plate's own echo is in both: compare the bins past the radars
    gain_db = _rise_db(frame("sweep"), alone)
    assert np.all(np.abs(gain_db[:5]) < 0.01) and np.all(gain_db[6:] > 25.0), gain_db
    blocked = _rise_db(frame("frame"), frame("frame", preset=False))
    assert np.all(np.abs(blocked) < 0.01), blocked
