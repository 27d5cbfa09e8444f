"""Parser value sets (`ValueSetEntry`): a MODIFY replaces a set's members; reads return them."""
from __future__ import annotations

from typing import Iterator

from p4.v1 import p4runtime_pb2

from . import bytestrings
from .errors import invalid, unimplemented
from .state import PipelineState
from .translate import ValueSetInfo

Update = p4runtime_pb2.Update


class ValueSets:
    """Write and read `ValueSetEntry` entities on the engine's parser value sets."""

    def __init__(self, state: PipelineState) -> None:
        self.tr = state.translator
        self.engine = state.engine

    def write(self, op: int, vse: p4runtime_pb2.ValueSetEntry) -> None:
        if op != Update.MODIFY:
            raise invalid("value set entries can only be modified (the write replaces the members)")
        vs = self.tr.value_set(vse.value_set_id)
        values = [self._value(vs, m) for m in vse.members]
        if vs.size and len(set(values)) > vs.size:
            raise invalid(f"value set '{vs.name}' holds at most {vs.size} members, got {len(values)}")
        self.engine.parse_vset_clear(vs.name)
        for v in values:
            self.engine.parse_vset_add(vs.name, v)

    def _value(self, vs: ValueSetInfo, member: p4runtime_pb2.ValueSetMember) -> int:
        """The member as the engine holds it: its fields concatenated in P4Info order."""
        given = {}
        for fm in member.match:
            if fm.WhichOneof("field_match_type") != "exact":
                raise unimplemented(f"value set '{vs.name}': only exact members are supported")
            given[fm.field_id] = fm.exact.value
        value = 0
        for fid, width, _ in vs.fields:
            if fid not in given:
                raise invalid(f"value set '{vs.name}': member lacks match field {fid}")
            value = (value << width) | bytestrings.decode(given.pop(fid), width, f"value set '{vs.name}' field {fid}")
        if given:
            raise invalid(f"value set '{vs.name}' has no match field {next(iter(given))}")
        return value

    def read(self, vse: p4runtime_pb2.ValueSetEntry) -> Iterator[p4runtime_pb2.Entity]:
        sets = [self.tr.value_set(vse.value_set_id)] if vse.value_set_id else list(self.tr.value_sets.values())
        for vs in sets:
            out = p4runtime_pb2.ValueSetEntry(value_set_id=vs.id)
            for v in self.engine.parse_vset_get(vs.name):
                member = out.members.add()
                shift = sum(w for _, w, _ in vs.fields)
                for fid, width, _ in vs.fields:
                    shift -= width
                    fm = member.match.add(field_id=fid)
                    fm.exact.value = bytestrings.encode((v >> shift) & ((1 << width) - 1))
            yield p4runtime_pb2.Entity(value_set_entry=out)

