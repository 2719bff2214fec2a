"""A replay of hostile inputs through the `radarays` command (issue 27): structure-aware mutators over
the shipped configurations, scenarios, manifests, worlds and sidecars, and a worker that replays the
cases under a memory limit and a time limit.

A case is plain data (JSON): the files it writes (name -> text, or {"copy": fixture}) and the command
line, with {in}, {out}, {fixtures} and {world} standing for its folders. `generate(seed, n)` makes n
cases from a seeded numpy Generator (the same seed, the same cases); `replay(cases)` runs them in a
worker process (`python test/hostile_replay.py CASES RESULTS`, RLIMIT_AS 3 GiB, the command called
in-process case after case, each under an alarm) and `problems(case, result)` says what is wrong:
an exit status other than 0 or 2, a traceback, not exactly one stderr line on failure, a raw control
character, a numpy warning of garbage arithmetic (a "wrong success"), a time-out, an out-of-memory
backstop, a file left behind.
"""
from __future__ import annotations

import contextlib
import copy
import io
import json
import math
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np
import yaml

if __name__ == "__main__":  # the worker script: test/ on the path, not test/support (its warp.py would shadow Warp)
    sys.path[0] = str(Path(__file__).resolve().parents[1])
from support import hostile_files  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "radarays_ros" / "data"
WORLD = str(DATA / "worlds" / "office.sdf")
POSE = "1 0.5 1 0 0 0.3"  # in the office, above the floor (a sensor on the floor sees hits at 0 m)
MEMORY_LIMIT = 3 << 30  # RLIMIT_AS of the worker
REGRESSIONS = Path(__file__).resolve().parents[1] / "data" / "hostile_regressions.json"

NUMBERS = [0, -1, 5e-324, 2.2e-308, 1e-300, 1e308, -1e308, math.nan, math.inf, -math.inf, 2**63, 2**64 + 1,
           10**30, -(2**63) - 1, 1e-9, 0.5, 1e9, 99999999]
STRINGS = ["a\x00b", "\r\x1b[31mred\x1b[0m\x1e", "x" * 5000, "../../../../etc/passwd", "", "\u202eevil",
           "a\nb: c", "%s%n{0}", "/dev/zero", "NUL"]
SHAPES = [[], {}, True, None, [1, 2], "text", {"a": 1}]
CONTROL_KEY = "k\x1b[2J\r\x1e\x07"


# -- the shipped inputs -----------------------------------------------------------------------------
def _absolute_paths(tree, base: Path):
    """String leaves naming a file beside the source made absolute (a mutated copy lives elsewhere)."""
    if isinstance(tree, dict):
        return {k: _absolute_paths(v, base) for k, v in tree.items()}
    if isinstance(tree, list):
        return [_absolute_paths(v, base) for v in tree]
    if isinstance(tree, str) and ("/" in tree or tree.endswith((".yaml", ".sdf", ".csv", ".json"))):
        candidate = base / tree
        if candidate.exists():
            return str(candidate.resolve())
    return tree


def _yaml_bases() -> list[tuple[str, str, object]]:
    """(kind, name, tree) of every YAML input the command reads."""
    out = []
    for path in sorted((DATA / "radar").glob("*.yaml")) + [DATA / "examples" / "radarays_compat.yaml"]:
        out.append(("radar_config", path.name, yaml.safe_load(path.read_text())))
    for path in sorted((DATA / "lidar" / "presets").glob("*.yaml")) + [DATA / "examples" / "spherical_16x1800.yaml"]:
        out.append(("lidar_sensor", path.name, _absolute_paths(yaml.safe_load(path.read_text()), path.parent)))
    out.append(("materials", "materials_room.yaml", yaml.safe_load((DATA / "examples" / "materials_room.yaml").read_text())))
    for path in sorted((DATA / "scenarios").glob("*.yaml")):
        tree = _absolute_paths(yaml.safe_load(path.read_text()), path.parent)
        tree["duration"] = 0.3  # a few frames: the replay is about reading, not about long runs
        out.append(("scenario", path.name, tree))
    scenario = str(DATA / "scenarios" / "hall_demo.yaml")
    out.append(("manifest", "manifest.yaml", {
        "description": "replay base", "retries": 1, "pictures": False,
        "runs": [{"scenario": scenario, "seeds": {"first": 0, "count": 3},
                  "set": {"sensors.radar.noise.system_std": 2.0},
                  "vary": {"materials.concrete.radar.velocity": {"uniform": [0.05, 0.12]},
                           "weather.fog_visibility_km": {"choice": [0.2, 1.0, 10.0]}}},
                 {"scenario": scenario, "seed": 7}]}))
    out.append(("sidecar", "oxford.png.yaml", {
        "range_resolution_m": 0.0438, "range_bins": 200, "azimuths": 64, "encoder_size": 5600, "encoder_offset": 0,
        "column_10": "valid: 255", "units": "image values (RadaRays scale)"}))
    return out


