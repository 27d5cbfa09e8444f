"""P4Info files in p4c's three formats (text proto, JSON, binary), chosen by file suffix."""
from __future__ import annotations

import os
from pathlib import Path

from google.protobuf import json_format, text_format
from p4.config.v1 import p4info_pb2

from p4target.atomic_files import write_file
from p4target.errors import P4TargetError

# The comment header p4c puts at the top of text P4Info files (tools use it to pick the schema).
TEXT_HEADER = "# proto-file: p4/config/v1/p4info.proto\n# proto-message: p4.config.v1.P4Info\n\n"

FORMATS_BY_SUFFIX = {".txt": "text", ".txtpb": "text", ".json": "json", ".bin": "binary"}


def p4info_format(path: str | os.PathLike) -> str:
    """``text``, ``json`` or ``binary`` from the file suffix; P4TargetError for others."""
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS_BY_SUFFIX:
        raise P4TargetError(f"{path}: unknown P4Info file suffix '{suffix or '(none)'}' "
                            f"(use {', '.join(FORMATS_BY_SUFFIX)})")
    return FORMATS_BY_SUFFIX[suffix]


def serialize_p4info(p4info: p4info_pb2.P4Info, fmt: str) -> bytes:
    """The bytes of ``p4info`` in format ``text``, ``json`` or ``binary``."""
    if fmt == "text":
        return (TEXT_HEADER + text_format.MessageToString(p4info)).encode("utf-8")
    if fmt == "json":
        return (json_format.MessageToJson(p4info, indent=2) + "\n").encode("utf-8")
    if fmt == "binary":
        return p4info.SerializeToString()
    raise P4TargetError(f"unknown P4Info format '{fmt}' (use text, json or binary)")


def write_p4info(p4info: p4info_pb2.P4Info, path: str | os.PathLike) -> None:
    """Write ``p4info`` atomically, in the format its suffix names (.txt/.txtpb, .json, .bin)."""
    write_file(path, serialize_p4info(p4info, p4info_format(path)))


def parse_p4info(data: bytes, fmt: str) -> p4info_pb2.P4Info:
    """The P4Info message in ``data`` of format ``text``, ``json`` or ``binary``; ValueError
    (one line) when it is not one."""
    if fmt not in ("text", "json", "binary"):
        raise ValueError(f"unknown P4Info format '{fmt}' (use text, json or binary)")
    info = p4info_pb2.P4Info()
    try:
        if fmt == "text":
            text_format.Parse(data.decode("utf-8"), info)
        elif fmt == "json":
            json_format.Parse(data.decode("utf-8"), info)
        else:
            info.ParseFromString(data)
    except Exception as exc:  # protobuf raises several unrelated types
        first_line = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ValueError(f"not a {fmt} P4Info file ({first_line})") from None
    return info


def read_p4info(path: str | os.PathLike) -> p4info_pb2.P4Info:
    """Read a P4Info file written in any of the three formats (chosen by suffix)."""
    fmt = p4info_format(path)
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise P4TargetError(f"cannot read {path}: {exc.strerror}") from None
    try:
        return parse_p4info(data, fmt)
    except ValueError as exc:
        raise P4TargetError(f"{path}: {exc}") from None
