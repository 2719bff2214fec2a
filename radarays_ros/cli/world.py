"""`radarays world info|panorama`: see what a world loaded as, in a table or a 360° range picture.

    radarays world list                                  the shipped worlds (usable by name: office, street, ...)
    radarays world info WORLD [--materials M] [--collision] [--ignore GLOB ...] [--json] [--strict]
    radarays world panorama WORLD --pose "x y z roll pitch yaw" --out pano.png [--width 1440]
                            [--max-range R] [--ranges-out ranges.npy] [--materials M] [--collision]

`info` lists unresolved URIs and unreadable mesh files instead of failing (it loads with strict=False;
--strict makes them errors); `panorama` fails on them unless --lenient. Errors in the world file itself
(malformed XML, unknown geometry, NaN pose, ...) are one line on stderr and exit status 2 for both;
non-fatal findings (degenerate triangles dropped, an empty world) are `warning:` lines. The panorama is equirectangular: column 0 looks backwards (azimuth +180°) and
azimuth decreases to the right, so the centre column looks along the pose's +x and the left half of
the picture is the sensor's left (+y); row 0 looks straight up. Ranges are colour-mapped (turbo,
0 m .. max range, shown by a colour bar in metres under the picture); misses are black.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from collections import Counter
from pathlib import Path

import numpy as np

from ..errors import ConfigError
from ..output_files import add_overwrite_argument, check_new, replacing_all
from ..world.loader import load_world
from ..world.transforms import parse_pose_string


def add_parser(subparsers) -> None:
    world = subparsers.add_parser("world", help="inspect a world: entity table, 360° range panorama")
    sub = world.add_subparsers(dest="world_command", required=True, metavar="SUBCOMMAND")

    listing = sub.add_parser("list", help="the shipped worlds, usable by name (radarays world info office)")
    listing.set_defaults(func=run_list)

    info = sub.add_parser("info", help="entities, triangles, materials, unresolved URIs, warnings")
    _common(info)
    info.add_argument("--json", action="store_true", help="print JSON instead of a table")
    info.add_argument("--strict", action="store_true", help="fail on unresolved URIs and unreadable meshes")
    info.set_defaults(func=run_info)

    pano = sub.add_parser("panorama", help="360°x180° equirectangular range picture from a pose")
    _common(pano)
    pano.add_argument("--pose", default="0 0 0 0 0 0", help='sensor pose "x y z roll pitch yaw" (m, rad)')
    pano.add_argument("--degrees", action="store_true", help="roll/pitch/yaw of --pose are in degrees")
    pano.add_argument("--out", required=True, help="PNG file to write")
    pano.add_argument("--width", type=int, default=1440, help="picture width in pixels (height = width/2)")
    pano.add_argument("--max-range", type=float, default=None, help="range of the last colour (default: farthest hit)")
    pano.add_argument("--ranges-out", default=None, help="also save the ranges (H, W) float32 .npy, inf = miss")
    pano.add_argument("--lenient", action="store_true", help="skip entities with unresolvable URIs")
    add_overwrite_argument(pano)
    pano.set_defaults(func=run_panorama)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("world", help="SDF world, model directory, URDF or mesh file (.ply/.stl/.obj/.dae/.glb/.gltf), "
                   "or a shipped world's name (radarays world list)")
    p.add_argument("--materials", default=None, help="material library YAML merged over the shipped one")
    p.add_argument("--collision", action="store_true", help="use <collision> instead of <visual> geometry")
    p.add_argument("--ignore", action="append", default=[], metavar="GLOB", help="skip entities whose scoped name matches")


def _load(args, strict: bool):
    return load_world(args.world, materials=args.materials, geometry="collision" if args.collision else "visual",
                      ignore=tuple(args.ignore), strict=strict)


def run_list(args) -> int:
    from ..resources import data_path, shipped_names

    names = shipped_names("world")
    if not names:
        raise ConfigError(f"no shipped worlds found in {data_path('worlds', must_exist=False)} (a broken install?)")
    print("\n".join(names))
    return 0


# -- info -------------------------------------------------------------------------------------------
def world_summary(scene) -> dict:
    """Plain-data summary of a loaded scene (what `world info --json` prints)."""
    entities = []
    for e in scene.entities:
        counts = Counter(scene.materials[int(i)].name for i in e.face_materials)
        entities.append({
            "id": e.id, "name": e.name, "static": e.static, "triangles": int(e.mesh.n_faces),
            "position": [round(float(v), 6) for v in e.pose[:3, 3]],
            "materials": dict(sorted(counts.items(), key=lambda kv: -kv[1])),
        })
    bounds = scene.bounds()
    return {
        "world": scene.source,
        "entities": entities,
        "entity_count": len(entities),
        "triangles": int(scene.triangle_count),
        "bounds": {"min": bounds[0].tolist(), "max": bounds[1].tolist()},
        "unresolved": list(scene.unresolved),
        "warnings": list(scene.warnings),
    }


def run_info(args) -> int:
    scene = _load(args, strict=args.strict)
    summary = world_summary(scene)
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    rows = [("ENTITY", "STATIC", "TRIANGLES", "MATERIALS (faces)")]
    for e in summary["entities"]:
        mats = ", ".join(f"{k}:{v}" for k, v in e["materials"].items())
        rows.append((e["name"], "yes" if e["static"] else "no", str(e["triangles"]), mats))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    out = [f"world: {summary['world']}"]
    for r in rows:
        out.append(f"{r[0]:<{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]:>{widths[2]}}  {r[3]}")
    b = summary["bounds"]
    out.append(f"{summary['entity_count']} entities, {summary['triangles']} triangles; bounds "
               f"min {_fmt(b['min'])} max {_fmt(b['max'])}")
    out.append("unresolved URIs: " + (", ".join(summary["unresolved"]) if summary["unresolved"] else "none"))
    out += [f"warning: {w}" for w in summary["warnings"]]
    print("\n".join(out))
    return 0


def _fmt(v) -> str:
    return "(" + ", ".join(f"{x:.2f}" for x in v) + ")"


# -- panorama ---------------------------------------------------------------------------------------
PICTURE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".webp")
MAX_PANORAMA_WIDTH = 4096  # 8.4 M rays: ~0.5 GB of rays and hits; 20000 would need ~12 GB


def panorama_directions(width: int) -> np.ndarray:
    """(H, W, 3) unit directions of the equirectangular picture in the sensor frame (pixel centres)."""
    height = width // 2
    azimuth = math.pi - 2 * math.pi * (np.arange(width) + 0.5) / width
    elevation = math.pi / 2 - math.pi * (np.arange(height) + 0.5) / height
    az, el = np.meshgrid(azimuth, elevation)
    return np.stack([np.cos(el) * np.cos(az), np.cos(el) * np.sin(az), np.sin(el)], axis=-1)


def panorama_ranges(scene, pose: np.ndarray, width: int) -> np.ndarray:
    """(H, W) float32 first-hit distances from `pose` (inf = miss), traced in one batch with Embree."""
    from ..tracing import make_backend

    dirs = panorama_directions(width).reshape(-1, 3) @ pose[:3, :3].T
    origins = np.broadcast_to(pose[:3, 3], dirs.shape)
    backend = make_backend("embree", scene)
    try:
        hits = backend.trace(origins, dirs)
    finally:
        backend.close()
    return hits.distance.reshape(width // 2, width)


def colorize(ranges: np.ndarray, max_range: float) -> np.ndarray:
    """(H, W, 3) uint8: turbo colour map over 0..max_range, misses black."""
    from matplotlib import colormaps

    lut = (colormaps["turbo"](np.linspace(0, 1, 256))[:, :3] * 255).round().astype(np.uint8)
    hit = np.isfinite(ranges)
    level = np.zeros(ranges.shape, np.int64)
    level[hit] = np.clip(np.round(ranges[hit] / max_range * 255), 0, 255).astype(np.int64)
    rgb = lut[level]
    rgb[~hit] = 0
    return rgb


BAR_ROWS, LABEL_ROWS = 10, 14  # the colour bar under the panorama: gradient, then its labels in metres


def with_colour_bar(rgb: np.ndarray, max_range: float) -> np.ndarray:
    """The picture with a colour bar below it: the turbo scale 0..max_range left to right, labelled in
    metres (as many ticks as fit), so a reader knows what a colour means. The panorama's own pixels
    keep their rows and columns."""
    from PIL import Image, ImageDraw

    height, width, _ = rgb.shape
    bar = np.zeros((BAR_ROWS + LABEL_ROWS, width, 3), np.uint8)
    levels = np.linspace(0, max_range, width)
    bar[2:BAR_ROWS] = colorize(levels[None, :], max_range)[0]
    picture = Image.fromarray(np.concatenate([rgb, bar]))
    draw = ImageDraw.Draw(picture)
    ticks = max(2, min(6, width // 60))
    for k in range(ticks):
        value = max_range * k / (ticks - 1)
        text = f"{value:.3g} m" if k in (0, ticks - 1) else f"{value:.3g}"
        x = int(round(k / (ticks - 1) * (width - 1)))
        text_width = draw.textlength(text)
        x = int(min(max(0, x - text_width / 2), width - text_width))
        if text_width <= width:
            draw.text((x, height + BAR_ROWS), text, fill=(255, 255, 255))
    return np.asarray(picture)


def run_panorama(args) -> int:
    from PIL import Image

    if args.width < 8 or args.width % 2 or args.width > MAX_PANORAMA_WIDTH:
        raise ConfigError(f"--width {args.width}: expected an even number in [8, {MAX_PANORAMA_WIDTH}]")
    if args.max_range is not None and not (math.isfinite(args.max_range) and args.max_range > 0):
        raise ConfigError(f"--max-range {args.max_range}: expected a positive number of metres")
    pose = parse_pose_string(args.pose, degrees=args.degrees, what="--pose")
    if Path(args.out).suffix.lower() not in PICTURE_SUFFIXES:
        raise ConfigError(f"--out {args.out}: a picture file name ending in one of {', '.join(PICTURE_SUFFIXES)}")
    outputs = [Path(args.out)] + ([Path(args.ranges_out)] if args.ranges_out else [])
    check_new(outputs, args.overwrite)  # before the work
    scene = _load(args, strict=not args.lenient)
    ranges = panorama_ranges(scene, pose, args.width)
    hit = np.isfinite(ranges)
    farthest = float(ranges[hit].max()) if hit.any() else 0.0
    max_range = args.max_range or (farthest if farthest > 0 else 1.0)  # all hits at 0 m: no division by 0
    with replacing_all(outputs, args.overwrite) as tmp:  # temporary names, renamed when complete
        Image.fromarray(with_colour_bar(colorize(ranges, max_range), max_range)).save(tmp[0])
        if args.ranges_out:
            with open(tmp[1], "wb") as fh:  # the file handle: numpy adds no .npy to the name given
                np.save(fh, ranges)
    print(f"wrote {args.out}: {args.width}x{args.width // 2}, {int(hit.sum())} of {hit.size} rays hit, "
          f"colour scale 0..{max_range:.2f} m (turbo), misses black", file=sys.stdout)
    for w in scene.warnings:
        print(f"warning: {w}", file=sys.stderr)
    return 0
