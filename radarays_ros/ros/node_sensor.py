"""One sensor of a node: its unit, parameter prefix, publishers, timer, worker thread and statistics;
the sensors a node's parameters declare (`declare_sensors`) and their units (`build_unit`), and how a
parameter change of a sensor's own keys is checked before anything of it changes. No rclpy here:
`params` is the node's ros/params.NodeParameters, `error(text)` its throttled error log."""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

import numpy as np

from ..errors import ConfigError, RadaraysError
from ..sensors.diagnostics import Stats
from ..sensors.poses import fixed_pose
from ..sensors.topics import driver_names, sensor_topic
from ..sensors.units import SensorUnit, make_unit
from ..validate import plain
from .gazebo_link import SdfSensorPlan, sdf_topic
from .node_params import DEFAULT_CONFIG, RIG_PARAMS, RIG_SENSOR_PARAMS, SENSOR_PARAMS, config_param


class Sensor:
    """One sensor of the node: its unit, parameters prefix, publishers, timer and statistics."""

    def __init__(self, name: str, prefix: str, kind: str, source: str):
        self.name = name  # '' for the single-sensor nodes
        self.prefix = prefix  # parameter prefix: '' or 'front_radar.'
        self.kind = kind
        self.source = source  # preset name or file
        self.unit: SensorUnit | None = None
        self.frame_id = ""
        self.fixed_pose = np.eye(4)
        self.publishers: dict[str, Any] = {}
        self.timer = None
        self.lock = threading.Lock()  # held while a frame runs; reconfiguration waits for it
        self.worker = ThreadPoolExecutor(1, thread_name_prefix=f"frame_{name or kind}")
        self.stats = Stats()
        self.last_tick_ns: int | None = None  # grid slot of the last simulated sweep
        self.sdf: SdfSensorPlan | None = None  # a sensor declared in SDF
        self.gazebo_parent = ""  # pose_source gazebo: the link carrying it
        self.driver_topics: dict[str, str] = {}  # driver_names: relative output -> the driver's topic

    @classmethod
    def declared_in_sdf(cls, plan: SdfSensorPlan) -> "Sensor":
        sensor = cls(plan.name, f"{plan.name}.", plan.kind, plan.config)
        sensor.sdf, sensor.gazebo_parent = plan, plan.parent
        return sensor

    @property
    def origin(self) -> str:
        """Where the sensor was declared, for messages: its SDF block or its config."""
        return self.sdf.source if self.sdf is not None else self.source

    @property
    def label(self) -> str:
        return self.name or self.kind

    @property
    def mount(self) -> np.ndarray:
        """Pose of the sensor on its Gazebo link: its SDF <pose>, else the fixed_pose parameter."""
        return self.sdf.mount if self.sdf is not None else self.fixed_pose

    def topic(self, relative: str) -> str:
        if self.sdf is not None:
            return sdf_topic(self.sdf.topic, self.kind, relative)
        if relative in self.driver_topics:  # driver_names: the imitated driver's own topic
            return self.driver_topics[relative]
        return sensor_topic(self.name, relative)  # the one rule of bags, rig and nodes

    def submit(self, frame: Callable[[], None], crashed: Callable[[str], None]) -> None:
        """Run `frame()` on this sensor's worker thread, or count it dropped if the last one still runs.

        Callbacks stay short on the executor thread (rclpy's executors are Python: a callback that
        holds them for a frame stalls /clock, /tf and the parameter services); the work itself runs
        on a thread per sensor, where the backend and numpy release the GIL, so sensors overlap. An
        exception of `frame` (a bug, an unexpected input) must not end the node: counted, `crashed(text)`.
        """
        if not self.lock.acquire(blocking=False):
            self.stats.dropped += 1
            return
        try:
            self.worker.submit(self._run_and_release, frame, crashed)
        except RuntimeError:  # the worker is shut down: the node is stopping
            self.lock.release()

    def _run_and_release(self, frame: Callable[[], None], crashed: Callable[[str], None]) -> None:
        try:
            frame()
        except Exception as exc:  # noqa: BLE001 - see submit
            self.stats.failed += 1
            self.stats.last_error = f"{type(exc).__name__}: {exc}"
            crashed(self.stats.last_error)
        finally:
            self.lock.release()

    def wanted(self, lazy: bool) -> set[str] | None:
        """Topics somebody listens to (all but the on-demand ones when not lazy); None = nobody (and lazy)."""
        listened = {t for t, pub in self.publishers.items() if pub.get_subscription_count() > 0}
        if not lazy:
            return (set(self.unit.topics) - set(getattr(self.unit, "on_demand", ()))) | listened
        return listened or None

    def plan_change(self, changes: dict[str, Any], log: Callable[[str], None]) -> list[Callable[[], None]]:
        """The steps that apply this sensor's part of a parameter change; raises ConfigError (naming the key
        and the allowed values) before anything changed when a value is bad. The new model config is tried
        whole first: its frame period must be one a timer can keep (`checked_period`)."""
        unit = self.unit
        if unit is None:
            return []
        prefix = self.prefix
        mine = {k[len(prefix):]: v for k, v in changes.items() if k.startswith(prefix)} if prefix else dict(changes)
        plan = []
        model = {k[len("sensor."):]: v for k, v in mine.items() if k.startswith("sensor.")}
        if model:
            config = unit.with_overrides(model)
            probe = type(unit).__new__(type(unit))  # a shallow copy with the new config: its derived numbers
            probe.__dict__.update(unit.__dict__)
            probe.config = config
            where = ", ".join(f"{prefix}sensor.{k} = {plain(v)}" for k, v in sorted(model.items()))
            checked_period(probe, where)

            def apply_model():
                with self.lock:
                    self.unit.reconfigure(config)
                log(f"{self.label}: reconfigured {sorted(model)}")
            plan.append(apply_model)
        output = {k[len("output."):]: v for k, v in mine.items() if k.startswith("output.")}
        if output:
            probe = type(unit).__new__(type(unit))  # a shallow copy checks the change without applying it
            probe.__dict__.update(unit.__dict__)
            probe.output = dict(unit.output)
            probe.set_output(output)
            plan.append(lambda: self.unit.set_output(output))
        if "gazebo_parent" in mine:
            parent = str(mine["gazebo_parent"])
            plan.append(lambda: setattr(self, "gazebo_parent", parent))
        if "fixed_pose" in mine:
            pose = fixed_pose(mine["fixed_pose"])
            plan.append(lambda: setattr(self, "fixed_pose", pose))
        if "frame_id" in mine:
            frame = str(mine["frame_id"]) or unit.frame_id
            plan.append(lambda: (setattr(self, "frame_id", frame), setattr(self.unit, "frame_id", frame)))
        return plan

    def snapshot(self) -> tuple:
        """What a parameter change may alter of this sensor (its unit's and simulator's attributes, frame_id,
        poses): `restore(snapshot)` puts exactly that back when a change fails half-way."""
        unit = self.unit
        simulator = getattr(unit, "simulator", None)
        return (unit, dict(unit.__dict__) if unit is not None else None, simulator,
                dict(simulator.__dict__) if simulator is not None else None,
                self.frame_id, self.fixed_pose, self.gazebo_parent)

    def restore(self, snapshot: tuple) -> None:
        unit, unit_state, simulator, simulator_state, self.frame_id, self.fixed_pose, self.gazebo_parent = snapshot
        with self.lock:
            self.unit = unit
            if unit is not None:
                unit.__dict__.clear()
                unit.__dict__.update(unit_state)
            if simulator is not None:
                simulator.__dict__.clear()
                simulator.__dict__.update(simulator_state)


