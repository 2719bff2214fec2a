"""Gazebo Harmonic as scripts/setup_gz_harmonic.sh builds it (test infrastructure): where the cache is,
whether each stage is complete, the environment its programs need, and its official Python bindings.

The bindings and libraries carry no run path: a subprocess gets LD_LIBRARY_PATH (`environment`), this
process preloads the libraries with ctypes before importing gz.transport13 (`import_bindings`)."""
from __future__ import annotations

import ctypes
import functools
import importlib
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SETUP = REPO / "scripts" / "setup_gz_harmonic.sh"
PEER13 = Path(os.environ.get("RADARAYS_GZ_PEER13", REPO / "build" / "gz_peer13" / "gz_peer"))


@functools.lru_cache(maxsize=1)
def prefix() -> Path | None:
    """The install prefix of the cache for the archives in ../shared (complete or not); None without them."""
    done = subprocess.run(["bash", str(SETUP), "--print-prefix"], capture_output=True, text=True, cwd=REPO)
    return Path(done.stdout.strip()) if done.returncode == 0 and done.stdout.strip() else None


def stage_complete(stage: str) -> bool:
    """Stage 'transport' (gz-transport13 + bindings) or 'server' (gz sim -s) built completely."""
    p = prefix()
    return p is not None and (p / f".stage-{stage}-complete").is_file()


def missing(stage: str) -> str:
    """Why a stage cannot be used, for a skip (or a CI failure)."""
    p = prefix()
    if p is None:
        return "no Gazebo Harmonic archives in ../shared/vendor/gz-harmonic"
    return (f"Gazebo Harmonic stage '{stage}' is not built in {p} "
            f"(bash scripts/setup_gz_harmonic.sh builds it; scripts/setup_env.sh --test runs that)")


def environment(base: dict | None = None) -> dict:
    """`base` (default os.environ) with what the Harmonic programs and bindings need at run time."""
    p = prefix()
    env = dict(os.environ if base is None else base)
    lib = str(p / "lib")
    env["LD_LIBRARY_PATH"] = lib + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    env["PATH"] = f"{p / 'bin'}:{env.get('PATH', '')}"
    env["GZ_CONFIG_PATH"] = str(p / "share" / "gz")
    env["PYTHONPATH"] = str(p / "lib" / "python") + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


# What the gz.transport13 and gz.math7 extensions link, in load order (readelf -d: transport13 -> msgs10 ->
# utils2; math7 alone).
# Only these: preloading every libgz-* also loaded gz-tools' backward library, whose constructor replaces
# faulthandler's SIGSEGV handler (a test process that crashed printed no Python traceback), and a dozen
# libraries the bindings never call (gz-common, fuel-tools, physics, plugin loaders).
BINDINGS_LIBRARIES = ("libgz-utils2.so.2", "libgz-msgs10.so.10", "libgz-transport13.so.13", "libgz-math7.so.7")


@functools.lru_cache(maxsize=1)
def import_bindings():
    """(gz.transport13, gz.msgs10): the official bindings built in the cache, importable in this process
    (gz.math7 too)."""
    p = prefix()
    for name in BINDINGS_LIBRARIES:
        ctypes.CDLL(str(p / "lib" / name), mode=ctypes.RTLD_GLOBAL)
    sys.path.insert(0, str(p / "lib" / "python"))
    return importlib.import_module("gz.transport13"), importlib.import_module("gz.msgs10")


# -- a headless gz-sim 8 server (stage 'server') --------------------------------------------------------
def world_head(name: str) -> str:
    """The opening of a test world: SDF header, 1 ms steps, and the Physics, UserCommands and SceneBroadcaster
    systems; the caller adds models and closes </world></sdf>."""
    return f"""<?xml version="1.0"?>
<sdf version="1.11">
  <world name="{name}">
    <physics name="1ms" type="ignored"><max_step_size>0.001</max_step_size><real_time_factor>1.0</real_time_factor></physics>
    <plugin filename="gz-sim-physics-system" name="gz::sim::systems::Physics"/>
    <plugin filename="gz-sim-user-commands-system" name="gz::sim::systems::UserCommands"/>
    <plugin filename="gz-sim-scene-broadcaster-system" name="gz::sim::systems::SceneBroadcaster"/>
"""