COMMANDS = {  # kind -> (file name, command line)
    "radar_config": ("c.yaml", ["radar", "{world}", "--pose", POSE, "--config", "{in}/c.yaml", "--out", "{out}/r.npz"]),
    "lidar_sensor": ("s.yaml", ["lidar", "{world}", "--pose", POSE, "--sensor", "{in}/s.yaml", "--out", "{out}/l.npz"]),
    "materials": ("m.yaml", ["world", "panorama", "{world}", "--materials", "{in}/m.yaml", "--width", "16",
                             "--out", "{out}/p.png"]),
    "scenario": ("s.yaml", ["run", "{in}/s.yaml", "--out", "{out}/b.mcap", "--quiet"]),
    "manifest": ("m.yaml", ["batch", "{in}/m.yaml", "--list"]),
    "sidecar": ("x.png.yaml", ["compare", "{in}/x.png", "{fixtures}/oxford.png", "--json", "{out}/c.json"]),
}


# -- mutators --------------------------------------------------------------------------------------
def _paths(tree, prefix=()):
    """Every (path, value) in a tree, containers included."""
    yield prefix, tree
    if isinstance(tree, dict):
        for k, v in tree.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(tree, list):
        for i, v in enumerate(tree):
            yield from _paths(v, prefix + (i,))


def _set(tree, path, value):
    if not path:
        return value
    node = tree
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return tree


def _pick(rng, items):
    return items[int(rng.integers(len(items)))]


def _deep(depth: int) -> str:
    """A marker that _dump writes as `depth` nested flow lists (a tree that deep would not copy or dump)."""
    return f"__DEEP_{depth}__"


def mutate_tree(tree, rng):
    """One structure-aware mutation of a parsed YAML tree (a copy); returns (tree, what was done)."""
    tree = copy.deepcopy(tree)
    entries = list(_paths(tree))
    numbers = [(p, v) for p, v in entries if p and isinstance(v, (int, float)) and not isinstance(v, bool)]
    strings = [(p, v) for p, v in entries if p and isinstance(v, str)]
    dicts = [(p, v) for p, v in entries if isinstance(v, dict)]
    leaves = [(p, v) for p, v in entries if p]
    op = _pick(rng, ["number", "number", "number", "product", "string", "shape", "deep", "key", "delete"])
    if op == "number" and numbers:
        path, _ = _pick(rng, numbers)
        value = _pick(rng, NUMBERS)
        return _set(tree, path, value), f"{'.'.join(map(str, path))} = {value!r}"
    if op == "product" and numbers:  # in-range values whose product is not: scale two of them apart
        what = []
        for _ in range(2):
            path, value = _pick(rng, numbers)
            factor = 10.0 ** int(rng.integers(-9, 10))
            new = value * factor if isinstance(value, float) else int(value * factor) if factor >= 1 else value
            tree = _set(tree, path, new)
            what.append(f"{'.'.join(map(str, path))} *= {factor:g}")
        return tree, "; ".join(what)
    if op == "string" and strings:
        path, value = _pick(rng, strings)
        new = _pick(rng, STRINGS)
        new = value + new if rng.integers(2) else new
        return _set(tree, path, new), f"{'.'.join(map(str, path))} = {new[:40]!r}"
    if op == "deep" and leaves:
        path, _ = _pick(rng, leaves)
        depth = int(_pick(rng, [20, 200, 900]))
        return _set(tree, path, _deep(depth)), f"{'.'.join(map(str, path))} nested {depth} deep"
    if op == "key" and dicts:
        path, node = _pick(rng, dicts)
        node[_pick(rng, [CONTROL_KEY, "x" * 5000, "a\x00b", "\u202ekey"])] = 1
        return tree, f"unknown key in {'.'.join(map(str, path)) or 'top'}"
    if op == "delete" and leaves:
        path, _ = _pick(rng, leaves)
        parent = tree
        for key in path[:-1]:
            parent = parent[key]
        del parent[path[-1]]
        return tree, f"deleted {'.'.join(map(str, path))}"
    if leaves:
        path, _ = _pick(rng, leaves)
        value = _pick(rng, SHAPES)
        return _set(tree, path, copy.deepcopy(value)), f"{'.'.join(map(str, path))} = {value!r}"
    return _pick(rng, SHAPES), "whole document replaced"


