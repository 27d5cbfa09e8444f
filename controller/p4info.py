"""P4Info loading and name -> id lookups for one pipeline (no global state).

Every miss becomes a :class:`~controller.errors.P4NameError` naming what is missing.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from google.protobuf import json_format, text_format
from p4.config.v1 import p4info_pb2

from controller.errors import ConfigError, P4NameError

# p4c's file suffixes for the three P4Info formats (`--p4runtime-files`).
FORMATS_BY_SUFFIX = {".txt": "text", ".txtpb": "text", ".json": "json", ".bin": "binary"}


def load_p4info(path: str | Path) -> p4info_pb2.P4Info:
    """Read a P4Info file in any format p4c writes: text proto (``.txt``/``.txtpb``), JSON
    (``.json``) or binary (``.bin``); another suffix is tried as text, then JSON, then binary.
    ConfigError (one line) when it cannot be read or is none of them."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read P4Info {path}: {exc.strerror}") from None
    fmt = FORMATS_BY_SUFFIX.get(Path(path).suffix.lower())
    errors: list[str] = []
    for candidate in (fmt,) if fmt else ("text", "json", "binary"):
        try:
            return _parse(data, candidate)
        except Exception as exc:  # protobuf raises several unrelated types
            errors.append(f"{candidate}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}")
    raise ConfigError(f"{path}: not a P4Info file ({'; '.join(errors)})")


def _parse(data: bytes, fmt: str) -> p4info_pb2.P4Info:
    info = p4info_pb2.P4Info()
    if fmt == "text":
        text_format.Parse(data.decode("utf-8"), info)
    elif fmt == "json":
        json_format.Parse(data.decode("utf-8"), info)
    else:
        info.ParseFromString(data)
    return info


class P4Info:
    """Name and id lookups over one P4Info message (dict indexes built once)."""

    _KINDS = ("tables", "actions", "action_profiles", "counters", "direct_counters", "meters",
              "direct_meters", "registers", "digests", "controller_packet_metadata")

    def __init__(self, info: p4info_pb2.P4Info) -> None:
        self.message = info
        self._by_name: dict[tuple[str, str], Any] = {}
        self._names: dict[int, str] = {}
        for kind in self._KINDS:
            for obj in getattr(info, kind):
                pre = obj.preamble
                self._by_name[(kind, pre.name)] = obj
                if pre.alias and (kind, pre.alias) not in self._by_name:
                    self._by_name[(kind, pre.alias)] = obj
                self._names[pre.id] = pre.name
        self._fields = {t.preamble.name: ({m.name: m for m in t.match_fields},
                                          {m.id: m for m in t.match_fields}) for t in info.tables}
        self._params = {a.preamble.name: ({p.name: p for p in a.params}, {p.id: p for p in a.params})
                        for a in info.actions}

    def _obj(self, kind: str, name: str) -> Any:
        obj = self._by_name.get((kind, name))
        if obj is None:
            raise P4NameError(f"P4Info has no {kind[:-1].replace('_', ' ')} '{name}'")
        return obj

    def table(self, name: str) -> Any:
        """The P4Info table message named ``name``."""
        return self._obj("tables", name)

    def action(self, name: str) -> Any:
        """The P4Info action message named ``name``."""
        return self._obj("actions", name)

    def table_id(self, name: str) -> int:
        return self.table(name).preamble.id

    def action_id(self, name: str) -> int:
        return self.action(name).preamble.id

    def action_profile_id(self, name: str) -> int:
        return self._obj("action_profiles", name).preamble.id

    def counter(self, name: str) -> Any:
        return self._obj("counters", name)

    def counter_id(self, name: str) -> int:
        return self.counter(name).preamble.id

    def match_fields(self, table: str) -> list[Any]:
        """The match fields of ``table`` in P4Info order."""
        return list(self.table(table).match_fields)

    def match_field(self, table: str, field: str) -> Any:
        """The match field ``field`` of ``table`` (id, bitwidth, match_type)."""
        fields = self._fields.get(self.table(table).preamble.name, ({}, {}))[0]
        if field not in fields:
            raise P4NameError(f"P4Info table '{table}' has no match field '{field}'")
        return fields[field]

    def match_field_by_id(self, table: str, field_id: int) -> Any:
        fields = self._fields.get(self.table(table).preamble.name, ({}, {}))[1]
        if field_id not in fields:
            raise P4NameError(f"P4Info table '{table}' has no match field id {field_id}")
        return fields[field_id]

    def param(self, action: str, name: str) -> Any:
        """The parameter ``name`` of ``action`` (id, bitwidth)."""
        params = self._params.get(self.action(action).preamble.name, ({}, {}))[0]
        if name not in params:
            raise P4NameError(f"P4Info action '{action}' has no parameter '{name}'")
        return params[name]

    def param_by_id(self, action: str, param_id: int) -> Any:
        params = self._params.get(self.action(action).preamble.name, ({}, {}))[1]
        if param_id not in params:
            raise P4NameError(f"P4Info action '{action}' has no parameter id {param_id}")
        return params[param_id]

    def name_of(self, obj_id: int) -> str:
        """Fully qualified name of any P4Info object by id."""
        try:
            return self._names[obj_id]
        except KeyError:
            raise P4NameError(f"P4Info has no object with id {obj_id}") from None

    def has_table(self, name: str) -> bool:
        return ("tables", name) in self._by_name

    def controller_metadata(self, header: str) -> Any:
        """The ``controller_packet_metadata`` named ``packet_in`` / ``packet_out``, or None."""
        return self._by_name.get(("controller_packet_metadata", header))
