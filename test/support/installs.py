"""Install the package the ways users do, for tests that run the installed code (not this checkout).

    colcon_build(tmp) -> install prefix of `colcon build` (no --symlink-install) in a fresh workspace
    wheel_venv(tmp)   -> a fresh venv with the built wheel pip-installed (dependencies through pip's
                         configured indexes and cache, as `pip install radarays_ros-*.whl` resolves them)
    installed_env(prefix) -> environment that runs the install space (what `source install/setup.bash` sets)

Importable as `support.installs` from any test (test/conftest.py puts test/ on sys.path).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from support.netns_common import refuse

REPO = Path(__file__).resolve().parents[2]
NOT_SOURCES = shutil.ignore_patterns(".git", ".venv", "build", "install", "log", "out", "__pycache__", "*.egg-info",
                                     ".pytest_cache")


def colcon_build(workspace: Path) -> Path:
    """`colcon build --packages-select radarays_ros` of a copy of the sources; returns install/radarays_ros."""
    colcon = shutil.which("colcon", path=str(Path(sys.executable).parent)) or shutil.which("colcon")
    if colcon is None:
        refuse("colcon build test", "colcon is not installed (pip install radarays_ros[test])")
    shutil.copytree(REPO, workspace / "src" / "radarays_ros", ignore=NOT_SOURCES)
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    result = subprocess.run([colcon, "build", "--packages-select", "radarays_ros"], cwd=workspace,
                            capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    return workspace / "install" / "radarays_ros"


def installed_env(prefix: Path) -> dict:
    """The environment of a sourced install space: its site-packages first, its executables on PATH."""
    version = sysconfig.get_python_version()
    site = prefix / "lib" / f"python{version}" / "site-packages"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(site)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env["AMENT_PREFIX_PATH"] = os.pathsep.join([str(prefix)] + [p for p in env.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p])
    env["PATH"] = os.pathsep.join([str(prefix / "lib" / "radarays_ros"), env.get("PATH", "")])
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def wheel_venv(tmp: Path) -> Path:
    """A fresh venv with the wheel pip-installed (its code and data only from the wheel); returns its bin/.

    The dependencies are the ones this test environment already installed (numpy, embreex, ...): a
    `.pth` file puts this environment's site-packages after the venv's own, so nothing is downloaded
    (the ROS tests run the whole session in a network namespace without PyPI). This checkout's own
    editable install is invisible there (its finder is loaded by a .pth of that folder, and .pth files
    of a folder added this way are not read); `pip check` then proves every declared dependency is met.
    """
    wheels = tmp / "wheels"
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                            str(wheels), str(REPO)], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    (wheel,) = wheels.glob("radarays_ros-*.whl")
    base = getattr(sys, "_base_executable", None) or sys.executable
    made = subprocess.run([base, "-m", "venv", str(tmp / "venv")], capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    bin_dir = tmp / "venv" / "bin"
    installed = subprocess.run([str(bin_dir / "python"), "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                                str(wheel)], capture_output=True, text=True)
    assert installed.returncode == 0, installed.stderr[-3000:]
    site = subprocess.run([str(bin_dir / "python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          capture_output=True, text=True, check=True).stdout.strip()
    Path(site, "zz_test_environment_dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    checked = subprocess.run([str(bin_dir / "python"), "-m", "pip", "check"], capture_output=True, text=True)
    missing = [line for line in checked.stdout.splitlines() if line.lower().startswith("radarays-ros")]
    assert not missing, "\n".join(missing)
    return bin_dir


def run_from(cwd: Path, argv: list[str], env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run an installed command from an unrelated directory, output captured as text."""
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