_XML_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:e-?\d+)?(?![\w.])")
_XML_ATTRIBUTE = re.compile(r'(name|uri|filename)="([^"]*)"')


def mutate_xml(text: str, rng) -> tuple[str, str]:
    """One mutation of a world file's text: a number, a name, a control character or deep nesting."""
    op = _pick(rng, ["number", "number", "number", "name", "control", "deep"])
    if op == "number":
        spans = list(_XML_NUMBER.finditer(text))
        m = _pick(rng, spans)
        value = _pick(rng, NUMBERS)
        return text[:m.start()] + repr(value).replace("nan", "nan") + text[m.end():], f"number at {m.start()} = {value!r}"
    if op == "name":
        spans = list(_XML_ATTRIBUTE.finditer(text))
        m = _pick(rng, spans)
        value = _pick(rng, ["x" * 5000, "a/../../b", "\u202ename", "a&#x1b;[2Jb", ""])
        return text[:m.start(2)] + value + text[m.end(2):], f"{m.group(1)} = {value[:30]!r}"
    if op == "control":
        at = int(rng.integers(len(text)))
        char = _pick(rng, ["\x00", "\x1b", "\r\n", "\x1e", "<", "&"])
        return text[:at] + char + text[at:], f"{char!r} at {at}"
    at = text.index("</world>")
    depth = int(_pick(rng, [100, 1000, 5000]))
    return text[:at] + "<model name='d'>" * depth + "</model>" * depth + text[at:], f"models nested {depth} deep"


# -- cases -----------------------------------------------------------------------------------------
def _dump(tree) -> str:
    text = yaml.safe_dump(tree, sort_keys=False, allow_unicode=False, width=200)
    return re.sub(r"__DEEP_(\d+)__", lambda m: "[" * int(m.group(1)) + "1" + "]" * int(m.group(1)), text)


def _set_case(rng, kind: str) -> dict:
    """--set KEY=VALUE products of in-range values on the command line (radar or lidar)."""
    if kind == "radar_set":
        keys = ["range.resolution", "range.max_range", "range.bins", "azimuth.count", "beam.samples",
                "tracing.passes", "azimuth.rate_hz", "antenna.samples_azimuth", "antenna.samples_elevation",
                "beam.width_deg", "beam.p_in_cone", "kernel.width"]
        values = ["1e-6", "30", "1e5", "100000", "5e-324", "1e308", "1000000", "32", "4096", "nan", "-1", "0"]
        argv = ["radar", "{world}", "--pose", POSE, "--out", "{out}/r.npz"]
    else:
        keys = ["rate_hz", "columns", "beam.sub_rays", "beam.return_mode", "range.max", "range.min",
                "noise.sigma", "angles.step_deg", "max_bounces"]
        values = ["5e-324", "1e308", "64", "dual", "2048", "1e-9", "nan", "1000000", "0"]
        argv = ["lidar", "{world}", "--pose", POSE, "--sensor", _pick(rng, ["VLP-16", "OS1-128", "UTM-30LX", "Mid-360"]),
                "--out", "{out}/l.npz"]
    sets = []
    for _ in range(int(rng.integers(1, 4))):
        sets += ["--set", f"{_pick(rng, keys)}={_pick(rng, values)}"]
    return {"kind": kind, "what": " ".join(sets), "files": {}, "argv": argv + sets}


