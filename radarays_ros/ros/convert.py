"""rosbags message objects -> what rclpy publishes: CDR bytes, or rclpy messages field by field.

Messages are built once, in radarays_ros/io (as rosbags objects, the form the bag writer stores).
The nodes publish them as CDR bytes serialised by rosbags (`to_cdr`, rclpy's publish_raw path):
exactly the bytes a bag holds, and the cheapest path measured -- a fresh 6 MB OS1-128 cloud costs
~1 ms this way against ~11 ms through a typed rclpy message, whose conversion to C and
serialisation copy it twice more into freshly allocated buffers (benchmarks/bench_nodes.py).

`to_rclpy` gives a typed rclpy message for code that wants one (an in-process consumer, tests).
Numeric arrays go across as `array.array` filled from the numpy buffer: rclpy's setters take those
without a per-element check, whereas a numpy array or a list costs 200 ms+ for a 1.6 MB cloud.
"""
from __future__ import annotations

import array
import importlib
import struct
from functools import lru_cache

import numpy as np

# array.array typecodes of the IDL primitive types that rclpy stores as array.array in sequences
_TYPECODES = {
    "boolean": None, "octet": "B", "uint8": "B", "char": "B", "int8": "b", "int16": "h", "uint16": "H",
    "int32": "i", "uint32": "I", "int64": "q", "uint64": "Q", "float": "f", "double": "d",
}
_NUMPY_TYPES = {
    "octet": np.uint8, "uint8": np.uint8, "char": np.uint8, "int8": np.int8, "int16": np.int16,
    "uint16": np.uint16, "int32": np.int32, "uint32": np.uint32, "int64": np.int64, "uint64": np.uint64,
    "float": np.float32, "double": np.float64,
}


def to_cdr(msg, msgtype: str | None = None) -> bytes:
    """CDR bytes of a rosbags message object (what `Publisher.publish(bytes)` sends as is)."""
    from ..io.messages import TYPESTORE

    return bytes(TYPESTORE.serialize_cdr(msg, msgtype or msg.__msgtype__))


def rclpy_class(msgtype: str):
    """rclpy message class of 'pkg/msg/Name'."""
    pkg, kind, name = msgtype.split("/")
    return getattr(importlib.import_module(f"{pkg}.{kind}"), name)


@lru_cache(maxsize=None)
def _plan(msgtype: str):
    """(class, [(field, kind, detail)]) for one message type: how to copy each field."""
    cls = rclpy_class(msgtype)
    steps = []
    for field, idl_type in cls.get_fields_and_field_types().items():
        if idl_type.startswith("sequence<"):
            inner = idl_type[len("sequence<"):].split(",")[0].rstrip(">")
            if inner in _TYPECODES and _TYPECODES[inner]:
                steps.append((field, "seq_num", _TYPECODES[inner]))
            elif inner in _TYPECODES or inner.startswith("string") or inner.startswith("wstring"):
                steps.append((field, "seq_plain", None))
            else:
                steps.append((field, "seq_msg", _idl_to_msgtype(inner)))
        elif "[" in idl_type:  # fixed-size array: rclpy keeps numpy arrays
            inner = idl_type.split("[")[0]
            if inner in _NUMPY_TYPES:
                steps.append((field, "fixed_num", _NUMPY_TYPES[inner]))
            elif inner in _TYPECODES or inner.startswith("string"):
                steps.append((field, "seq_plain", None))
            else:
                steps.append((field, "seq_msg", _idl_to_msgtype(inner)))
        elif "/" in idl_type:
            steps.append((field, "msg", _idl_to_msgtype(idl_type)))
        else:
            steps.append((field, "plain", None))
    return cls, tuple(steps)


def _idl_to_msgtype(idl_type: str) -> str:
    pkg, name = idl_type.split("/")
    return f"{pkg}/msg/{name}"


def to_rclpy(msg, msgtype: str | None = None):
    """An rclpy message equal to the rosbags message object `msg`."""
    msgtype = msgtype or msg.__msgtype__
    cls, steps = _plan(msgtype)
    out = cls()
    for field, kind, detail in steps:
        value = getattr(msg, field)
        if kind == "plain":
            setattr(out, field, value.item() if isinstance(value, np.generic) else value)
        elif kind == "msg":
            setattr(out, field, to_rclpy(value, detail))
        elif kind == "seq_num":
            buffer = array.array(detail)
            if isinstance(value, np.ndarray):
                flat = np.ascontiguousarray(value, dtype=np.dtype(detail)).reshape(-1)
                buffer.frombytes(flat.view(np.uint8))
            else:
                buffer.extend(value)
            setattr(out, field, buffer)
        elif kind == "fixed_num":
            setattr(out, field, np.asarray(value, dtype=detail))
        elif kind == "seq_msg":
            setattr(out, field, [to_rclpy(item, detail) for item in value])
        else:  # seq_plain: strings, booleans
            setattr(out, field, [v.item() if isinstance(v, np.generic) else v for v in value])
    return out


def header_stamp_ns(raw: bytes) -> int | None:
    """Stamp of a CDR message whose first field is a std_msgs/Header, without deserialising the rest."""
    if len(raw) < 12:
        return None
    little = raw[1] in (0x01, 0x03)  # CDR_LE / PL_CDR_LE encapsulation
    sec, nanosec = struct.unpack("<iI" if little else ">iI", raw[4:12])
    if sec < 0 or nanosec >= 1_000_000_000:  # before 1970 or not a time: not a stamp to simulate at
        return None
    return sec * 1_000_000_000 + nanosec


def diagnostic_array(stamp, reports):
    """diagnostic_msgs/DiagnosticArray of (name, hardware_id, sensors.diagnostics.SensorStatus) triples."""
    from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue

    from ..sensors.diagnostics import ERROR, OK, WARN

    levels = {OK: DiagnosticStatus.OK, WARN: DiagnosticStatus.WARN, ERROR: DiagnosticStatus.ERROR}
    array_msg = DiagnosticArray()
    array_msg.header.stamp = stamp
    for name, hardware_id, report in reports:
        status = DiagnosticStatus(name=name, hardware_id=hardware_id, level=levels[report.level], message=report.message)
        status.values = [KeyValue(key=k, value=v) for k, v in report.values.items()]
        array_msg.status.append(status)
    return array_msg
