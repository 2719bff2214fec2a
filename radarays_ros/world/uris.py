"""Resolve the URIs of SDF/URDF files (model://, package://, file://, Fuel, relative, absolute) to paths.

Search order (as gz-sim resolves resources):

1. `model://NAME/rest`: every resource path (the `resource_paths` argument, then GZ_SIM_RESOURCE_PATH,
   IGN_GAZEBO_RESOURCE_PATH, GAZEBO_MODEL_PATH, SDF_PATH, each ':'-separated, a `file://` prefix stripped),
   then the directory of the referring file and its parent, then the Fuel cache.
2. `package://PKG/rest`: `<prefix>/share/PKG/rest` for every AMENT_PREFIX_PATH prefix, then the resource
   paths as for model:// (Gazebo's own fallback).
3. `file:///abs`, `/abs`: the path itself; `file://rel`, `rel`: relative to the referring file's directory,
   then to every resource path.
4. `https://fuel.gazebosim.org/1.0/OWNER/models/NAME[/VERSION][/files/rest]`: the local Fuel cache
   `~/.gz/fuel/<host>/<owner>/models/<name>/<version>/rest` (also ~/.ignition/fuel); the newest cached
   version unless the URI names one. Nothing is downloaded.

`resolve` raises WorldError naming the URI, the referring element and every place searched.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import unquote, urlparse

from ..errors import WorldError

RESOURCE_ENV_VARS = ("GZ_SIM_RESOURCE_PATH", "IGN_GAZEBO_RESOURCE_PATH", "GAZEBO_MODEL_PATH", "SDF_PATH")


def _split_env(value: str | None) -> list[Path]:
    out = []
    for part in (value or "").split(os.pathsep):
        part = part.strip()
        if part.startswith("file://"):
            part = part[len("file://"):]
        if part:
            out.append(Path(part).expanduser())
    return out


MAX_URI_LENGTH = 4096  # PATH_MAX on Linux: a longer URI names no file

class ResourceResolver:
    """Turns URIs into existing paths along the configured and environment search paths."""

    def __init__(self, resource_paths=(), env: dict | None = None, fuel_roots=None):
        env = os.environ if env is None else env
        self.resource_paths: list[Path] = [Path(p).expanduser() for p in resource_paths]
        for var in RESOURCE_ENV_VARS:
            self.resource_paths += _split_env(env.get(var))
        self.ament_prefixes = _split_env(env.get("AMENT_PREFIX_PATH"))
        if fuel_roots is None:
            home = Path(env.get("HOME", str(Path.home())))
            fuel_roots = [home / ".gz" / "fuel", home / ".ignition" / "fuel"]
            if env.get("GZ_FUEL_CACHE_PATH"):
                fuel_roots.insert(0, Path(env["GZ_FUEL_CACHE_PATH"]))
        self.fuel_roots = [Path(p) for p in fuel_roots]

    def resolve(self, uri: str, base_dir: str | Path | None = None, what: str = "uri") -> Path:
        """An existing path for `uri`; raises WorldError listing the places searched."""
        path, searched = self.try_resolve(uri, base_dir)
        if path is None:
            where = "; ".join(str(s) for s in searched) or "(no search paths)"
            raise WorldError(
                f"{what}: cannot resolve URI '{uri}'; searched: {where}. "
                "Set GZ_SIM_RESOURCE_PATH (model://), AMENT_PREFIX_PATH (package://) or pass resource_paths."
            )
        return path

    def try_resolve(self, uri: str, base_dir: str | Path | None = None) -> tuple[Path | None, list[Path]]:
        """(path or None, candidates tried)."""
        uri = str(uri).strip()
        if len(uri) > MAX_URI_LENGTH:
            raise WorldError(f"URI '{uri[:60]}...' is {len(uri)} characters long; at most {MAX_URI_LENGTH} are allowed")
        base = Path(base_dir) if base_dir is not None else None
        candidates = self._candidates(uri, base)
        for c in candidates:
            try:
                if c.exists():
                    return c, candidates
            except OSError:  # a name longer than the file system allows, a path through a file...
                continue
        return None, candidates

    def _candidates(self, uri: str, base: Path | None) -> list[Path]:
        scheme = uri.split("://", 1)[0].lower() if "://" in uri else ""
        if scheme == "model":
            rest = unquote(uri[len("model://"):])
            return self._along_resources(rest, base, parents=True) + self._fuel_by_name(rest)
        if scheme == "package":
            rest = unquote(uri[len("package://"):])
            pkg, _, inner = rest.partition("/")
            share = [p / "share" / pkg / inner for p in self.ament_prefixes]
            return share + self._along_resources(rest, base, parents=True)
        if scheme == "file":
            rest = unquote(urlparse(uri).path if uri.startswith("file:///") else uri[len("file://"):])
            return self._plain(rest, base)
        if scheme in ("http", "https"):
            return self._fuel_url(uri)
        if scheme:
            return []
        return self._plain(uri, base)

    def _plain(self, rest: str, base: Path | None) -> list[Path]:
        p = Path(rest).expanduser()
        if p.is_absolute():
            return [p]
        out = [base / p] if base is not None else [Path.cwd() / p]
        return out + [r / p for r in self.resource_paths]

    def _along_resources(self, rest: str, base: Path | None, parents: bool) -> list[Path]:
        out = [r / rest for r in self.resource_paths]
        if base is not None and parents:
            # a model referenced from a world next to its models folder, or from inside the models folder
            out += [base / rest, base.parent / rest, base / "models" / rest]
        return out

    def _fuel_by_name(self, rest: str) -> list[Path]:
        """model://NAME/rest also matches any cached Fuel model called NAME (newest version)."""
        name, _, inner = rest.partition("/")
        out = []
        for root in self.fuel_roots:
            if not root.is_dir():
                continue
            for model_dir in sorted(root.glob(f"*/*/models/{name}")):
                version = _newest_version(model_dir)
                if version is not None:
                    out.append(version / inner)
        return out

    def _fuel_url(self, uri: str) -> list[Path]:
        parsed = urlparse(uri)
        host = parsed.netloc
        parts = [unquote(p) for p in parsed.path.split("/") if p]
        if parts and re.fullmatch(r"\d+\.\d+", parts[0]):  # API version "1.0"
            parts = parts[1:]
        lowered = [p.lower() for p in parts]
        if len(parts) < 3 or lowered[1] != "models":
            return []
        owner, name, rest = parts[0], parts[2], parts[3:]
        version = None
        if rest and (rest[0].isdigit() or rest[0] == "tip"):
            version, rest = rest[0], rest[1:]
        if rest and rest[0] == "files":
            rest = rest[1:]
        out = []
        for root in self.fuel_roots:
            for owner_dir in (root / host / owner, root / host / owner.lower()):
                for name_dir in (owner_dir / "models" / name, owner_dir / "models" / name.lower()):
                    chosen = name_dir / version if version not in (None, "tip") else _newest_version(name_dir)
                    if chosen is None:
                        chosen = name_dir / "<version>"
                    out.append(chosen.joinpath(*rest) if rest else chosen)
        return list(dict.fromkeys(out))


def _newest_version(model_dir: Path) -> Path | None:
    if not model_dir.is_dir():
        return None
    versions = [d for d in model_dir.iterdir() if d.is_dir() and d.name.isdigit()]
    return max(versions, key=lambda d: int(d.name)) if versions else None
