"""The world a node's sensors see: a Scene and the Backend tracing it, loaded from a file or a shipped name.

One function for every place a node (re)loads its world, so a bad file is one ConfigError naming the
file, what is wrong and the parameter to fix, and nothing half-loaded reaches the sensors.
"""
from __future__ import annotations

from typing import Any

from ..errors import ConfigError, RadaraysError


def backend_options(backend: str, threads: int, device: str) -> dict[str, Any]:
    """make_backend options: tracing threads (0 = all cores); the device of the warp backend."""
    options: dict[str, Any] = {"threads": threads or None}
    if backend == "warp":
        options["device"] = device
    return options


def open_world(path: str, *, materials: str, ignore: tuple[str, ...], backend: str, options: dict):
    """(scene, backend) of a world file or shipped world name; ConfigError saying what is wrong and how to fix it."""
    from ..tracing import make_backend
    from ..world.loader import load_world

    if not path:
        raise ConfigError("parameter 'world' is empty: set it to a shipped world's name, an SDF world, model "
                          "directory, URDF or mesh file (--ros-args -p world:=/path/to/world.sdf)")
    try:
        scene = load_world(path, materials=materials or None, ignore=ignore)
        return scene, make_backend(backend, scene, **options)
    except (RadaraysError, OSError) as exc:
        raise ConfigError(f"world {path!r} not loaded: {exc}") from None


def empty_world(backend: str, options: dict):
    """(scene, backend) of a world with nothing in it: sensors can be built (and publish nothing) before a
    good world is given."""
    from ..tracing import make_backend
    from ..world.scene import Scene

    scene = Scene(source="<no world>")
    return scene, make_backend(backend, scene, **options)
