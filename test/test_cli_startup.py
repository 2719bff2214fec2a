"""`radarays --help` (and a subcommand's) loads neither numba nor scipy: each subcommand module imports its heavy
dependencies when it runs, so asking for help does not wait seconds for a compiler (measured under load: 1.1-1.3 s
against 3.3-4.3 s when every subcommand imported numba and scipy first). Checked on sys.modules of a fresh
interpreter, not on the clock."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PROBE = """
import json, sys
from radarays_ros.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted(m for m in ("numba", "scipy", "matplotlib", "trimesh", "embreex", "warp") if m in sys.modules)),
      file=sys.stderr)
"""


@pytest.mark.parametrize("argv", [["--help"], ["radar", "--help"], ["lidar", "--help"], ["fit", "lidar", "--help"]])
def test_help_loads_no_compiler_and_no_scipy(argv):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, env=env, timeout=120)
    assert "usage: radarays" in done.stdout, done.stderr
    loaded = json.loads(done.stderr.strip().splitlines()[-1])
    assert loaded == [], f"`radarays {' '.join(argv)}` imported {loaded}"
