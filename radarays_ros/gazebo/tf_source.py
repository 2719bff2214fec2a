"""Scene poses from TF: for setups that publish model poses with Gazebo's PosePublisher system
through ros_gz_bridge instead of letting radarays_ros listen to gz-transport (GazeboMirror).

Why PosePublisher: ros_gz_bridge drops the entity names of the world pose topics (bridged
/world/<w>/pose/info arrives with empty frame ids), while PosePublisher fills frame_id with the parent's
scoped name and child_frame_id with the entity's (the world name stripped; the bridge turns `::` into
`/`). What a user adds:

1. In the SDF, inside every model whose motion the sensors must see::

       <plugin filename="gz-sim-pose-publisher-system" name="gz::sim::systems::PosePublisher">
         <publish_model_pose>true</publish_model_pose>     <!-- model in its parent (the world) -->
         <publish_link_pose>true</publish_link_pose>       <!-- links in the model -->
         <publish_nested_model_pose>true</publish_nested_model_pose>
         <use_pose_vector_msg>true</use_pose_vector_msg>   <!-- one Pose_V per update -->
         <update_frequency>60</update_frequency>
       </plugin>

2. A bridge per model, remapped onto /tf::

       ros2 run ros_gz_bridge parameter_bridge \\
         /model/crate/pose@tf2_msgs/msg/TFMessage[gz.msgs.Pose_V \\
         --ros-args -r /model/crate/pose:=/tf

   (or in a bridge YAML: topic_name /model/crate/pose, ros_topic_name /tf,
   ros_type_name tf2_msgs/msg/TFMessage, gz_type_name gz.msgs.Pose_V, direction GZ_TO_ROS).

3. Your own node hands each received transform to `TfPoseSource.apply([(frame_id, child_frame_id,
   4x4), ...])`; this module never imports rclpy. The shipped nodes do not use it: they follow Gazebo
   through its transport (`gazebo.enable`, GazeboMirror), which needs no bridge and sees spawns and
   deletions too.

How poses reach entities: frames form a tree (child -> parent, transform); a frame without a known
parent is a root and stands for the world (the world frame's name does not matter). An entity named
`model::link::visual` follows the frame `model/link` (or `model::link`). The visual's offset inside
its link is not in TF: give it from the SDF (`link_offsets=TfPoseSource.link_offsets(parsed.entities)`,
right even for models that moved before the first transform arrived); for entities without one it is
learned the first time the link's frame is seen, from the entity's loaded pose, which is right only
while the model still stands where the SDF put it. Moves below 1 mm / 1 mrad are not passed on, as in
GazeboMirror.

Velocities: given the transforms' stamp (`apply(..., stamp_ns=msg.header.stamp)`), each entity whose frame
came in twice gets its twist over its last two poses received (motion.rigid_motion, the same as GazeboMirror's
over its last two pose messages; zero once it stops), so the physical radar's Doppler and the sensors that
meet moving entities during their sweep (`moving_entities: sweep`) see tf-moved models too. Without stamps
their velocity stays unknown.
"""
from __future__ import annotations

from typing import Iterable, Mapping

import numpy as np

from ..errors import RadaraysError
from ..radar.physical.motion import rigid_motion
from ..world.scene import Scene
from .entity_tree import moved_beyond


def _frame(name: str) -> str:
    return name.strip().strip("/").replace("::", "/")


