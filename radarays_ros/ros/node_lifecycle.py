"""The sensor node as a ROS 2 managed (lifecycle) node, as ouster-ros runs its `os_driver`.

    ros2 run radarays_ros lidar_node --lifecycle --ros-args --params-file config/ros/lidar_os1_64.yaml
    ros2 lifecycle set /lidar_node configure   # world, sensors, publishers (the latched /metadata goes out)
    ros2 lifecycle set /lidar_node activate    # frames (and the IMU) are simulated and published
    ros2 lifecycle set /lidar_node deactivate  # no more frames; publishers stay
    ros2 lifecycle set /lidar_node cleanup     # back to unconfigured: world, sensors and publishers released

ouster-ros' driver.launch.py starts os_driver unconfigured and, with `auto_start`, emits configure then
activate; a launch file does the same for this node (launch_ros LifecycleNode + ChangeState events). The
services are rclpy.lifecycle's (lifecycle_msgs: change_state, get_state, get_available_states,
get_available_transitions). Parameters are declared at once (unconfigured), as ouster-ros does, so
`ros2 param set` works in every state; the node-level ones are read when `configure` runs.
"""
from __future__ import annotations

from rclpy.lifecycle import LifecycleNodeMixin, LifecycleState, TransitionCallbackReturn
from rclpy.node import Node

from .node import SensorNode


class LifecycleSensorNode(LifecycleNodeMixin, SensorNode):
    """SensorNode whose `_configure` runs on the `configure` transition and whose frames run while active."""

    def __init__(self, node_name: str, kind: str, **kwargs):
        Node.__init__(self, node_name, **kwargs)
        self._declare(kind)
        self.active = False
        self._configured: tuple[set, set, set] | None = None
        LifecycleNodeMixin.__init__(self)

    def _entities(self) -> tuple[set, set, set]:
        return set(self.publishers), set(self.subscriptions), set(self.timers)

    def on_configure(self, state: LifecycleState) -> TransitionCallbackReturn:
        before = self._entities()
        try:
            self._configure()
        except Exception as exc:  # noqa: BLE001 - a failed transition, not a dead node
            self.get_logger().error(f"configure failed: {exc}")
            self._configured = tuple(now - was for now, was in zip(self._entities(), before))
            self._release()
            return TransitionCallbackReturn.FAILURE
        self._configured = tuple(now - was for now, was in zip(self._entities(), before))
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        self.active = True
        for sensor in self.sensors:
            sensor.last_tick_ns = None  # the first sweep after activation is the one due now, none made up
        return super().on_activate(state)

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        self.active = False  # a frame in flight finds it off and publishes nothing
        return super().on_deactivate(state)

    def on_cleanup(self, state: LifecycleState) -> TransitionCallbackReturn:
        self._release()
        return TransitionCallbackReturn.SUCCESS

    def on_shutdown(self, state: LifecycleState) -> TransitionCallbackReturn:
        self._release()
        return TransitionCallbackReturn.SUCCESS

    def on_error(self, state: LifecycleState) -> TransitionCallbackReturn:
        self._release()
        return TransitionCallbackReturn.SUCCESS

    def _release(self) -> None:
        """Undo `_configure`: stop the frame workers and Gazebo, destroy what it created, drop world and sensors."""
        self.active = False
        for sensor in self.sensors:
            sensor.worker.shutdown(wait=True, cancel_futures=True)
        if self.gazebo is not None:
            self.gazebo.close()
        if getattr(self, "_params_callback", None) is not None:
            self.remove_on_set_parameters_callback(self._params_callback)
            self._params_callback = None
        if self._configured is not None:
            publishers, subscriptions, timers = self._configured
            for timer in timers:
                self.destroy_timer(timer)
            for subscription in subscriptions:
                self.destroy_subscription(subscription)
            for publisher in publishers:
                self.destroy_publisher(publisher)
            self._configured = None
        if self.backend is not None:
            self.backend.close()
        self.scene = self.backend = self.gazebo = None
        self.sensors, self._imus, self.world_error = [], [], ""

    def destroy_node(self):
        self._release()
        self._model_log.detach()
        return Node.destroy_node(self)
