"""`radarays cast WORLD --rays rays.npz --out hits.npz`: first hits of given rays, for external checks;
`radarays info`: the ray-tracing backends usable here and why the others are not.

`add_backend_arguments` / `backend_options` give every command the same `--backend` and `--device`."""
from __future__ import annotations

import sys
import zipfile
from pathlib import Path

import numpy as np

from ..errors import ConfigError, RadaraysError
from ..output_files import add_overwrite_argument, check_new, replacing


def add_parser(sub) -> None:
    p = sub.add_parser("cast", help="trace rays from a .npz file and write their first hits")
    p.add_argument("world", help="SDF world, model directory, URDF or mesh file")
    p.add_argument("--rays", required=True, help=".npz with 'origins' and 'directions' (N x 3, world frame)")
    p.add_argument("--out", required=True, help="output .npz (distance, hit, normal, entity, face, material, entity_names)")
    p.add_argument("--materials", help="material library YAML merged over the shipped one")
    p.add_argument("--collision", action="store_true", help="use <collision> instead of <visual> geometry")
    p.add_argument("--tmin", type=float, default=0.0, help="ignore hits closer than this (m)")
    p.add_argument("--tmax", type=float, default=np.inf, help="ignore hits farther than this (m)")
    add_backend_arguments(p)
    add_overwrite_argument(p)
    p.set_defaults(func=run)
    info = sub.add_parser("info", help="list the ray-tracing backends usable here and why others are not")
    info.set_defaults(func=run_info)


def add_backend_arguments(parser, default: str | None = "embree") -> None:
    """--backend and --device, the same on every command that traces (default None: the input file's)."""
    said = "default: embree" if default else "default: the scenario's backend, else embree"
    parser.add_argument("--backend", default=default,
                        help=f"ray tracing backend: embree (CPU) or warp (NVIDIA Warp; CUDA or CPU); {said}; "
                             "`radarays info` lists what is usable here")
    parser.add_argument("--device", help="device of the warp backend: auto (CUDA when present, default), cpu, "
                                         "cuda or cuda:N")


def backend_options(args) -> dict:
    """make_backend options from --backend/--device; a --device the backend cannot use is an error."""
    device = getattr(args, "device", None)
    if device is None:
        return {}
    if args.backend != "warp":
        raise ConfigError(f"--device {device}: only the warp backend has devices; add --backend warp "
                          f"(got --backend {args.backend})")
    return {"device": device}


def backend_report() -> list[tuple[str, bool, str]]:
    """(name, usable, detail) of every backend name the package knows."""
    rows = []
    try:
        import embreex  # noqa: F401

        rows.append(("embree", True, "CPU, all cores (embreex)"))
    except ImportError as exc:
        rows.append(("embree", False, f"embreex is not importable ({exc})"))
    try:
        from ..tracing.warp import load_warp

        wp = load_warp()
        cuda = [f"{d.alias} ({d.name})" for d in wp.get_devices() if d.is_cuda]
        if cuda:
            rows.append(("warp", True, f"Warp {wp.config.version}: devices cpu, {', '.join(cuda)}"))
        else:
            rows.append(("warp", True, f"Warp {wp.config.version}: device cpu only (no CUDA device: no NVIDIA "
                                       "driver or GPU visible); --device cpu is for checks, slower than embree"))
    except RadaraysError as exc:
        rows.append(("warp", False, f"{exc}"))
    from ..tracing.optix import RESERVED_REASON

    rows.append(("optix", False, RESERVED_REASON))
    return rows


def run_info(args) -> int:
    print("ray-tracing backends (default: embree):")
    for name, usable, detail in backend_report():
        print(f"  {name:<7} {'available' if usable else 'not available'}: {detail}")
    return 0


MAX_RAYS = 50_000_000  # 1.2 GB of float32 origins and directions, 2.4 GB as float64