MAX_PERIOD_NS = 2**62  # a frame period a timer (int64 nanoseconds, half-period ticks) can keep: 146 years


def checked_period(unit: SensorUnit, where: str) -> int:
    """The unit's frame period in nanoseconds, 1 ns .. MAX_PERIOD_NS; ConfigError naming `where` otherwise
    (a rate of 5e-324 Hz passes an open lower bound at 0 but its period 1e9 / rate is infinite)."""
    try:
        period = unit.period_ns
        unit.rays_per_frame  # noqa: B018 - derived from the same config: must be computable too
    except (OverflowError, ValueError, ZeroDivisionError, TypeError) as exc:
        raise ConfigError(f"{where}: the frame period cannot be computed ({type(exc).__name__}: {exc}); "
                          f"allowed a period of 1 ns to {MAX_PERIOD_NS} ns (rate 1e9 Hz to 2.2e-10 Hz)") from None
    if not 1 <= period <= MAX_PERIOD_NS:
        raise ConfigError(f"{where}: frame period {period} ns out of range, allowed 1 to {MAX_PERIOD_NS} ns")
    return period

def declare_sensors(kind: str, params, error: Callable[[str], None]) -> list[Sensor]:
    """The sensors of a node of `kind` (radar, lidar: one at the top level; rig: those `sensors` lists)."""
    if kind != "rig":
        params.declare(config_param(kind), "", read_only={"config"})
        return [Sensor("", "", kind, params("config"))]
    params.declare(RIG_PARAMS, "", read_only={"sensors"})
    names = [n for n in (params("sensors") or []) if n]
    if not names and not (params("gazebo.enable") and params("gazebo.sdf_sensors")):
        error("parameter 'sensors' is empty: list the rig's sensors, e.g. sensors: [front_radar, top_lidar] "
              "with front_radar.type: radar and front_radar.config: navtech_cir204")
    sensors = []
    for name in names:
        values = params.declare(RIG_SENSOR_PARAMS, f"{name}.", read_only={"type", "config"})
        if values["type"] not in DEFAULT_CONFIG:
            error(f"parameter {name}.type = {values['type']!r}: must be radar or lidar; sensor {name} disabled")
            continue
        sensors.append(Sensor(name, f"{name}.", values["type"], values["config"] or DEFAULT_CONFIG[values["type"]]))
    return sensors