def _compare_case(rng) -> dict:
    numbers = ["nan", "inf", "-inf", "-1", "0", "5e-324", "1e308", "1e-300"]
    if rng.integers(2):
        argv = ["compare", "{fixtures}/oxford.png", "{fixtures}/oxford.png", "--max-range=" + _pick(rng, numbers),
                "--picture", "{out}/c.png"]
    else:
        argv = ["compare", "{fixtures}/polar.png", "{fixtures}/polar.png", "--layout", "range_rows",
                "--real-resolution=" + _pick(rng, numbers), "--sim-resolution=" + _pick(rng, numbers + ["0.05"])]
    if rng.integers(2):
        argv += ["--db-per-count=" + _pick(rng, numbers + ["0.5"])]
    return {"kind": "compare_args", "what": " ".join(argv[3:]), "files": {}, "argv": argv}


def _image_case(rng) -> dict:
    """A broken or huge picture handed to compare."""
    name, what = _pick(rng, [("bomb", "a 40000 x 40000 PNG header"), ("text", "a text file named .png"),
                             ("truncated", "a PNG cut short"), ("rgb", "an RGB PNG"), ("empty", "an empty file")])
    return {"kind": "compare_image", "what": what, "files": {"x.png": {"image": name}, "x.png.yaml": "range_resolution_m: 0.05\n"},
            "argv": ["compare", "{in}/x.png", "{fixtures}/oxford.png", "--layout",
                     _pick(rng, ["oxford", "range_rows"]), "--real-resolution", "0.05"]}


def generate(seed: int, n: int) -> list[dict]:
    """n cases drawn from a Generator seeded with `seed`."""
    rng = np.random.default_rng(seed)
    bases = _yaml_bases()
    worlds = sorted((DATA / "worlds").glob("*.sdf"))
    cases = []
    by_kind: dict[str, list] = {}
    for base in bases:
        by_kind.setdefault(base[0], []).append(base)
    kinds = ["world", "radar_set", "lidar_set", "compare_args", "compare_image"] + sorted(by_kind) * 2 \
        + ["fit_lidar", "fit_radar", "lidar_options"] * 2
    for i in range(n):
        kind = _pick(rng, kinds)
        if kind == "world":
            world = _pick(rng, worlds)
            text, what = world.read_text(), []
            text = text.replace('uri="meshes/', f'uri="{world.parent}/meshes/').replace(">meshes/", f">{world.parent}/meshes/")
            for _ in range(int(rng.integers(1, 3))):
                text, w = mutate_xml(text, rng)
                what.append(w)
            case = {"kind": "world", "what": f"{world.name}: " + "; ".join(what), "files": {"w.sdf": text},
                    "argv": ["world", "panorama", "{in}/w.sdf", "--width", "16", "--out", "{out}/p.png"]}
        elif kind in ("radar_set", "lidar_set"):
            case = _set_case(rng, kind)
        elif kind == "compare_args":
            case = _compare_case(rng)
        elif kind == "compare_image":
            case = _image_case(rng)
        elif kind == "fit_lidar":
            case = hostile_files.fit_lidar_case(rng, mutate_tree, _dump)
        elif kind == "fit_radar":
            case = hostile_files.fit_radar_case(rng)
        elif kind == "lidar_options":
            case = hostile_files.lidar_options_case(rng, mutate_tree, _dump)
        else:
            kind, name, tree = _pick(rng, by_kind[kind])
            what = []
            for _ in range(int(rng.integers(1, 4))):
                tree, w = mutate_tree(tree, rng)
                what.append(w)
            file_name, argv = COMMANDS[kind]
            files = {file_name: _dump(tree)}
            if kind == "sidecar":
                files["x.png"] = {"copy": "oxford.png"}
            case = {"kind": kind, "what": f"{name}: " + "; ".join(what), "files": files, "argv": list(argv)}
        case["id"] = f"s{seed}-{i}"
        cases.append(case)
    return cases


