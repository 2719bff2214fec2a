"""Gazebo Harmonic as scripts/setup_gz_harmonic.sh builds it (test infrastructure): where the cache is,
whether each stage is complete, the environment its programs need, and its official Python bindings.

The bindings and libraries carry no run path: a subprocess gets LD_LIBRARY_PATH (`environment`), this
process preloads the libraries with ctypes before importing gz.transport13 (`import_bindings`)."""
from __future__ import annotations

import ctypes
import functools
import importlib
import os
import re
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


@functools.lru_cache(maxsize=1)
def import_bindings():
    """(gz.transport13, gz.msgs10): the official bindings built in the cache, importable in this process."""
    p = prefix()
    pending = sorted(f for f in (p / "lib").glob("libgz-*.so.*") if re.fullmatch(r"libgz-.+\.so\.\d+", f.name))
    for _ in range(len(pending)):  # load in whatever order their dependencies allow
        left = []
        for library in pending:
            try:
                ctypes.CDLL(str(library), mode=ctypes.RTLD_GLOBAL)
            except OSError:
                left.append(library)
        if not left:
            break
        pending = left
    sys.path.insert(0, str(p / "lib" / "python"))
    return importlib.import_module("gz.transport13"), importlib.import_module("gz.msgs10")
