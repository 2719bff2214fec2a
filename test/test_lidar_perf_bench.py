"""`bench_lidar --one-thread-cpu` (the README's before/after CPU ratios) runs on a small world and prints a
ratio for every sensor asked; the figures themselves are not asserted (tests never assert times)."""
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_one_thread_cpu_prints_a_ratio_per_sensor():
    sensors = ["VLP-16", "VLP-16+realistic"]
    done = subprocess.run([sys.executable, "-m", "benchmarks.bench_lidar", "--triangles", "20000", "--repeats", "1",
                           "--one-thread-cpu", "--sensors", *sensors], cwd=REPO, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    for sensor in sensors:
        line = next(row for row in done.stdout.splitlines() if row.startswith(sensor + " "))
        ratio = float(re.search(r": ([\d.]+)x \(median", line)[1])
        assert ratio > 0.5  # a frame traces its rays: at least about the bare trace's CPU
    assert "load average" in done.stdout
