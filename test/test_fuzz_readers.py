"""Property-based fuzzing of every file reader (issue 11): whatever the bytes, a reader loads them or
raises one of our typed errors (RadaraysError: ConfigError, WorldError) with a one-line message.

Fixed budget and seed (derandomize=True, bounded max_examples): the same inputs every run, the whole
set in a few seconds. Inputs are built near the real formats (real keys, real elements) so that the
fuzzer reaches the checks behind the syntax, with hostile values: inf, nan, 400-digit integers,
None, strings, lists, deep nesting, huge sizes.
"""
from __future__ import annotations

import io
import tempfile
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from radarays_ros.errors import RadaraysError

FUZZ = settings(derandomize=True, max_examples=60, deadline=None, database=None,
                suppress_health_check=list(HealthCheck))

hostile_numbers = st.sampled_from([float("inf"), float("-inf"), float("nan"), 10**400, -(10**400), 1e39, 1e300,
                                   -1, 0, 1e-13, 2**63, 1.5, 10**9])
scalars = st.one_of(hostile_numbers, st.integers(-10, 10**6), st.floats(allow_nan=True, allow_infinity=True),
                    st.none(), st.booleans(), st.text(max_size=20))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                      max_leaves=12)


def assert_clean(load, *args):
    """`load(*args)` returns, or raises a RadaraysError whose message is one line."""
    try:
        load(*args)
    except RadaraysError as exc:
        assert "\n" not in str(exc), str(exc)


def write(tmp: Path, name: str, data) -> Path:
    path = tmp / name
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data if isinstance(data, str) else yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    return path


def _mutated(base: dict, key_paths: list[tuple[str, ...]]):
    """A copy of `base` with one to three entries (at real key paths) replaced by hostile values."""
    def build(picks):
        data = yaml.safe_load(yaml.safe_dump(base))
        for path, value in picks:
            node = data
            for key in path[:-1]:
                node = node.setdefault(key, {}) if isinstance(node, dict) else {}
            if isinstance(node, dict):
                node[path[-1]] = value
        return data
    return st.lists(st.tuples(st.sampled_from(key_paths), values), min_size=1, max_size=3).map(build)


def _radar_keys():
    from radarays_ros.radar.config import RadarConfig

    return [tuple(k.split(".")) for k in RadarConfig.keys()]


@FUZZ
@given(_mutated({}, _radar_keys()))
def test_radar_config(data):
    from radarays_ros.radar.config import RadarConfig

    with tempfile.TemporaryDirectory() as tmp:
        assert_clean(RadarConfig.from_yaml, write(Path(tmp), "radar.yaml", data))


def _lidar_base() -> dict:
    from lidar_ros.config import _preset_path

    return yaml.safe_load(_preset_path("VLP-16").read_text())


def _paths(data, prefix=()):
    for key, value in data.items():
        yield prefix + (key,)
        if isinstance(value, dict):
            yield from _paths(value, prefix + (key,))


@FUZZ
@given(_mutated(_lidar_base(), list(_paths(_lidar_base()))))
def test_lidar_sensor_file(data):
    from lidar_ros.config import load_sensor

    with tempfile.TemporaryDirectory() as tmp:
        assert_clean(load_sensor, str(write(Path(tmp), "sensor.yaml", data)))


def _library_base() -> dict:
    from radarays_ros.resources import data_path

    return yaml.safe_load(data_path("materials", "default.yaml").read_text())


@settings(FUZZ, max_examples=25)  # each example merges over the shipped library (~0.1 s)
@given(_mutated(_library_base(), [("materials",), ("assign",), ("default",), ("materials", "concrete"),
                                  ("materials", "concrete", "radar"), ("assign", "0")]))
def test_material_library(data):
    from radarays_ros.world.materials import MaterialLibrary

    with tempfile.TemporaryDirectory() as tmp:
        assert_clean(MaterialLibrary.load_user, write(Path(tmp), "materials.yaml", data))


SCENARIO = {"world": "office", "duration": 0.2, "tf_rate_hz": 10,
            "trajectory": {"waypoints": [[0, 0], [1, 0]], "speed": 1.0},
            "sensors": {"front": {"type": "lidar", "config": "VLP-16", "mount": [0, 0, 1, 0, 0, 0]}}}
SCENARIO_KEYS = [("world",), ("duration",), ("start",), ("tf_rate_hz",), ("trajectory",), ("trajectory", "speed"),
                 ("trajectory", "waypoints"), ("trajectory", "z"), ("trajectory", "csv"), ("sensors",),
                 ("sensors", "front"), ("sensors", "front", "type"), ("sensors", "front", "config"),
                 ("sensors", "front", "mount"), ("sensors", "front", "set"), ("entities",), ("ignore",)]