def e2e_world(name: str = "e2e") -> str:
    """A world for the end-to-end tests: ground (asphalt), a wall at x = 6 (metal), a 1 m box 'mover' that
    drives (VelocityControl: 0.4 m/s forward, 0.2 rad/s; it starts at (0, 3) heading +x), and a 1 m box 'doomed' at (-4, -3). No Sensors system: no render
    engine on this server."""
    return world_head(name) + f"""    <model name="ground"><static>true</static><link name="link">
      <collision name="c"><geometry><plane><normal>0 0 1</normal><size>40 40</size></plane></geometry></collision>
      <visual name="visual"><geometry><plane><normal>0 0 1</normal><size>40 40</size></plane></geometry>
        <radarays><material>asphalt</material></radarays></visual></link></model>
    <model name="wall"><static>true</static><pose>6 0 1 0 0 0</pose><link name="link">
      <visual name="visual"><geometry><box><size>0.4 8 2</size></box></geometry>
        <radarays><material>metal</material></radarays></visual></link></model>
    <model name="mover"><pose>0 3 0.5 0 0 0</pose><link name="link">
      <inertial><mass>1</mass></inertial>
      <visual name="visual"><geometry><box><size>1 1 1</size></box></geometry></visual></link>
      <plugin filename="gz-sim-velocity-control-system" name="gz::sim::systems::VelocityControl">
        <initial_linear>0.4 0 0</initial_linear><initial_angular>0 0 0.2</initial_angular>
      </plugin></model>
    <model name="doomed"><static>true</static><pose>-4 -3 0.5 0 0 0</pose><link name="link">
      <visual name="visual"><geometry><box><size>1 1 1</size></box></geometry></visual></link></model>
  </world>
</sdf>
"""


class GzServer:
    """`gz sim -s -r` (TPE physics, headless) of a world file, in its own process group."""

    def __init__(self, world_file: Path, partition: str, env: dict | None = None):
        self.world_file, self.partition = Path(world_file), partition
        self.proc: subprocess.Popen | None = None
        self.env = env  # None: environment()

    def start(self) -> "GzServer":
        env = dict(self.env) if self.env is not None else environment()
        env.update(GZ_PARTITION=self.partition, GZ_IP="127.0.0.1", IGN_PARTITION=self.partition, IGN_IP="127.0.0.1")
        log = open(self.world_file.with_suffix(".server.log"), "ab")
        self.proc = subprocess.Popen(
            ["gz", "sim", "-s", "-r", "--headless-rendering", "--physics-engine", "gz-physics-tpe-plugin",
             str(self.world_file)], env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        return self

    def log(self) -> str:
        path = self.world_file.with_suffix(".server.log")
        return path.read_text(errors="replace")[-3000:] if path.exists() else ""

    def kill(self) -> None:
        """SIGKILL: a crashed Gazebo (no BYE)."""
        import signal

        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def stop(self) -> None:
        import signal

        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGINT)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()


# -- Python systems in the server (gz-sim 8's python_system_loader, gazebo/system.py) -----------------
def python_systems_missing() -> str | None:
    """Why the cache cannot run Python systems (None when it can): the loader system and the bindings it
    imports (gz.sim8, sdformat14, and gz.math7 for poses), built by setup_gz_harmonic.sh since gz-sim8's
    stamp records them."""
    if not stage_complete("server"):
        return missing("server")
    p = prefix()
    wanted = {"python_system_loader system": "lib/**/libgz-sim*-python-system-loader-system.so*",
              "gz.sim8 bindings": "lib/python/gz/sim8*.so", "gz.math7 bindings": "lib/python/gz/math7*.so",
              "sdformat14 bindings": "lib/python/sdformat14*.so"}
    lacking = [what for what, pattern in wanted.items() if not any(p.glob(pattern))]
    if lacking:
        return (f"the Gazebo Harmonic cache {p} lacks {', '.join(lacking)} (built before gz-sim8 got its Python "
                f"bindings; bash scripts/setup_gz_harmonic.sh builds them)")
    return None


def python_system_environment(base: dict | None = None) -> dict:
    """`environment()` for a server that loads radarays_ros.gazebo.system: this checkout and this
    interpreter's packages (numpy, embree, ...) on the embedded interpreter's path, after the bindings."""
    import sysconfig

    env = environment(base)
    paths = [str(p / "lib" / "python") for p in [prefix()]] + [str(REPO)]
    for key in ("purelib", "platlib"):
        if sysconfig.get_paths()[key] not in paths:
            paths.append(sysconfig.get_paths()[key])
    rest = env.get("PYTHONPATH", "")
    env["PYTHONPATH"] = ":".join(paths) + (":" + rest if rest else "")
    return env
