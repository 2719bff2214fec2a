"""What users hit on the command line: an unquoted pose, angles in degrees without --degrees, a closed pipe,
--collision on a world without collision elements, `--set` numbers in exponent form, numpy reprs in errors."""
import os
import subprocess
import sys

import numpy as np
import pytest

from radarays_ros.cli import main
from radarays_ros.config_file import parse_scalar
from radarays_ros.errors import ConfigError
from radarays_ros.radar import RadarConfig

BOX = ('<?xml version="1.0"?><sdf version="1.9"><world name="w"><model name="m"><static>true</static>'
       '<link name="l"><visual name="v"><geometry><box><size>1 1 1</size></box></geometry></visual></link>'
       '</model></world></sdf>')


def test_an_unquoted_pose_gets_a_hint_to_quote_it(capsys):
    assert main(["world", "panorama", "office", "--pose", "0", "0", "1", "0", "0", "90", "--out", "x.png"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == ('radarays: error: --pose takes the six numbers as one argument: quote them, e.g. '
                           '--pose "0 0 1 0 0 90" (x y z roll pitch yaw; metres and radians, or degrees with --degrees)')


def test_an_angle_beyond_two_pi_without_degrees_warns(tmp_path, capsys):
    out = tmp_path / "p.png"
    assert main(["world", "panorama", "office", "--pose", "2 0 1 0 0 90", "--width", "16", "--out", str(out)]) == 0
    assert "warning: --pose angle(s) 90 exceed 2 pi radians; add --degrees" in capsys.readouterr().err
    assert main(["world", "panorama", "office", "--pose", "2 0 1 0 0 90", "--degrees", "--width", "16",
                 "--out", str(out), "--overwrite"]) == 0
    assert "warning" not in capsys.readouterr().err


@pytest.mark.slow
def test_a_closed_pipe_ends_without_a_traceback():
    """The one test of `radarays` as a real process (python -m radarays_ros.cli): the others call main here."""
    read, write = os.pipe()
    os.close(read)  # the reader (`head`) is already gone: the first write meets EPIPE
    try:
        done = subprocess.run([sys.executable, "-m", "radarays_ros.cli", "lidar", "--list-presets"], stdout=write,
                              stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write)
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr, done.stderr
    assert done.returncode == 1


def test_collision_on_a_world_without_collision_elements_says_so(tmp_path, capsys):
    (tmp_path / "box.sdf").write_text(BOX)
    assert main(["world", "info", str(tmp_path / "box.sdf"), "--collision"]) == 0
    assert "collision geometry was asked for (--collision) and the world has none" in capsys.readouterr().out


@pytest.mark.parametrize("text, value", [("1e-7", 1e-7), ("1E5", 1e5), ("-3e2", -300.0), ("10", 10), ("true", True),
                                         ("[1, 2]", [1, 2]), ("abc", "abc"), (".inf", float("inf"))])
def test_set_values_are_numbers_when_they_read_as_numbers(text, value):
    assert parse_scalar(text) == value and type(parse_scalar(text)) is type(value)


def test_radar_set_accepts_an_exponent():
    assert RadarConfig().with_overrides({"noise.energy_min": "1e-7"}).noise.energy_min == pytest.approx(1e-7)


def test_errors_print_plain_numbers():
    assert str(ConfigError(f"x = {np.float64(0.25)!r}, n = {np.int64(3)!r}")) == "x = 0.25, n = 3"
