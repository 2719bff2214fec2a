"""Sensors declared in SDF worlds/models or in URDF `<gazebo>` blocks, for the `sensor_rig` node.

    find_sensors(sdf_path_or_text) -> list[SensorSpec]

Recognised blocks (inside a `<link>` of an SDF model, or in URDF `<gazebo reference="LINK">`):

    <sensor name="front_radar" type="custom" gz:type="radarays_radar">
      <pose>0.2 0 0.5 0 0 0</pose>            <!-- in the parent link; degrees="true" allowed -->
      <update_rate>4</update_rate>             <!-- Hz; 0 or absent -> 0.0 (the node's default) -->
      <topic>radar/image</topic>               <!-- absent -> the sensor name -->
      <gz_frame_id>radar_link</gz_frame_id>    <!-- or <frame_id>; absent -> the link's own name -->
      <radarays_radar>                         <!-- our parameters, passed on as a dict -->
        <preset>mulran</preset>
        <range><max>80</max></range>
      </radarays_radar>
    </sensor>

`gz:type="radarays_lidar"` likewise (parameters in `<radarays_lidar>`); the `ignition:type` spelling
and an undeclared `gz:` prefix are accepted. A Gazebo `gpu_lidar` (also `gpu_ray`, `lidar`, `ray`)
block becomes the lidar gz-sensors would simulate: its `<scan>` rays (samples from min to max angle),
`<range>`, gaussian `<noise>` and `<update_rate>` over the shipped `gazebo_gpu_lidar` base (type
spherical, Gazebo's PointCloudPacked layout: x,y,z,intensity,ring, organized, ring 0 = lowest); one
vertical sample at inclination 0 uses `gazebo_gpu_lidar_2d` (type planar: a LaserScan too, as Gazebo's).

Models pulled in with `<include><uri>` (model://, package://, file paths, the Fuel cache: resolved as
the world loader resolves them; `<name>` renames the model) are searched too; an include that cannot
be resolved is logged and skipped.

Parameter values are read as YAML scalars ("80" -> 80, "true" -> True, "a b" stays a string); nested
elements become nested dicts; a repeated element becomes a list. Checking them is the sensor layers'
job (radar / lidar configs), which name `SensorSpec.source` in their errors.
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from lxml import etree

from ..errors import ConfigError, WorldError
from ..world.transforms import pose_to_matrix
from ..world.uris import ResourceResolver

log = logging.getLogger(__name__)

OUR_TYPES = {"radarays_radar": "radar", "radarays_lidar": "lidar"}
GAZEBO_LIDAR_TYPES = ("gpu_lidar", "gpu_ray", "lidar", "ray")


@dataclass(frozen=True)
class SensorSpec:
    """One sensor to simulate.

    kind: "radar" | "lidar"; name: the SDF sensor name; parent: scoped name of the link it is attached
    to ("model::link", nested "outer::inner::link"; in a URDF the bare link name); pose: 4x4 sensor
    pose in the parent link frame; update_rate: Hz (0.0 = not given); topic; frame: the frame id of
    the output messages; params: our parameters (for a converted gpu_lidar: {"preset": "gazebo_gpu_lidar",
    "overrides": {"horizontal.samples": .., "range.max": .., ...}, "gpu_lidar": {samples, angles}}); gz_type: the
    declared type ("radarays_radar", "gpu_lidar", ...); source: "file:line <sensor name=...>" for messages.
    """

    kind: str
    name: str
    parent: str
    pose: np.ndarray = field(repr=False)
    update_rate: float
    topic: str
    frame: str
    params: dict[str, Any]
    gz_type: str
    source: str
    declared_frame: str = ""  # <gz_frame_id> (or <ignition_frame_id>, <frame_id>) as written; "" = none


DEFAULT_CONFIG = {"radar": "radarays_default", "lidar": "VLP-16"}
RATE_KEY = {"radar": "azimuth.rate_hz", "lidar": "rate_hz"}


def plan_config(spec: SensorSpec) -> tuple[str, dict[str, Any]]:
    """(config, overrides) of a sensor declared in SDF: `preset` is the config, `overrides` and every other
    parameter (nested elements flattened to dotted keys) override it, `<update_rate>` (> 0) sets the rate."""
    from ..sensors.params import flatten

    params = dict(spec.params)
    config = str(params.pop("preset", "") or DEFAULT_CONFIG[spec.kind])
    explicit = params.pop("overrides", {}) or {}
    params.pop("gpu_lidar", None)  # the Gazebo description, already in the overrides
    if not isinstance(explicit, dict):
        raise ConfigError(f"{spec.source}: <overrides> must hold elements like <range.max>80</range.max>")
    overrides = {**flatten(params), **flatten(explicit)}
    if spec.update_rate > 0:
        overrides[RATE_KEY[spec.kind]] = float(spec.update_rate)
    return config, overrides


def find_sensors(sdf_path_or_text, resource_paths=()) -> list[SensorSpec]:
    """Every radarays or Gazebo-lidar sensor in an SDF world/model or URDF (a path, or the XML text).
    `resource_paths`: extra directories for `<include>` URIs (besides GZ_SIM_RESOURCE_PATH etc.)."""
    text, source = _read(sdf_path_or_text)
    base_dir = Path(source).parent if source != "<string>" else Path.cwd()
    root = _parse(text, source)
    specs: list[SensorSpec] = []
    if root.tag == "robot":  # URDF
        _urdf_sensors(root, "", source, specs)
        return specs
    walker = _Walker(ResourceResolver(resource_paths), specs)
    worlds = root.findall("world")
    scope = worlds[0] if worlds else root
    for child in scope:
        walker.child(child, "", base_dir, source)
    return specs


def _urdf_sensors(root, prefix: str, source: str, out: list[SensorSpec]) -> None:
    for gz in root.iter("gazebo"):
        link = gz.get("reference")
        for sensor in gz.findall("sensor"):
            if link is None:
                raise WorldError(f"{_where(sensor, source)}: a <sensor> in <gazebo> needs reference=\"LINK\"")
            spec = _sensor(sensor, prefix + link, link, source)
            if spec is not None:
                out.append(spec)


# -- document walking -----------------------------------------------------------------------------
def _read(sdf_path_or_text) -> tuple[bytes, str]:
    if isinstance(sdf_path_or_text, bytes):
        return sdf_path_or_text, "<string>"
    text = str(sdf_path_or_text)
    if text.lstrip().startswith("<"):
        return text.encode(), "<string>"
    path = Path(text)
    try:
        return path.read_bytes(), str(path)
    except OSError as exc:
        raise WorldError(f"sensor description {path}: cannot be read ({exc.strerror or exc})") from None


def _parse(text: bytes, source: str) -> etree._Element:
    strict = etree.XMLParser(remove_comments=True, resolve_entities=False, no_network=True)
    try:
        return etree.fromstring(text, strict)
    except etree.XMLSyntaxError as exc:
        # SDFormat (tinyxml2) ignores namespaces, so worlds often use gz:type without declaring gz.
        if "Namespace prefix" not in str(exc):
            raise WorldError(f"{source}:{exc.lineno}: malformed XML: {exc.msg}") from None
    lenient = etree.XMLParser(remove_comments=True, resolve_entities=False, no_network=True, recover=True)
    return etree.fromstring(text, lenient)


class _Walker:
    """Walks models (inline, nested and included) collecting sensors."""

    def __init__(self, resolver: ResourceResolver, out: list[SensorSpec]):
        self.resolver, self.out, self.depth = resolver, out, 0

    def child(self, element, prefix: str, base_dir: Path, source: str) -> None:
        if element.tag == "model":
            self.model(element, prefix, base_dir, source)
        elif element.tag == "include":
            self.include(element, prefix, base_dir, source)

    def model(self, model, prefix: str, base_dir: Path, source: str, name: str | None = None) -> None:
        scoped_model = prefix + (name or model.get("name", ""))
        for link in model.findall("link"):
            link_name = link.get("name", "")
            for sensor in link.findall("sensor"):
                spec = _sensor(sensor, f"{scoped_model}::{link_name}", link_name, source)
                if spec is not None:
                    self.out.append(spec)
        for child in model:
            if child.tag in ("model", "include"):
                self.child(child, scoped_model + "::", base_dir, source)

    def include(self, inc, prefix: str, base_dir: Path, source: str) -> None:
        uri = (inc.findtext("uri") or "").strip()
        where = _where(inc, source)
        if self.depth > 16:
            raise WorldError(f"{where}: includes nested deeper than 16 (a cycle?)")
        path, _ = self.resolver.try_resolve(uri, base_dir)
        model_file = _model_file(path) if path is not None else None
        if model_file is None:
            log.warning("%s: include '%s' cannot be resolved; sensors in it are not found", where, uri)
            return
        root = _parse(model_file.read_bytes(), str(model_file))
        name = (inc.findtext("name") or "").strip() or None
        self.depth += 1
        try:
            if root.tag == "robot":
                _urdf_sensors(root, prefix + (name or root.get("name", "")) + "::", str(model_file), self.out)
            else:
                model = root if root.tag == "model" else root.find("model")
                if model is not None:
                    self.model(model, prefix, model_file.parent, str(model_file), name)
        finally:
            self.depth -= 1


def _model_file(target: Path) -> Path | None:
    """The model file of an include target: the file itself, or a model directory's file (the
    newest <sdf> named in model.config, else model.sdf / model.urdf)."""
    if target.is_file():
        return target
    config = target / "model.config"
    if config.is_file():
        manifest = _parse(config.read_bytes(), str(config))
        entries = [(e.get("version", "0"), (e.text or "").strip()) for e in manifest.iter("sdf")]
        entries = [e for e in entries if e[1]]
        if entries:
            entries.sort(key=lambda e: tuple(int(x) for x in e[0].split(".") if x.isdigit()))
            if (target / entries[-1][1]).is_file():
                return target / entries[-1][1]
    for name in ("model.sdf", "model.urdf"):
        if (target / name).is_file():
            return target / name
    return None


def _where(element, source: str) -> str:
    return f"{source}:{element.sourceline} <{element.tag} name='{element.get('name', '')}'>"


def _declared_type(sensor) -> str:
    for key, value in sensor.attrib.items():
        local = key.rsplit("}", 1)[-1].rsplit(":", 1)[-1]
        if local == "type" and key != "type":  # gz:type / ignition:type, declared or not
            return value.strip()
    return ""


# -- one sensor -----------------------------------------------------------------------------------
def _sensor(sensor, parent: str, link_name: str, source: str) -> SensorSpec | None:
    where = _where(sensor, source)
    sdf_type = sensor.get("type", "").strip()
    gz_type = _declared_type(sensor) if sdf_type == "custom" else ""
    if gz_type in OUR_TYPES:
        kind, declared = OUR_TYPES[gz_type], gz_type
        params = _params(sensor.find(gz_type))
    elif sdf_type in GAZEBO_LIDAR_TYPES:
        kind, declared = "lidar", sdf_type
        params = _gpu_lidar_params(sensor, where)
    else:
        return None  # cameras, IMUs, other plugins' custom sensors: not ours
    name = sensor.get("name") or ""
    if not name:
        raise WorldError(f"{where}: a sensor needs a name attribute")
    declared_frame = _text(sensor, "gz_frame_id") or _text(sensor, "ignition_frame_id") or _text(sensor, "frame_id")
    frame = declared_frame or link_name
    return SensorSpec(
        kind=kind,
        name=name,
        parent=parent,
        pose=_pose(sensor, link_name, where),
        update_rate=_rate(sensor, where),
        topic=_text(sensor, "topic") or name,
        frame=frame,
        params=params,
        gz_type=declared,
        source=where,
        declared_frame=declared_frame,
    )


def _text(element, tag: str) -> str:
    child = element.find(tag)
    return (child.text or "").strip() if child is not None else ""


def _rate(sensor, where: str) -> float:
    text = _text(sensor, "update_rate")
    if not text:
        return 0.0
    try:
        rate = float(text)
    except ValueError:
        rate = float("nan")
    if not math.isfinite(rate) or rate < 0:
        raise WorldError(f"{where}: <update_rate> '{text}'; expected a finite number >= 0 (Hz)")
    return rate


def _pose(sensor, link_name: str, where: str) -> np.ndarray:
    pose_el = sensor.find("pose")
    if pose_el is None or not (pose_el.text or "").strip():
        return np.eye(4)
    relative_to = pose_el.get("relative_to")
    if relative_to not in (None, "", link_name):
        raise WorldError(f"{where}: <pose relative_to='{relative_to}'>; sensors are read relative to their "
                         f"link only (allowed: absent or '{link_name}')")
    try:
        values = [float(v) for v in pose_el.text.replace(",", " ").split()]
    except ValueError:
        values = []
    if len(values) != 6 or not all(math.isfinite(v) for v in values):
        raise WorldError(f"{where}: <pose> '{pose_el.text.strip()}'; "
                         "expected six finite numbers 'x y z roll pitch yaw'")
    if pose_el.get("degrees", "false").strip().lower() in ("true", "1"):
        values[3:] = [math.radians(v) for v in values[3:]]
    return pose_to_matrix(*values)


def _params(block) -> dict[str, Any]:
    """Our parameter block as a dict (nested elements -> dicts, repeated elements -> lists)."""
    if block is None:
        return {}
    out: dict[str, Any] = {}
    for child in block:
        if not isinstance(child.tag, str):
            continue
        value = _params(child) if len(child) else _scalar(child.text)
        if child.tag in out:
            if not isinstance(out[child.tag], list):
                out[child.tag] = [out[child.tag]]
            out[child.tag].append(value)
        else:
            out[child.tag] = value
    return out


def _scalar(text: str | None) -> Any:
    text = (text or "").strip()
    try:
        value = yaml.safe_load(text) if text else ""
    except yaml.YAMLError:
        return text
    return value if isinstance(value, (int, float, bool, str)) or value is None else text


# -- gpu_lidar -> the same rays as gz-sensors --------------------------------------------------------
GPU_LIDAR_BASE = "gazebo_gpu_lidar"  # data/examples/gazebo_gpu_lidar.yaml: type spherical, layout gazebo
GPU_LIDAR_2D_BASE = "gazebo_gpu_lidar_2d"  # one row at inclination 0: type planar (a LaserScan too), layout gazebo


def _gpu_lidar_params(sensor, where: str) -> dict[str, Any]:
    """A Gazebo lidar block as our `spherical` lidar with the rays gz-sensors 8 casts and the cloud it sends.

    GpuLidarSensor (gz-sensors8 src/GpuLidarSensor.cc, FillPointCloudMsg): width = horizontal <samples>,
    height = vertical <samples>, ray (i, j) at azimuth min_angle + i * (max - min) / (samples - 1) and
    inclination likewise, both ends included; ring = j (row 0 = lowest); <resolution> does not change the
    cloud (its GpuRays keep resolution 1). <range> min/max, <noise> gaussian <stddev> (added to each range,
    Lidar::ApplyNoise) and <update_rate> are kept; what the block leaves out keeps the base's value. One
    vertical sample at inclination 0 is a 2-D scanner: the `planar` base, whose nodes add the LaserScan."""
    lidar = sensor.find("lidar")
    if lidar is None:
        lidar = sensor.find("ray")
    if lidar is None:
        raise WorldError(f"{where}: a {sensor.get('type')} sensor needs a <lidar> (or <ray>) block with <scan>")

    def axis(name: str, default_samples: int) -> dict[str, Any]:
        el = lidar.find(f"scan/{name}")
        samples = _number(el, "samples", default_samples, where) if el is not None else default_samples
        lo = _number(el, "min_angle", 0.0, where) if el is not None else 0.0
        hi = _number(el, "max_angle", 0.0, where) if el is not None else 0.0
        if samples < 1 or samples != int(samples) or hi < lo or (samples > 1 and hi == lo):
            raise WorldError(f"{where}: <scan><{name}> samples {samples:g}, min_angle {lo:g}, max_angle {hi:g}; "
                             "expected a whole number of samples >= 1 and max_angle > min_angle "
                             "(equal only with 1 sample)")
        if max(abs(lo), abs(hi)) > 2 * math.pi or (name == "vertical" and max(abs(lo), abs(hi)) > math.pi / 2):
            limit = "[-pi/2, pi/2]" if name == "vertical" else "[-2 pi, 2 pi]"
            raise WorldError(f"{where}: <scan><{name}> angles {lo:g}..{hi:g} rad; allowed {limit}")
        return {"samples": int(samples), "min_angle": lo, "max_angle": hi}

    horizontal, vertical = axis("horizontal", 640), axis("vertical", 1)
    planar = vertical["samples"] == 1 and vertical["min_angle"] == 0.0
    overrides: dict[str, Any] = {}
    axes = (("angles", horizontal),) if planar else (("horizontal", horizontal), ("vertical", vertical))
    for name, ax in axes:
        overrides[f"{name}.samples"] = ax["samples"]
        overrides[f"{name}.min_deg"] = math.degrees(ax["min_angle"])
        overrides[f"{name}.max_deg"] = math.degrees(ax["max_angle"])
    range_el = lidar.find("range")
    if range_el is not None:
        for key in ("min", "max"):
            if range_el.find(key) is not None:
                overrides[f"range.{key}"] = _number(range_el, key, 0.0, where)
    noise = lidar.find("noise")
    if noise is not None:
        kind = (_text(noise, "type") or "gaussian").lower()
        mean = _number(noise, "mean", 0.0, where)
        if kind not in ("gaussian", "none") or mean != 0.0:
            raise WorldError(f"{where}: <noise> type '{kind}' mean {mean:g}; allowed: type gaussian (or none) "
                             "with mean 0 (a constant range offset is not modelled)")
        if kind == "gaussian" and _number(noise, "stddev", 0.0, where) > 0:
            overrides["noise.sigma"] = _number(noise, "stddev", 0.0, where)
    return {"preset": GPU_LIDAR_2D_BASE if planar else GPU_LIDAR_BASE, "overrides": overrides,
            "gpu_lidar": {"horizontal": horizontal, "vertical": vertical}}


def _number(element, tag: str, default: float, where: str) -> float:
    text = _text(element, tag)
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not math.isfinite(value):
        raise WorldError(f"{where}: <{tag}> '{text}' is not a finite number")
    return value