# -- the worker ------------------------------------------------------------------------------------
class CaseTimeout(BaseException):
    """Raised by the alarm inside a case that runs too long (a BaseException: no `except Exception` eats it)."""


def make_fixtures(folder: Path) -> None:
    """An Oxford polar PNG with its sidecar and a plain polar PNG, written by the command itself."""
    from radarays_ros.cli import main

    config = folder / "small.yaml"
    config.write_text("azimuth: {count: 64}\nrange: {bins: 200}\nbeam: {samples: 4}\n")
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["radar", WORLD, "--config", str(config), "--png-style", "oxford",
                     "--out", str(folder / "oxford.png")]) == 0
        assert main(["radar", WORLD, "--config", str(config), "--out", str(folder / "polar.png")]) == 0
    directions = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, -1.0]])
    np.savez(folder / "rays.npz", origins=np.tile([1.0, 0.5, 1.0], (3, 1)), directions=directions)
    hostile_files.make_fixtures(folder, main, WORLD)


def _image_bytes(kind: str, fixtures: Path) -> bytes:
    import zlib

    if kind == "bomb":  # a valid PNG header claiming 40000 x 40000 grey pixels, a tiny compressed body
        def chunk(tag, data):
            return len(data).to_bytes(4, "big") + tag + data + zlib.crc32(tag + data).to_bytes(4, "big")
        head = (40000).to_bytes(4, "big") * 2 + bytes([8, 0, 0, 0, 0])
        return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", head) + chunk(b"IDAT", zlib.compress(b"\0" * 40001)) + chunk(b"IEND", b"")
    if kind == "text":
        return b"not a picture\n"
    if kind == "truncated":
        return (fixtures / "oxford.png").read_bytes()[:300]
    if kind == "rgb":
        from PIL import Image

        buffer = io.BytesIO()
        Image.new("RGB", (30, 20)).save(buffer, "PNG")
        return buffer.getvalue()
    return b""


def _fill(word: str, folders: dict) -> str:
    for key, value in folders.items():
        word = word.replace("{" + key + "}", value)
    return word


def run_case(case: dict, root: Path, fixtures: Path, limit_s: float) -> dict:
    """Run one case in this process; the result record problems() reads."""
    from radarays_ros.cli import main

    folder = root / case["id"].replace("/", "_")
    shutil.rmtree(folder, ignore_errors=True)
    (folder / "in").mkdir(parents=True)
    (folder / "out").mkdir()
    folders = {"in": str(folder / "in"), "out": str(folder / "out"), "fixtures": str(fixtures), "world": WORLD,
               "data": str(DATA)}
    for name, content in case["files"].items():
        path = folder / "in" / name
        if isinstance(content, dict) and "copy" in content:
            shutil.copy(fixtures / content["copy"], path)
        elif isinstance(content, dict) and hostile_files.materialise(content, path, fixtures):
            pass
        elif isinstance(content, dict):
            path.write_bytes(_image_bytes(content["image"], fixtures))
        else:
            path.write_text(content.replace("{data}", str(DATA)), "utf8", errors="surrogatepass")
    argv = [_fill(w, folders) for w in case["argv"]]
    err, out = io.StringIO(), io.StringIO()
    result = {"id": case["id"], "rc": None, "exception": None, "timeout": False}
    start = time.monotonic()

    def alarm(signum, frame):
        raise CaseTimeout()

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, limit_s)
    cwd = os.getcwd()
    try:
        os.chdir(folder)
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out), \
                __import__("warnings").catch_warnings():
            __import__("warnings").simplefilter("always")
            result["rc"] = main(argv)
    except CaseTimeout:
        result["timeout"] = True
    except SystemExit as exc:  # argparse
        result["rc"] = exc.code if isinstance(exc.code, int) else 1
    except BaseException as exc:  # noqa: BLE001  a traceback the user would see
        result["exception"] = "".join(traceback.format_exception_only(type(exc), exc))[-2000:]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        os.chdir(cwd)
    result["seconds"] = round(time.monotonic() - start, 2)
    result["stderr"] = err.getvalue()[-4000:]
    left = sorted(str(p.relative_to(folder / "out")) for p in (folder / "out").rglob("*"))
    result["left"] = left[:20]
    shutil.rmtree(folder, ignore_errors=True)
    return result


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\u202a-\u202e\u2066-\u2069]")
# progress lines a long command prints on stderr before its result (`fit`: one line per evaluation or every 25th;
# `lidar`: one line every 10 s off a terminal)
PROGRESS = re.compile(r"^(fit( lidar)?: evaluation +\d+ .*|[^:\n]{1,200}: scan \d+ of \d+ \(\d+ s\))$")


