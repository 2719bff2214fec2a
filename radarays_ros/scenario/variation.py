"""A scenario with a batch run's overrides and seed applied: the one place that knows the override keys.

Override keys (the `set` and `vary` keys of a manifest row):

    sensors.<name>.<config key>        a sensor's config, as the sensor's `set` / `--set` takes it
                                       (radar: noise.system_std, beam.samples...; lidar: noise.sigma...)
    sensors.<name>.output.<option>     an output option (image_layout, points_k, ground_truth...)
    materials.<material>.radar.<key>   a material of the scenario's library (shipped + its own file),
    materials.<material>.lidar.<key>   e.g. materials.concrete.radar.velocity
    weather.fog_visibility_km          weather for every lidar of the scenario (the lidar model's
    weather.rain_rate_mm_h             `weather.*` section); the radar model has no weather
    weather.snow_rate_mm_h, weather.snow_visibility_km
    odometry.drift.translation_std     drift of /odom (odometry.py)
    odometry.drift.yaw_std_deg
    duration, start, tf_rate_hz        the scenario's own keys

The run's seed seeds every random draw of the run: each sensor's `seed` (unless the row sets
`sensors.<name>.seed`) and the odometry drift, each from its own stream of a SeedSequence over
(seed, name), so adding a sensor does not change the others' noise.
"""
from __future__ import annotations

import os

import copy
import dataclasses
import zlib
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from ..config_file import read_yaml
from ..errors import ConfigError
from .config import Scenario, scenario_from_data

WEATHER_KEYS = ("fog_visibility_km", "rain_rate_mm_h", "snow_rate_mm_h", "snow_visibility_km")
SCENARIO_KEYS = ("duration", "start", "tf_rate_hz")
ODOMETRY_KEYS = ("odometry.drift.translation_std", "odometry.drift.yaw_std_deg")
MATERIAL_PARTS = ("radar", "lidar")


def allowed_keys_text(sensors) -> str:
    return (f"sensors.<name>.<config key> (sensors: {', '.join(sensors) or 'none'}), sensors.<name>.output.<option>, "
            f"materials.<material>.radar|lidar.<key>, {', '.join('weather.' + k for k in WEATHER_KEYS)}, "
            f"{', '.join(ODOMETRY_KEYS)}, {', '.join(SCENARIO_KEYS)}")


def derived_seed(seed: int, stream: str) -> int:
    """A 32-bit seed for one named stream of a run (a sensor, the odometry): exact as a float too."""
    sequence = np.random.SeedSequence(seed, spawn_key=(zlib.crc32(stream.encode()),))
    return int(sequence.generate_state(1, np.uint32)[0])


def lidar_weather_keys() -> tuple[str, ...]:
    """Weather keys this version's lidar model takes (empty before the lidar weather model exists)."""
    try:
        from lidar_ros.physics.effects_config import WeatherConfig
    except ImportError:
        return ()
    return tuple(f.name for f in dataclasses.fields(WeatherConfig))


def varied_scenario(path: str | Path, overrides: Mapping[str, Any], seed: int | None, where: str) -> Scenario:
    """The scenario at `path` with dotted overrides and the run seed applied; ConfigError names the key."""
    path = Path(path)
    data = copy.deepcopy(read_yaml(path, "scenario"))
    if not isinstance(data, dict) or not isinstance(data.get("sensors"), dict):
        return scenario_from_data(data, path)  # its own error, naming the file
    sensors = data["sensors"]
    materials: dict[tuple[str, str, str], Any] = {}
    weather: dict[str, Any] = {}
    for key, value in overrides.items():
        w = f"{where}: {key}"
        parts = key.split(".")
        if parts[0] == "sensors" and len(parts) >= 3:
            name = _sensor_name(sensors, parts[1:], w)
            rest = parts[2:]  # sensor names hold no '.' (config.SENSOR_NAME)
            spec = sensors[name] if isinstance(sensors[name], dict) else {}
            sensors[name] = spec
            if rest[0] == "output" and len(rest) == 2:
                spec.setdefault("output", {})[rest[1]] = value
            else:
                spec["set"] = {**(spec.get("set") or {}), ".".join(rest): value}
        elif parts[0] == "materials" and len(parts) == 4:
            if parts[2] not in MATERIAL_PARTS:
                raise ConfigError(f"{w}: '{parts[2]}' is not a material part; allowed: radar, lidar")
            materials[(parts[1], parts[2], parts[3])] = value
        elif parts[0] == "weather" and len(parts) == 2:
            if parts[1] not in WEATHER_KEYS:
                raise ConfigError(f"{w}: unknown weather key; allowed: {', '.join(WEATHER_KEYS)}")
            weather[parts[1]] = value
        elif key in ODOMETRY_KEYS:
            odometry = data.setdefault("odometry", {}) or {}
            data["odometry"] = odometry
            odometry.setdefault("drift", {})[parts[2]] = value
        elif key in SCENARIO_KEYS:
            data[key] = value
        else:
            raise ConfigError(f"{w}: no such override key; allowed: {allowed_keys_text(sensors)}")
    if weather:
        _apply_weather(data, weather, where)
    if seed is not None:
        for name, spec in sensors.items():
            if isinstance(spec, dict):
                spec["set"] = {"seed": derived_seed(seed, f"sensor:{name}"), **(spec.get("set") or {})}
        odometry = data.get("odometry") or {}
        data["odometry"] = {**odometry, "seed": derived_seed(seed, "odometry")}
    scenario = scenario_from_data(data, path)
    if materials:
        scenario = dataclasses.replace(scenario, materials=_material_library(scenario, materials, where))
    return scenario