class TfPoseSource:
    """Moves scene entities from PosePublisher transforms (see the module docstring)."""

    def __init__(self, scene: Scene, min_translation: float = 1e-3, min_rotation: float = 1e-3,
                 link_offsets: Mapping[str, np.ndarray] | None = None):
        """`link_offsets`: entity name -> 4x4 pose in its link frame (see `link_offsets()`)."""
        self.scene = scene
        self._link_offsets = {name: np.asarray(m, dtype=float) for name, m in (link_offsets or {}).items()}
        self.min_translation, self.min_rotation = min_translation, min_rotation
        self._parent: dict[str, str] = {}
        self._local: dict[str, np.ndarray] = {}
        self._offset: dict[int, np.ndarray] = {}  # entity id -> pose in its link frame
        self._followers: dict[str, list[int]] = {}  # link frame -> entity ids
        self._followers_of = -1  # scene size the followers were computed for
        self._received: dict[int, tuple[int, np.ndarray]] = {}  # entity id -> (stamp, pose) last received
        self.velocity_error: str | None = None  # why the last stamped apply gave no velocities (None: it did)

    @staticmethod
    def link_offsets(specs) -> dict[str, np.ndarray]:
        """Entity name -> pose in its link frame, from the world layer's EntitySpecs (parse_sdf_*)."""
        return {s.name: s.link_offset for s in specs if getattr(s, "link_offset", None) is not None}

    def apply(self, transforms: Iterable[tuple[str, str, np.ndarray]], stamp_ns: int | None = None) -> int:
        """Take (parent frame, child frame, 4x4 parent<-child) transforms; returns entities moved. stamp_ns: their
        time (the message's header stamp): entities seen at an earlier stamp get their twist (module docstring)."""
        touched = set()  # the frames this message gives: entities below them were seen at its stamp
        for parent, child, matrix in transforms:
            parent, child = _frame(parent), _frame(child)
            if child and child != parent:
                self._parent[child] = parent
                self._local[child] = np.asarray(matrix, dtype=float)
                touched.add(child)
        followers = self._entity_frames()
        updates, seen = [], []
        for frame, entity_ids in followers.items():
            if frame not in self._local:
                continue
            link_world = self._world(frame)
            for entity_id in entity_ids:
                entity = self.scene.entity(entity_id)
                if entity_id not in self._offset:  # from the SDF, else the loaded pose fixes it at first sight
                    known = self._link_offsets.get(entity.name)
                    self._offset[entity_id] = known if known is not None else np.linalg.inv(link_world) @ entity.pose
                pose = link_world @ self._offset[entity_id]
                if not touched.isdisjoint(self._chain(frame)):
                    seen.append((entity_id, pose))
                if moved_beyond(entity.pose[None], pose[None], self.min_translation, self.min_rotation)[0]:
                    updates.append((entity_id, pose))
        if updates:
            self.scene.set_poses(updates)
        if stamp_ns is not None:
            self._hand_velocities(seen, int(stamp_ns))
        return len(updates)

    def _hand_velocities(self, seen: list, stamp: int) -> None:
        """The twist of every entity in `seen` ((id, pose) received at `stamp`) over its pose received before,
        where that is earlier; a bad transform from the network gives none and says why (velocity_error)."""
        ids, before, after, dt = [], [], [], []
        for entity_id, pose in seen:
            last = self._received.get(entity_id)
            if last is not None and stamp > last[0]:
                ids.append(entity_id)
                before.append(last[1])
                after.append(pose)
                dt.append((stamp - last[0]) * 1e-9)
            if last is None or stamp > last[0]:
                self._received[entity_id] = (stamp, pose)
        self.velocity_error = None
        if not ids:
            return
        try:
            velocity, angular = rigid_motion(np.stack(before), np.stack(after), np.array(dt)[:, None])
            self.scene.set_twists(ids, velocity, angular)
        except (RadaraysError, ValueError) as exc:
            self.velocity_error = f"no entity velocities from the transforms at {stamp} ns ({exc})"

    def _chain(self, frame: str) -> set:
        """The frame and its ancestors with a known transform."""
        chain = set()
        while frame in self._local and frame not in chain:
            chain.add(frame)
            frame = self._parent[frame]
        return chain

    def _world(self, frame: str) -> np.ndarray:
        pose, seen = np.eye(4), set()
        while frame in self._local and frame not in seen:
            seen.add(frame)
            pose = self._local[frame] @ pose
            frame = self._parent[frame]
        return pose

    def _entity_frames(self) -> dict[str, list[int]]:
        """link frame ('model/link', nested 'a/b/link') -> ids of the entities on that link."""
        if self._followers_of != len(self.scene):
            followers: dict[str, list[int]] = {}
            for entity in self.scene.entities:
                parts = entity.name.split("::")
                if len(parts) >= 3:
                    followers.setdefault("/".join(parts[:-1]), []).append(entity.id)
            self._followers, self._followers_of = followers, len(self.scene)
        return self._followers