def portable(case: dict) -> dict:
    """The case with this checkout's data folder written as {data} (for the regression file)."""
    text = json.dumps(case).replace(json.dumps(str(DATA))[1:-1], "{data}")
    return json.loads(text)


def problems(case: dict, result: dict) -> list[str]:
    """What is wrong with a case's result (an empty list: clean).

    A scenario still running at the time limit is accepted (a valid scenario may ask for a long run:
    `duration: 1e6` is in range), and so is a command that was showing its progress (a fit of many
    evaluations); everything else must finish within it. Progress lines may come before the error line."""
    out = []
    err = result.get("stderr", "")
    progress = [line for line in err.split("\n") if PROGRESS.match(line)]
    if result.get("crashed"):
        out.append(f"the worker died in this case ({result['crashed']})")
    if result.get("timeout") and case["kind"] != "scenario" and not progress:
        out.append("time limit reached without a progress line (a hang, or work the input should have been "
                   "refused for)")
    if result.get("exception"):
        out.append(f"traceback: {result['exception'].strip()}")
    if result.get("rc") not in (0, 2, None):
        out.append(f"exit status {result['rc']}")
    if _CONTROL.search(err.replace("\n", "")):
        out.append(f"raw control character on stderr: {err[:200]!r}")
    if "Traceback" in err:
        out.append("a traceback on stderr")
    if "out of memory" in err:
        out.append("the MemoryError backstop fired: a size was not bounded before allocation")
    if re.search(r"RuntimeWarning|encountered in|overflow", err):
        out.append(f"a numpy warning (garbage arithmetic): {err.strip()[:200]!r}")
    if result.get("rc") == 2:
        lines = [line for line in err.strip("\n").split("\n") if not PROGRESS.match(line)]
        if len(lines) != 1 or not lines[0].startswith("radarays: error:"):
            out.append(f"not one error line: {err[:300]!r}")
        if result.get("left"):
            out.append(f"files left behind by a failure: {result['left']}")
    if any(".partial" in name for name in result.get("left", [])):
        out.append(f"a .partial file left: {result['left']}")
    return out