def check_sensor_configs(scenario: Scenario, where: str) -> None:
    """Build every sensor's config with its overrides (the values a run would use); ConfigError if one is bad."""
    from lidar_ros import load_sensor

    from ..radar.config import resolve_radar_config
    from ..sensors.units import LidarUnit, RadarUnit

    for spec in scenario.sensors:
        # a batch plans every run: a sensor whose settings repeat (all but its per-run seed, an integer any
        # seed rule takes) is built once (an Ouster table alone took ~17 ms a run)
        key = repr((spec.kind, spec.config, _file_state(spec.config), sorted((k, repr(v)) for k, v in spec.overrides.items() if k != "seed"),
                    sorted(spec.output)))
        if key in _CHECKED:
            continue
        try:
            if spec.kind == "radar":
                resolve_radar_config(spec.config, spec.overrides)
                options = RadarUnit.output_params()
            else:
                load_sensor(spec.config, spec.overrides)
                options = LidarUnit.output_params()
        except ConfigError as exc:
            raise ConfigError(f"{where}: sensors.{spec.name}: {exc}") from None
        unknown = sorted(set(spec.output) - set(options))
        if unknown:
            raise ConfigError(f"{where}: sensors.{spec.name}.output.{unknown[0]}: unknown output option; "
                              f"allowed: {', '.join(options)}")
        if isinstance(spec.config, str) and len(_CHECKED) < 4096:  # a name or path (files are read each time)
            _CHECKED.add(key)


_CHECKED: set = set()  # sensors checked in this process (see check_sensor_configs)


def _file_state(config) -> tuple | None:
    """What tells a changed sensor file (a preset name: None, the shipped files do not change)."""
    try:
        stat = os.stat(config)
    except (OSError, TypeError, ValueError):
        return None
    return stat.st_ino, stat.st_size, stat.st_mtime_ns


def _sensor_name(sensors: Mapping, parts: list[str], where: str) -> str:
    """The sensor a `sensors.<name>.<key>` override names (names may hold '/', never '.')."""
    name = parts[0]
    if name not in sensors:
        raise ConfigError(f"{where}: the scenario has no sensor '{name}'; sensors: {', '.join(map(str, sensors))}")
    if len(parts) < 2:
        raise ConfigError(f"{where}: expected sensors.{name}.<config key>")
    return name


def _apply_weather(data: dict, weather: Mapping[str, Any], where: str) -> None:
    supported = lidar_weather_keys()
    lidars = [spec for spec in data["sensors"].values() if isinstance(spec, dict) and spec.get("type") == "lidar"]
    for key, value in weather.items():
        if key not in supported:
            raise ConfigError(f"{where}: weather.{key}: not supported yet: this version's lidar model has no "
                              f"weather.{key} (the radar model has no weather at all)")
        if not lidars:
            raise ConfigError(f"{where}: weather.{key}: the scenario has no lidar, and the radar model has no "
                              "weather: the value would change nothing")
        for spec in lidars:
            spec["set"] = {**(spec.get("set") or {}), f"weather.{key}": value}


def _material_library(scenario: Scenario, changes: Mapping[tuple[str, str, str], Any], where: str):
    """The scenario's library (shipped + its file) with material parts changed, validated by both models."""
    from lidar_ros.physics.materials import LidarMaterials

    from ..radar.materials import RadarMaterials
    from ..world.entities import material_library

    library = material_library(scenario.materials)
    for (name, part, key), value in changes.items():
        w = f"{where}: materials.{name}.{part}.{key}"
        if name not in library.names:
            raise ConfigError(f"{w}: no material '{name}'; materials: {', '.join(library.names)}")
        material = library[library.id_of(name)]
        values = dict(getattr(material, part))
        if key not in values and not (part == "radar" and key in ("A", "B", "C", "brdf")):
            raise ConfigError(f"{w}: {name}.{part} has no '{key}'; it has {', '.join(values) or 'no keys'}")
        values[key] = value
        library.add(dataclasses.replace(material, **{part: values}, origin=f"{material.origin} + batch overrides"))
    try:
        RadarMaterials.from_library(library)
        LidarMaterials.from_library(library)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    return library
