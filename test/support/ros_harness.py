"""Test-side ROS 2 tools: node processes and an independent rclpy probe.

The probe is not our code under test: it subscribes with raw=True and the tests decode the CDR bytes
with rosbags (an independent implementation), so a wrong layout in our messages cannot hide behind
the same code on both ends.
"""
from __future__ import annotations

import importlib
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml
from rosbags.typesys import Stores, get_typestore

TYPESTORE = get_typestore(Stores.ROS2_JAZZY)


def decode(raw: bytes, type_name: str):
    """rosbags message object from CDR bytes ('sensor_msgs/msg/Image')."""
    return TYPESTORE.deserialize_cdr(raw, type_name)


def rclpy_type(type_name: str):
    pkg, _, name = type_name.split("/")
    return getattr(importlib.import_module(f"{pkg}.msg"), name)


def stamp_ns(header) -> int:
    return int(header.stamp.sec) * 1_000_000_000 + int(header.stamp.nanosec)


def write_params(path: Path, node_name: str, params: dict) -> Path:
    path = Path(path)
    path.write_text(yaml.safe_dump({node_name: {"ros__parameters": params}}, sort_keys=False))
    return path


class NodeProcess:
    """A node started as its own process (`python -m module --ros-args ...`), output kept in a file."""

    def __init__(self, module: str, *ros_args: str, params_file: Path | None = None, name: str | None = None,
                 own_args: tuple[str, ...] = ()):
        self.log_path = Path(tempfile.mkstemp(prefix="node_", suffix=".log")[1])
        cmd = [sys.executable, "-m", module, *own_args, "--ros-args"]  # own_args: the program's (--lifecycle)
        if params_file is not None:
            cmd += ["--params-file", str(params_file)]
        if name is not None:
            cmd += ["-r", f"__node:={name}"]
        cmd += list(ros_args)
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, env=os.environ.copy())

    def alive(self) -> bool:
        return self.proc.poll() is None

    def output(self) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")

    def stop(self, timeout: float = 10.0) -> int:
        """SIGINT (as ros2 run's Ctrl-C), then SIGKILL if it hangs. Returns the exit status."""
        if self.alive():
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self._log.close()
        return self.proc.returncode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


