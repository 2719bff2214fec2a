"""Shipped data: the one way to find the files the package reads (presets, tables, worlds, scenarios).

Everything the code reads lives in the package itself, under `radarays_ros/data/`, and is found through
`importlib.resources`. Package data goes wherever the modules go, so the same lookup works from a
source checkout, an editable install, a wheel (`pip install .`) and `colcon build` with or without
`--symlink-install` (setup.py declares the files as package_data; the package is not zip-safe, so
every file is a real file on disk that trimesh, the SDF reader and DDS can open by path).

    data_path("radar", "navtech_cir204.yaml")   # a shipped file (ConfigError naming it if absent)
    shipped("world", "office")                   # a shipped world by name -> .../data/worlds/office.sdf
    shipped_names("scenario")                    # ['hall_demo', 'office_demo', ...]

Files ROS users expect in the share folder (launch files, URDF, RViz, node parameter files) are
installed there by setup.py; the worlds and scenarios are installed there too, as copies of these.
"""
from __future__ import annotations

import os
from importlib import resources as _resources
from pathlib import Path

from .errors import ConfigError

# kind -> (folder under data/, file suffix, what a person calls it)
KINDS = {
    "world": ("worlds", ".sdf", "shipped world"),
    "scenario": ("scenarios", ".yaml", "shipped scenario"),
    "radar": ("radar", ".yaml", "radar preset"),
    "lidar": (os.path.join("lidar", "presets"), ".yaml", "lidar preset"),
    "example": ("examples", ".yaml", "example config"),
}


def data_root() -> Path:
    """The folder holding the shipped data (radarays_ros/data) as a filesystem path."""
    root = _resources.files("radarays_ros") / "data"
    path = Path(str(root))
    if not path.is_dir():  # only a zipped install (never produced by setup.py) gets here
        raise ConfigError(f"radarays_ros data folder not found at {root}: reinstall the package "
                          "(pip install / colcon build) from its source")
    return path


def data_path(*parts: str, must_exist: bool = True) -> Path:
    """A shipped file or folder, e.g. data_path("materials", "default.yaml")."""
    path = data_root().joinpath(*parts)
    if must_exist and not path.exists():
        raise ConfigError(f"shipped data file {'/'.join(parts)} not found in {data_root()}")
    return path


def lidar_data_dir() -> Path:
    """The lidar tables and presets; RADARAYS_LIDAR_CONFIG names another folder of the same layout."""
    override = os.environ.get("RADARAYS_LIDAR_CONFIG")
    return Path(override) if override else data_path("lidar")


def _folder(kind: str) -> tuple[Path, str, str]:
    if kind not in KINDS:
        raise ConfigError(f"unknown kind of shipped data '{kind}'; kinds: {', '.join(KINDS)}")
    folder, suffix, label = KINDS[kind]
    base = lidar_data_dir() / "presets" if kind == "lidar" else data_path(folder, must_exist=False)
    return base, suffix, label


def shipped_names(kind: str) -> list[str]:
    """Names (file stems) of the shipped files of one kind, sorted; [] when there are none."""
    base, suffix, _ = _folder(kind)
    return sorted(p.stem for p in base.glob(f"*{suffix}")) if base.is_dir() else []


def find_shipped(kind: str, name: str) -> Path | None:
    """The shipped file of `kind` called `name` (case-insensitive, suffix optional), or None."""
    base, suffix, _ = _folder(kind)
    stem = name[:-len(suffix)] if name.lower().endswith(suffix) else name
    if not base.is_dir() or not stem or os.sep in stem or "/" in stem:
        return None
    for path in base.glob(f"*{suffix}"):
        if path.stem.lower() == stem.lower():
            return path
    return None


def shipped_example(text: str | os.PathLike) -> Path | None:
    """A shipped example (data/examples: a lidar sensor, a radar config, a material library) named by a bare
    name such as `spherical_16x1800` or `materials_room.yaml`, when no file of that name exists here: the
    README's examples then work from any folder and any install, not only from a checkout."""
    text = str(text)
    if not text or Path(text).expanduser().exists():
        return None
    return find_shipped("example", text)


def not_shipped(kind: str, name: str, problem: str = "") -> str:
    """The one message for a name that matches nothing: what was asked and every name that exists."""
    _, _, label = _folder(kind)
    names = shipped_names(kind)
    listing = ", ".join(names) if names else "none found (a broken install?)"
    return f"{problem or repr(name)}: not a {label}; {label}s: {listing}"


def shipped(kind: str, name: str) -> Path:
    """The shipped file of `kind` called `name`; ConfigError listing the names that exist."""
    path = find_shipped(kind, name)
    if path is None:
        raise ConfigError(not_shipped(kind, name))
    return path


def file_or_shipped(kind: str, text: str | os.PathLike) -> Path:
    """An existing file path as given, else the shipped file of that name (ConfigError listing names)."""
    path = Path(text).expanduser()
    if path.exists():
        return path
    found = find_shipped(kind, str(text))
    if found is None:
        raise ConfigError(not_shipped(kind, str(text), f"{text}: file not found"))
    return found
