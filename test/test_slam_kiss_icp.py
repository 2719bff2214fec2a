"""Used by SLAM: KISS-ICP (PyPI kiss-icp) on a simulated street drive, scored with evo against the bag's truth.

The shipped scenario street_slalom (worlds/street.sdf: five buildings, parked and oncoming cars, poles, trees,
a sign; 8 m/s slalom with yaw rates up to 31 deg/s) runs a roof VLP-16 and OS1-64 (512 x 10 Hz) with motion
distortion and the realistic effects profile into an MCAP bag; benchmarks/slam_kiss_icp.py reads it with
rosbags alone (clouds with per-point times, /tf and /tf_static truth), runs KISS-ICP with deskewing on and off
and scores both with evo.

The band: KISS-ICP reports 0.49 % relative translational error on KITTI odometry 00-10 (HDL-64E, segments of
100-800 m; Vizzo et al., RA-L 2023, as the authors quote it in PRBonn/kiss-icp issue #315, where a user
measured 0.6 %). A 16/64-beam sensor on 20 m segments (the street is 60 m long) gets a looser bound: 2 %.
Measured on this scenario (`python benchmarks/slam_kiss_icp.py`, 2026-11-28 16:10 UTC, after the realistic
profile gained leaf volumes and counter draws and the VLP-16 its published 1.77 cm): VLP-16 1.24 % / OS1-64 0.85 %
drift per 20 m with deskewing, 2.15 % / 1.61 % without; ATE 0.16 / 0.12 m with, 0.25 / 0.20 m without.
"""
from __future__ import annotations

import pytest

pytest.importorskip("kiss_icp")
pytest.importorskip("evo")

from benchmarks import slam_kiss_icp as slam  # noqa: E402

DRIFT_BAND_PCT = 2.0   # 4x KISS-ICP's KITTI figure (0.49 %), for sparser sensors and shorter segments
ATE_BAND_M = 0.3       # over a 48 m path
DESKEW_GAIN = 1.3      # deskewing must cut the drift by at least this factor: the distortion is in the clouds


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    bag = tmp_path_factory.mktemp("slam") / "street_slalom.mcap"
    slam.simulate("street_slalom", bag)
    return slam.evaluate(bag, ["vlp16", "os1"])


@pytest.mark.slow
@pytest.mark.parametrize("sensor", ["vlp16", "os1"])
def test_kiss_icp_drift_on_the_simulated_street_is_within_the_published_band(rows, sensor):
    on = next(r for r in rows if r["sensor"] == sensor and r["deskew"])
    assert on["scans"] >= 55 and 45 < on["path_m"] < 52, slam.table(rows)
    assert on["drift_pct"] <= DRIFT_BAND_PCT, slam.table(rows)
    assert on["ate_m"] <= ATE_BAND_M, slam.table(rows)


@pytest.mark.slow
@pytest.mark.parametrize("sensor", ["vlp16", "os1"])
def test_deskewing_off_shows_the_motion_distortion(rows, sensor):
    """The clouds are skewed by the motion over a sweep (per-point times): KISS-ICP without its deskewing
    drifts more. Clouds without distortion (or without usable times) would show no such gain."""
    on = next(r for r in rows if r["sensor"] == sensor and r["deskew"])
    off = next(r for r in rows if r["sensor"] == sensor and not r["deskew"])
    assert off["drift_pct"] >= DESKEW_GAIN * on["drift_pct"], slam.table(rows)
    assert off["ate_m"] > on["ate_m"], slam.table(rows)


def test_the_slam_script_answers_help():
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "benchmarks/slam_kiss_icp.py", "--help"], cwd=repo, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and "usage:" in done.stdout, done.stderr[-2000:]