class Inbox:
    """Raw messages of one subscription: (cdr bytes, receive time ns) in arrival order."""

    def __init__(self, type_name: str):
        self.type_name = type_name
        self._items: list[tuple[bytes, int]] = []
        self._cond = threading.Condition()

    def _add(self, raw: bytes) -> None:
        with self._cond:
            self._items.append((bytes(raw), time.monotonic_ns()))
            self._cond.notify_all()

    def __len__(self) -> int:
        with self._cond:
            return len(self._items)

    def raw(self) -> list[tuple[bytes, int]]:
        with self._cond:
            return list(self._items)

    def messages(self) -> list:
        return [decode(raw, self.type_name) for raw, _ in self.raw()]

    def clear(self) -> None:
        with self._cond:
            self._items.clear()

    def wait(self, count: int = 1, timeout: float = 20.0) -> list:
        """Decoded messages once at least `count` arrived; AssertionError after timeout."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while len(self._items) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"{len(self._items)} of {count} {self.type_name} messages in {timeout} s")
                self._cond.wait(left)
        return self.messages()


class Probe:
    """An rclpy node in the test process, in its own context, spun by a background thread."""

    def __init__(self, name: str = "test_probe"):
        import rclpy
        from rclpy.context import Context
        from rclpy.executors import SingleThreadedExecutor

        self._rclpy = rclpy
        self.context = Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node(name, context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._thread.start()

    def _spin(self):
        try:
            while self.context.ok():
                self.executor.spin_once(timeout_sec=0.05)
        except Exception:  # context shut down under us
            pass

    @staticmethod
    def qos(kind: str = "sensor", depth: int = 10):
        from rclpy.qos import QoSProfile, ReliabilityPolicy, DurabilityPolicy, HistoryPolicy

        reliability = {"sensor": ReliabilityPolicy.BEST_EFFORT, "reliable": ReliabilityPolicy.RELIABLE}[kind]
        return QoSProfile(depth=depth, history=HistoryPolicy.KEEP_LAST, reliability=reliability,
                          durability=DurabilityPolicy.VOLATILE)

    def subscribe(self, topic: str, type_name: str, qos="sensor", depth: int = 10) -> Inbox:
        inbox = Inbox(type_name)
        profile = self.qos(qos, depth) if isinstance(qos, str) else qos  # an int: rclpy's default QoS, that depth
        self.node.create_subscription(rclpy_type(type_name), topic, inbox._add, profile, raw=True)
        return inbox

    def subscribe_typed(self, topic: str, type_name: str, qos="sensor", depth: int = 10) -> list:
        """Messages deserialised by rclpy itself (a typed subscription, as any ROS node would receive them)."""
        received: list = []
        profile = self.qos(qos, depth) if isinstance(qos, str) else qos
        self.node.create_subscription(rclpy_type(type_name), topic, received.append, profile)
        return received

    def publisher(self, topic: str, type_name: str, qos="reliable", depth: int = 10):
        from rclpy.qos import DurabilityPolicy

        profile = self.qos(qos, depth) if isinstance(qos, str) else qos
        if topic == "/tf_static":
            profile.durability = DurabilityPolicy.TRANSIENT_LOCAL
        return self.node.create_publisher(rclpy_type(type_name), topic, profile)

    def wait_for_subscribers(self, publisher, count: int = 1, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while publisher.get_subscription_count() < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"no subscriber on {publisher.topic_name} after {timeout} s")
            time.sleep(0.02)

    def wait_for_publisher(self, topic: str, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while not self.node.get_publishers_info_by_topic(topic):
            if time.monotonic() > deadline:
                raise AssertionError(f"nobody publishes {topic} after {timeout} s")
            time.sleep(0.05)

    def call_service(self, service_type, name: str, request, timeout: float = 20.0):
        """Call a service of another node and wait for its answer (AssertionError naming it when none comes)."""
        client = self.node.create_client(service_type, name)
        try:
            if not client.wait_for_service(timeout_sec=timeout):
                raise AssertionError(f"{name} not available")
            future = client.call_async(request)
            deadline = time.monotonic() + timeout
            while not future.done():
                if time.monotonic() > deadline:
                    raise AssertionError(f"{name} did not answer")
                time.sleep(0.01)
            return future.result()
        finally:
            self.node.destroy_client(client)

    def set_parameters(self, node_name: str, values: dict, timeout: float = 20.0) -> list:
        """Call NODE/set_parameters; returns the SetParametersResult list (successful, reason)."""
        from rcl_interfaces.srv import SetParameters
        from rclpy.parameter import Parameter

        request = SetParameters.Request(parameters=[Parameter(k, value=v).to_parameter_msg() for k, v in values.items()])
        return list(self.call_service(SetParameters, f"/{node_name}/set_parameters", request, timeout).results)

    def get_parameters(self, node_name: str, names: list[str], timeout: float = 20.0) -> list:
        from rcl_interfaces.srv import GetParameters
        from rclpy.parameter import parameter_value_to_python

        answer = self.call_service(GetParameters, f"/{node_name}/get_parameters",
                                   GetParameters.Request(names=list(names)), timeout)
        return [parameter_value_to_python(v) for v in answer.values]

    def describe_parameters(self, node_name: str, names: list[str], timeout: float = 20.0) -> list:
        """ParameterDescriptor of each name, from NODE/describe_parameters."""
        from rcl_interfaces.srv import DescribeParameters

        answer = self.call_service(DescribeParameters, f"/{node_name}/describe_parameters",
                                   DescribeParameters.Request(names=list(names)), timeout)
        return list(answer.descriptors)

    def close(self) -> None:
        try:
            self.executor.shutdown(timeout_sec=1.0)
            self.node.destroy_node()
        finally:
            if self.context.ok():
                self._rclpy.shutdown(context=self.context)
            self._thread.join(5)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class ClockPublisher:
    """Publishes /clock from a background thread: sim time starts at start_s and runs at `speed` x wall time."""

    def __init__(self, probe: Probe, start_s: float = 100.0, step_s: float = 0.005, speed: float = 1.0, on_tick=None):
        """on_tick(now_ns) runs right before each /clock message (e.g. to publish /tf for that time)."""
        from rosgraph_msgs.msg import Clock

        self.on_tick = on_tick
        self._clock_cls = Clock
        self.pub = probe.publisher("/clock", "rosgraph_msgs/msg/Clock", qos="reliable")
        self.now_ns = int(start_s * 1e9)
        self.step_ns = int(step_s * 1e9)
        self.speed = speed
        self.published: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.is_set():
            msg = self._clock_cls()
            msg.clock.sec, msg.clock.nanosec = divmod(self.now_ns, 1_000_000_000)
            if self.on_tick is not None:
                self.on_tick(self.now_ns)
            self.pub.publish(msg)
            self.published.append(self.now_ns)
            self.now_ns += self.step_ns
            time.sleep(self.step_ns / 1e9 / self.speed)

    def stop(self):
        self._stop.set()
        self._thread.join(2)


def transform_msg(parent: str, child: str, t_ns: int, xyz=(0.0, 0.0, 0.0), yaw: float = 0.0):
    """geometry_msgs/TransformStamped (rclpy) for a pose with only a yaw rotation."""
    import math

    from geometry_msgs.msg import TransformStamped

    t = TransformStamped()
    t.header.frame_id, t.child_frame_id = parent, child
    t.header.stamp.sec, t.header.stamp.nanosec = divmod(int(t_ns), 1_000_000_000)
    t.transform.translation.x, t.transform.translation.y, t.transform.translation.z = (float(v) for v in xyz)
    t.transform.rotation.z, t.transform.rotation.w = math.sin(yaw / 2), math.cos(yaw / 2)
    return t


def diagnostics_values(inbox: Inbox, name_part: str) -> dict:
    """Key/values of the newest diagnostic status whose name contains name_part."""
    for msg in reversed(inbox.messages()):
        for status in msg.status:
            if name_part in status.name:
                values = {kv.key: kv.value for kv in status.values}
                values["_level"] = int.from_bytes(status.level, "little") if isinstance(status.level, bytes) else int(status.level)
                values["_message"] = status.message
                return values
    return {}
