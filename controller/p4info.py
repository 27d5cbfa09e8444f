"""P4Info loading and name -> id lookups for one pipeline (no global state).

Uses p4runtime-shell's :class:`Context` for the name maps; every miss becomes a
:class:`~controller.errors.P4NameError` naming what is missing.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Union

from google.protobuf import text_format
from p4.config.v1 import p4info_pb2
from p4runtime_sh.context import Context, P4Type

from controller.errors import ConfigError, P4NameError


def load_p4info(path: Union[str, Path]) -> p4info_pb2.P4Info:
    """Read a P4Info file, text proto (p4c's ``.txt``/``.txtpb``) or binary."""
    data = Path(path).read_bytes()
    info = p4info_pb2.P4Info()
    try:
        text_format.Parse(data.decode("utf-8"), info)
        return info
    except (UnicodeDecodeError, text_format.ParseError) as text_err:
        try:
            info.ParseFromString(data)
            return info
        except Exception:
            raise ConfigError(f"{path}: not a P4Info file ({text_err})") from None


class P4Info:
    """Lookups over one P4Info message."""

    def __init__(self, info: p4info_pb2.P4Info) -> None:
        self.message = info
        self._ctx = Context()
        self._ctx.set_p4info(info)

    def _obj(self, kind: P4Type, name: str) -> Any:
        obj = self._ctx.get_obj(kind, name)
        if obj is None:
            raise P4NameError(f"P4Info has no {kind.pretty_name} '{name}'")
        return obj

    def table(self, name: str) -> Any:
        """The P4Info table message named ``name``."""
        return self._obj(P4Type.table, name)

    def action(self, name: str) -> Any:
        """The P4Info action message named ``name``."""
        return self._obj(P4Type.action, name)

    def table_id(self, name: str) -> int:
        return self.table(name).preamble.id

    def action_id(self, name: str) -> int:
        return self.action(name).preamble.id

    def action_profile_id(self, name: str) -> int:
        return self._obj(P4Type.action_profile, name).preamble.id

    def counter(self, name: str) -> Any:
        return self._obj(P4Type.counter, name)

    def counter_id(self, name: str) -> int:
        return self.counter(name).preamble.id

    def match_field(self, table: str, field: str) -> Any:
        """The match field ``field`` of ``table`` (id, bitwidth, match_type)."""
        for mf in self.table(table).match_fields:
            if mf.name == field:
                return mf
        raise P4NameError(f"P4Info table '{table}' has no match field '{field}'")

    def match_field_by_id(self, table: str, field_id: int) -> Any:
        for mf in self.table(table).match_fields:
            if mf.id == field_id:
                return mf
        raise P4NameError(f"P4Info table '{table}' has no match field id {field_id}")

    def param(self, action: str, name: str) -> Any:
        """The parameter ``name`` of ``action`` (id, bitwidth)."""
        for p in self.action(action).params:
            if p.name == name:
                return p
        raise P4NameError(f"P4Info action '{action}' has no parameter '{name}'")

    def param_by_id(self, action: str, param_id: int) -> Any:
        for p in self.action(action).params:
            if p.id == param_id:
                return p
        raise P4NameError(f"P4Info action '{action}' has no parameter id {param_id}")

    def name_of(self, obj_id: int) -> str:
        """Fully qualified name of any P4Info object by id."""
        try:
            return self._ctx.get_name_from_id(obj_id)
        except KeyError:
            raise P4NameError(f"P4Info has no object with id {obj_id}") from None

    def has_table(self, name: str) -> bool:
        return self._ctx.get_obj(P4Type.table, name) is not None

    def controller_metadata(self, header: str) -> Any:
        """The ``controller_packet_metadata`` named ``packet_in`` / ``packet_out``, or None."""
        return self._ctx.get_obj(P4Type.controller_packet_metadata, header)
