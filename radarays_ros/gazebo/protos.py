"""Gazebo message classes built at import time from our own .proto text (proto/gz_msgs.proto).

Why not generated `_pb2` files: generated code is tied to the protobuf version that generated it,
while a descriptor built at runtime works with every protobuf runtime from 4.21 on, and needs no
protoc. The .proto file uses a small subset of the language (proto3 messages, nested messages and
enums, `repeated`, `oneof`), which `parse_proto` turns into a FileDescriptorProto.

    from radarays_ros.gazebo import protos
    pose_v = protos.decode("gz.msgs.Pose_V", payload)     # or "ignition.msgs.Pose_V"
    msg = protos.Pose_V(); msg.SerializeToString()
"""
from __future__ import annotations

import re
from pathlib import Path

from google.protobuf import descriptor_pb2, descriptor_pool

try:  # protobuf >= 4.22
    from google.protobuf.message_factory import GetMessageClass as _message_class
except ImportError:  # pragma: no cover - older runtimes
    from google.protobuf.message_factory import MessageFactory

    _message_class = MessageFactory().GetPrototype

from ..errors import ConfigError, MessageError

PROTO_PATH = Path(__file__).with_name("proto") / "gz_msgs.proto"
PACKAGE = "gz.msgs"
# Prefixes under which Gazebo versions name the same messages on the wire.
TYPE_PREFIXES = ("gz.msgs.", "ignition.msgs.")

_FDP = descriptor_pb2.FieldDescriptorProto
_SCALARS = {
    "double": _FDP.TYPE_DOUBLE,
    "float": _FDP.TYPE_FLOAT,
    "int64": _FDP.TYPE_INT64,
    "uint64": _FDP.TYPE_UINT64,
    "int32": _FDP.TYPE_INT32,
    "uint32": _FDP.TYPE_UINT32,
    "sint32": _FDP.TYPE_SINT32,
    "sint64": _FDP.TYPE_SINT64,
    "fixed32": _FDP.TYPE_FIXED32,
    "fixed64": _FDP.TYPE_FIXED64,
    "bool": _FDP.TYPE_BOOL,
    "string": _FDP.TYPE_STRING,
    "bytes": _FDP.TYPE_BYTES,
}
_TOKEN = re.compile(r'"[^"]*"|[A-Za-z_][\w.]*|-?\d+|[{}=;]')


def _tokens(text: str) -> list[str]:
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return _TOKEN.findall(text)