def build_unit(sensor: Sensor, params, scene, backend, error: Callable[[str], None]) -> None:
    """Create the sensor's unit from its config plus the params file's keys, then declare its parameters
    (`sensor.*` from the model's config, `output.*`); a sensor that cannot start says why and stays off."""
    params.declare(SENSOR_PARAMS, sensor.prefix, read_only={"frames"})
    sensor.frame_id = params(sensor.prefix + "frame_id") or (sensor.sdf.frame if sensor.sdf else "")
    sensor.gazebo_parent = params(sensor.prefix + "gazebo_parent") or sensor.gazebo_parent
    try:
        sensor.fixed_pose = fixed_pose(params(sensor.prefix + "fixed_pose"))
    except ConfigError as exc:
        error(f"{sensor.prefix}{exc}; using the identity")  # exc names fixed_pose and what it needs
    overrides = {**(sensor.sdf.overrides if sensor.sdf else {}), **params.from_file(f"{sensor.prefix}sensor.")}
    try:
        sensor.unit = make_unit(sensor.kind, sensor.name, scene, backend, config=sensor.source,
                                frame_id=frame_arg(sensor), overrides=overrides,
                                frames=params(sensor.prefix + "frames"))
        checked_period(sensor.unit, f"{sensor.prefix}sensor.* of {sensor.origin}")
    except (RadaraysError, OSError) as exc:
        sensor.unit = None
        sensor.stats.last_error = str(exc)
        where = f"the SDF block at {sensor.origin}" if sensor.sdf else "the config"
        error(f"sensor {sensor.label} ({sensor.origin}) not started: {exc}. Fix {where} or the "
              f"{sensor.prefix}sensor.* values in the params file and restart the node.")
        return
    sensor.frame_id = sensor.unit.frame_id
    names = driver_names(getattr(sensor.unit.config, "layout", "")) if params("driver_names") else None
    if names is not None and sensor.sdf is None:  # the imitated driver's topics, and its frame unless frame_id is set
        sensor.driver_topics = names[0]
        if not params(sensor.prefix + "frame_id"):
            sensor.frame_id = sensor.unit.frame_id = names[1]
    params.declare(sensor.unit.params(), sensor.prefix + "sensor.", dynamic=True)
    outputs = params.declare(sensor.unit.output_params(), sensor.prefix + "output.")
    try:
        sensor.unit.set_output(outputs)
    except ConfigError as exc:
        error(str(exc))


def frame_arg(sensor: Sensor) -> str | None:
    """The frame_id parameter, or the sensor's own default (lidar: from its config; radar: 'radar')."""
    if sensor.frame_id:
        return sensor.frame_id
    return None if sensor.kind == "lidar" else "radar"