def replay(cases: list[dict], limit_s: float = 60.0, worker_timeout_s: float | None = None,
           chunk: int = 150, workers: int | None = None) -> list[dict]:
    """Run the cases in worker processes (RLIMIT_AS 3 GiB, a fresh worker every `chunk` cases, `workers` of them
    at once: RADARAYS_REPLAY_WORKERS, default the CPU count up to 4); a worker that dies or hangs is replaced
    and the case it was in is recorded as crashed. A case that runs out of memory in a long-lived worker
    (whose heap has grown over earlier cases) is run again alone in a fresh one, as the command would run:
    only that result counts. The fixtures (frames, pictures the cases mutate) are made once, by a worker."""
    from concurrent.futures import ThreadPoolExecutor

    workers = workers or int(os.environ.get("RADARAYS_REPLAY_WORKERS", "0")) or min(4, os.cpu_count() or 1)
    with tempfile.TemporaryDirectory(prefix="radarays-replay-fixtures-") as fixtures:
        done = subprocess.run([sys.executable, __file__, "--fixtures", fixtures], env=_worker_env(),
                              capture_output=True, text=True, preexec_fn=_child_limits, timeout=600)
        if done.returncode != 0:
            raise RuntimeError(f"the replay's fixtures could not be made: {done.stderr[-2000:]}")
        chunks = [cases[first:first + chunk] for first in range(0, len(cases), chunk)]
        results: dict[str, dict] = {}
        with ThreadPoolExecutor(max_workers=workers) as pool:
            for part in pool.map(lambda c: _replay_chunk(c, limit_s, worker_timeout_s, fixtures), chunks):
                results.update(part)
        if chunk > 1:
            for case in cases:
                result = results[case["id"]]
                if "out of memory" in result.get("stderr", "") or "MemoryError" in (result.get("exception") or ""):
                    results.update(_replay_chunk([case], limit_s, worker_timeout_s, fixtures))
    return [results[c["id"]] for c in cases]


def _worker_env() -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    env.pop("RADARAYS_LIDAR_CONFIG", None)
    return env


def _replay_chunk(cases: list[dict], limit_s: float, worker_timeout_s: float | None, fixtures: str) -> dict[str, dict]:
    results: dict[str, dict] = {}
    pending = list(cases)
    with tempfile.TemporaryDirectory(prefix="radarays-replay-") as tmp:
        tmp = Path(tmp)
        while pending:
            (tmp / "cases.json").write_text(json.dumps(pending))
            progress = tmp / "progress.jsonl"
            progress.unlink(missing_ok=True)
            try:
                done = subprocess.run([sys.executable, __file__, str(tmp / "cases.json"), str(progress), str(limit_s),
                                       fixtures], env=_worker_env(), capture_output=True, text=True,
                                      preexec_fn=_child_limits,
                                      timeout=worker_timeout_s or (limit_s + 30) * len(pending) + 120)
                tail = done.stderr[-500:]
            except subprocess.TimeoutExpired:
                tail = "the worker ran past its time"
            lines = progress.read_text().splitlines() if progress.exists() else []
            for line in lines:
                record = json.loads(line)
                results[record["id"]] = record
            finished = {json.loads(line)["id"] for line in lines}
            rest = [c for c in pending if c["id"] not in finished]
            if rest:  # the first unfinished case killed the worker
                results[rest[0]["id"]] = {"id": rest[0]["id"], "crashed": tail or "no output", "stderr": ""}
                rest = rest[1:]
            pending = rest
    return results


def _child_limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    for sig in (signal.SIGINT, signal.SIGTERM):  # whatever the test runner inherited
        signal.signal(sig, signal.SIG_DFL)


def _worker(cases_path: str, progress_path: str, limit_s: str, fixtures: str) -> None:
    cases = json.loads(Path(cases_path).read_text())
    root = Path(tempfile.mkdtemp(prefix="replay-worker-"))
    fixtures = Path(fixtures)
    with open(progress_path, "a") as log:
        for case in cases:
            record = run_case(case, root, fixtures, float(limit_s))
            log.write(json.dumps(record) + "\n")
            log.flush()
    shutil.rmtree(root, ignore_errors=True)


def report(cases: list[dict], results: list[dict]) -> list[str]:
    """One line per case with problems (empty when every case is clean)."""
    lines = []
    for case, result in zip(cases, results):
        for problem in problems(case, result):
            lines.append(f"{case['id']} [{case['kind']}] {case['what'][:120]!r}: {problem[:400]}")
    return lines


if __name__ == "__main__":
    if sys.argv[1] == "--fixtures":
        make_fixtures(Path(sys.argv[2]))
    else:
        _worker(*sys.argv[1:5])
