"""Where the other radars stand this frame: interference.preset and the radars of interference.others, each
fixed in the world, riding on a scene entity, or on our own rig (the physics of their chirps: interference.py).

On a scene entity (a scenario's moving entity, a Gazebo model): it stands at its mount in that entity's frame at
the frame's start and moves on with the entity's velocity (rigid motion: v + w x r; simulate.entity_motion: the
twist its mover gave, else its poses at this frame and the one before) while our antenna turns; the entity's whole
model never blocks its signal; its platform may tilt (the entity's full rotation turns its beam). On our rig
(on_sensor): its mount is in our sensor's frame, so it stands where our pose at each azimuth puts it.
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from ...throttled_log import ThrottledLog

_LOG = ThrottledLog(logging.getLogger("radarays_ros.radar"))  # a carrier missing from the scene: once per 5 s


@dataclass(frozen=True)
class Interferer:
    config: object  # its RadarConfig (a preset): azimuth, antenna, fmcw, receiver.transmit_power_dbm
    position: np.ndarray  # (3,) its antenna in the world at the frame's start, or (A, 3) at each of our azimuths
    rotation: np.ndarray  # (3, 3) world <- its platform (its azimuth 0 along the platform's x, turning about its z), or (A, 3, 3)
    velocity: np.ndarray = field(default_factory=lambda: np.zeros(3))  # (3,) m/s of its antenna over the frame
    carrier: frozenset = frozenset()  # ids of the entities of the model carrying it: never a wall between us
    clock_offset_s: float | None = None  # its clock against ours (None: drawn per frame)
    index: int = 0  # 0: the interference section's radar; k + 1: interference.others' radar k (its own draws)


@lru_cache(maxsize=8)
def _preset(name: str, modified_ns: int):
    """The other radar's config, read once per name and file version (config.file_version)."""
    from ..config import resolve_radar_config

    return resolve_radar_config(name)


def _turned(heading_rad: float) -> np.ndarray:
    c, s = math.cos(heading_rad), math.sin(heading_rad)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def interferers_of(cfg, scene=None, motion=None, sensor_poses=None) -> list[Interferer]:
    """The other radars this frame: the interference section's and those of its others file, less any whose carrier
    (entity) is not in `scene` (logged, throttled). motion: the frame's EntityMotion (simulate.entity_motion) or
    None (nothing moves); sensor_poses: (A, 4, 4) our sensor's world poses at our azimuths (on_sensor radars)."""
    from ..config import other_interferers

    specs = [(0, cfg.interference)] if cfg.interference.preset else []  # index 0: the section's own radar
    if cfg.interference.others:
        specs += [(k + 1, spec) for k, spec in enumerate(other_interferers(cfg.interference.others))]
    placed = (_placed(spec, index, scene, motion, sensor_poses) for index, spec in specs)
    return [other for other in placed if other is not None]


def _placed(spec, index: int, scene, motion, sensor_poses) -> Interferer | None:
    from ..config import file_version

    config = _preset(spec.preset, file_version(spec.preset))
    mount, turn = np.array([spec.x_m, spec.y_m, spec.z_m]), _turned(math.radians(spec.heading_deg))
    clock = dict(clock_offset_s=spec.clock_offset_s, index=index)
    if spec.on_sensor:
        poses = np.asarray(sensor_poses, np.float64)
        return Interferer(config, poses[:, :3, :3] @ mount + poses[:, :3, 3], poses[:, :3, :3] @ turn, **clock)
    if not spec.entity:
        return Interferer(config, mount, turn, **clock)
    found = carrier_of(scene, spec.entity)
    if found is None:
        _LOG.warning(f"interference.entity '{spec.entity}' is not in the scene: no interference from it this frame",
                     key=f"interference.entity {spec.entity}")
        return None
    entity, carrier = found
    pose = np.asarray(entity.pose, np.float64)
    position = pose[:3, :3] @ mount + pose[:3, 3]
    velocity = np.zeros(3) if motion is None else motion.at(np.array([entity.id]), position[None, :])[0]  # v + w x r
    return Interferer(config, position, pose[:3, :3] @ turn, velocity, carrier, **clock)


def carrier_of(scene, name: str):
    """(the entity named `name`, or the first entity of the model `name`; the ids of its whole model), None
    when the scene has neither."""
    if scene is None:
        return None
    index = scene.find(name)
    if index is None and "::" in name:  # a scoped name is that entity or none (not its model's first)
        return None
    members = scene.model_entities(name.split("::", 1)[0])  # an index of the scene's: no walk over its entities
    if index is None and not members:
        return None
    entity = scene.entity(index) if index is not None else members[0]
    return entity, frozenset(e.id for e in members) | {entity.id}
