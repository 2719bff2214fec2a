"""Trajectory interpolation against geometry: linear position, constant-rate yaw (slerp), clamping, CSV."""
import math

import numpy as np
import pytest

from radarays_ros.errors import ConfigError
from radarays_ros.world.trajectory import Trajectory, poses_at
from radarays_ros.world.transforms import matrix_to_rpy, pose_to_matrix


def test_midpoints_interpolate_position_linearly_and_yaw_at_constant_rate():
    tr = Trajectory([0, 2_000_000_000], [pose_to_matrix(0, 0, 0, 0, 0, 0), pose_to_matrix(4, -2, 1, 0, 0, 2.0)])
    for fraction in (0.0, 0.25, 0.5, 0.9, 1.0):
        pose = tr.at([int(fraction * 2e9)])[0]
        np.testing.assert_allclose(pose[:3, 3], np.array([4, -2, 1]) * fraction, atol=1e-9)
        assert matrix_to_rpy(pose)[2] == pytest.approx(2.0 * fraction, abs=1e-9)


def test_times_outside_clamp_to_the_ends_and_a_fixed_pose_broadcasts():
    a, b = pose_to_matrix(1, 0, 0), pose_to_matrix(2, 0, 0)
    tr = Trajectory([10, 20], [a, b])
    np.testing.assert_allclose(tr.at([0, 30]), [a, b])
    np.testing.assert_allclose(poses_at(a, [1, 2, 3]), [a, a, a])


def test_csv_with_header(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("t,x,y,z,roll,pitch,yaw\n0,0,0,0,0,0,0\n1.5,3,0,0,0,0,%r\n" % (math.pi / 2))
    tr = Trajectory.from_csv(path)
    assert list(tr.t_ns) == [0, 1_500_000_000]
    np.testing.assert_allclose(tr.at([750_000_000])[0][:3, 3], [1.5, 0, 0])


@pytest.mark.parametrize("text, message", [
    ("0,0,0,0,0,0\n", "expected 7 columns"),
    ("0,0,0,0,0,0,0\n0,1,0,0,0,0,0\n", "strictly increasing"),
    ("0,0,0,0,0,0,0\n1,nan,0,0,0,0,0\n", "NaN"),
    ("t,x\n", "no rows of numbers"),
])
def test_bad_csv_names_the_file_and_the_problem(tmp_path, text, message):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        Trajectory.from_csv(path)