def read_rays(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """origins and directions from a .npz; errors name the file and the array. Each array's header
    and size are checked before it is read (a zip bomb or a header claiming 10^12 rows allocates
    nothing)."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"rays file {path}: not found" if not path.exists() else f"rays file {path}: not a file")
    if not zipfile.is_zipfile(path):
        raise ConfigError(f"rays file {path}: not a .npz archive (a .npy renamed .npz? save with numpy.savez)")
    arrays = {}
    try:
        with zipfile.ZipFile(path) as archive:
            for key in ("origins", "directions"):
                arrays[key] = _read_member(archive, key, path)
    except ConfigError:
        raise
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise ConfigError(f"rays file {path}: not a readable .npz ({str(exc)[:120]})") from None
    for key, a in arrays.items():
        if not np.all(np.isfinite(a)):
            raise ConfigError(f"rays file {path}: '{key}' contains NaN or inf")
    if arrays["origins"].shape != arrays["directions"].shape:
        raise ConfigError(f"rays file {path}: origins {arrays['origins'].shape} and directions {arrays['directions'].shape} differ in shape")
    zero = np.linalg.norm(arrays["directions"], axis=1) == 0
    if zero.any():
        raise ConfigError(f"rays file {path}: directions[{int(np.flatnonzero(zero)[0])}] has zero length")
    return arrays["origins"], arrays["directions"]


def _read_member(archive: zipfile.ZipFile, key: str, path: Path) -> np.ndarray:
    """One N x 3 float array of the archive, its npy header checked against MAX_RAYS and the member's
    stored size before the data is read."""
    if key + ".npy" not in archive.namelist():
        raise ConfigError(f"rays file {path}: missing array '{key}' (need 'origins' and 'directions', N x 3)")
    info = archive.getinfo(key + ".npy")
    with archive.open(info) as member:
        version = np.lib.format.read_magic(member)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(member)
        else:
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(member)
        if dtype.kind != "f" or len(shape) != 2 or shape[1] != 3:
            raise ConfigError(f"rays file {path}: '{key}' must be a float N x 3 array, got {dtype} {shape}")
        if shape[0] > MAX_RAYS:
            raise ConfigError(f"rays file {path}: '{key}' claims {shape[0]} rays; at most {MAX_RAYS}")
        nbytes = shape[0] * 3 * dtype.itemsize
        if nbytes > info.file_size:
            raise ConfigError(f"rays file {path}: '{key}' claims {shape[0]} rays but holds fewer bytes")
        data = member.read(nbytes)
    if len(data) != nbytes:
        raise ConfigError(f"rays file {path}: '{key}' is truncated")
    return np.frombuffer(data, dtype=dtype).reshape(shape, order="F" if fortran else "C").copy()


def run(args) -> int:
    from ..world.loader import load_world
    from ..tracing.backend import make_backend

    out = Path(args.out)
    if not out.name.endswith(".npz"):  # numpy's savez adds .npz to a name without it: the file written
        out = out.with_name(out.name + ".npz")
    check_new([out], args.overwrite)  # before the work
    origins, directions = read_rays(args.rays)
    if not (0 <= args.tmin < args.tmax):
        raise ConfigError(f"--tmin {args.tmin} / --tmax {args.tmax}: need 0 <= tmin < tmax")
    scene = load_world(args.world, materials=args.materials, geometry="collision" if args.collision else "visual")
    for warning in scene.warnings:  # documented, non-fatal findings (empty world, dropped degenerate faces)
        print(f"warning: {warning}", file=sys.stderr)
    backend = make_backend(args.backend, scene, **backend_options(args))
    hits = backend.trace(origins, directions, tmin=args.tmin, tmax=args.tmax)
    with replacing(out, args.overwrite) as tmp:  # a temporary name, renamed when complete (output_files.py)
        _save_hits(tmp, hits, scene)
    print(f"{len(hits)} rays, {int(hits.hit.sum())} hits -> {out}")
    return 0


def _save_hits(path: Path, hits, scene) -> None:
    np.savez(
        path,
        distance=hits.distance.astype(np.float32),
        hit=hits.hit,
        normal=hits.normal.astype(np.float32),
        entity=hits.entity.astype(np.int32),
        face=hits.face.astype(np.int32),
        material=hits.material.astype(np.int32),
        entity_names=np.array(scene.entity_names(), dtype=str),
        material_names=np.array(scene.materials.names, dtype=str),
    )
