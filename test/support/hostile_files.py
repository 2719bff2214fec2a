"""Hostile binary inputs for the replay (issue 27, support/hostile_replay.py): frames for `radarays fit lidar`
and `radarays fit radar` (mutated .npz arrays, pictures, sidecars, poses files, a frame of another sensor),
and the lidar command's Livox CustomMsg and depth-camera options.

A case names its files as recipes that the worker applies to fixtures it made itself (support/hostile_replay.
make_fixtures), so a case stays small JSON and the same seed gives the same bytes:

    {"npz": "lidar.npz", "ops": [["fill", 3, "nan"], ["bomb", 0]]}   an .npz fixture, its arrays mutated
    {"picture": "radar.png", "op": "crop"}                            a PNG fixture changed
    {"poses": 1, "ops": [["number", 0, 2, "nan"]]}                    a poses file of one line per frame

Array ops pick their array by index (modulo the sorted keys of the fixture), so the generator need not
read the fixture. A shape "bomb" writes a valid .npy header claiming 2^22 x 2^22 values over a few bytes:
numpy allocates what the header claims before it reads, so a reader must check the header first.
"""
from __future__ import annotations

import io
import math
import zipfile
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parents[2] / "radarays_ros" / "data"
POSE = [1.0, 0.5, 1.0, 0.0, 0.0, 0.3]
FILL = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf, "big": 1e308, "neg": -1.0, "zero": 0.0, "tiny": 5e-324,
        "int_max": float(2**63)}
DTYPES = ["bool", "complex128", "U3", "float16", "int8", "uint64", "object", "datetime64[s]"]
SHAPES = ["T", "flat", "add_axis", "empty", "one", "half", "cube"]
TEXTS = ["a\x00b", "\r\x1b[31mred\x1b[0m\x1e", "x" * 5000, "\u202eevil", "", "OS1-128", "VLP-16", "DUAL_RETURNS"]
NUMBERS = ["nan", "inf", "-inf", "1e308", "-1e308", "5e-324", "0", "-1", "1e9", "99999999999999999999", "0x10", "1,5"]
LINE_JUNK = ["", "a\x00b c", "\x1b[2J", "x" * 5000, "1 2 3", "1 2 3 4 5 6 7 8", "# comment", "t,x,y,z,roll,pitch,yaw",
             "1;2;3;4;5;6", "\ufeff1 2 3 4 5 6"]


def _pick(rng, items):
    return items[int(rng.integers(len(items)))]


# -- recipes (drawn by the generator) -----------------------------------------------------------------------------
def npz_ops(rng) -> list:
    """One to three array mutations of an .npz frame."""
    ops = []
    for _ in range(int(rng.integers(1, 4))):
        op = _pick(rng, ["fill", "fill", "fill_some", "dtype", "shape", "shape", "drop", "scalar", "bomb", "text", "add",
                         "corrupt", "huge_int"])
        k = int(rng.integers(50))
        if op in ("fill", "fill_some"):
            ops.append([op, k, _pick(rng, sorted(FILL))])
        elif op == "dtype":
            ops.append([op, k, _pick(rng, DTYPES)])
        elif op == "shape":
            ops.append([op, k, _pick(rng, SHAPES)])
        elif op == "text":
            ops.append([op, k, _pick(rng, TEXTS)])
        elif op == "add":
            ops.append([op, _pick(rng, ["k\x1b[2J\r", "x" * 300, "range_mm", "image", "xyz"])])
        else:
            ops.append([op, k])
    return ops


def poses_ops(rng) -> list:
    """Mutations of a poses file (one 'x y z roll pitch yaw' line per frame)."""
    ops = []
    for _ in range(int(rng.integers(1, 3))):
        op = _pick(rng, ["number", "number", "drop", "extra", "junk", "many", "empty", "binary"])
        if op == "number":
            ops.append([op, int(rng.integers(4)), int(rng.integers(6)), _pick(rng, NUMBERS)])
        elif op == "junk":
            ops.append([op, _pick(rng, LINE_JUNK)])
        else:
            ops.append([op])
    return ops