@FUZZ
@given(_mutated(SCENARIO, SCENARIO_KEYS))
def test_scenario(data):
    from radarays_ros.scenario.config import load_scenario

    with tempfile.TemporaryDirectory() as tmp:
        assert_clean(load_scenario, write(Path(tmp), "scenario.yaml", data))


@FUZZ
@given(st.one_of(st.binary(max_size=200), st.text(max_size=200),
                 st.lists(st.lists(st.one_of(hostile_numbers.map(str), st.text(max_size=5)), min_size=7, max_size=7),
                          max_size=5).map(lambda rows: "\n".join(",".join(r) for r in rows))))
def test_csv_trajectory(text):
    from radarays_ros.world.trajectory import Trajectory

    with tempfile.TemporaryDirectory() as tmp:
        assert_clean(Trajectory.from_csv, write(Path(tmp), "t.csv", text if isinstance(text, (bytes, str)) else ""))


numbers_text = st.one_of(hostile_numbers.map(str), st.sampled_from(["1 1 1", "1e39 1 1", "nan", "", "a b c", "1 2"]))


@FUZZ
@given(size=numbers_text, radius=numbers_text, pose=numbers_text, scale=numbers_text, name=st.text(max_size=10))
def test_sdf_world(size, radius, pose, scale, name):
    from radarays_ros.world.sdf import parse_sdf_string

    text = (f'<sdf version="1.9"><world name="w"><model name="{name!s:.10}"><static>true</static><pose>{pose}</pose>'
            f'<link name="l"><visual name="a"><geometry><box><size>{size}</size></box></geometry></visual>'
            f'<visual name="b"><geometry><sphere><radius>{radius}</radius></sphere></geometry></visual>'
            f'<visual name="c"><geometry><mesh><uri>x.obj</uri><scale>{scale}</scale></mesh></geometry></visual>'
            '</link></model></world></sdf>').replace("&", "&amp;")
    with tempfile.TemporaryDirectory() as tmp:
        assert_clean(parse_sdf_string, text, Path(tmp))


@FUZZ
@given(st.one_of(st.binary(max_size=300), st.text(max_size=300)))
def test_sdf_bytes(data):
    from radarays_ros.world.sdf import parse_sdf_string

    with tempfile.TemporaryDirectory() as tmp:
        assert_clean(parse_sdf_string, data if isinstance(data, str) else data.decode("latin-1"), Path(tmp))


@FUZZ
@given(size=numbers_text, xyz=numbers_text, link_name=st.one_of(st.none(), st.text(max_size=8)))
def test_urdf(size, xyz, link_name):
    from radarays_ros.world.urdf import urdf_to_sdf_model

    name = "" if link_name is None else f' name="{link_name}"'
    text = (f'<robot name="r"><link{name}><visual><origin xyz="{xyz}"/><geometry><box size="{size}"/></geometry>'
            '</visual></link></robot>').replace("&", "&amp;")
    with tempfile.TemporaryDirectory() as tmp:
        assert_clean(urdf_to_sdf_model, Path(tmp) / "r.urdf", text)


def _npz(arrays: dict) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


ray_arrays = st.sampled_from([np.zeros((3, 3)), np.full((2, 3), np.nan), np.zeros((2, 2)), np.zeros(3),
                              np.array(["a", "b"]), np.zeros((0, 3)), np.ones((4, 3), dtype=np.int32)])


@FUZZ
@given(st.one_of(st.binary(max_size=100),
                 st.fixed_dictionaries({"origins": ray_arrays, "directions": ray_arrays}).map(_npz)))
def test_rays_file(data):
    from radarays_ros.tracing.cli import read_rays

    with tempfile.TemporaryDirectory() as tmp:
        assert_clean(read_rays, write(Path(tmp), "rays.npz", data))


@pytest.mark.parametrize("text", ["[" * 5000 + "]" * 5000, "a: " + "{b: " * 3000 + "1" + "}" * 3000,
                                  "a: &a [1,1,1,1,1,1,1,1,1]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
                                  "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
                                  "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n",
                                  b"\xff\xfe not utf-8", ""])
def test_yaml_structure_bombs(tmp_path, text):
    from radarays_ros.radar.config import RadarConfig

    path = write(tmp_path, "radar.yaml", text)
    assert_clean(RadarConfig.from_yaml, path)
    assert_clean(RadarConfig.from_yaml, tmp_path)  # a directory where a file is expected