class _Parser:
    """Recursive descent over the token list of one .proto file (the subset described above)."""

    def __init__(self, text: str, filename: str):
        self.toks = _tokens(text)
        self.pos = 0
        self.filename = filename
        self.package = ""
        self.kinds: dict[str, str] = {}  # full name ('.gz.msgs.Pose') -> 'message' | 'enum'
        self.pending: list[tuple[_FDP, str, str]] = []  # (field, type token, scope) to resolve

    def error(self, what: str) -> ConfigError:
        near = " ".join(self.toks[max(0, self.pos - 3) : self.pos + 3])
        return ConfigError(f"{self.filename}: {what} near '{near}' (supported: proto3 messages, enums, oneof)")

    def next(self) -> str:
        if self.pos >= len(self.toks):
            raise self.error("unexpected end of file")
        tok = self.toks[self.pos]
        self.pos += 1
        return tok

    def expect(self, tok: str) -> None:
        got = self.next()
        if got != tok:
            raise self.error(f"expected '{tok}', got '{got}'")

    def parse(self) -> descriptor_pb2.FileDescriptorProto:
        fdp = descriptor_pb2.FileDescriptorProto(name=self.filename, syntax="proto3")
        while self.pos < len(self.toks):
            tok = self.next()
            if tok == "syntax":
                self.expect("=")
                if self.next().strip('"') != "proto3":
                    raise self.error("only proto3 is supported")
                self.expect(";")
            elif tok == "package":
                self.package = self.next()
                fdp.package = self.package
                self.expect(";")
            elif tok == "message":
                self.message(fdp.message_type.add(), "." + self.package)
            elif tok == "enum":
                self.enum(fdp.enum_type.add(), "." + self.package)
            else:
                raise self.error(f"unexpected '{tok}'")
        for field, type_token, scope in self.pending:
            self.resolve(field, type_token, scope)
        return fdp

    def message(self, msg: descriptor_pb2.DescriptorProto, scope: str) -> None:
        msg.name = self.next()
        full = f"{scope}.{msg.name}"
        self.kinds[full] = "message"
        self.expect("{")
        while True:
            tok = self.next()
            if tok == "}":
                return
            if tok == "message":
                self.message(msg.nested_type.add(), full)
            elif tok == "enum":
                self.enum(msg.enum_type.add(), full)
            elif tok == "oneof":
                index = len(msg.oneof_decl)
                msg.oneof_decl.add(name=self.next())
                self.expect("{")
                while self.toks[self.pos] != "}":
                    self.field(msg, full, self.next(), oneof_index=index)
                self.expect("}")
            else:
                self.field(msg, full, tok)

    def field(self, msg, scope: str, tok: str, oneof_index: int | None = None) -> None:
        label = _FDP.LABEL_OPTIONAL
        if tok == "repeated":
            label, tok = _FDP.LABEL_REPEATED, self.next()
        field = msg.field.add(name=self.next(), label=label)
        self.expect("=")
        try:
            field.number = int(self.next())
        except ValueError:
            raise self.error(f"field '{field.name}' needs an integer number") from None
        self.expect(";")
        field.json_name = re.sub(r"_([a-z])", lambda m: m.group(1).upper(), field.name)
        if oneof_index is not None:
            field.oneof_index = oneof_index
        if tok in _SCALARS:
            field.type = _SCALARS[tok]
        else:
            self.pending.append((field, tok, scope))

    def enum(self, enum: descriptor_pb2.EnumDescriptorProto, scope: str) -> None:
        enum.name = self.next()
        self.kinds[f"{scope}.{enum.name}"] = "enum"
        self.expect("{")
        while (tok := self.next()) != "}":
            self.expect("=")
            enum.value.add(name=tok, number=int(self.next()))
            self.expect(";")

    def resolve(self, field, type_token: str, scope: str) -> None:
        """Protobuf scoping: look the name up from the innermost scope outwards."""
        parts = scope.split(".")
        for depth in range(len(parts), 0, -1):
            candidate = ".".join(parts[:depth]) + "." + type_token
            if candidate in self.kinds:
                field.type_name = candidate
                field.type = _FDP.TYPE_MESSAGE if self.kinds[candidate] == "message" else _FDP.TYPE_ENUM
                return
        raise ConfigError(f"{self.filename}: field '{field.name}' has unknown type '{type_token}'")


def parse_proto(text: str, filename: str = "file.proto") -> descriptor_pb2.FileDescriptorProto:
    """A FileDescriptorProto from .proto text (proto3 subset); ConfigError names the problem."""
    return _Parser(text, filename).parse()


def _build() -> tuple[descriptor_pool.DescriptorPool, dict[str, type]]:
    fdp = parse_proto(PROTO_PATH.read_text(), "radarays_ros/gz_msgs.proto")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    classes = {}
    for msg in fdp.message_type:
        classes[msg.name] = _message_class(pool.FindMessageTypeByName(f"{PACKAGE}.{msg.name}"))
    return pool, classes


_POOL, CLASSES = _build()
globals().update(CLASSES)  # protos.Pose_V, protos.Scene, ...


def short_name(type_name: str) -> str:
    """'gz.msgs.Pose_V' / 'ignition.msgs.Pose_V' / 'Pose_V' -> 'Pose_V'."""
    for prefix in TYPE_PREFIXES:
        if type_name.startswith(prefix):
            return type_name[len(prefix) :]
    return type_name


def message_class(type_name: str) -> type:
    """The class for a wire type name of either Gazebo generation; ConfigError if we do not know it."""
    name = short_name(type_name)
    if name not in CLASSES:
        raise ConfigError(f"unknown Gazebo message type '{type_name}'; known: {', '.join(sorted(CLASSES))}")
    return CLASSES[name]


def decode(type_name: str, payload: bytes):
    """Parse serialized bytes as the named message type."""
    msg = message_class(type_name)()
    try:
        msg.ParseFromString(payload)
    except Exception as exc:  # noqa: BLE001 - protobuf's DecodeError (and RecursionError on deep nesting)
        raise MessageError(f"a {short_name(type_name)} message of {len(payload)} bytes cannot be decoded "
                           f"({type(exc).__name__})") from None
    return msg