# -- applying recipes (the worker) --------------------------------------------------------------------------------
def _npy_bytes(array) -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, np.asanyarray(array), allow_pickle=True)
    return buffer.getvalue()


def _bomb_bytes() -> bytes:
    """A version 1.0 .npy header claiming 2^22 x 2^22 float64 (128 TiB), followed by 16 bytes of data."""
    header = {"descr": "<f8", "fortran_order": False, "shape": (1 << 22, 1 << 22)}
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, header)
    return buffer.getvalue() + b"\0" * 16


def _reshaped(a: np.ndarray, how: str) -> np.ndarray:
    a = a.reshape(1) if a.ndim == 0 else a  # a scalar (an earlier "text" op) as one value
    if how == "one" and a.size == 0:
        return a.reshape(-1)
    if how == "T":
        return a.T
    if how == "flat":
        return a.reshape(-1)
    if how == "add_axis":
        return a[None]
    if how == "empty":
        return a[:0]
    if how == "one":
        return a.reshape(-1)[:1].reshape((1,) * max(a.ndim, 1))
    if how == "half":
        return a[: max(len(a) // 2, 1)] if a.ndim else a
    return np.repeat(a[..., None], 2, axis=-1) if a.ndim else a  # "cube": one more axis of length 2


def mutated_npz(source: Path, ops: list) -> bytes:
    """The bytes of `source` (.npz) with `ops` applied (see npz_ops)."""
    with np.load(source, allow_pickle=False) as npz:
        data = {k: npz[k] for k in npz.files}
    raw: dict[str, bytes] = {}
    corrupt = False
    for op in ops:
        keys = sorted(data)
        key = keys[op[1] % len(keys)] if len(op) > 1 and isinstance(op[1], int) and keys else None
        if key is None and op[0] not in ("add", "corrupt"):
            continue
        try:  # an op that does not apply to this array (a text array reshaped, ...) is left out
            corrupt = _apply(op, key, data, raw) or corrupt
        except (TypeError, ValueError, IndexError, OverflowError):
            continue
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for key, array in data.items():
            archive.writestr(key + ".npy", _npy_bytes(array))
        for key, blob in raw.items():
            archive.writestr(key + ".npy", blob)
    out = buffer.getvalue()
    if corrupt:  # cut in the middle of the central directory's first entry
        out = out[: len(out) * 2 // 3]
    return out


def _apply(op: list, key, data: dict, raw: dict) -> bool:
    """One op of npz_ops on `data` (in place); True for "corrupt" (the archive is cut after writing)."""
    kind = op[0]
    if kind in ("fill", "fill_some"):
        a = np.array(data[key], dtype=np.float64 if data[key].dtype.kind not in "fc" else data[key].dtype) \
            if data[key].dtype.kind in "biufc" else np.zeros(data[key].shape)
        if kind == "fill":
            a[...] = FILL[op[2]]
        else:
            a.reshape(-1)[::7] = FILL[op[2]]
        data[key] = a
    elif kind == "dtype":
        try:
            data[key] = data[key].astype(op[2])
        except (TypeError, ValueError, OverflowError):
            data[key] = np.zeros(data[key].shape, op[2] if op[2] != "object" else object)
    elif kind == "shape":
        data[key] = _reshaped(data[key], op[2])
    elif kind == "drop":
        del data[key]
    elif kind == "scalar":
        data[key] = np.asarray(data[key]).reshape(-1)[:1].reshape(()) if data[key].size else np.float64(1.0)
    elif kind == "bomb":
        raw[key] = _bomb_bytes()
        del data[key]
    elif kind == "text":
        data[key] = np.asarray(op[2])
    elif kind == "huge_int":
        data[key] = np.full(data[key].shape, np.iinfo(np.int64).max, np.int64)
    elif kind == "add":
        data[op[1]] = np.arange(3.0)
    elif kind == "corrupt":
        return True
    return False


def picture_bytes(source: Path, op: str) -> bytes:
    """A PNG fixture changed: another width, RGB, 16-bit, a float TIFF named .png, text, cut short, 1 x 1."""
    from PIL import Image

    if op == "truncated":
        return source.read_bytes()[: max(source.stat().st_size // 3, 60)]
    if op == "text":
        return b"P5 not a picture\n"
    image = np.asarray(Image.open(source))
    if op == "crop":
        image = image[:, : image.shape[1] * 2 // 3]
    elif op == "rows":
        image = image[: image.shape[0] // 2]
    elif op == "one":
        image = image[:1, :1]
    buffer = io.BytesIO()
    if op == "rgb":
        Image.fromarray(np.repeat(image[..., None], 3, axis=2)).save(buffer, "PNG")
    elif op == "16bit":
        Image.fromarray(image.astype(np.uint16) * 257).save(buffer, "PNG")
    elif op == "float":
        Image.fromarray(image.astype(np.float32)).save(buffer, "TIFF")
    else:
        Image.fromarray(image).save(buffer, "PNG")
    return buffer.getvalue()


def poses_text(frames: int, ops: list) -> str:
    """A poses file with one line per frame, then `ops` (see poses_ops)."""
    lines = [" ".join(repr(v) for v in POSE) for _ in range(frames)]
    for op in ops:
        kind = op[0]
        if kind == "number" and lines:
            words = lines[op[1] % len(lines)].split()
            if words:
                words[op[2] % len(words)] = op[3]
                lines[op[1] % len(lines)] = " ".join(words)
        elif kind == "drop" and lines:
            lines.pop()
        elif kind == "extra":
            lines.append(lines[-1] if lines else "0 0 0 0 0 0")
        elif kind == "junk":
            lines.insert(0, op[1])
        elif kind == "many":
            lines += lines[-1:] * 200_000
        elif kind == "empty":
            lines = []
        elif kind == "binary":
            return "\x00\x01\x02\xff\xfe" * 100
    return "\n".join(lines) + "\n"


def materialise(content: dict, path: Path, fixtures: Path) -> bool:
    """Write a recipe (module docstring) to `path`; False when it is not one of this module's recipes."""
    if "npz" in content:
        path.write_bytes(mutated_npz(fixtures / content["npz"], content.get("ops", [])))
    elif "picture" in content:
        path.write_bytes(picture_bytes(fixtures / content["picture"], content["op"]))
    elif "poses" in content:
        path.write_text(poses_text(int(content["poses"]), content.get("ops", [])), "utf8", errors="surrogatepass")
    else:
        return False
    return True


# -- the cases ----------------------------------------------------------------------------------------------------
def fit_lidar_case(rng, mutate_tree, dump) -> dict:
    """`radarays fit lidar` on a mutated frame, a frame of another sensor, bad poses or hostile options."""
    frame = _pick(rng, ["lidar.npz", "ouster.npz", "radar.npz", "lidar64.npz"])
    argv = ["fit", "lidar", "{in}/f.npz", "--sensor", "{fixtures}/os1.yaml", "--out", "{out}/fit.yaml",
            "--max-evaluations", "2"]
    files: dict = {"f.npz": {"npz": frame, "ops": []}}
    what = [frame]
    op = _pick(rng, ["npz", "npz", "npz", "poses", "option", "sensor", "check", "other"])
    if op == "npz":
        files["f.npz"]["ops"] = npz_ops(rng)
        what.append(str(files["f.npz"]["ops"])[:200])
    elif op == "poses":
        ops = poses_ops(rng)
        files["p.csv"] = {"poses": 1, "ops": ops}
        argv += ["--world", "{world}", "--poses", "{in}/p.csv"]
        what.append(f"poses {ops}"[:200])
    elif op == "option":
        option = _pick(rng, ["--max-evaluations", "--seed", "--message", "--topic", "--real-meta", "--materials"])
        value = _pick(rng, NUMBERS + TEXTS[:4] + ["10000", "-5", str(2**64)])
        argv += [option + "=" + value]
        what.append(f"{option}={value[:40]!r}")
    elif op == "sensor":
        tree = dump_sensor_tree()
        tree, w = mutate_tree(tree, rng)
        files["s.yaml"] = dump(tree)
        argv[4] = "{in}/s.yaml"
        what.append(f"sensor: {w}")
    elif op == "check":
        files["c.npz"] = {"npz": _pick(rng, ["lidar.npz", "radar.npz", "ouster.npz"]), "ops": npz_ops(rng)}
        argv += ["--check", "{in}/c.npz"]
        what.append(f"--check {files['c.npz']}"[:200])
    else:  # another file type where a frame is expected
        name = _pick(rng, ["f.pcap", "f.osf", "f.mcap", "f.png", "f"])
        files = {name: _pick(rng, ["", "\x00" * 100, "not a frame"])}
        argv[2] = "{in}/" + name
        what.append(f"a {name} that is not one")
    return {"kind": "fit_lidar", "what": "; ".join(what), "files": files, "argv": argv}


_SENSOR_TREE: dict | None = None


def dump_sensor_tree() -> dict:
    """The OS1-16 fixture sensor (512 columns) as a tree (the metadata path absolute)."""
    import copy

    import yaml

    global _SENSOR_TREE
    if _SENSOR_TREE is None:
        preset = DATA / "lidar" / "presets" / "OS1-16.yaml"
        tree = yaml.safe_load(preset.read_text())
        tree["metadata"] = str((preset.parent / tree["metadata"]).resolve())
        tree["columns"] = 512
        _SENSOR_TREE = tree
    return copy.deepcopy(_SENSOR_TREE)


def fit_radar_case(rng) -> dict:
    """`radarays fit radar` on a mutated .npz or picture, a frame of another sensor, bad poses or options."""
    frame = _pick(rng, ["radar.npz", "radar.png", "lidar.npz", "radar_wide.npz"])
    name = "f.png" if frame.endswith(".png") else "f.npz"
    argv = ["fit", "radar", "{in}/" + name, "--preset", "{fixtures}/phys.yaml", "--out", "{out}/fit.yaml",
            "--max-evaluations", "10", "--params", "receiver.noise_figure_db"]
    files: dict = {}
    what = [frame]
    op = _pick(rng, ["frame", "frame", "frame", "sidecar", "poses", "option", "option"])
    if name == "f.png":
        files["f.png"] = {"picture": "radar.png", "op": "same"}
        files["f.png.yaml"] = {"copy": "radar.png.yaml"}
    else:
        files["f.npz"] = {"npz": frame, "ops": []}
    if op == "frame" and name == "f.png":
        files["f.png"]["op"] = _pick(rng, ["crop", "rows", "one", "rgb", "16bit", "float", "truncated", "text"])
        what.append(files["f.png"]["op"])
    elif op == "frame":
        files["f.npz"]["ops"] = npz_ops(rng)
        what.append(str(files["f.npz"]["ops"])[:200])
    elif op == "sidecar":
        files["f.png"] = {"picture": "radar.png", "op": "same"}
        files["f.png.yaml"] = _pick(rng, [
            "range_resolution_m: nan\n", "range_resolution_m: 1e308\n", "range_resolution_m: -1\n", "[1, 2]\n",
            "range_resolution_m: 5e-324\n", "azimuths: 1e12\n", "\x00\x1b\n", "range_resolution_m: '\x1b[2J'\n",
            "encoder_size: 0\nrange_resolution_m: 0.04381\n", "encoder_size: nan\n"])
        argv[2] = "{in}/f.png"
        if rng.integers(2):
            del files["f.png.yaml"]
        what.append(f"sidecar {files.get('f.png.yaml', 'missing')!r}"[:120])
    elif op == "poses":
        ops = poses_ops(rng)
        files["p.txt"] = {"poses": 1, "ops": ops}
        argv += ["--world", "{world}", "--poses", "{in}/p.txt", "--fit-materials",
                 _pick(rng, ["concrete", "nope", "concrete,\x1b[2J", ",", "x" * 3000])]
        what.append(f"poses {ops}"[:200])
    else:
        option = _pick(rng, ["--max-evaluations", "--seed", "--starts", "--resolution", "--ssim-weight", "--params",
                             "--material-keys", "--topic", "--pose-frame", "--materials"])
        value = _pick(rng, NUMBERS + TEXTS[:4] + ["10000000", "-5", str(2**64), "receiver.nope", "velocity,Z"])
        argv += [option + "=" + value]
        if option in ("--material-keys", "--ssim-weight"):
            files["p.txt"] = {"poses": 1, "ops": []}
            argv += ["--world", "{world}", "--poses", "{in}/p.txt", "--fit-materials", "concrete"]
        what.append(f"{option}={value[:40]!r}")
    return {"kind": "fit_radar", "what": "; ".join(what), "files": files, "argv": argv}


LIVOX = ["Avia", "Mid-360", "HAP", "Mid-40", "Mid-70"]
DEPTH_KEYS = ["width", "height", "hfov_deg", "fx", "fy", "cx", "cy", "encoding", "beam.sub_rays", "beam.return_mode",
              "range.max", "rate_hz"]
LIVOX_KEYS = ["pulse_rate_hz", "rate_hz", "emitters", "azimuth.freq_hz", "elevation.wobble_hz", "range.max",
              "organized", "layout", "intensity"]
SET_VALUES = ["nan", "inf", "0", "-1", "5e-324", "1e308", "100000", "8192", "16UC1", "8UC3", "'\x1b[2J'", "2", "true"]


def lidar_options_case(rng, mutate_tree=None, dump=None) -> dict:
    """`radarays lidar` with a Livox preset (CustomMsg) or a depth camera, its options and settings hostile; a
    third of the cases give the preset as a mutated sensor file (written beside, paths made absolute)."""
    import yaml

    depth = bool(rng.integers(2))
    sensor = "ToF-camera-320x240" if depth else _pick(rng, LIVOX)
    suffix = _pick(rng, [".mcap", ".mcap", ".npz", ".png", ".pcd", ".ply"])
    argv = ["lidar", "{world}", "--pose", " ".join(map(str, POSE)), "--sensor", sensor, "--out", "{out}/l" + suffix]
    what = [sensor + suffix]
    files = {}
    if mutate_tree is not None and rng.integers(3) == 0:
        preset = DATA / "lidar" / "presets" / f"{sensor}.yaml"
        tree = yaml.safe_load(preset.read_text())
        for key, value in list(tree.items()):  # files named beside the preset, made absolute
            if isinstance(value, str) and (preset.parent / value).is_file():
                tree[key] = str((preset.parent / value).resolve())
        tree, w = mutate_tree(tree, rng)
        files["s.yaml"] = dump(tree)
        argv[5] = "{in}/s.yaml"
        what.append(f"sensor file: {w}"[:120])
    for _ in range(int(rng.integers(1, 4))):
        op = _pick(rng, ["set", "set", "livox", "scans", "t0", "layout", "organized", "view", "frame", "seed",
                         "device", "truth"])
        if op == "set":
            key = _pick(rng, DEPTH_KEYS if depth else LIVOX_KEYS)
            words = ["--set", f"{key}={_pick(rng, SET_VALUES)}"]
        elif op == "livox":
            words = ["--livox-custom"] + ([_pick(rng, ["livox_ros_driver", "livox_ros_driver2", "x\x1b"])]
                                          if rng.integers(2) else [])
        elif op == "scans":
            words = ["--scans=" + _pick(rng, ["0", "-1", "3", "100000", "1e3", "nan"])]
        elif op == "t0":
            words = ["--t0=" + _pick(rng, NUMBERS)]
        elif op == "layout":
            words = ["--layout=" + _pick(rng, ["livox", "ouster", "xyzi", "velodyne", "nope\x1b"])]
        elif op == "organized":
            words = [_pick(rng, ["--organized", "--unorganized"])]
        elif op == "view":
            words = [_pick(rng, ["--view-reach=", "--view-grid="]) + _pick(rng, NUMBERS)]
        elif op == "frame":
            words = ["--world-frame=" + _pick(rng, TEXTS + ["/", "map frame"])]
        elif op == "seed":
            words = ["--seed=" + _pick(rng, ["-1", str(2**64), "nan", "7"])]
        elif op == "device":
            words = ["--frames", "device"] + (["--backend", "warp"] if rng.integers(2) else [])
        else:
            words = ["--ground-truth"]
        argv += words
        what.append(" ".join(words)[:60])
    return {"kind": "lidar_options", "what": "; ".join(what), "files": files, "argv": argv}


def make_fixtures(folder: Path, main, world: str) -> None:
    """The frames the fit cases mutate, written by the command itself: a small physical radar preset (32 x 256)
    with its .npz and Oxford PNG; an OS1-16 (512 columns) sensor file with its .npz and the same frame in
    shared/realdata's Ouster layout; an OS1-64 frame (another sensor) and a radar frame of 512 bins."""
    import contextlib

    import yaml

    ras6 = (DATA / "radar" / "navtech_ras6.yaml").read_text()
    small = ras6.replace("count: 400", "count: 32").replace("bins: 6848", "bins: 256").replace(
        "samples_azimuth: 8, samples_elevation: 24", "samples_azimuth: 2, samples_elevation: 4")
    (folder / "phys.yaml").write_text(small)
    (folder / "wide.yaml").write_text(small.replace("bins: 256", "bins: 512"))
    pose = " ".join(map(str, POSE))
    (folder / "os1.yaml").write_text(yaml.safe_dump(dump_sensor_tree()))
    with contextlib.redirect_stdout(io.StringIO()):
        for argv in (["radar", world, "--pose", pose, "--config", str(folder / "phys.yaml"), "--out", str(folder / "radar.npz")],
                     ["radar", world, "--pose", pose, "--config", str(folder / "phys.yaml"), "--png-style", "oxford",
                      "--out", str(folder / "radar.png")],
                     ["radar", world, "--pose", pose, "--config", str(folder / "wide.yaml"), "--out",
                      str(folder / "radar_wide.npz")],
                     ["lidar", world, "--pose", pose, "--sensor", str(folder / "os1.yaml"), "--out", str(folder / "lidar.npz")],
                     ["lidar", world, "--pose", pose, "--sensor", "OS1-64", "--set", "columns=512", "--out",
                      str(folder / "lidar64.npz")]):
            assert main(argv) == 0, argv
    with np.load(folder / "lidar.npz") as npz:
        sim = {k: npz[k] for k in npz.files}
    rng = np.random.default_rng(0)
    rows, cols = sim["range"].shape
    t = np.arange(cols, dtype=np.int64) * 97_656 + 1_600_000_000_000_000_000
    ouster = {"range_mm": np.where(sim["hit"], np.rint(sim["range"] * 1000), 0).astype(np.uint32),
              "xyz_m": sim["xyz"].astype(np.float64), "timestamp_ns": t,
              "meas_col": np.tile(np.arange(cols), (rows, 1)),
              "reflectivity": rng.integers(0, 255, (rows, cols)).astype(np.uint16),
              "signal": rng.integers(0, 4000, (rows, cols)).astype(np.uint32),
              "near_ir": rng.integers(0, 2000, (rows, cols)).astype(np.uint16),
              "sensor": np.asarray("OS-1-16-A0"), "udp_profile_lidar": np.asarray("RNG19_RFL8_SIG16_NIR16")}
    np.savez(folder / "ouster.npz", **ouster)
